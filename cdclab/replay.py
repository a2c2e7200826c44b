"""`cdclab replay SOURCE`: the files a real DMS task wrote, merged by the unchanged job.

SOURCE is a local folder or `s3://bucket/prefix`, read with the user's own AWS
credentials (only listed and read, never written). Its DMS files are copied into the
lab's bronze under `replay/<name>/` in DMS's order (cdclab.replay_files), each table's
bronze catalog table is built from a DDL file (run in a scratch database of the lab's
PostgreSQL, as a role that may do nothing else), a live source, or the files' header
row, and a Glue job `cdclab-replay-<name>` running the pipeline's own script merges them
into `replay_<name>` silver tables. The report says, per table, what was read, what was
quarantined and why, and where silver is.
"""

from __future__ import annotations

import contextlib
import csv
import gzip
import io
import itertools
import json
import secrets
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, BinaryIO

from cdclab.replay_files import DmsFile, Plan, ReplayError, plan, target_key
from pipeline_contract import settings
from pipeline_contract.dms_format.source_types import CATEGORY_STRING, PgType, SourceColumn
from pipeline_contract.dms_format.table_mappings import (
    CHANGE_SEQ_EXPRESSION,
    TableMappings,
    default_mappings,
    read_document,
)
from pipeline_contract.table_specs import (
    ROLE_BEFORE_IMAGE,
    Layout,
    SourceTable,
    SpecError,
    build_spec,
    glue_name,
)

REPLAY_FOLDER = "replay"
HEAD_BYTES = 1 << 20  # a header row or a first record is read from at most this much
MAX_RUNS = 200  # a backlog is drained run by run; more means something loops
# the endpoint settings a replay reads (AWS's names; DMS's defaults when absent), by the
# [dms] setting each one is: the S3 target's, and the PostgreSQL source's MapBooleanAsBoolean
ENDPOINT_SETTINGS = {"AddColumnName": ("add_column_name", False),
                     "IncludeOpForFullLoad": ("include_op_for_full_load", False),
                     "TimestampColumnName": ("timestamp_column_name", ""),
                     "CsvDelimiter": ("csv_delimiter", ","),
                     "CsvNullValue": ("csv_null_value", ""),
                     "ParquetTimestampInMillisecond": ("parquet_timestamp_in_millisecond", False),
                     "MapBooleanAsBoolean": ("map_boolean_as_boolean", False)}


@dataclass(frozen=True)
class ReplayOptions:
    source: str
    name: str = "replay"
    ddl: Path | None = None
    source_dsn_env: str | None = None  # a variable holding a live source's DSN
    keys: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # header mode
    endpoint_settings: Mapping[str, Any] = field(default_factory=dict)
    table_mappings: Path | None = None
    change_seq_column: str = ""  # without table mappings: the $AR_H_CHANGE_SEQ column
    tables: tuple[str, ...] = ()
    as_table: str = ""  # SOURCE is one table's folder: its schema.table
    profile: str | None = None
    endpoint_url: str | None = None


@dataclass
class TableReport:
    table: str
    files: int
    bytes: int
    silver_table: str
    rows_read: int = 0
    quarantined: int = 0
    reasons: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class ReplayReport:
    name: str
    job: str
    runs: list[dict[str, Any]] = field(default_factory=list)
    tables: dict[str, TableReport] = field(default_factory=dict)
    skipped_objects: dict[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return bool(self.runs) and all(r["state"] == "SUCCEEDED" for r in self.runs)

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "job": self.job, "ok": self.ok, "runs": self.runs,
                "tables": {k: vars(v) for k, v in self.tables.items()},
                "skipped_objects": self.skipped_objects}

    def lines(self) -> list[str]:
        out = []
        for t in self.tables.values():
            out.append(f"{t.table}: {t.files} files ({t.bytes} bytes), {t.rows_read} rows "
                       f"read, {t.quarantined} quarantined -> {t.silver_table}")
            out += [f"  quarantined {r.get('file')} record {r.get('record')}: {r.get('reason')}"
                    for r in t.reasons]
        out += [f"not copied: {k}: {why}" for k, why in sorted(self.skipped_objects.items())]
        return out


# --- the source: a folder or a bucket, read only ------------------------------------------
class Source:
    def listing(self) -> Iterator[tuple[str, int]]:
        raise NotImplementedError

    def open(self, key: str) -> BinaryIO:
        """The object as a stream: a file of any size is copied in bounded memory."""
        raise NotImplementedError

    def head(self, key: str, limit: int = HEAD_BYTES) -> bytes:
        """The object's first bytes, uncompressed (a .gz), at most `limit`."""
        with self.open(key) as raw:
            stream: BinaryIO = gzip.GzipFile(fileobj=raw) if key.endswith(".gz") else raw
            try:
                return stream.read(limit)
            except (OSError, EOFError) as exc:
                raise ReplayError(f"{key}: unreadable ({exc})") from exc


class OneTable(Source):
    """A source that is one table's folder, seen as <schema>/<table>/ below a root."""

    def __init__(self, inner: Source, qualified: str) -> None:
        schema, dot, table = qualified.partition(".")
        if not (schema and dot and table) or "/" in qualified:
            raise ReplayError(f"--as-table {qualified!r}: expected schema.table")
        self.inner, self.prefix = inner, f"{schema}/{table}/"

    def listing(self) -> Iterator[tuple[str, int]]:
        for key, size in self.inner.listing():
            yield self.prefix + key, size

    def open(self, key: str) -> BinaryIO:
        return self.inner.open(key.removeprefix(self.prefix))


class FolderSource(Source):
    def __init__(self, root: Path) -> None:
        if not root.is_dir():
            raise ReplayError(f"{root}: no such folder")
        self.root = root

    def listing(self) -> Iterator[tuple[str, int]]:
        for path in sorted(self.root.rglob("*")):
            if path.is_file():
                yield path.relative_to(self.root).as_posix(), path.stat().st_size

    def open(self, key: str) -> BinaryIO:
        return (self.root / key).open("rb")


class BucketSource(Source):
    """The user's bucket with the user's credentials (a profile, or boto3's default
    chain): ListObjectsV2 and GetObject only."""

    def __init__(self, uri: str, env: Mapping[str, str], profile: str | None,
                 endpoint_url: str | None) -> None:
        import boto3

        bucket, _, prefix = uri.removeprefix("s3://").partition("/")
        if not bucket:
            raise ReplayError(f"{uri}: no bucket")
        session = boto3.Session(profile_name=profile) if profile else boto3.Session()
        creds = session.get_credentials()
        lab_key = env.get(settings.ENV_ACCESS_KEY)
        if creds is not None and lab_key and creds.access_key == lab_key and not profile:
            raise ReplayError("the AWS credentials in this shell are the lab's own (from "
                              "`cdclab env`): name your AWS profile with --profile")
        self.s3 = session.client("s3", endpoint_url=endpoint_url)
        self.bucket, self.prefix = bucket, prefix.strip("/") + "/" if prefix.strip("/") else ""

    def listing(self) -> Iterator[tuple[str, int]]:
        pages = self.s3.get_paginator("list_objects_v2").paginate(Bucket=self.bucket,
                                                                   Prefix=self.prefix)
        for page in pages:
            for o in page.get("Contents", []):
                yield o["Key"][len(self.prefix):], o["Size"]

    def open(self, key: str) -> BinaryIO:
        body = self.s3.get_object(Bucket=self.bucket, Key=self.prefix + key)["Body"]
        return contextlib.closing(body)  # type: ignore[return-value]


def open_source(options: ReplayOptions, env: Mapping[str, str]) -> Source:
    source: Source
    if options.source.startswith("s3://"):
        source = BucketSource(options.source, env, options.profile, options.endpoint_url)
    else:
        source = FolderSource(Path(options.source))
    return OneTable(source, options.as_table) if options.as_table else source


# --- the replay's own pipeline settings ----------------------------------------------------
def replay_settings(p: settings.PipelineSettings, options: ReplayOptions,
                    data_format: str) -> settings.PipelineSettings:
    """The pipeline's settings with the replay's folder, database, job and the real task's
    endpoint settings (their DMS defaults when not given)."""
    unknown = sorted(set(options.endpoint_settings) - set(ENDPOINT_SETTINGS))
    if unknown:
        raise ReplayError(f"endpoint settings {unknown}: a replay reads "
                          f"{sorted(ENDPOINT_SETTINGS)}")
    e = {name: options.endpoint_settings.get(name, default)
         for name, (_field, default) in ENDPOINT_SETTINGS.items()}
    slug = settings_slug(options.name)
    change_seq = options.change_seq_column or change_seq_in(options.table_mappings) \
        or p.dms.change_seq_column
    dms = replace(p.dms, bucket_folder=f"{REPLAY_FOLDER}/{slug}", data_format=data_format,
                  change_seq_column=change_seq,
                  **{ENDPOINT_SETTINGS[name][0]: value for name, value in e.items()})
    # absolute: tables_sync reads a relative path from the repository
    mappings = str(options.table_mappings.resolve()) if options.table_mappings else ""
    source = replace(p.source, table_mappings=mappings)
    return replace(p, dms=dms, source=source,
                   lake=replace(p.lake, glue_database=f"replay_{slug}"),
                   glue_job=replace(p.glue_job, name=f"cdclab-replay-{slug}"))


def change_seq_in(path: Path | None) -> str:
    """The column a task's table mappings add with $AR_H_CHANGE_SEQ ('' when none)."""

    if path is None:
        return ""
    for rule in read_document(path).get("rules", []):
        if rule.get("rule-action") == "add-column" and \
                rule.get("expression") == CHANGE_SEQ_EXPRESSION:
            return str(rule.get("value", ""))
    return ""


def settings_slug(name: str) -> str:
    slug = glue_name(name)
    if len(slug) > 40:
        raise ReplayError(f"replay name {name!r}: at most 40 characters")
    return slug


# --- the tables: a DDL, a live source, or the header row -----------------------------------
@contextlib.contextmanager
def ddl_database(admin_dsn: str, ddl: str) -> Iterator[str]:
    """A scratch database holding the DDL's tables; yields a DSN to read its catalog. The
    DDL runs as a role that owns only that database (no superuser, no files, no
    programs), which is dropped with it."""
    import psycopg
    from psycopg import sql
    from psycopg.conninfo import make_conninfo

    suffix = secrets.token_hex(4)
    db, role, password = f"cdclab_replay_{suffix}", f"cdclab_replay_{suffix}", \
        secrets.token_urlsafe(24)
    with psycopg.connect(admin_dsn, autocommit=True) as admin:
        # the SCRAM verifier, never the password, in the statement (a failed statement
        # is written to the server's log)
        admin.execute(sql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(
            sql.Identifier(role), sql.Literal(scram_verifier(password))))
        try:
            admin.execute(sql.SQL("CREATE DATABASE {} OWNER {}").format(
                sql.Identifier(db), sql.Identifier(role)))
            try:
                dsn = make_conninfo(admin_dsn, dbname=db, user=role, password=password)
                with psycopg.connect(dsn, autocommit=True) as conn:
                    try:
                        conn.execute(ddl.encode())
                    except psycopg.Error as exc:
                        raise ReplayError(f"the DDL file failed: {exc}".strip()) from exc
                yield dsn
            finally:
                admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
                    sql.Identifier(db)))
        finally:
            admin.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(role)))


def scram_verifier(password: str, iterations: int = 4096) -> str:
    """PostgreSQL's stored form of a SCRAM-SHA-256 password (RFC 5802 / RFC 7677), which
    CREATE ROLE ... PASSWORD takes as is; `password` is ASCII (no SASLprep needed)."""
    import base64
    import hashlib
    import hmac

    salt = secrets.token_bytes(16)
    salted = hashlib.pbkdf2_hmac("sha256", password.encode(), salt, iterations)
    client_key = hmac.new(salted, b"Client Key", hashlib.sha256).digest()
    server_key = hmac.new(salted, b"Server Key", hashlib.sha256).digest()

    def b64(data: bytes) -> str:
        return base64.b64encode(data).decode()

    return (f"SCRAM-SHA-256${iterations}:{b64(salt)}$"
            f"{b64(hashlib.sha256(client_key).digest())}:{b64(server_key)}")


def mappings_for(p: settings.PipelineSettings, tables: list[str], cdc: bool):
    """The real task's table mappings, or the lab's default rules for each replayed table
    (without before images, which a task without mappings never wrote; the change
    sequence column only when there are CDC files)."""
    from cdclab.tables_sync import table_mappings

    if p.source.table_mappings:
        return table_mappings(p)
    rules: list[dict[str, Any]] = []
    for qualified in tables:
        schema, table = qualified.split(".", 1)
        selection, change_seq = default_mappings(schema, table, p.dms.change_seq_column,
                                                 before_image=False)["rules"]
        for rule in (selection, change_seq) if cdc else (selection,):
            n = str(len(rules) + 1)  # rule ids and names are unique in one document
            rules.append({**rule, "rule-id": n, "rule-name": f"{rule['rule-name']}-{n}"})
    return TableMappings.parse({"rules": rules})


def tables_from_catalog(dsn: str, p: settings.PipelineSettings, tables: list[str],
                        cdc: bool) -> list[SourceTable]:
    """The replayed tables as a source's catalog describes them, through the mappings."""
    import psycopg

    from cdclab.tables_sync import source_table
    from dms_emitter import replication as repl

    mappings = mappings_for(p, tables, cdc)
    out = []
    with psycopg.connect(dsn, autocommit=True) as conn:
        # the files' folders are the target names (after rename rules)
        plans = {pl.folder: pl for pl in mappings.select(repl.list_tables(conn))}
        for qualified in tables:
            pl = plans.get(qualified.replace(".", "/", 1))
            if pl is None:
                raise ReplayError(f"{qualified}: the source (DDL or live) has no such table, "
                                  "or the table mappings do not select it")
            columns = repl.table_columns(conn, pl.schema, pl.table)
            table = source_table(pl, columns, [c.name for c in columns if c.in_key])
            schema, name = qualified.split(".", 1)  # named as its files' folder
            out.append(replace(table, schema=schema, table=name))
    return out


def first_records(head: bytes, key: str, delimiter: str, n: int) -> list[list[str]]:
    """The first `n` whole records of a file's first bytes."""
    text = head.decode("utf-8", "replace")
    if len(head) == HEAD_BYTES and "\n" in text:
        text = text[: text.rindex("\n") + 1]  # no record cut in the middle
    rows = list(itertools.islice(csv.reader(io.StringIO(text), delimiter=delimiter), n))
    if not rows:
        raise ReplayError(f"{key}: an empty file")
    return rows


def table_from_header(qualified: str, header: list[str], p: settings.PipelineSettings,
                      keys: tuple[str, ...]) -> SourceTable:
    """A table known only by its files' header row: every column text (the job casts
    nothing), the key as given."""
    names = list(header)
    if p.dms.include_op_for_full_load and names[:1] == ["Op"]:
        names = names[1:]
    if p.dms.timestamp_column_name and names[:1] == [p.dms.timestamp_column_name]:
        names = names[1:]
    added = []
    if p.dms.change_seq_column in names:
        at = names.index(p.dms.change_seq_column)
        names, added = names[:at], names[at:]
    if not keys:
        raise ReplayError(f"{qualified}: a header names no key: give it with "
                          f"--key {qualified}=<column>[,<column>] (or a DDL file)")
    unknown = [k for k in keys if k not in names]
    if unknown:
        raise ReplayError(f"{qualified}: key columns {unknown} are not in the header {header}")
    text = PgType("text", CATEGORY_STRING)
    columns = [SourceColumn(n, text, n in keys) for n in names]
    schema, table = qualified.split(".", 1)
    return SourceTable(schema, table, f"{schema}/{table}", columns, names, added, list(keys))


# --- the run -------------------------------------------------------------------------------
def replay(options: ReplayOptions, env: Mapping[str, str], p0: settings.PipelineSettings,
           progress: Callable[[str], None] = lambda _m: None) -> ReplayReport:
    from cdclab.services.glue_api import glue_client, register_job
    from cdclab.services.minio import s3_client
    from cdclab.tables_sync import layout_of, overrides_for, publish

    source = open_source(options, env)
    progress(f"listing {options.source}")
    files_plan = plan(source.listing(), options.tables)
    if not files_plan.files:
        raise ReplayError(f"{options.source}: no DMS files ({len(files_plan.skipped)} other "
                          "objects)")
    formats = sorted({f.data_format for f in files_plan.files})
    if len(formats) > 1:
        raise ReplayError(f"{options.source}: tables in more than one format {formats}: "
                          "replay them one --tables selection at a time")
    p = replay_settings(p0, options, formats[0])
    tables = files_plan.tables()
    progress(f"{len(files_plan.files)} DMS files of {len(tables)} tables: {', '.join(tables)}")
    sources = source_tables(options, env, p, files_plan, source)
    specs = []
    for t in sources:
        has_cdc = any(f.kind == "cdc" for f in files_plan.of(t.qualified))
        layout: Layout = replace(layout_of(p), load_only=not has_cdc)
        try:
            specs.append(build_spec(t, layout, overrides_for(p, t.qualified)))
        except SpecError as exc:
            raise ReplayError(str(exc)) from exc
    for spec in specs:
        check_layout(spec, files_plan.of(spec["name"]), source, p.dms.csv_delimiter)
    report = ReplayReport(options.name, p.glue_job.name, skipped_objects=files_plan.skipped)
    for spec in specs:
        mine = files_plan.of(spec["name"])
        report.tables[spec["name"]] = TableReport(spec["name"], len(mine),
                                                  sum(f.size for f in mine),
                                                  spec["silver_table"])
    copy_files(files_plan, source, s3_client(env), p, progress)
    publish(env, p, specs)
    glue = glue_client(env)
    register_job(glue, p)
    progress(f"job {p.glue_job.name}: merging into {p.lake.catalog_name}."
             f"{p.lake.glue_database}")
    run_until_drained(glue, env, p, report, progress)
    return report


def source_tables(options: ReplayOptions, env: Mapping[str, str], p: settings.PipelineSettings,
                  files_plan: Plan, source: Source) -> list[SourceTable]:
    import os

    tables = files_plan.tables()
    cdc = any(f.kind == "cdc" for f in files_plan.files)
    if options.ddl is not None:
        with ddl_database(env[settings.ENV_PG_DSN], options.ddl.read_text()) as dsn:
            return tables_from_catalog(dsn, p, tables, cdc)
    if options.source_dsn_env:
        dsn = os.environ.get(options.source_dsn_env)
        if not dsn:
            raise ReplayError(f"{options.source_dsn_env} is not set (the live source's DSN)")
        return tables_from_catalog(dsn, p, tables, cdc)
    if not p.dms.add_column_name:
        raise ReplayError("the files have no header row (AddColumnName false): describe "
                          "the tables with --ddl FILE or a live source (--source-dsn-env)")
    out = []
    for qualified in tables:
        first = next(f for f in files_plan.of(qualified) if f.data_format == "csv")
        header = first_records(source.head(first.key), first.key, p.dms.csv_delimiter, 1)[0]
        out.append(table_from_header(qualified, header, p, tuple(options.keys.get(qualified,
                                                                                   ()))))
    return out


def check_layout(spec: Mapping[str, Any], files: list[DmsFile], source: Source,
                 delimiter: str) -> None:
    """The first CSV file of a table has at least the spec's columns but its before-image
    ones (files written before the task gained that rule lack them; Glue's reader gives
    missing trailing fields as NULL and drops extra ones): else the settings do not
    describe these files, said before anything is copied."""
    wanted = [c["name"] for c in spec["bronze_columns"]
              if not c.get("virtual") and c["role"] != ROLE_BEFORE_IMAGE]
    first = next((f for f in files if f.data_format == "csv"), None)
    if first is None:
        return
    rows = first_records(source.head(first.key), first.key, delimiter, 2)
    row = rows[1] if spec.get("bronze_header", True) and len(rows) > 1 else rows[0]
    if len(row) < len(wanted):
        raise ReplayError(f"{first.key}: {len(row)} fields, but the table's columns are "
                          f"{len(wanted)}: {wanted}. Give the task's endpoint settings "
                          "(--endpoint-settings: AddColumnName, IncludeOpForFullLoad, "
                          "TimestampColumnName) and table mappings (--table-mappings)")


def copy_files(files_plan: Plan, source: Source, s3, p: settings.PipelineSettings,
               progress: Callable[[str], None]) -> None:
    """Into the lab's bronze in DMS's order (the job's bookmark reads by modification
    time); a file already there with its size is not copied again."""
    bucket, done, total = p.lake.bronze_bucket, 0, sum(f.size for f in files_plan.files)
    for i, f in enumerate(files_plan.files, 1):
        key = target_key(p.dms.bucket_folder, f)
        try:
            if s3.head_object(Bucket=bucket, Key=key)["ContentLength"] == f.size:
                done += f.size
                continue
        except s3.exceptions.ClientError:
            pass
        with source.open(f.key) as body:  # multipart in parts: bounded memory
            s3.upload_fileobj(body, bucket, key)
        done += f.size
        if i % 25 == 0 or i == len(files_plan.files):
            progress(f"copied {i}/{len(files_plan.files)} files ({done}/{total} bytes)")
        time.sleep(0.002)  # distinct modification times keep DMS's order


def run_until_drained(glue, env: Mapping[str, str], p: settings.PipelineSettings,
                      report: ReplayReport, progress: Callable[[str], None]) -> None:
    from cdclab.services.glue_api import job_run_metrics
    from cdclab.services.minio import s3_client
    from cdclab.user_jobs import run_job

    s3 = s3_client(env)
    marker_bucket, marker_key = p.backlog_marker().removeprefix("s3://").split("/", 1)
    for _ in range(MAX_RUNS):
        run = run_job(env, p.glue_job.name, {}, progress)
        metrics = job_run_metrics(env[settings.ENV_GLUE_ENDPOINT], p.glue_job.name,
                                  run["Id"], env) or {}
        report.runs.append({"id": run["Id"], "state": run["JobRunState"],
                            "error": run.get("ErrorMessage")})
        for name, m in (metrics.get("tables") or {}).items():
            t = report.tables.get(name)
            if t is None:
                continue
            t.rows_read += int(m.get("rows_read", 0))
            t.quarantined += int(m.get("quarantined", 0))
            t.reasons += m.get("quarantine_examples", [])
        if run["JobRunState"] != "SUCCEEDED":
            progress(f"run {run['Id']} {run['JobRunState']}: {run.get('ErrorMessage')}")
            return
        try:
            s3.head_object(Bucket=marker_bucket, Key=marker_key)
        except s3.exceptions.ClientError:
            return  # nothing left for a later run
    progress(f"stopped after {MAX_RUNS} runs with input still waiting")


def report_json(report: ReplayReport) -> str:
    return json.dumps(report.to_json(), indent=1, default=str)
