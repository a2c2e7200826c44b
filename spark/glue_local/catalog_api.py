"""Glue Data Catalog operations (databases and tables) with JSON persistence;
partitions are glue_local.partitions_api.

Each handler takes (ctx, request) and returns the response dict, like AWS Glue's JSON 1.1
API; errors are GlueError with Glue's codes. State lives under
<state_dir>/glue/catalog/<database>/database.json and .../tables/<table>.json.
"""

from __future__ import annotations

import functools
import json
import logging
import re
import shutil
import threading
import time
from collections.abc import Callable
from pathlib import Path

from glue_local import iceberg_tables
from glue_local.errors import GlueError, already_exists, invalid_input, not_found
from pipeline_contract import settings
from pipeline_contract.atomic import write_json
from pipeline_contract.settings import ENV_CATALOG_TOKEN, ENV_CATALOG_URI

CATALOG_ID = "000000000000"
_lock = threading.RLock()
log = logging.getLogger("glue_local.catalog_api")


def _iceberg(ctx, call: str, *args):
    """Ask the Iceberg REST catalog (GlueCatalog's tables, as AWS shows them); None when
    there is none configured or it does not answer (the Glue tables still work)."""
    env = getattr(ctx, "env", None) or {}
    uri = env.get(ENV_CATALOG_URI)
    if not uri:
        return None
    try:
        return getattr(_rest_catalog(uri, env.get(ENV_CATALOG_TOKEN)), call)(*args)
    except (OSError, ValueError) as e:
        log.warning("Iceberg REST catalog %s: %s failed: %s", uri, call, e)
        return None


def _root(ctx) -> Path:
    if ctx is not None:
        return Path(ctx.state_dir) / "glue" / "catalog"

    return settings.state_dir() / "glue" / "catalog"


def _name(req: dict, key: str, what: str) -> str:
    value = req.get(key)
    if not isinstance(value, str) or not value:
        raise invalid_input(f"{what} ({key}) is required")
    if "/" in value or value in (".", ".."):
        raise invalid_input(f"{what} {value!r} is not a valid name")
    return value.lower()  # Glue stores names in lower case


def _db_dir(ctx, database: str) -> Path:
    return _root(ctx) / database


def _read(path: Path) -> dict:
    return json.loads(path.read_text())


def _write(path: Path, data: dict) -> None:
    write_json(path, data, sort_keys=True)


def _database(ctx, name: str) -> dict:
    path = _db_dir(ctx, name) / "database.json"
    if path.exists():
        return _read(path)
    namespace = _iceberg(ctx, "namespace", name)
    if namespace is None:
        raise not_found(f"Database {name} not found.")
    return _namespace_database(name, namespace)


@functools.lru_cache(maxsize=4)
def _rest_catalog(uri: str, token: str | None) -> iceberg_tables.RestCatalog:
    return iceberg_tables.RestCatalog(uri, token)  # one per URI: its /v1/config is read once


def _namespace_database(name: str, namespace: dict) -> dict:
    """An Iceberg namespace as the Glue database GlueCatalog creates for it."""
    props = dict(namespace.get("properties") or {})
    db = {"Name": name, "CatalogId": CATALOG_ID, "Parameters": props}
    if props.get("location"):
        db["LocationUri"] = props["location"]
    return db


def create_database(ctx, req: dict) -> dict:
    db_input = req.get("DatabaseInput") or {}
    name = _name(db_input, "Name", "database name")
    with _lock:
        path = _db_dir(ctx, name) / "database.json"
        if path.exists() or _iceberg(ctx, "namespace", name) is not None:
            raise already_exists(f"Database already exists: {name}")
        _write(path, {**db_input, "Name": name, "CreateTime": time.time(),
                      "CatalogId": req.get("CatalogId", CATALOG_ID)})
    return {}


def get_database(ctx, req: dict) -> dict:
    return {"Database": _database(ctx, _name(req, "Name", "database name"))}


def get_databases(ctx, req: dict) -> dict:
    root = _root(ctx)
    dbs = [_read(p) for p in sorted(root.glob("*/database.json"))] if root.exists() else []
    names = {d["Name"] for d in dbs}
    for ns in _iceberg(ctx, "namespaces") or []:
        if ns not in names:
            dbs.append(_namespace_database(ns, _iceberg(ctx, "namespace", ns) or {}))
    return {"DatabaseList": sorted(dbs, key=lambda d: d["Name"])}


def delete_database(ctx, req: dict) -> dict:
    name = _name(req, "Name", "database name")
    with _lock:
        _database(ctx, name)
        _local_only(_db_dir(ctx, name), f"database {name}")
        shutil.rmtree(_db_dir(ctx, name))
    return {}


def _local_only(path: Path, what: str) -> None:
    if not path.exists():
        raise invalid_input(f"cdclab: {what} is an Iceberg object of the local REST catalog: "
                            "change it through Iceberg (Spark SQL), not the Glue API")


def _table_path(ctx, database: str, table: str) -> Path:
    return _db_dir(ctx, database) / "tables" / f"{table}.json"


def partitions_path(ctx, database: str, table: str) -> Path:
    """The table's partitions (glue_local.partitions_api), gone with the table."""
    return _db_dir(ctx, database) / "partitions" / f"{table}.json"


def _table_record(req: dict, database: str, created: float | None) -> dict:
    table_input = req.get("TableInput") or {}
    name = _name(table_input, "Name", "table name")
    now = time.time()
    return {**table_input, "Name": name, "DatabaseName": database,
            "CreateTime": created or now, "UpdateTime": now,
            "CatalogId": req.get("CatalogId", CATALOG_ID)}


def create_table(ctx, req: dict) -> dict:
    database = _name(req, "DatabaseName", "database name")
    with _lock:
        _database(ctx, database)
        record = _table_record(req, database, None)
        path = _table_path(ctx, database, record["Name"])
        if path.exists() or _iceberg(ctx, "load", database, record["Name"]) is not None:
            raise already_exists(f"Table already exists: {database}.{record['Name']}")
        _write(path, record)
    return {}


def _table(ctx, database: str, table: str) -> dict:
    _database(ctx, database)
    path = _table_path(ctx, database, table)
    if path.exists():
        return _read(path)
    loaded = _iceberg(ctx, "load", database, table)
    if loaded is None:
        raise not_found(f"Table {table} not found in database {database}.")
    return iceberg_tables.glue_table(database, table, loaded, CATALOG_ID)


def get_table(ctx, req: dict) -> dict:
    database = _name(req, "DatabaseName", "database name")
    return {"Table": _table(ctx, database, _name(req, "Name", "table name"))}


def get_tables(ctx, req: dict) -> dict:
    database = _name(req, "DatabaseName", "database name")
    matches = table_name_filter(req.get("Expression"))
    _database(ctx, database)
    tables = [_read(p) for p in sorted((_db_dir(ctx, database) / "tables").glob("*.json"))]
    names = {t["Name"] for t in tables}
    for name in _iceberg(ctx, "tables", database) or []:
        loaded = name not in names and _iceberg(ctx, "load", database, name)
        if loaded:
            tables.append(iceberg_tables.glue_table(database, name, loaded, CATALOG_ID))
    return {"TableList": sorted((t for t in tables if matches(t["Name"])),
                                key=lambda t: t["Name"])}


EXPRESSION_MAX_BYTES = 2048
# AWS's "Single-line string pattern" (aws-glue-api-common): no line breaks in the string
_SINGLE_LINE = re.compile("[\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff\t]*")


_LONE_STAR = re.compile(r"(?<![.\\])\*")


def table_name_filter(expression: object) -> Callable[[str], bool]:
    """GetTables' Expression: "A regular expression pattern. If present, only those tables
    whose names match the pattern are returned" (GetTables API reference); at most 2048
    bytes of a single line. AWS's blueprint sample (developing-blueprints-sample;
    tests/corpus/blueprint_conversion.py) lists a prefix's tables with
    Expression=prefix+"*", the Hive metastore's pattern form ("*" for any characters;
    Glue is Hive-compatible), so a "*" that follows no "." or "\\" stands for ".*"; the
    pattern must match the whole name (cdclab's reading: AWS does not say whole or part).
    A bad pattern is InvalidInputException naming it."""
    if expression is None:
        return lambda _name: True
    if not isinstance(expression, str):
        raise invalid_input(f"Expression must be a string, not {type(expression).__name__}")
    if len(expression.encode("utf-8")) > EXPRESSION_MAX_BYTES:
        raise invalid_input(f"Expression is {len(expression.encode('utf-8'))} bytes long; "
                            f"at most {EXPRESSION_MAX_BYTES} are allowed")
    if not _SINGLE_LINE.fullmatch(expression):
        raise invalid_input(f"Expression {expression!r} must be a single line (a regular "
                            "expression pattern without line breaks or control characters)")
    try:
        pattern = re.compile(_LONE_STAR.sub(".*", expression))
    except re.error as e:
        raise invalid_input(f"Expression {expression!r} is not a valid regular expression: "
                            f"{e}") from None
    return lambda name: pattern.fullmatch(name) is not None


def update_table(ctx, req: dict) -> dict:
    database = _name(req, "DatabaseName", "database name")
    with _lock:
        name = _name(req.get("TableInput") or {}, "Name", "table name")
        current = _table(ctx, database, name)
        _local_only(_table_path(ctx, database, name), f"table {database}.{name}")
        _write(_table_path(ctx, database, name),
               _table_record(req, database, current.get("CreateTime")))
    return {}


def delete_table(ctx, req: dict) -> dict:
    database = _name(req, "DatabaseName", "database name")
    name = _name(req, "Name", "table name")
    with _lock:
        _table(ctx, database, name)
        _local_only(_table_path(ctx, database, name), f"table {database}.{name}")
        _table_path(ctx, database, name).unlink()
        partitions_path(ctx, database, name).unlink(missing_ok=True)
    return {}


OPERATIONS: dict[str, Callable[[object, dict], dict]] = {
    "CreateDatabase": create_database,
    "GetDatabase": get_database,
    "GetDatabases": get_databases,
    "DeleteDatabase": delete_database,
    "CreateTable": create_table,
    "GetTable": get_table,
    "GetTables": get_tables,
    "UpdateTable": update_table,
    "DeleteTable": delete_table,
}

__all__ = ["OPERATIONS", "GlueError"]
