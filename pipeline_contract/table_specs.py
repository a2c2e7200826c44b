"""Pure: what the generic Glue job needs to know of each table it merges (its "spec").

One spec per table the DMS table mappings select: where its bronze files are (the Glue
catalog table over its folder), the bronze columns in file order with the Spark type
each value must cast to, the key, the silver columns (each a source column cast, or
derived from one by a named transform), and the silver / tombstone / quarantine tables.
cdclab builds the specs from the source's catalog (cdclab.tables_sync) plus the
`[tables."schema.table"]` overrides of pipeline.toml; the job reads them as JSON
(`--tables_config`), so tables flow through it without code changes.

The transforms are few and named (not free SQL) so `cdclab reconcile` can compute the
expected silver rows in Python exactly as the job computes them in Spark.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pipeline_contract.dms_format.parquet_types import TIME32, column_type
from pipeline_contract.dms_format.source_types import PgType, SourceColumn
from pipeline_contract.dms_format.values import RenderOptions
from pipeline_contract.table_overrides import (  # noqa: F401 - the specs' overrides, re-exported
    DEFAULT_SPLIT_PATTERN,
    TRANSFORM_SPLIT,
    TRANSFORMS,
    Derived,
    TableOverrides,
)

SPEC_VERSION = 1
ROLE_OP, ROLE_TIMESTAMP, ROLE_CHANGE_SEQ, ROLE_DATA = "op", "timestamp", "change_seq", "data"
# add-before-image-columns: a column's value before an UPDATE (its "before_image_of"
# names the data column); bronze only. The job deletes the old key of a key change by it.
ROLE_BEFORE_IMAGE = "before_image"
DECIMAL_MAX_PRECISION = 38  # Spark's (and Iceberg's) widest decimal
UNBOUNDED_NUMERIC = "decimal(28,6)"  # DMS writes unbounded NUMERIC as NUMERIC(28,6)
MONEY = "decimal(38,4)"  # DMS: MONEY -> NUMERIC(38,4)
FORMAT_CSV, FORMAT_PARQUET = "csv", "parquet"
# Parquet kinds (dms_format.parquet_types) as catalog (Hive) types; decimal(p,s) as is
PARQUET_HIVE_TYPES = {"string": "string", "binary": "binary", "bool": "boolean",
                      "int16": "smallint", "int32": "int", "int64": "bigint",
                      "float": "float", "double": "double", "date32": "date",
                      "timestamp": "timestamp"}
_SPARK_TYPES = {"int2": "smallint", "int4": "int", "int8": "bigint", "float4": "float",
                "float8": "double", "bool": "boolean", "date": "date",
                "timestamp": "timestamp", "timestamptz": "timestamp", "money": MONEY}
_NAME_JUNK = re.compile(r"[^a-z0-9_]+")
INTERNAL_PREFIX = "_cdclab_"  # the job's own columns (jobs/bronze_to_silver.py INTERNAL)


class SpecError(ValueError):
    """A table the job cannot merge as configured; the message names the table."""


@dataclass(frozen=True)
class Layout:
    """How the DMS endpoint lays the files out (pipeline.toml [dms]) and where the lake is."""

    bronze_bucket: str
    bucket_folder: str
    glue_database: str
    catalog_name: str
    timestamp_column: str = "last_updated_ts"
    change_seq_column: str = "change_seq"
    op_for_full_load: bool = True
    map_unbounded_numeric_as_string: bool = False
    data_format: str = "csv"  # DataFormat: csv | parquet
    map_boolean_as_boolean: bool = False  # PostgreSQL source MapBooleanAsBoolean
    add_column_name: bool = True  # AddColumnName: a header row opens each CSV file
    # a full-load-only task's files (`cdclab replay`): no Op or change sequence needed
    load_only: bool = False


@dataclass(frozen=True)
class SourceTable:
    """One selected source table as the emitter writes it."""

    schema: str
    table: str
    folder: str  # <target schema>/<target table> under the bucket folder
    columns: Sequence[SourceColumn]  # the written source columns, in file order
    written_names: Sequence[str]  # their names in the files (after renames)
    added: Sequence[str] = field(default=())  # add-column names, after the source columns
    key: Sequence[str] = field(default=())  # source key column names
    # add-before-image-columns, after the added columns: (name in the files, source column)
    before_image: Sequence[tuple[str, str]] = field(default=())

    @property
    def qualified(self) -> str:
        return f"{self.schema}.{self.table}"


def glue_name(name: str) -> str:
    """A Glue/Hive-safe name: lower case, [a-z0-9_] (Glue lower-cases names)."""
    cleaned = _NAME_JUNK.sub("_", name.lower()).strip("_")
    return cleaned or "t"


def spark_type(pg: PgType, map_unbounded_numeric_as_string: bool = False) -> str:
    """The Spark type a column's DMS text casts to in silver (DMS's PostgreSQL type
    mapping: CHAP_Source.PostgreSQL); anything without an exact Spark twin stays text."""
    if pg.category == "A":
        return "string"
    if pg.name == "numeric":
        ps = pg.numeric_precision_scale
        if ps is None:
            return "string" if map_unbounded_numeric_as_string else UNBOUNDED_NUMERIC
        precision, scale = ps
        if 0 <= scale <= precision <= DECIMAL_MAX_PRECISION:
            return f"decimal({precision},{scale})"
        return "string"
    return _SPARK_TYPES.get(pg.name, "string")


def build_spec(source: SourceTable, layout: Layout,
               overrides: TableOverrides | None = None) -> dict[str, Any]:
    """The job's spec of one table (JSON-ready)."""
    overrides = overrides or TableOverrides()
    where = source.qualified
    if not source.key:
        raise SpecError(f"{where} has no primary key: DMS replicates only its inserts and "
                        "the job cannot merge it (give it a primary key)")
    if not layout.op_for_full_load and not layout.load_only:
        raise SpecError(f"{where}: include_op_for_full_load = false gives LOAD files one "
                        "column fewer than CDC files, which one catalog table cannot read")
    if layout.change_seq_column not in source.added and not layout.load_only:
        raise SpecError(f"{where}: the table mappings add no {layout.change_seq_column!r} "
                        "column ($AR_H_CHANGE_SEQ), which the job orders changes by")
    parquet = layout.data_format == FORMAT_PARQUET
    names = [glue_name(n) for n in source.written_names]
    if parquet:  # Parquet columns are found by name (case aside), not by position
        written = [*source.written_names, *(b for b, _ in source.before_image)]
        renamed = [n for n in written if glue_name(n) != n.lower()]
        if renamed:
            raise SpecError(f"{where}: Parquet columns are read by name, and {renamed} are "
                            "no Glue column names (rename them with a table-mapping rule)")
    by_source = {c.name: (n, c) for n, c in zip(names, source.columns, strict=True)}
    bronze: list[dict[str, Any]] = [{"name": "op", "role": ROLE_OP, "type": "string"}]
    if not layout.op_for_full_load:  # load only: every row an insert, as the job adds it
        bronze[0].update(virtual=True, value="I")
    if layout.timestamp_column:
        bronze.append({"name": glue_name(layout.timestamp_column), "role": ROLE_TIMESTAMP,
                       "type": "timestamp"})
    keys = []
    for name, column in by_source.values():
        data = {"name": name, "role": ROLE_DATA,
                "type": spark_type(column.type, layout.map_unbounded_numeric_as_string),
                "source_type": column.type.describe()}
        if parquet:
            data.update(_parquet_column(where, column, layout))
        if column.name in source.key:
            data["key"] = True
            keys.append(name)
        bronze.append(data)
    for added in source.added:
        role = ROLE_CHANGE_SEQ if added == layout.change_seq_column else ROLE_DATA
        bronze.append({"name": glue_name(added), "role": role, "type": "string"})
    of = {c["name"]: c for c in bronze}
    for written, column_name in source.before_image:
        if column_name not in by_source:
            raise SpecError(f"{where}: before-image column {written!r} is of {column_name!r}, "
                            f"not a written column ({sorted(by_source)})")
        data = of[by_source[column_name][0]]
        bronze.append({**{k: v for k, v in data.items() if k not in ("name", "role", "key")},
                       "name": glue_name(written), "role": ROLE_BEFORE_IMAGE,
                       "before_image_of": data["name"]})
    if layout.change_seq_column not in source.added:  # load only: ordered by record
        bronze.append({"name": glue_name(layout.change_seq_column), "role": ROLE_CHANGE_SEQ,
                       "type": "string", "virtual": True, "value": None})
    internal = [c["name"] for c in bronze if c["name"].startswith(INTERNAL_PREFIX)]
    if internal:
        raise SpecError(f"{where}: column names starting {INTERNAL_PREFIX!r} are the job's "
                        f"own: {internal} (rename them with a table-mapping rule)")
    if len({c["name"] for c in bronze}) != len(bronze):
        raise SpecError(f"{where}: two columns share one catalog name "
                        f"{[c['name'] for c in bronze]}")
    silver = _silver_columns(where, bronze, overrides, by_source)
    target = glue_name(source.folder.rsplit("/", 1)[-1])
    lake = f"{layout.catalog_name}.{layout.glue_database}"
    silver_table = overrides.silver_table or f"{target}_silver"
    return {
        "version": SPEC_VERSION,
        "name": where,
        "bronze_format": layout.data_format,
        "bronze_header": layout.add_column_name,
        "bronze_database": layout.glue_database,
        "bronze_table": overrides.bronze_table or f"{target}_bronze",
        "bronze_location": (f"s3://{layout.bronze_bucket}/{layout.bucket_folder.strip('/')}/"
                            f"{source.folder}/"),
        "bronze_columns": bronze,
        "keys": [k for k in names if k in keys],
        "silver_table": f"{lake}.{silver_table}",
        "tombstone_table": f"{lake}.{overrides.tombstone_table or silver_table + '_tombstones'}",
        "quarantine_table": f"{lake}.{overrides.quarantine_table or target + '_quarantine'}",
        "silver_columns": silver,
        "transformation_ctx": overrides.transformation_ctx or f"bronze_{glue_name(where)}",
    }


def _parquet_column(where: str, column: SourceColumn, layout: Layout) -> dict[str, Any]:
    """How a column is in DMS's Parquet files (dms_format.parquet_types) and read back:
    `parquet_type`, the catalog's `hive_type`, and the silver type (bytea as binary)."""
    kind = column_type(column.type, RenderOptions(
        map_unbounded_numeric_as_string=layout.map_unbounded_numeric_as_string,
        map_boolean_as_boolean=layout.map_boolean_as_boolean))
    if kind.kind == TIME32:
        raise SpecError(f"{where}: column {column.name!r} is a Parquet TIME, which Spark (and "
                        "so Glue 5) cannot read: remove it with a remove-column rule, or "
                        "write csv")
    hive = PARQUET_HIVE_TYPES.get(kind.kind, kind.describe())
    out = {"parquet_type": kind.describe(), "hive_type": hive}
    if kind.kind == "binary":
        out["type"] = "binary"
    return out


def _silver_columns(where: str, bronze: list[dict[str, Any]], overrides: TableOverrides,
                    by_source: Mapping[str, tuple[str, SourceColumn]]) -> list[dict[str, Any]]:
    derived = {}
    for d in overrides.derive:
        if d.column not in by_source:
            raise SpecError(f"{where}: derive names {d.column!r}, not a column of the table "
                            f"({sorted(by_source)})")
        derived[by_source[d.column][0]] = d
    silver: list[dict[str, Any]] = []
    for column in bronze:
        name, role = column["name"], column["role"]
        if role in (ROLE_OP, ROLE_BEFORE_IMAGE):  # bookkeeping, not the row's state
            continue
        d = derived.get(name)
        if d is None:
            silver.append({"name": name, "type": column["type"], "from": name})
            continue
        if column.get("key") or column["type"] != "string":
            raise SpecError(f"{where}: only a text column that is not in the key can be "
                            f"split ({d.column!r} is {column['type']})")
        for part, into in enumerate(d.into):
            silver.append({"name": glue_name(into), "type": "string", "from": name,
                           "transform": d.transform, "pattern": d.pattern, "part": part})
    if len({c["name"] for c in silver}) != len(silver):
        raise SpecError(f"{where}: two silver columns share one name "
                        f"{[c['name'] for c in silver]}")
    return silver


def before_image_keys(spec: Mapping[str, Any]) -> dict[str, str]:
    """Key column -> its before-image column, when every key column has one; else {}
    (the job cannot tell a key change: jobs/bronze_to_silver.py has the same rule)."""
    of = {c["before_image_of"]: c["name"] for c in spec["bronze_columns"]
          if c["role"] == ROLE_BEFORE_IMAGE}
    return {k: of[k] for k in spec["keys"]} if all(k in of for k in spec["keys"]) else {}


def bronze_table_input(spec: Mapping[str, Any], delimiter: str = ",") -> dict[str, Any]:
    """TableInput of a table's bronze Glue catalog table. CSV: every column a string (the
    job casts), OpenCSVSerde, header skipped, positional like Glue's CSV reader. Parquet:
    each column with the type DMS writes it as, ParquetHiveSerDe, read by name. A header
    row is skipped only when the endpoint writes one (AddColumnName; DMS's default is
    false, and then the first line is a change)."""
    if spec.get("bronze_format", FORMAT_CSV) == FORMAT_PARQUET:
        return {
            "Name": spec["bronze_table"],
            "TableType": "EXTERNAL_TABLE",
            "Parameters": {"classification": "parquet", "EXTERNAL": "TRUE",
                           "cdclab.source_table": spec["name"]},
            "StorageDescriptor": {
                "Columns": [{"Name": c["name"], "Type": c.get("hive_type", "string")}
                            for c in spec["bronze_columns"] if not c.get("virtual")],
                "Location": spec["bronze_location"],
                "InputFormat": "org.apache.hadoop.hive.ql.io.parquet.MapredParquetInputFormat",
                "OutputFormat": "org.apache.hadoop.hive.ql.io.parquet.MapredParquetOutputFormat",
                "SerdeInfo": {"SerializationLibrary":
                              "org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe",
                              "Parameters": {"serialization.format": "1"}},
            },
        }
    skip = "1" if spec.get("bronze_header", True) else "0"
    return {
        "Name": spec["bronze_table"],
        "TableType": "EXTERNAL_TABLE",
        "Parameters": {"classification": "csv", "skip.header.line.count": skip,
                       "EXTERNAL": "TRUE", "cdclab.source_table": spec["name"]},
        "StorageDescriptor": {
            "Columns": [{"Name": c["name"], "Type": "string"}
                        for c in spec["bronze_columns"] if not c.get("virtual")],
            "Location": spec["bronze_location"],
            "InputFormat": "org.apache.hadoop.mapred.TextInputFormat",
            "OutputFormat": "org.apache.hadoop.hive.ql.io.HiveIgnoreKeyTextOutputFormat",
            "SerdeInfo": {
                "SerializationLibrary": "org.apache.hadoop.hive.serde2.OpenCSVSerde",
                # OpenCSVSerde needs three distinct characters; DMS doubles quotes ("")
                # inside quoted fields, which opencsv reads as a literal quote.
                "Parameters": {"separatorChar": delimiter, "quoteChar": '"',
                               "escapeChar": "\\", "skip.header.line.count": skip},
            },
        },
    }


def tables_document(specs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The `--tables_config` file: every table the job merges."""
    return {"version": SPEC_VERSION, "tables": list(specs)}


def for_lake(spec: Mapping[str, Any], bronze_bucket: str) -> dict[str, Any]:
    """The spec with its bronze location in another bucket (an AWS stack's own)."""
    _bucket, rest = spec["bronze_location"].removeprefix("s3://").split("/", 1)
    return {**spec, "bronze_location": f"s3://{bronze_bucket}/{rest}"}
