"""Glue Data Catalog partitions: CreatePartition, BatchCreatePartition, GetPartition,
GetPartitions, UpdatePartition, DeletePartition, BatchDeletePartition.

Request and response shapes, limits and error codes are those of botocore's Glue model
(`botocore/data/glue/2017-03-31/service-2.json`). A table's partitions are one JSON file,
<state_dir>/glue/catalog/<database>/partitions/<table>.json (a list, written atomically
under the catalog lock); DeleteTable and DeleteDatabase remove them with the table.
"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Callable

from glue_local import catalog_api as catalog
from glue_local.errors import GlueError, already_exists, invalid_input, not_found
from glue_local.partition_expr import ExpressionError, Predicate

# botocore's model: PartitionInputList max 100, BatchDeletePartitionValueList max 25,
# PageSize 1..1000, TotalSegmentsInteger 1..10
MAX_BATCH_CREATE = 100
MAX_BATCH_DELETE = 25
MAX_PAGE = 1000


def _table(ctx, req: dict) -> tuple[str, str, dict]:
    database = catalog._name(req, "DatabaseName", "database name")
    name = catalog._name(req, "TableName", "table name")
    table = catalog._table(ctx, database, name)
    return database, name, table


def _keys(table: dict) -> list[dict]:
    return list(table.get("PartitionKeys") or [])


def _load(ctx, database: str, table: str) -> list[dict]:
    path = catalog.partitions_path(ctx, database, table)
    return catalog._read(path) if path.exists() else []


def _save(ctx, database: str, table: str, partitions: list[dict]) -> None:
    catalog._local_only(catalog._table_path(ctx, database, table), f"table {database}.{table}")
    catalog._write(catalog.partitions_path(ctx, database, table),
                   sorted(partitions, key=lambda p: p["Values"]))


def _values(values: object, table: dict, what: str = "Values") -> list[str]:
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        raise invalid_input(f"{what} must be a list of strings")
    keys = _keys(table)
    if len(values) != len(keys):
        raise invalid_input(f"The number of partition keys ({len(keys)}) does not match the "
                            f"number of partition values ({len(values)}) of table "
                            f"{table['DatabaseName']}.{table['Name']}")
    return values


def _record(table: dict, item: dict, created: float | None, catalog_id: str) -> dict:
    values = _values(item.get("Values"), table)
    record = {k: v for k, v in item.items() if k != "Values"}
    return {**record, "Values": values, "DatabaseName": table["DatabaseName"],
            "TableName": table["Name"], "CreationTime": created or time.time(),
            "CatalogId": catalog_id}


def _find(partitions: list[dict], values: list[str]) -> int:
    for i, p in enumerate(partitions):
        if p["Values"] == values:
            return i
    return -1


def _missing(values: list[str]) -> GlueError:
    return not_found(f"Cannot find partition {values}.")


def create_partition(ctx, req: dict) -> dict:
    with catalog._lock:
        database, name, table = _table(ctx, req)
        partitions = _load(ctx, database, name)
        record = _record(table, req.get("PartitionInput") or {}, None,
                         req.get("CatalogId", catalog.CATALOG_ID))
        if _find(partitions, record["Values"]) >= 0:
            raise already_exists(f"Partition already exists: {record['Values']}")
        _save(ctx, database, name, [*partitions, record])
    return {}


def batch_create_partition(ctx, req: dict) -> dict:
    items = req.get("PartitionInputList") or []
    if len(items) > MAX_BATCH_CREATE:
        raise invalid_input(f"PartitionInputList holds at most {MAX_BATCH_CREATE} partitions")
    errors = []
    with catalog._lock:
        database, name, table = _table(ctx, req)
        partitions = _load(ctx, database, name)
        for item in items:
            try:
                record = _record(table, item, None, req.get("CatalogId", catalog.CATALOG_ID))
                if _find(partitions, record["Values"]) >= 0:
                    raise already_exists(f"Partition already exists: {record['Values']}")
            except GlueError as e:
                errors.append({"PartitionValues": item.get("Values") or [],
                               "ErrorDetail": {"ErrorCode": e.code, "ErrorMessage": e.message}})
                continue
            partitions.append(record)
        _save(ctx, database, name, partitions)
    return {"Errors": errors}


def get_partition(ctx, req: dict) -> dict:
    database, name, table = _table(ctx, req)
    values = _values(req.get("PartitionValues"), table, "PartitionValues")
    partitions = _load(ctx, database, name)
    i = _find(partitions, values)
    if i < 0:
        raise _missing(values)
    return {"Partition": partitions[i]}


def get_partitions(ctx, req: dict) -> dict:
    database, name, table = _table(ctx, req)
    partitions = _load(ctx, database, name)
    expression = (req.get("Expression") or "").strip()
    if expression:
        try:
            predicate = Predicate(expression, {k["Name"]: k.get("Type", "string")
                                               for k in _keys(table)})
            partitions = [p for p in partitions if predicate.matches(p["Values"])]
        except ExpressionError as e:
            raise invalid_input(f"Expression {expression!r}: {e}") from e
    segment = req.get("Segment")
    if segment:  # non-overlapping by position in the (values-sorted) list
        total, number = segment.get("TotalSegments", 1), segment.get("SegmentNumber", 0)
        if not 1 <= total <= 10 or not 0 <= number < total:
            raise invalid_input("Segment: SegmentNumber must be in 0..TotalSegments-1, "
                                "TotalSegments in 1..10")
        partitions = partitions[number::total]
    size = req.get("MaxResults") or MAX_PAGE
    if not 1 <= size <= MAX_PAGE:
        raise invalid_input(f"MaxResults must be 1..{MAX_PAGE}")
    start = _offset(req.get("NextToken"))
    page = partitions[start:start + size]
    if req.get("ExcludeColumnSchema"):
        page = [_without_columns(p) for p in page]
    out: dict = {"Partitions": page}
    if start + size < len(partitions):
        out["NextToken"] = base64.b64encode(json.dumps(start + size).encode()).decode()
    return out


def _offset(token: str | None) -> int:
    if not token:
        return 0
    try:
        offset = json.loads(base64.b64decode(token))
    except ValueError as e:
        raise invalid_input("NextToken is not valid") from e
    if not isinstance(offset, int) or offset < 0:
        raise invalid_input("NextToken is not valid")
    return offset


def _without_columns(partition: dict) -> dict:
    sd = {k: v for k, v in (partition.get("StorageDescriptor") or {}).items() if k != "Columns"}
    return {**partition, "StorageDescriptor": sd} if "StorageDescriptor" in partition else partition


def update_partition(ctx, req: dict) -> dict:
    with catalog._lock:
        database, name, table = _table(ctx, req)
        values = _values(req.get("PartitionValueList"), table, "PartitionValueList")
        partitions = _load(ctx, database, name)
        i = _find(partitions, values)
        if i < 0:
            raise _missing(values)
        item = dict(req.get("PartitionInput") or {})
        # botocore's model: "The Values property can't be changed. ... delete and recreate"
        if item.setdefault("Values", values) != values:
            raise invalid_input("UpdatePartition cannot change a partition's Values: delete "
                                "the partition and create it again")
        partitions[i] = _record(table, item, partitions[i].get("CreationTime"),
                                partitions[i].get("CatalogId", catalog.CATALOG_ID))
        _save(ctx, database, name, partitions)
    return {}


def delete_partition(ctx, req: dict) -> dict:
    with catalog._lock:
        database, name, table = _table(ctx, req)
        values = _values(req.get("PartitionValues"), table, "PartitionValues")
        partitions = _load(ctx, database, name)
        i = _find(partitions, values)
        if i < 0:
            raise _missing(values)
        del partitions[i]
        _save(ctx, database, name, partitions)
    return {}


def batch_delete_partition(ctx, req: dict) -> dict:
    items = req.get("PartitionsToDelete") or []
    if len(items) > MAX_BATCH_DELETE:
        raise invalid_input(f"PartitionsToDelete holds at most {MAX_BATCH_DELETE} partitions")
    errors = []
    with catalog._lock:
        database, name, table = _table(ctx, req)
        partitions = _load(ctx, database, name)
        for item in items:
            values = item.get("Values") or []
            i = _find(partitions, values)
            if i < 0:
                e = _missing(values)
                errors.append({"PartitionValues": values,
                               "ErrorDetail": {"ErrorCode": e.code, "ErrorMessage": e.message}})
            else:
                del partitions[i]
        _save(ctx, database, name, partitions)
    return {"Errors": errors}


OPERATIONS: dict[str, Callable[[object, dict], dict]] = {
    "CreatePartition": create_partition,
    "BatchCreatePartition": batch_create_partition,
    "GetPartition": get_partition,
    "GetPartitions": get_partitions,
    "UpdatePartition": update_partition,
    "DeletePartition": delete_partition,
    "BatchDeletePartition": batch_delete_partition,
}
