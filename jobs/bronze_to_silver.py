"""Glue job: DMS changes (bronze, Glue Data Catalog) -> MERGE INTO Iceberg silver, for
every table of its `--tables_config` document.

Runs unchanged on AWS Glue 5.1 (--datalake-formats iceberg, catalog settings as --conf)
and locally, where it imports AWS's own `awsglue` (AWSGlueDataplanePython) over cdclab's
JVM side. Deployed alone: it must not import cdclab. Each table's spec (built by
pipeline_contract/table_specs.py from the source's catalog and pipeline.toml) names its bronze
catalog table, its columns with the Spark types their DMS text casts to, its key, the
silver columns (a cast, or a named transform of one column) and its silver, tombstone
and quarantine tables. Per table, the merge rules are those of cdclab/merge_model.py:

- malformed rows go to the quarantine table (file, record number, reason, raw fields);
- per key only the change with the greatest change_seq counts (never the timestamp);
- changes at or below the key's tombstone seq are dropped (deletes stay deleted);
- MERGE ON the key: newer D deletes, newer I/U replaces all columns, unmatched I/U inserts;
  silver and the tombstones are read only between the batch's lowest and highest key;
- the batch's deletes upsert the tombstones (max seq). Replaying a file is harmless;
- with the key's before image (DMS's add-before-image-columns), a U whose before image
  differs from its key moved the row: it also deletes the old key, at its own change_seq.
"""

from __future__ import annotations

import json
import math
import sys
import time
import uuid
from typing import NamedTuple

OPS = ("I", "U", "D")
FULL_LOAD_LSN = "0" * 20
# DMS names full-load files LOADnnnnnnnn; CDC files are named by their time
FULL_LOAD_FILE = r"(^|/)(LOAD[^/]*)$"
MAX_LOGGED_BAD_ROWS = 200
MAX_REPORTED_BAD_ROWS = 5  # in the run's metrics (cdclab status / quarantine show them)
MAX_FILES_BEFORE_COMPACTION = 48  # data + delete files of a table
# Glue's bounded execution (boundedFiles): at most this many bronze files per table and run;
# the rest waits for the next run (AWS's example uses 500)
DEFAULT_BOUNDED_FILES = 500
# Iceberg upkeep, at most every interval (pipeline_contract/pipeline.toml [maintenance])
MAINTENANCE_DEFAULTS = {"maintenance_interval_minutes": 30.0, "snapshot_retention_hours": 6.0,
                        "retain_last_snapshots": 10.0, "orphan_file_age_hours": 72.0,
                        "tombstone_retention_days": 30.0, "max_snapshots": 200.0}
LAST_MAINTENANCE_PROPERTY = "cdclab.maintenance.last-run-ms"
# Each commit writes a metadata.json; without the first two Iceberg keeps every one. Each
# MERGE also adds a manifest, and Iceberg merges them only once 100 pile up: every later
# scan (each run plans silver two or three times) reads them all, one GET each.
METADATA_CLEANUP = {"write.metadata.delete-after-commit.enabled": "true",
                    "write.metadata.previous-versions-max": "20",
                    "commit.manifest.min-count-to-merge": "4"}
SPEC_VERSION = 1  # pipeline_contract/table_specs.py SPEC_VERSION
# Glue's attachFilename: each row's source file, the documented way (input_file_name()
# is empty for grouped, non-FileSplit reads).
SOURCE_FILE_COLUMN = "_cdclab_source_file"
ROLE_OP, ROLE_TIMESTAMP, ROLE_CHANGE_SEQ = "op", "timestamp", "change_seq"
ROLE_BEFORE_IMAGE = "before_image"  # a column's value before an UPDATE ("before_image_of")
TRANSFORM_SPLIT = "split"  # pipeline_contract/table_overrides.py TRANSFORMS
# The job's own columns beside a table's: prefixed, so no table column (a `reason`, an
# `action`) is ever overwritten (pipeline_contract/table_specs.py refuses names with the prefix).
INTERNAL = "_cdclab_"
FILE, RECORD, LINE = f"{INTERNAL}file", f"{INTERNAL}record", f"{INTERNAL}line"
REASON, RAW, ORDER = f"{INTERNAL}reason", f"{INTERNAL}raw", f"{INTERNAL}read_order"
OP, LOAD, RANK, ACTION = f"{INTERNAL}op", f"{INTERNAL}load", f"{INTERNAL}rank", f"{INTERNAL}action"
OLD_KEY, BEFORE = f"{INTERNAL}old_key", f"{INTERNAL}before_"  # a moved row's old key
FILL, PART, BASE = f"{INTERNAL}fill_seq", f"{INTERNAL}partition", f"{INTERNAL}base"
PART_SHIFT = 33  # monotonically_increasing_id(): the partition above bit 33
# Up to this many (file, partition) spans, a record's base is a CASE over them (each row
# tests them in turn); more are a broadcast join (a Spark job of its own: ~0.1 s of a
# one-file run)
SPANS_AS_CASE = 16

# Java regexes (rlike) for the text forms DMS writes, by Spark type; try_cast rejects
# what a pattern lets through (2020-02-30, an INT out of range).
TS_PATTERN = r"^\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(\.\d{1,6})?$"
DATE_PATTERN = r"^\d{4}-\d{2}-\d{2}$"
INTEGER_PATTERN = r"^[+-]?\d{1,19}$"
DECIMAL_PATTERN = r"^[+-]?(\d+(\.\d*)?|\.\d+)$"
# DMS writes REAL4 / REAL8 as C's %+.8e / %+.16e (+3.23800011e+01); NaN and infinities
# then as glibc prints them (+nan, -nan, +inf, -inf: not seen in real output), or as
# PostgreSQL does (NaN, Infinity). Spark casts all of them but a signed nan (SIGNED_NAN).
FLOAT_PATTERN = r"^([+-]?((\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?|Infinity|inf|nan)|NaN)$"
SIGNED_NAN = r"^[+-]nan$"
BOOLEAN_PATTERN = r"^(true|false)$"
SEQ_PATTERN = r"^\d{35}$"
TYPE_PATTERNS = {"smallint": INTEGER_PATTERN, "int": INTEGER_PATTERN,
                 "bigint": INTEGER_PATTERN, "float": FLOAT_PATTERN, "double": FLOAT_PATTERN,
                 "boolean": BOOLEAN_PATTERN, "date": DATE_PATTERN, "timestamp": TS_PATTERN}

MERGE_ON_READ = {f"write.{op}.mode": "merge-on-read" for op in ("delete", "update", "merge")}


def properties_sql(properties: dict[str, str]) -> str:
    return "(" + ", ".join(f"'{k}'='{v}'" for k, v in properties.items()) + ")"


TABLE_PROPERTIES = "TBLPROPERTIES " + properties_sql(
    {"format-version": "2", "write.format.default": "parquet", **MERGE_ON_READ})
QUARANTINE_DDL = """CREATE TABLE IF NOT EXISTS {table} (
  source_file STRING, record_number BIGINT, line_number BIGINT, reason STRING,
  raw_fields STRING, run_id STRING, quarantined_at TIMESTAMP)
USING iceberg
TBLPROPERTIES ('format-version'='2', 'write.format.default'='parquet')"""


def q(name: str) -> str:
    """A column name quoted for Spark SQL."""
    return "`" + name.replace("`", "``") + "`"


def pattern_of(spark_type: str) -> str | None:
    if spark_type.startswith("decimal"):
        return DECIMAL_PATTERN
    return TYPE_PATTERNS.get(spark_type)


def role_column(spec: dict, role: str) -> str | None:
    return next((c["name"] for c in spec["bronze_columns"] if c["role"] == role), None)


def before_image_keys(spec: dict) -> dict[str, str]:
    """Key column -> its before-image column, when every key column has one; else {}
    (no key change can be told). pipeline_contract/table_specs.py has the same rule."""
    of = {c["before_image_of"]: c["name"] for c in spec["bronze_columns"]
          if c["role"] == ROLE_BEFORE_IMAGE}
    return {k: of[k] for k in spec["keys"]} if all(k in of for k in spec["keys"]) else {}


def silver_ddl(spec: dict) -> str:
    columns = ", ".join(f"{q(c['name'])} {c['type'].upper()}" for c in spec["silver_columns"])
    return (f"CREATE TABLE IF NOT EXISTS {spec['silver_table']} ({columns})\n"
            f"USING iceberg\n{TABLE_PROPERTIES}")


def tombstone_ddl(spec: dict) -> str:
    types = {c["name"]: c["type"] for c in spec["silver_columns"]}
    keys = ", ".join(f"{q(k)} {types[k].upper()}" for k in spec["keys"])
    return (f"CREATE TABLE IF NOT EXISTS {spec['tombstone_table']} ({keys}, "
            f"change_seq STRING, deleted_at TIMESTAMP)\nUSING iceberg\n{TABLE_PROPERTIES}")


def load_tables(spark, location: str) -> list[dict]:
    """The --tables_config document: an s3:// object (read by Spark, as every other input
    of the job) or a local file."""
    if "://" in location:
        text = read_object(spark, location)
    else:
        with open(location, encoding="utf-8") as f:
            text = f.read()
    doc = json.loads(text)
    if doc.get("version") != SPEC_VERSION:
        raise ValueError(f"{location}: table specs version {doc.get('version')!r}, this job "
                         f"reads version {SPEC_VERSION}")
    return doc["tables"]


def hadoop_file(spark, location: str):
    """(FileSystem, Path) of a location, through Hadoop's FileSystem: the job's own S3
    access, with no Spark job."""
    jvm = spark._jvm
    path = jvm.org.apache.hadoop.fs.Path(jvm.java.net.URI(location))
    return path.getFileSystem(spark._jsc.hadoopConfiguration()), path


def read_object(spark, location: str) -> str:
    """A small object's text through Hadoop's FileSystem (a Spark job costs a run
    ~0.1 s); through Spark's reader where that fails."""
    try:
        fs, path = hadoop_file(spark, location)
        stream = fs.open(path)
        try:
            return spark._jvm.org.apache.commons.io.IOUtils.toString(stream, "UTF-8")
        finally:
            stream.close()
    except Exception:
        return "".join(r.value for r in spark.read.text(location, wholetext=True).collect())


# --- record validation (Spark SQL expressions; reading is Glue's) -------------------
# Each check is one SQL text parsed by Spark in a single call: built from PySpark's column
# functions, a record's checks took ~500 py4j round trips (~0.1-0.2 s of every run).
def sql_text(value: str) -> str:
    """A string as a Spark SQL literal that reads the same under any escaping setting
    (its UTF-8 bytes in hex, cast; Spark folds it to a constant)."""
    return f"CAST(X'{value.encode('utf-8').hex()}' AS STRING)" if value else "''"


def _shown(name: str) -> str:
    """A column's value as a quarantine reason shows it: quoted, or NULL."""
    quote = sql_text("'")
    return f"coalesce(concat({quote}, {q(name)}, {quote}), {sql_text('NULL')})"


def castable(name: str, sql_type: str, text: bool = True) -> str:
    """SQL of a bronze column as Spark's cast must see it to give DMS's value (`text`: a
    string column, as CSV's): glibc's `+nan` is NaN, which Spark's cast reads only as
    `nan` or `NaN`."""
    if text and sql_type in ("float", "double"):
        return f"regexp_replace({q(name)}, '{SIGNED_NAN}', 'NaN')"
    return q(name)


def _not_a(name: str, pattern: str, sql_type: str, text: bool = True) -> str:
    """True unless the column has the text form `pattern` and casts to `sql_type`."""
    value = q(name)
    return (f"({value} IS NULL OR NOT ({value} RLIKE {sql_text(pattern)})"
            f" OR try_cast({castable(name, sql_type, text)} AS {sql_type}) IS NULL)")


def _type_reason(name: str, sql_type: str) -> str:
    if sql_type in ("date", "timestamp"):
        return f"concat({sql_text(f'unparseable {name} ')}, {_shown(name)})"
    article = "an" if sql_type[0] in "aeiou" else "a"
    return f"concat({sql_text(f'{name} is not {article} {sql_type.upper()}: ')}, {_shown(name)})"


def reason_sql(spec: dict) -> str:
    """Why a bronze record (the spec's bronze columns) is malformed, as SQL; NULL when it
    is a valid change. The first failing check names the reason: Op, the key, the change
    sequence, the timestamp, then the other columns in file order."""
    columns = spec["bronze_columns"]
    text = spec.get("bronze_format", "csv") == "csv"  # Parquet columns come typed
    op, seq = q(role_column(spec, ROLE_OP)), q(role_column(spec, ROLE_CHANGE_SEQ))
    ops = ", ".join(sql_text(o) for o in OPS)
    checks = [(f"{op} IS NULL OR NOT ({op} IN ({ops}))",
               f"concat({sql_text('bad Op ')}, {_shown(role_column(spec, ROLE_OP))})")]
    ordered = ([c for c in columns if c.get("key")]
               + [c for c in columns if c["role"] == ROLE_CHANGE_SEQ]
               + [c for c in columns if c["role"] == ROLE_TIMESTAMP]
               + [c for c in columns if c["role"] == "data" and not c.get("key")]
               + [c for c in columns if c["role"] == ROLE_BEFORE_IMAGE])
    for c in ordered:
        name, sql_type = c["name"], c["type"]
        if c["role"] == ROLE_CHANGE_SEQ:
            checks.append((f"{seq} IS NULL OR NOT ({seq} RLIKE {sql_text(SEQ_PATTERN)})",
                           f"concat({sql_text(f'{name} is not 35 digits: ')}, {_shown(name)})"))
            continue
        pattern = pattern_of(sql_type)
        required = c.get("key") or c["role"] == ROLE_TIMESTAMP
        if pattern is None:  # text: anything goes, but a key is never NULL
            if required:
                checks.append((f"{q(name)} IS NULL", sql_text(f"key column {name} is NULL")))
            continue
        bad = _not_a(name, pattern, sql_type, text)
        checks.append((bad if required else f"{q(name)} IS NOT NULL AND {bad}",
                       _type_reason(name, sql_type)))
    return "CASE " + " ".join(f"WHEN {w} THEN {r}" for w, r in checks) + " END"


def reason_column(spec: dict):
    """reason_sql as a column."""
    from pyspark.sql import functions as F

    return F.expr(reason_sql(spec))


def with_virtual_columns(bronze_df, spec: dict):
    """A full-load-only task's files have no Op (IncludeOpForFullLoad false) and may have
    no change sequence: the spec marks those columns virtual, every row is an insert and
    the full load's record order orders them."""
    from pyspark.sql import functions as F

    for c in spec["bronze_columns"]:
        if c.get("virtual"):
            bronze_df = bronze_df.withColumn(c["name"], F.lit(c.get("value")).cast("string"))
    return bronze_df


def bronze_records(bronze_df, spec: dict, file_column: str = SOURCE_FILE_COLUMN):
    """Glue's rows as quarantine-ready records: FILE, RECORD, LINE, REASON, RAW, then the
    bronze columns (`read_records`, then `numbered` by its own `account`)."""
    records = read_records(bronze_df, spec, file_column)
    return numbered(records, account(records, spec).spans, spec)


def full_load_file_sql(column: str) -> str:
    """SQL: the file named in `column` is one of a full load's (FULL_LOAD_FILE)."""
    return f"(regexp_extract({q(column)}, {sql_text(FULL_LOAD_FILE)}, 0) <> '')"


def read_records(bronze_df, spec: dict, file_column: str = SOURCE_FILE_COLUMN):
    """Glue's rows as records not yet numbered: FILE, ORDER (the read order), LINE,
    REASON, RAW, FILL (the change sequence is the record number's), the bronze columns.

    Glue's readers report no line numbers: line_number is NULL. Full-load rows have no
    $AR_H_CHANGE_SEQ (DMS leaves it empty): they come before every change, so `numbered`
    gives them the lowest sequences, by record number; validated here as such. raw_fields
    is the record's fields as JSON.
    """
    from pyspark.sql import functions as F

    names = [c["name"] for c in spec["bronze_columns"]]
    seq = role_column(spec, ROLE_CHANGE_SEQ)
    is_load = full_load_file_sql(file_column)
    raw = "to_json(array(" + ", ".join(f"CAST({q(c)} AS STRING)" for c in names) + "))"
    return (
        bronze_df.select("*", F.monotonically_increasing_id().alias(ORDER),
                         F.expr(raw).alias(RAW),
                         F.expr(f"{q(seq)} IS NULL AND {is_load}").alias(FILL))
        .withColumn(seq, F.expr(f"IF({q(FILL)}, {sql_text(FULL_LOAD_LSN.ljust(35, '0'))}, "
                                f"{q(seq)})"))
        .selectExpr(f"{q(file_column)} AS {q(FILE)}", q(ORDER),
                    f"CAST(NULL AS BIGINT) AS {q(LINE)}", f"{reason_sql(spec)} AS {q(REASON)}",
                    q(RAW), q(FILL), *[q(c) for c in names])
    )


def literal_rows(spark, rows: list[tuple], columns: tuple[tuple[str, str], ...]):
    """Rows as a frame built in the JVM alone, from one JSON literal (a fixed number of
    py4j calls, however many rows). createDataFrame(list) is a Python RDD: its first call
    in a run's process took ~1 s and evaluating it goes through Python workers."""
    from pyspark.sql import functions as F

    names = [n for n, _ in columns]
    text = json.dumps([dict(zip(names, row, strict=True)) for row in rows])
    schema = "array<struct<" + ",".join(f"`{n}`:{t}" for n, t in columns) + ">>"
    return spark.range(1).select(
        F.explode(F.from_json(F.lit(text), schema, {"mode": "FAILFAST"})).alias("r")
    ).select("r.*")


def numbered(records, spans: list, spec: dict):
    """The records (read_records) with RECORD, the record's number in its file, a header
    row being record 1 when the endpoint writes one (bronze_header), and full-load rows'
    change sequences.

    Each partition reads its files in order, one after another (ORDER: the partition in
    the upper 31 bits, the row's place in it below), so a record's number is its place in
    its file's run of rows in that partition plus the rows of the file's earlier
    partitions: a CASE over a few spans or a small broadcast join, not a window that
    moves every row of a file into one task. Spans that are not runs fall back to that window."""
    from pyspark.sql import functions as F
    from pyspark.sql.window import Window

    first = 1 if spec.get("bronze_header", True) else 0
    seq = role_column(spec, ROLE_CHANGE_SEQ)
    bases, seen = [], {}
    for file, part, count, lowest, highest in sorted(spans, key=lambda s: (s[0], s[1])):
        if highest - lowest + 1 != count:
            bases = None
            break
        earlier = seen.get(file, 0)  # the file's rows in earlier partitions
        bases.append((file, part, earlier + first + 1 - lowest))
        seen[file] = earlier + count
    if bases is None:
        in_file = Window.partitionBy(FILE).orderBy(ORDER)
        with_record = records.withColumn(RECORD, F.row_number().over(in_file) + first)
    elif len(bases) <= SPANS_AS_CASE:
        part_of = f"shiftright({q(ORDER)}, {PART_SHIFT})"
        whens = " ".join(f"WHEN {q(FILE)} = {sql_text(file)} AND {part_of} = {int(part)} "
                         f"THEN CAST({int(start)} AS BIGINT)" for file, part, start in bases)
        # spans are distinct (file, partition) pairs; none: no record was read
        base = f"CASE {whens} END" if bases else "CAST(NULL AS BIGINT)"
        with_record = records.withColumn(RECORD, F.expr(f"{q(ORDER)} + {base}"))
    else:
        base = literal_rows(records.sparkSession, bases,
                            ((FILE, "string"), (PART, "long"), (BASE, "long")))
        with_record = (records.withColumn(PART, F.shiftright(ORDER, PART_SHIFT))
                       .join(F.broadcast(base), [FILE, PART], "left")
                       .withColumn(RECORD, F.col(ORDER) + F.col(BASE)))
    record = f"CAST({q(RECORD)} AS BIGINT)"
    fill = (f"IF({q(FILL)}, concat({sql_text(FULL_LOAD_LSN)}, "
            f"lpad(CAST({record} AS STRING), 15, '0')), {q(seq)})")
    return with_record.selectExpr(
        q(FILE), f"{record} AS {q(RECORD)}", q(LINE), q(REASON), q(RAW),
        *[f"{fill} AS {q(c['name'])}" if c["name"] == seq else q(c["name"])
          for c in spec["bronze_columns"]])


def typed(name: str, sql_type: str, text: bool):
    """A valid bronze column as its Spark type (castable's text form, cast)."""
    from pyspark.sql import functions as F

    return F.expr(castable(name, sql_type, text)).cast(sql_type)


def silver_value(c: dict, text: bool):
    """One silver column as a Spark expression over valid bronze records: a cast, or a
    named transform (pipeline_contract/table_specs.py; cdclab.reconcile computes the same in
    Python)."""
    from pyspark.sql import functions as F

    value = F.col(q(c["from"]))
    if c.get("transform") == TRANSFORM_SPLIT:
        parts = F.split(value, c["pattern"], 2)
        value = (F.when(value.isNotNull(), parts.getItem(0)) if c["part"] == 0
                 else F.when(F.size(parts) > 1, parts.getItem(1)))
    elif c["type"] != "string":
        value = typed(c["from"], c["type"], text)
    return value.alias(c["name"])


def silver_projection(spec: dict) -> list:
    """The silver columns as Spark expressions over valid bronze records (silver_value)."""
    text = spec.get("bronze_format", "csv") == "csv"
    return [silver_value(c, text) for c in spec["silver_columns"]]


def old_key_columns(spec: dict) -> dict[str, int | bool | None]:
    """How the D of a moved row's old key is made from its U, per silver column: the
    index of the key column whose before image it takes, True to keep the U's value (the
    change_seq and the commit time: the delete happens with the U), None for NULL (a
    delete carries the key only, as DMS's D rows do)."""
    keys = spec["keys"]
    meta = {role_column(spec, ROLE_CHANGE_SEQ), role_column(spec, ROLE_TIMESTAMP)}
    return {c["name"]: (keys.index(c["name"]) if c["name"] in keys
                        else True if c["from"] in meta else None)
            for c in spec["silver_columns"]}


def with_old_key_deletes(changes, spec: dict):
    """The changes (OP, the silver columns, LOAD, BEFORE<i>: the before image of key
    column i cast to its type) plus, for each U whose before image of the key is complete
    and differs from its key, a D of the old key with the U's change_seq and commit time,
    marked OLD_KEY (cdclab/merge_model.py old_key_deletes). DMS writes a primary-key
    UPDATE as one U row with the new key: without this the old key would stay in silver.
    One generator over one read of the batch: a union would read and check the CSV once
    per side."""
    from pyspark.sql import functions as F

    keys = spec["keys"]
    olds = [F.col(f"{BEFORE}{i}") for i in range(len(keys))]
    types = {c["name"]: c["type"] for c in spec["silver_columns"]}
    trailing = [F.col(LOAD), *[o.alias(f"{BEFORE}{i}") for i, o in enumerate(olds)]]
    itself, old_key = [F.col(OP)], [F.lit("D").alias(OP)]
    for name, source in old_key_columns(spec).items():
        itself.append(F.col(q(name)).alias(name))
        value = (F.col(q(name)) if source is True
                 else F.lit(None).cast(types[name]) if source is None else olds[source])
        old_key.append(value.alias(name))
    change = F.struct(*itself, *trailing, F.lit(False).alias(OLD_KEY))
    moved = F.struct(*old_key, *trailing, F.lit(True).alias(OLD_KEY))
    rows = F.when((F.col(OP) == "U") & differs([F.col(q(k)) for k in keys], olds),
                  F.array(change, moved)).otherwise(F.array(change))
    return changes.select(F.inline(rows))


def percentiles(values: list[float]) -> dict[str, float | int | None]:
    """Nearest-rank p50/p95/max."""
    if not values:
        return {"count": 0, "p50": None, "p95": None, "max": None}
    s = sorted(values)

    def rank(q: float) -> float:
        return round(s[max(0, math.ceil(q * len(s)) - 1)], 3)

    return {"count": len(s), "p50": rank(0.5), "p95": rank(0.95), "max": round(s[-1], 3)}


# --- the Spark job --------------------------------------------------------------------
def log(message: str) -> None:
    print(f"bronze_to_silver: {message}", flush=True)


class Phases:
    """Wall time per phase, logged as it goes and reported in the metrics."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self._t = time.monotonic()

    def done(self, name: str, detail: str = "") -> None:
        now = time.monotonic()
        self.seconds[name] = round(now - self._t, 3)
        self._t = now
        log(f"{name}{' (' + detail + ')' if detail else ''}: {self.seconds[name]:.2f}s")


def latency_samples(values: list[float], limit: int = 5000) -> list[float]:
    """At most `limit` evenly spaced samples (sorted), so callers can pool runs."""
    s = sorted(values)
    if len(s) > limit:
        s = [s[i * len(s) // limit] for i in range(limit)]
    return [round(v, 3) for v in s]


def namespace_of(table: str) -> str:
    return table.rsplit(".", 1)[0]


def ensure_tables(spark, spec: dict) -> None:
    """Create the table's silver, tombstone and quarantine tables; columns the spec has
    and silver lacks (a column added at the source, then synced) are added."""
    tables = (spec["silver_table"], spec["tombstone_table"], spec["quarantine_table"])
    for ns in sorted({namespace_of(t) for t in tables}):
        spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {ns}")
    spark.sql(silver_ddl(spec))
    spark.sql(tombstone_ddl(spec))
    spark.sql(QUARANTINE_DDL.format(table=spec["quarantine_table"]))
    have = {f.name.lower() for f in spark.table(spec["silver_table"]).schema.fields}
    missing = [c for c in spec["silver_columns"] if c["name"].lower() not in have]
    if missing:
        spark.sql(f"ALTER TABLE {spec['silver_table']} ADD COLUMNS ("
                  + ", ".join(f"{q(c['name'])} {c['type'].upper()}" for c in missing) + ")")
        log(f"{spec['silver_table']}: added columns {[c['name'] for c in missing]}")


class UnaccountedRowsError(RuntimeError):
    """Rows were read whose file is unknown: committing the bookmark could lose them."""


class Accounting(NamedTuple):
    files: list[str]  # this run's files, sorted
    rows: int
    quarantined: int
    spans: list[tuple]  # (file, partition, rows, lowest and highest ORDER): `numbered`
    changes: int  # valid records that are not inserts (Op other than I)
    # the lowest and highest first key column of the valid records (with the before
    # images'), for `key_within`; None when none is valid or the type is not ranged
    key_range: tuple | None = None
    # the commit times (epoch s) of the valid inserts of CDC files: the latencies of a
    # batch appended (append_new_keys) without classifying it
    insert_times: list[float] = []
    deletes: int = 0  # valid records whose Op is D
    # valid U records whose key's before image differs from their key (each deletes its
    # old key: with_old_key_deletes); 0 without before images
    moved: int = 0


# Key types ranged, each by a form Spark computes, Python orders as Spark orders the
# values, and key_literal turns back into the exact value: integers as themselves, a
# DATE as its days since 1970 (year 0 has no Python date), a STRING as the hex of its
# bytes (Spark's byte order; a Parquet string need not be valid UTF-8).
RANGED_KEY_TYPES = ("smallint", "int", "bigint", "string", "date")


def first_key_column(spec: dict) -> dict:
    return next(c for c in spec["silver_columns"] if c["name"] == spec["keys"][0])


def first_key_values(spec: dict) -> list:
    """The ranged form of the first key column's silver value of a valid record, and of
    its before image's (when the task writes one), as Spark expressions; [] when its
    type is not ranged."""
    from pyspark.sql import functions as F

    key = first_key_column(spec)
    sql_type = key["type"]
    if sql_type not in RANGED_KEY_TYPES:
        return []
    text = spec.get("bronze_format", "csv") == "csv"
    values = [silver_value(key, text)]
    before = before_image_keys(spec).get(key["name"])
    if before:
        values.append(typed(before, sql_type, text))
    epoch = F.lit("1970-01-01").cast("date")
    form = {"string": F.hex, "date": lambda v: F.datediff(v, epoch)}
    ranged = [form.get(sql_type, lambda v: v)(v) for v in values]
    return [F.when(F.col(REASON).isNull(), v) for v in ranged]


def key_literal(form, sql_type: str) -> str:
    """A ranged key (first_key_values' form) as a Spark SQL literal of the column's type,
    folded to a constant so Iceberg prunes files by it."""
    if sql_type == "string":
        return f"CAST(X'{form}' AS STRING)"
    if sql_type == "date":
        return f"DATE_FROM_UNIX_DATE({int(form)})"
    return f"CAST({int(form)} AS {sql_type.upper()})"


def key_within(column: str, spec: dict, key_range: tuple | None) -> str:
    """`column BETWEEN lo AND hi` for the batch's first key column (TRUE without a range):
    a conjunct on silver or the tombstones that keeps every row a batch's key can match,
    so a small batch's join and MERGE read only the files whose keys can overlap it."""
    if key_range is None:
        return "TRUE"
    sql_type = first_key_column(spec)["type"]
    lo, hi = (key_literal(v, sql_type) for v in key_range)
    return f"{column} BETWEEN {lo} AND {hi}"


def account(records, spec: dict) -> Accounting:
    """What this run's records (read_records) hold, in one pass. The files come from
    Glue's attachFilename column. Fails (before job.commit() can advance the bookmark) if
    any row lacks its file name, or rows were read but no file recorded: never a silent
    skip."""
    from pyspark.sql import functions as F

    op = F.col(q(role_column(spec, ROLE_OP)))
    valid = F.col(REASON).isNull()
    change, delete = valid & ~op.eqNullSafe("I"), valid & op.eqNullSafe("D")
    moved = valid & op.eqNullSafe("U") & key_moved(spec)
    keys = [f(k) for k in first_key_values(spec) for f in (F.min, F.max)]
    spans, unnamed, rows, quarantined, changes, deletes, bounds, times = [], 0, 0, 0, 0, 0, [], []
    moves = 0
    for (file, part, n, bad, changed, deleted, key_moves, lowest, highest, inserted,
         *key_bounds) in records.groupBy(FILE, F.shiftright(ORDER, PART_SHIFT)).agg(
            # F.count_if is PySpark 3.5+ only (Glue 4.0 runs Spark 3.3)
            F.count(F.lit(1)), F.count(REASON), F.count(F.when(change, True)),
            F.count(F.when(delete, True)), F.count(F.when(moved, True)),
            F.min(ORDER), F.max(ORDER), F.expr(insert_times_sql(spec)), *keys).collect():
        if file is None:
            unnamed += n
            continue
        spans.append((file, part, n, lowest, highest))
        rows, quarantined, changes = rows + n, quarantined + bad, changes + changed
        deletes, moves = deletes + deleted, moves + key_moves
        bounds += [b for b in key_bounds if b is not None]
        times += inserted
    files = sorted({s[0] for s in spans})
    if unnamed or (rows and not files):
        raise UnaccountedRowsError(
            f"{unnamed} of {rows + unnamed} bronze rows have no source file "
            f"(Glue's attachFilename): refusing to commit the job bookmark")
    key_range = (min(bounds), max(bounds)) if bounds else None
    return Accounting(files, rows, quarantined, spans, changes, key_range, times, deletes,
                      moves)


def key_moved(spec: dict):
    """Over a valid bronze record: its key's before image differs from its key, both as
    the silver types (with_old_key_deletes' condition); FALSE without before images."""
    from pyspark.sql import functions as F

    before = before_image_keys(spec)
    if not before:
        return F.lit(False)
    text = spec.get("bronze_format", "csv") == "csv"
    columns = {c["name"]: c for c in spec["silver_columns"]}
    return differs([silver_value(columns[k], text) for k in spec["keys"]],
                   [typed(before[k], columns[k]["type"], text) for k in spec["keys"]])


def differs(keys: list, olds: list):
    """The before image `olds` of the key columns `keys` (pairwise) is complete and not
    the key itself: a key change."""
    from functools import reduce

    complete = reduce(lambda a, b: a & b, [o.isNotNull() for o in olds])
    same = reduce(lambda a, b: a & b, [k == o for k, o in zip(keys, olds, strict=True)])
    return complete & ~same


def insert_times_sql(spec: dict) -> str:
    """SQL of the commit times (epoch s) of a group's valid inserts from CDC files (a
    full load's rows have no commit to measure from); an empty list without a timestamp
    column."""
    ts = next((c for c in spec["bronze_columns"] if c["role"] == ROLE_TIMESTAMP), None)
    if ts is None:
        return "CAST(array() AS ARRAY<DOUBLE>)"
    text = spec.get("bronze_format", "csv") == "csv"
    insert = (f"{q(REASON)} IS NULL AND {q(role_column(spec, ROLE_OP))} = 'I' "
              f"AND NOT {full_load_file_sql(FILE)}")
    stamp = f"CAST({castable(ts['name'], ts['type'], text)} AS {ts['type']})"
    return f"collect_list(IF({insert}, unix_micros({stamp}) / 1e6, NULL))"


def only_inserts(accounted: Accounting) -> bool:
    """The batch's valid records are all inserts (a full load's files, or CDC files of
    INSERTs only): into tables that hold none of their keys, every latest record is an
    insert, so no classification is needed."""
    return accounted.rows > accounted.quarantined and accounted.changes == 0


def never_written(spark, table: str) -> bool:
    """The Iceberg table has no snapshot: it is empty and no change ever reached it."""
    return table_properties(spark, table).get("current-snapshot-id") == "none"


# First key types whose ranged form (first_key_values') is Iceberg's literal of the value:
# integers, and a date's days since 1970 (a string's form is the hex of its bytes)
PLANNED_KEY_TYPES = ("smallint", "int", "bigint", "date")


def key_bounds_meet(spark, table: str, spec: dict, key_range: tuple[int, int]) -> bool:
    """Whether a data file of the table's current snapshot has first-key bounds (lower and
    upper, in its manifest) that meet the batch's key range: Iceberg's scan planning, no
    Spark job. True when that cannot be told here (another key type, or no Iceberg Java
    API at hand): the caller then scans."""
    key = first_key_column(spec)
    if key["type"] not in PLANNED_KEY_TYPES:
        return True
    lo, hi = (int(v) for v in key_range)  # a date's form is its days, as Iceberg's
    try:
        jvm = spark._jvm
        loaded = jvm.org.apache.iceberg.spark.Spark3Util.loadIcebergTable(
            spark._jsparkSession, table)
        if loaded.currentSnapshot() is None:
            return False
        exprs = jvm.org.apache.iceberg.expressions.Expressions
        within = getattr(exprs, "and")(exprs.greaterThanOrEqual(key["name"], lo),
                                       exprs.lessThanOrEqual(key["name"], hi))
        tasks = loaded.newScan().caseSensitive(False).filter(within).planFiles()
        try:
            meet = tasks.iterator().hasNext()
        finally:
            tasks.close()
    except Exception as exc:  # the caller's scan answers exactly
        log(f"{table}: key bounds not planned ({type(exc).__name__}: {exc}); scanning")
        return True
    if not meet:
        log(f"{table}: no data file's key bounds meet the batch's [{lo}, {hi}]")
    return meet


def holds_no_key_within(spark, table: str, spec: dict, key_range: tuple | None) -> bool:
    """No row of the table has its first key in the batch's key range (without a range:
    the table was never written). The emitter reads a table by key, so its LOAD files
    hold disjoint key ranges and each finds none of the previous ones' keys (DMS's read
    order is not documented: overlapping files are merged). Data files' key bounds answer
    most batches (new keys past the table's); where some file's bounds meet the range,
    a scan of those files answers."""
    if key_range is not None and not key_bounds_meet(spark, table, spec, key_range):
        return True
    if never_written(spark, table):
        return True
    if key_range is None:
        return False
    first = q(first_key_column(spec)["name"])
    return not spark.sql(f"SELECT 1 FROM {table} "
                         f"WHERE {key_within(first, spec, key_range)} LIMIT 1").take(1)


def snapshot_summary(spark, table: str) -> dict[str, str]:
    """The summary of the table's current snapshot ({} when it has none), through
    Iceberg's Java API (the catalog's loaded table, no Spark job); through the snapshots
    metadata table where that is not at hand."""
    try:
        loaded = spark._jvm.org.apache.iceberg.spark.Spark3Util.loadIcebergTable(
            spark._jsparkSession, table)
        snapshot = loaded.currentSnapshot()
        return {} if snapshot is None else dict(snapshot.summary())
    except Exception:
        row = spark.sql(f"SELECT summary FROM {table}.snapshots "
                        "ORDER BY committed_at DESC LIMIT 1").first()
        return dict(row.summary) if row else {}


def added_records(spark, table: str) -> int:
    """The records the table's current snapshot added (its summary's count)."""
    return int(snapshot_summary(spark, table).get("added-records") or 0)


def _on(keys: list[str], left: str, right: str) -> str:
    return " AND ".join(f"{left}.{q(k)} = {right}.{q(k)}" for k in keys)


def run(spark, bronze_df, spec: dict, run_id: str,
        compact_after: int = MAX_FILES_BEFORE_COMPACTION) -> dict:
    """Everything after one table's bronze read (`bronze_df` carries SOURCE_FILE_COLUMN,
    Glue's attachFilename); returns the table's metrics."""
    from pyspark.sql import functions as F
    from pyspark.sql.window import Window

    phases = Phases()
    silver, tombstones = spec["silver_table"], spec["tombstone_table"]
    quarantine, keys = spec["quarantine_table"], spec["keys"]
    seq = role_column(spec, ROLE_CHANGE_SEQ)
    view = f"_cdclab_{abs(hash(spec['name'])):x}"  # this table's temp views
    spark.conf.set("spark.sql.session.timeZone", "UTC")  # DMS timestamps are UTC
    ensure_tables(spark, spec)
    phases.done("ensure tables")
    if SOURCE_FILE_COLUMN not in bronze_df.columns:  # nothing new: Glue's frame is empty
        return {"files": 0, "rows_read": 0, "quarantined": 0, "valid": 0, "inserted": 0,
                "updated": 0, "deleted": 0, "old_keys_deleted": 0, "skipped": 0,
                "latency": [], "phase_seconds": phases.seconds}
    # Not cached: accounting reads only the columns it validates, then the valid rows flow
    # once into the dedup below (caching a big full load cost more than reading it twice).
    read = read_records(with_virtual_columns(bronze_df, spec), spec)
    accounted = account(read, spec)
    parsed = numbered(read, accounted.spans, spec)
    phases.done("read and validate",
                f"{len(accounted.files)} files, {accounted.rows} records")
    metrics: dict = {"files": len(accounted.files), "rows_read": accounted.rows,
                     "quarantined": accounted.quarantined}
    if not accounted.files:
        return metrics | {"valid": 0, "inserted": 0, "updated": 0, "deleted": 0,
                          "old_keys_deleted": 0, "skipped": 0, "latency": [],
                          "phase_seconds": phases.seconds}

    if metrics["quarantined"]:
        bad = parsed.where(F.col(REASON).isNotNull()).cache()  # logged, then merged
        logged = bad.limit(MAX_LOGGED_BAD_ROWS).collect()
        for r in logged:
            log(f"QUARANTINED {r[FILE]} record {r[RECORD]}: {r[REASON]}")
        metrics["quarantine_examples"] = [
            {"file": r[FILE], "record": r[RECORD], "reason": r[REASON]}
            for r in logged[:MAX_REPORTED_BAD_ROWS]]
        bad.select(
            F.col(FILE).alias("source_file"), F.col(RECORD).alias("record_number"),
            F.col(LINE).alias("line_number"), F.col(REASON).alias("reason"),
            F.col(RAW).alias("raw_fields"),
            F.lit(run_id).alias("run_id"), F.current_timestamp().alias("quarantined_at"),
        ).createOrReplaceTempView(f"{view}_bad")
        spark.sql(f"""MERGE INTO {quarantine} q USING {view}_bad b
            ON q.source_file = b.source_file AND q.record_number = b.record_number
               AND q.raw_fields <=> b.raw_fields
            WHEN NOT MATCHED THEN INSERT *""")
        bad.unpersist()
        phases.done("quarantine", f"{metrics['quarantined']} records")

    op = role_column(spec, ROLE_OP)
    # with the key's before image, a key change also deletes the old key (DMS's
    # add-before-image-columns); without it DMS's output leaves the old key in silver.
    # `account` counted the key changes: a batch without one needs no old-key rows.
    before = before_image_keys(spec) if accounted.moved else {}
    types = {c["name"]: c["type"] for c in spec["silver_columns"]}
    text = spec.get("bronze_format", "csv") == "csv"
    cleaned = parsed.where(F.col(REASON).isNull()).select(
        F.col(q(op)).alias(OP), *silver_projection(spec),
        # full-load rows are not CDC changes: no commit-to-silver latency for them
        F.regexp_extract(FILE, FULL_LOAD_FILE, 2).alias(LOAD),
        *[typed(before[k], types[k], text).alias(f"{BEFORE}{i}")
          for i, k in enumerate(keys) if before],
    )
    cleaned = (with_old_key_deletes(cleaned, spec) if before
               else cleaned.withColumn(OLD_KEY, F.lit(False)))
    if metrics["rows_read"] - metrics["quarantined"] == 1:
        # one valid record: its old key's D (if any) is another key, so each key has one row
        latest = cleaned
    else:
        latest = cleaned.withColumn(RANK, F.row_number().over(
            # one sequence is one row: an old key's D never ties with a change of its
            # own, but if a file repeats a sequence, the row's own change wins
            Window.partitionBy(*[F.col(q(k)) for k in keys]).orderBy(
                F.col(q(seq)).desc(), F.col(OLD_KEY).asc()))).where(F.col(RANK) == 1).drop(RANK)
    latest = latest.drop(*[f"{BEFORE}{i}" for i in range(len(keys)) if before])
    # the batch holds a D, or a U whose key change makes one (the tombstones take them)
    may_delete = bool(accounted.deletes or accounted.moved)
    latest.createOrReplaceTempView(f"{view}_latest")
    if only_inserts(accounted) and all(
            holds_no_key_within(spark, t, spec, accounted.key_range)
            for t in (silver, tombstones)):
        # The MERGE's classification would find every row an insert.
        counts, old_keys_deleted, latency = append_new_keys(spark, spec, view, phases,
                                                            accounted.insert_times)
    else:
        if may_delete:
            # Cached for the classification and the tombstones' MERGE, so the batch is
            # read once. Not the classification's own cache: that one joins silver, and
            # the silver MERGE's commit drops it (Spark recaches what read a table written).
            latest.cache()
        counts, old_keys_deleted, latency = classify_and_merge(spark, spec, view, phases,
                                                               accounted.key_range)
    written = [silver]
    if may_delete and (counts.get("delete", 0) or counts.get("noop", 0)
                       or counts.get("stale", 0)):
        merge_tombstones(spark, spec, f"{view}_latest", accounted.key_range)
        phases.done("merge tombstones")
        written.append(tombstones)
    latest.unpersist()  # the runner's session is warm and shared by later runs
    # only a table written by this run can have gained files
    compacted = [t for t in written if maintain(spark, t, compact_after)]
    if compacted:
        phases.done("compact", ", ".join(compacted))
    return metrics | {
        "valid": metrics["rows_read"] - metrics["quarantined"],
        "inserted": counts.get("insert", 0),
        "updated": counts.get("update", 0),
        "deleted": counts.get("delete", 0),
        "old_keys_deleted": old_keys_deleted,  # of them, old keys of key changes
        # older than silver, or a delete of an absent row (tombstoned below)
        "skipped": counts.get("stale", 0) + counts.get("noop", 0),
        "latency": latency,
        "phase_seconds": phases.seconds,
    }


def append_new_keys(spark, spec: dict, view: str, phases: Phases,
                    insert_times: list[float]) -> tuple[dict, int, list]:
    """The batch's latest records, all inserts of keys silver and the tombstones lack,
    appended to silver in one pass: no classification, no MERGE. Returns (counts per
    action, old keys deleted, latencies) as classify_and_merge gives them; the latencies
    are those of the CDC inserts (`insert_times`: a key inserted twice in one batch, as
    only a replayed file could, counts twice; full-load rows have none)."""
    silver = spec["silver_table"]
    columns = ", ".join(q(c["name"]) for c in spec["silver_columns"])
    spark.sql(f"INSERT INTO {silver} ({columns}) SELECT {columns} FROM {view}_latest")
    now = time.time()
    inserted = added_records(spark, silver)
    phases.done("insert into silver", f"{inserted} records of new keys")
    return {"insert": inserted}, 0, [now - t for t in insert_times]


def classify_and_merge(spark, spec: dict, view: str, phases: Phases,
                       key_range: tuple | None = None) -> tuple[dict, int, list]:
    """Classify the batch's latest records against silver and tombstones, then MERGE them
    into silver (which re-checks the same conditions); returns the counts per action, the
    old keys deleted and the applied CDC changes' commit-to-silver latencies. `key_range`
    (account's) bounds what both read of silver and the tombstones."""
    silver, tombstones, keys = spec["silver_table"], spec["tombstone_table"], spec["keys"]
    seq, ts = role_column(spec, ROLE_CHANGE_SEQ), role_column(spec, ROLE_TIMESTAMP)
    names = [c["name"] for c in spec["silver_columns"]]
    first = q(keys[0])
    src = spark.sql(f"""
        SELECT l.*, CASE
            WHEN t.{first} IS NULL THEN IF(l.{OP} = 'D', 'noop', 'insert')
            WHEN l.{q(seq)} <= t.{q(seq)} THEN 'stale'
            WHEN l.{OP} = 'D' THEN 'delete' ELSE 'update' END AS {ACTION}
        FROM {view}_latest l
        LEFT JOIN {tombstones} d
          ON {_on(keys, 'l', 'd')} AND {key_within(f'd.{first}', spec, key_range)}
        LEFT JOIN (SELECT {', '.join(q(k) for k in keys)}, {q(seq)} FROM {silver}
                   WHERE {key_within(first, spec, key_range)}) t
          ON {_on(keys, 'l', 't')}
        WHERE d.{first} IS NULL OR l.{q(seq)} > d.change_seq
    """).cache()  # evaluated once, before the MERGE changes silver
    src.createOrReplaceTempView(f"{view}_src")
    # One pass: counts per action, and the commit times of the applied CDC changes.
    commit_time = (f"unix_micros({q(ts)}) / 1e6" if ts else "NULL")
    by_action = spark.sql(f"""
        SELECT {ACTION} AS action, count(*) AS n, count_if({OLD_KEY}) AS old_keys,
            collect_list(CASE
            WHEN {ACTION} IN ('insert', 'update', 'delete') AND {LOAD} = '' AND NOT {OLD_KEY}
            THEN {commit_time} END) AS ts
        FROM {view}_src GROUP BY {ACTION}""").collect()
    counts = {r.action: r.n for r in by_action}
    old_keys_deleted = sum(r.old_keys for r in by_action if r.action == "delete")
    applied_ts = [t for r in by_action for t in r.ts]
    phases.done("dedup and classify")

    updates = ", ".join(f"t.{q(n)} = s.{q(n)}" for n in names if n not in keys)
    merge_into(spark, silver, f"""
        MERGE INTO {silver} t
        USING (SELECT * FROM {view}_src WHERE {ACTION} IN ('insert', 'update', 'delete')) s
        ON {_on(keys, 't', 's')} AND {key_within(f't.{first}', spec, key_range)}
        WHEN MATCHED AND s.{q(seq)} > t.{q(seq)} AND s.{OP} = 'D' THEN DELETE
        WHEN MATCHED AND s.{q(seq)} > t.{q(seq)} THEN UPDATE SET {updates}
        WHEN NOT MATCHED AND s.{OP} <> 'D' THEN INSERT ({', '.join(q(n) for n in names)})
            VALUES ({', '.join('s.' + q(n) for n in names)})
    """)
    now = time.time()
    phases.done("merge into silver")
    src.unpersist()  # the runner's session is warm and shared by later runs
    return counts, old_keys_deleted, [now - t for t in applied_ts]


def merge_into(spark, table: str, statement: str) -> None:
    """Run a MERGE INTO `table`. A copy-on-write table (a table made outside this job, with
    Iceberg's default modes) refuses it at analysis: its rewrite reads the source once more
    to find the files to replace, and the source numbers the records it reads
    (monotonically_increasing_id). The error then says which table, and how to set it."""
    try:
        spark.sql(statement)
    except Exception as exc:
        if "INVALID_NON_DETERMINISTIC_EXPRESSIONS" not in str(exc):
            raise
        have = table_properties(spark, table)
        modes = {k: have.get(k, "copy-on-write") for k in MERGE_ON_READ}
        raise RuntimeError(
            f"MERGE INTO {table} refused: the table is copy-on-write ({modes}); this job "
            "writes merge-on-read, as the tables it creates are. Set it: ALTER TABLE "
            f"{table} SET TBLPROPERTIES {properties_sql(MERGE_ON_READ)}") from exc


COUNTS = ("files", "rows_read", "quarantined", "valid", "inserted", "updated", "deleted",
          "old_keys_deleted", "skipped", "objects_skipped")


def summarize(run_id: str, per_table: dict[str, dict]) -> dict:
    """The run's metrics: totals over its tables, pooled latencies, and each table's own
    (cdclab status, the demo and the benchmarks read the totals)."""
    latencies = [t for m in per_table.values() for t in m["latency"]]
    phases: dict[str, float] = {}
    examples = []
    for m in per_table.values():
        for name, seconds in m["phase_seconds"].items():
            phases[name] = round(phases.get(name, 0.0) + seconds, 3)
        examples += m.get("quarantine_examples", [])
    tables = {name: {k: v for k, v in m.items() if k != "latency"}
              for name, m in per_table.items()}
    totals = {k: sum(m.get(k, 0) for m in per_table.values()) for k in COUNTS}
    return {"run_id": run_id, **totals,
            **({"quarantine_examples": examples[:MAX_REPORTED_BAD_ROWS]} if examples else {}),
            "latency_seconds": percentiles(latencies) | {"samples": latency_samples(latencies)},
            "phase_seconds": phases, "tables": tables}


def maintain(spark, table: str, max_files: int = MAX_FILES_BEFORE_COMPACTION) -> bool:
    """Compact once merge-on-read data and delete files pile up (each run adds a few),
    so scans and MERGEs stay fast in a long-running lab. Snapshots are kept (time travel).
    """
    summary = snapshot_summary(spark, table)
    files = int(summary.get("total-data-files", 0)) + int(summary.get("total-delete-files", 0))
    if files <= max_files:
        return False
    catalog, name = table.split(".", 1)
    spark.sql(f"""CALL {catalog}.system.rewrite_data_files(table => '{name}',
        options => map('rewrite-all', 'true', 'remove-dangling-deletes', 'true'))""")
    return True


def bounded_options(bounded_files: int, bounded_size: int) -> dict[str, str]:
    """Glue's bounded-execution options for from_catalog ("need to be string"); one of them,
    as AWS supports a single boundary (a size replaces the file count); none when 0."""
    if bounded_size > 0:
        return {"boundedSize": str(bounded_size)}
    return {"boundedFiles": str(bounded_files)} if bounded_files > 0 else {}


def input_files(bronze_df) -> list[str]:
    """The files behind Glue's frame, when Spark can tell (empty files included)."""
    try:
        return list(bronze_df.inputFiles())
    except Exception:  # a frame Spark cannot trace to files (e.g. built from an RDD)
        return []


def file_bytes(spark, paths: list[str]) -> int | None:
    """The files' total size through Hadoop's FileSystem (the job's own S3 access); None
    when a size cannot be had."""
    try:
        total = 0
        for p in paths:
            fs, path = hadoop_file(spark, p)
            total += fs.getFileStatus(path).getLen()
        return total
    except Exception:
        return None


def input_left(spark, bronze_df, metrics: dict, bounded_files: int, bounded_size: int,
               guarded: bool = False) -> bool:
    """Did this table's read stop at the cap, so input may be waiting ("backlog")? Glue
    does not say; a run that read as many files (or bytes) as the cap reports it, and a
    follow-up run finds the rest, or nothing. A read the input guard narrowed always
    does: it is one step of the guard's search, and its count proves nothing, since the
    files it chose may be gone (quarantined meanwhile) when Spark lists them."""
    if guarded:
        return True
    if bounded_size <= 0 and bounded_files <= 0:
        return False
    files = input_files(bronze_df)
    read = max(len(files), int(metrics.get("files", 0)))
    if bounded_size > 0:
        if not read:
            return False
        size = file_bytes(spark, files) if len(files) >= read else None
        return size is None or size >= bounded_size  # unknown size: look again
    return read >= bounded_files


def _utc(epoch_s: float) -> str:
    """A TIMESTAMP literal in UTC (run() sets the session time zone to UTC)."""
    import datetime

    t = datetime.datetime.fromtimestamp(epoch_s, datetime.UTC)
    return "TIMESTAMP '" + t.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + "'"


def table_properties(spark, table: str) -> dict[str, str]:
    return {r.key: r.value for r in spark.sql(f"SHOW TBLPROPERTIES {table}").collect()}


def maintenance_due(properties: dict[str, str], now_ms: int, interval_minutes: float) -> bool:
    """Due when the interval has passed, when the clock went back, or when the time is not
    a number; a table never kept is not due (first_upkeep) unless the interval is 0."""
    if first_upkeep(properties):
        return interval_minutes <= 0
    try:
        last = int(properties[LAST_MAINTENANCE_PROPERTY])
    except ValueError:
        return True
    return not 0 <= now_ms - last < interval_minutes * 60_000


def first_upkeep(properties: dict[str, str]) -> bool:
    """The table was never kept: its interval starts now. Its snapshots and files are no
    older than this run's first look at it, so the steps would find nothing to do, and
    they would make the run that usually first finds it, the full load's, seconds longer."""
    return LAST_MAINTENANCE_PROPERTY not in properties


def keep_metadata_files(spark, spec: dict, silver_properties: dict[str, str]) -> None:
    """METADATA_CLEANUP on the table's silver, tombstone and quarantine tables, where a
    table lacks it (silver's properties already read)."""
    for table in (spec["silver_table"], spec["tombstone_table"], spec["quarantine_table"]):
        have = (silver_properties if table == spec["silver_table"]
                else table_properties(spark, table))
        missing = {k: v for k, v in METADATA_CLEANUP.items() if have.get(k) != v}
        if missing:
            spark.sql(f"ALTER TABLE {table} SET TBLPROPERTIES {properties_sql(missing)}")


def mark_upkeep(spark, table: str, now: float) -> None:
    spark.sql(f"ALTER TABLE {table} SET TBLPROPERTIES "
              f"('{LAST_MAINTENANCE_PROPERTY}'='{int(now * 1000)}')")


def loaded_table(spark, table: str):
    """The Iceberg Java Table the session's catalog has loaded."""
    return spark._jvm.org.apache.iceberg.spark.Spark3Util.loadIcebergTable(
        spark._jsparkSession, table)


def snapshot_count(spark, table: str) -> int:
    """How many snapshots the table's metadata lists, through Iceberg's Java API (the
    catalog's loaded table, no Spark job); through the snapshots metadata table where
    that is not at hand (said in the log: a Spark job in every run)."""
    try:
        return int(spark._jvm.org.apache.iceberg.relocated.com.google.common.collect
                   .Iterables.size(loaded_table(spark, table).snapshots()))
    except Exception as e:
        log(f"{table}: snapshots counted by a Spark job ({type(e).__name__}: {str(e)[:200]})")
        return int(spark.sql(f"SELECT count(*) AS n FROM {table}.snapshots").first().n)


def snapshot_counts(spark, tables: tuple[str, ...]) -> tuple[dict[str, int], list[str]]:
    """Each table's snapshot count, and the errors of those that could not be counted
    (they are left out: a count that fails never fails the run)."""
    counts, errors = {}, []
    for table in tables:
        try:
            counts[table] = snapshot_count(spark, table)
        except Exception as e:
            errors.append(f"count snapshots of {table}: {type(e).__name__}: {str(e)[:300]}")
            log(f"maintenance: counting the snapshots of {table} failed: {e}")
    return counts, errors


def expire_snapshots(spark, table: str, older_than_s: float, retain_last: int) -> int:
    """Snapshots older than `older_than_s` go, the newest retain_last stay whatever their
    age, with the files only they reference: Iceberg's own Table.expireSnapshots
    (Iceberg's maintenance docs) in the driver, which reads the expired snapshots'
    manifests, where the expire_snapshots procedure lists every file the table can reach
    (126 of 226 snapshots: 14.2 s, against 0.93 s for 118; docs/performance.md). Returns
    the snapshots expired."""
    before = snapshot_count(spark, table)
    (loaded_table(spark, table).expireSnapshots()
     .expireOlderThan(int(older_than_s * 1000)).retainLast(int(retain_last)).commit())
    return before - snapshot_count(spark, table)


def snapshot_bound(plan: dict) -> int:
    """max_snapshots as the job applies it: 0 (no bound) also for what pipeline.toml
    refuses but the job may be given directly (under twice retain_last_snapshots, which
    would expire at every commit)."""
    bound = int(plan["max_snapshots"])
    return bound if bound >= 2 * int(plan["retain_last_snapshots"]) else 0


def snapshot_expiry(count: int, plan: dict, now: float, timed: bool) -> tuple[float, int] | None:
    """(older_than, retain_last) of the expiry a table with `count` snapshots needs now,
    or None. Over max_snapshots (0, or under twice retain_last_snapshots: no bound) it
    keeps the newest half of the bound whatever the window, so the next expiry waits for
    as many commits again; otherwise only the timed upkeep (`timed`) expires, by the
    time-travel window."""
    bound, retain = snapshot_bound(plan), int(plan["retain_last_snapshots"])
    if bound and count > bound:
        return now, max(retain, bound // 2)
    if timed:
        return now - plan["snapshot_retention_hours"] * 3600, retain
    return None


def remove_orphan_files(spark, table: str, older_than_s: float) -> int:
    """CALL remove_orphan_files: files under the table's location that no metadata
    references and that are older than the safe age (never a write still in progress)."""
    catalog, name = table.split(".", 1)
    return len(spark.sql(f"""CALL {catalog}.system.remove_orphan_files(table => '{name}',
        older_than => {_utc(older_than_s)})""").collect())


def prune_tombstones(spark, table: str, older_than_s: float) -> int:
    """Drop the tombstones of deletes committed before the horizon (docs/operations.md:
    only in a run that left no input for later)."""
    cond = f"deleted_at < {_utc(older_than_s)}"
    n = spark.sql(f"SELECT count(*) AS n FROM {table} WHERE {cond}").first().n
    if n:
        spark.sql(f"DELETE FROM {table} WHERE {cond}")
    return int(n)


def upkeep(spark, spec: dict, plan: dict, backlog: bool, now: float | None = None) -> dict | None:
    """The table's scheduled Iceberg upkeep, when due (LAST_MAINTENANCE_PROPERTY on its
    silver table): tombstone pruning (not while input waits), snapshot expiry and orphan
    file removal on its silver, tombstone and quarantine tables; and in any run, the
    expiry of a table holding more than max_snapshots (snapshot_expiry). Returns what it
    did, or None when nothing was due."""
    now = time.time() if now is None else now
    silver = spec["silver_table"]
    props = table_properties(spark, silver)
    timed = maintenance_due(props, int(now * 1000), plan["maintenance_interval_minutes"])
    if not timed and first_upkeep(props):
        keep_metadata_files(spark, spec, props)
        mark_upkeep(spark, silver, now)
        log(f"{silver}: first upkeep in {plan['maintenance_interval_minutes']:g} min")
        return None
    tables = (silver, spec["tombstone_table"], spec["quarantine_table"])
    # Every snapshot is listed in each metadata.json that every load and commit of the
    # table reads and writes: 1,100 of them made a one-row run 0.6-0.8 s longer
    # (docs/performance.md), so a table over max_snapshots is expired at once.
    started = time.monotonic()
    bound = snapshot_bound(plan)
    counts, errors = snapshot_counts(spark, tables) if bound else ({}, [])
    expiries = {t: snapshot_expiry(counts.get(t, 0), plan, now, timed) for t in tables}
    if not timed and not errors and not any(expiries.values()):
        return None
    done: dict = {"tombstones_pruned": 0, "snapshots_expired": 0,
                  "orphan_files_removed": 0, "errors": errors,
                  "snapshots_bounded": {t: n for t, n in counts.items() if n > bound}}

    def step(what: str, fn, *args) -> int:
        """One upkeep step; a failure is reported (metrics, log), never fails the run:
        the merge is done, and the next interval tries again."""
        try:
            return fn(*args)
        except Exception as e:
            done["errors"].append(f"{what}: {type(e).__name__}: {str(e)[:300]}")
            log(f"maintenance of {what} failed: {e}")
            return 0

    horizon_days = plan["tombstone_retention_days"]
    if timed and horizon_days > 0 and not backlog:
        done["tombstones_pruned"] = step(f"prune {spec['tombstone_table']}", prune_tombstones,
                                         spark, spec["tombstone_table"],
                                         now - horizon_days * 86400)
    if timed:
        keep_metadata_files(spark, spec, props)
    for table in tables:
        if expiries[table]:
            done["snapshots_expired"] += step(f"expire snapshots of {table}",
                                              expire_snapshots, spark, table, *expiries[table])
        if timed:
            done["orphan_files_removed"] += step(
                f"remove_orphan_files {table}", remove_orphan_files, spark, table,
                now - plan["orphan_file_age_hours"] * 3600)
    if timed:
        mark_upkeep(spark, silver, now)
    done["seconds"] = round(time.monotonic() - started, 3)
    log(f"{silver}: maintenance {done}")
    return done


def merge_tombstones(spark, spec: dict, latest_view: str,
                     key_range: tuple | None = None) -> None:
    """Upsert the batch's deletes (max seq per key) so no older change resurrects a row."""
    keys, seq = spec["keys"], role_column(spec, ROLE_CHANGE_SEQ)
    within = key_within(f"t.{q(keys[0])}", spec, key_range)
    ts = role_column(spec, ROLE_TIMESTAMP)
    deleted_at = q(ts) if ts else "current_timestamp()"
    key_list = ", ".join(q(k) for k in keys)
    spark.sql(f"""
        MERGE INTO {spec['tombstone_table']} t
        USING (SELECT {key_list}, {q(seq)} AS change_seq, {deleted_at} AS deleted_at
               FROM {latest_view} WHERE {OP} = 'D') s
        ON {_on(keys, 't', 's')} AND {within}
        WHEN MATCHED AND s.change_seq > t.change_seq THEN UPDATE SET
            t.change_seq = s.change_seq, t.deleted_at = s.deleted_at
        WHEN NOT MATCHED THEN INSERT ({key_list}, change_seq, deleted_at)
            VALUES ({', '.join('s.' + q(k) for k in keys)}, s.change_seq, s.deleted_at)
    """)


MARKER_CLOCK_MARGIN_MS = 2000  # S3's clock vs the driver's: keep a marker when unsure


def keep_marker(written_ms: int, started_ms: int, body: str) -> bool:
    """Keep a marker this run found at its end (having left nothing for later)? Only one
    the Lambda wrote after this run started: a file landed too late for this run's
    listing. A marker a run wrote is older than this run's listing (one run at a time),
    so this run has read what it announced."""
    if written_ms < started_ms - MARKER_CLOCK_MARGIN_MS:
        return False
    try:
        return json.loads(body).get("source") != "job"
    except (ValueError, AttributeError):
        return True  # unreadable: keep it, a follow-up run costs little


def marker_client():
    """boto3 S3, as on Glue (the job's role) and locally (AWS_ENDPOINT_URL_S3, the glue
    user's keys): exactly the calls its IAM grants (put, head, get, delete the key)."""
    import os

    import boto3
    from botocore.config import Config

    region = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
    return boto3.client("s3", region_name=region,
                        config=Config(s3={"addressing_style": "path"}))


def _where(marker: str) -> tuple[str, str]:
    bucket, _, key = marker.removeprefix("s3://").partition("/")
    return bucket, key


def write_backlog_marker(marker: str, run_id: str, per_table: dict[str, dict]) -> None:
    """Before the commit: a table's input was left for later, so the Lambda starts the
    next run while the marker exists (docs/operations.md). Should the commit fail, the
    marker stays and the sweep starts a run again. A failure to write is logged and
    never fails the run: the next upload starts the next run."""
    waiting = sorted(name for name, m in per_table.items() if m.get("backlog"))
    if not waiting:
        return
    bucket, key = _where(marker)
    body = {"source": "job", "run_id": run_id, "tables": waiting,
            "written_at": int(time.time() * 1000)}
    try:
        marker_client().put_object(Bucket=bucket, Key=key, Body=json.dumps(body).encode(),
                                   ContentType="application/json")
        log(f"input left for later in {waiting}: wrote {marker}")
    except Exception as e:
        log(f"WARNING: backlog marker {marker} not written: {type(e).__name__}: {e}")


def clear_backlog_marker(marker: str, per_table: dict[str, dict], started_ms: int) -> None:
    """After the commit, when a run of every table left nothing for later: delete the
    marker, unless the Lambda wrote it after this run started (keep_marker). A failure
    is logged; the Lambda's stale-marker check keeps runs from chaining on it."""
    if any(m.get("backlog") for m in per_table.values()):
        return
    from botocore.exceptions import ClientError

    bucket, key = _where(marker)
    s3 = marker_client()
    try:
        try:
            got = s3.get_object(Bucket=bucket, Key=key)
        except ClientError as e:
            if e.response.get("Error", {}).get("Code") in ("NoSuchKey", "404"):
                return
            raise
        written = int(got["LastModified"].timestamp() * 1000)
        body = got["Body"].read().decode("utf-8", "replace")
        if keep_marker(written, started_ms, body):
            log(f"{marker}: input landed during this run: kept")
            return
        again = s3.head_object(Bucket=bucket, Key=key)  # rewritten since? then keep it
        if again["ETag"] == got["ETag"]:
            s3.delete_object(Bucket=bucket, Key=key)
    except Exception as e:
        log(f"WARNING: backlog marker {marker} not cleared: {type(e).__name__}: {e}")


# --- input guard: an object that fails every run is found and skipped ------------------
# The Lambda's gate refuses what it can see is bad; an object that still fails the job
# (it kills the driver, it breaks the reader) would fail every later run, because the
# bookmark never moves past it. Before a table's first action the run writes what it is
# about to read (`inflight`); a run that finds another run's inflight there knows that run
# did not finish. When that run failed because of its input (input_failure: not a
# restart, an outage, a stop), the files are suspects: a second failure on the same files
# halves the next run's input (Glue's boundedFiles takes the oldest), a half that succeeds
# is committed, and one file that fails twice alone is skipped: the run lets the bookmark
# pass it unread, records it in the table's quarantine table, and the rest flows. The
# object stays in bronze. docs/operations.md ("When an object fails every run").
GUARD_VERSION = 1
GUARD_SKIPS_KEPT = 50
# What a run's input does to it, as its errors say: the driver died (an OutOfMemoryError
# ends it) or ran out of memory, a file could not be read or parsed. Anything else (a
# catalog or S3 outage, a restart, a stop, a bug) is not counted against the files: an
# outage must never make the guard skip a good object. Where the job caught the error
# itself it records the whole text (a Py4JJavaError's first line names no cause).
INPUT_ERRORS = (
    "Spark driver (JVM) died", "OutOfMemoryError", "Java heap space",
    "GC overhead limit exceeded", "FAILED_READ_FILE", "Encountered error while reading file",
    "EOFException", "Unexpected end of input stream", "Not in GZIP format", "ZipException",
    "MalformedInputException", "CharacterCodingException", "TextParsingException",
    "ParquetDecodingException", "is not a Parquet file", "Malformed records",
)


def input_failure(state: str | None, error: str | None) -> bool:
    """Did a run that never cleared its inflight fail because of what it read? A TIMEOUT
    does (a read that never ends), and a failure whose error says so (INPUT_ERRORS)."""
    if state == "TIMEOUT":
        return True
    if state not in ("FAILED", "ERROR"):
        return False  # SUCCEEDED (its clean-up failed), STOPPED, or still going
    return any(s in (error or "") for s in INPUT_ERRORS)


def note_failure(guard: dict, inflight: dict) -> dict:
    """The guard after the run of `inflight` failed on its files."""
    tables = dict(guard.get("tables") or {})
    entry = tables.get(inflight["table"]) or {}
    files = sorted(inflight.get("files") or [])
    if sorted(entry.get("suspects") or []) == files:
        failures = [*entry.get("failures", []), inflight["run_id"]]
    else:
        failures = [inflight["run_id"]]
    tables[inflight["table"]] = {"suspects": files, "failures": failures}
    return {**guard, "tables": tables, "inflight": None}


def plan_read(guard: dict, table: str) -> tuple[int | None, str | None]:
    """(the file cap this run's read of `table` must keep to, or None; the one file to
    skip unread, or None). Suspects that failed once are read again exactly (new files
    wait); twice: the older half is read; a single file that failed twice is skipped,
    unless the table's last skip was not followed by a read that succeeded: then it is
    the job that fails, not one object, and nothing more is skipped (on_probation)."""
    entry = (guard.get("tables") or {}).get(table) or {}
    suspects = entry.get("suspects") or []
    if not suspects:
        return None, None
    if len(entry.get("failures", [])) < 2:
        return len(suspects), None
    if len(suspects) == 1:
        return 1, None if on_probation(guard, table) else suspects[0]
    return (len(suspects) + 1) // 2, None


def on_probation(guard: dict, table: str) -> bool:
    return table in (guard.get("probation") or [])


def note_success(guard: dict, read: dict[str, list[str]], skipped: list[dict]) -> dict:
    """The guard after this run committed: the files it read (or skipped) are no longer
    suspects; what remains has not failed on its own yet. A table whose object was
    skipped stays on probation until a run reads some of its files and succeeds."""
    tables = {}
    for table, entry in (guard.get("tables") or {}).items():
        suspects, read_now = set(entry.get("suspects") or []), set(read.get(table, []))
        left = sorted(suspects - read_now)
        # a read of the table that took none of its suspects (they are gone, or were
        # committed by another run) ends the search: kept, they would cap every run
        if left and (table not in read or read_now & suspects):
            tables[table] = {"suspects": left, "failures": []}
    skipped_tables = {s["table"] for s in skipped}
    probation = sorted((set(guard.get("probation") or []) | skipped_tables)
                       - {t for t, files in read.items() if files and t not in skipped_tables})
    skips = [*(guard.get("skipped") or []), *skipped][-GUARD_SKIPS_KEPT:]
    return {"version": GUARD_VERSION, "tables": tables, "inflight": None, "skipped": skips,
            "probation": probation}


def guard_needed(guard: dict) -> bool:
    """Is there anything worth keeping? (else the object is deleted)"""
    return bool(guard.get("tables") or guard.get("inflight") or guard.get("skipped")
                or guard.get("probation"))


class InputGuard:
    """The guard's object (--input_guard s3://...): read at the start, `inflight` written
    before each table's first action, rewritten after the commit. Its failures to read
    or write are logged and never fail the run (the guard only ever narrows input)."""

    def __init__(self, location: str, job_name: str, run_id: str) -> None:
        self.location, self.job_name, self.run_id = location, job_name, run_id
        self.bucket, self.key = _where(location)
        self.doc: dict = {"version": GUARD_VERSION}
        self.read: dict[str, list[str]] = {}
        self.skipped: list[dict] = []
        self.written = False

    def load(self) -> None:
        from botocore.exceptions import ClientError

        try:
            body = marker_client().get_object(Bucket=self.bucket, Key=self.key)["Body"].read()
            self.doc = json.loads(body)
        except ClientError as e:
            if e.response.get("Error", {}).get("Code") not in ("NoSuchKey", "404"):
                log(f"WARNING: input guard {self.location} not read: {e}")
            return
        except Exception as e:
            log(f"WARNING: input guard {self.location} not read: {type(e).__name__}: {e}")
            return
        inflight = self.doc.get("inflight")
        if not inflight or inflight.get("run_id") == self.run_id:
            return
        # how Glue says it ended, and the whole text of what the run caught itself, if
        # anything (a dying driver reaches the run as a py4j network error: only Glue's
        # reason names the death)
        state, error = self._run_outcome(inflight["run_id"])
        both = "\n".join(filter(None, (error, inflight.get("error"))))
        files = len(inflight.get("files") or [])
        if input_failure(state, both):
            log(f"run {inflight['run_id']} did not finish reading {inflight['table']} "
                f"({files} files): {state}: {both[:500]}")
            self.doc = note_failure(self.doc, inflight)
        else:
            log(f"run {inflight['run_id']} did not finish reading {inflight['table']} "
                f"({files} files), not because of them: {state}: {both[:300]}")
            self.doc = {**self.doc, "inflight": None}

    def _run_outcome(self, run_id: str) -> tuple[str | None, str | None]:
        """(JobRunState, ErrorMessage) of the job's earlier run (glue:GetJobRun on its
        own job); unknown: counted as FAILED, which only narrows the next input."""
        import os

        import boto3

        try:
            region = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
            run = boto3.client("glue", region_name=region).get_job_run(
                JobName=self.job_name, RunId=run_id)["JobRun"]
            return run.get("JobRunState"), run.get("ErrorMessage")
        except Exception as e:
            log(f"WARNING: run {run_id}'s outcome unknown ({type(e).__name__}: {e})")
            return "FAILED", None

    def plan(self, table: str) -> tuple[int | None, str | None]:
        cap, skip = plan_read(self.doc, table)
        if cap is not None:
            entry = self.doc["tables"][table]
            log(f"{table}: input guard: {len(entry['suspects'])} suspect file(s), "
                f"{len(entry['failures'])} failure(s): reading at most {cap}"
                + (f", skipping {skip}" if skip else ""))
            if cap == 1 and skip is None and len(entry["failures"]) >= 2:
                log(f"WARNING: {table}: {entry['suspects'][0]} failed twice alone, but the "
                    "object skipped before it was not followed by a run that succeeded: "
                    "the job itself seems to fail; nothing more is skipped until a run "
                    "succeeds (docs/operations.md)")
        return cap, skip

    def reading(self, table: str, files: list[str]) -> None:
        """Before the table's first action: what this run reads."""
        self.read[table] = list(files)
        if files:
            self._write({**self.doc, "inflight": {
                "run_id": self.run_id, "table": table, "files": sorted(files),
                "written_at": int(time.time() * 1000)}})

    def failed(self, table: str, error: BaseException) -> None:
        """The table's processing raised: its whole text (a Java stack trace within),
        so the next run knows whether the input made it fail."""
        inflight = {"run_id": self.run_id, "table": table,
                    "files": sorted(self.read.get(table, [])),
                    "error": f"{type(error).__name__}: {error}"[:4000],
                    "written_at": int(time.time() * 1000)}
        if inflight["files"]:
            self._write({**self.doc, "inflight": inflight})

    def skipping(self, table: str, file: str) -> dict:
        entry = self.doc["tables"][table]
        reason = (f"skipped unread: runs {', '.join(entry['failures'])} failed reading this "
                  "object alone; it stays in bronze (docs/operations.md)")
        record = {"table": table, "file": file, "reason": reason, "run_id": self.run_id,
                  "at": int(time.time() * 1000)}
        self.skipped.append(record)
        return record

    def committed(self) -> None:
        self.doc = note_success(self.doc, self.read, self.skipped)
        if guard_needed(self.doc) or self.written:
            self._write(self.doc if guard_needed(self.doc) else None)

    def _write(self, doc: dict | None) -> None:
        try:
            s3 = marker_client()
            if doc is None:
                s3.delete_object(Bucket=self.bucket, Key=self.key)
            else:
                s3.put_object(Bucket=self.bucket, Key=self.key,
                              Body=json.dumps(doc).encode(), ContentType="application/json")
            self.written = True
        except Exception as e:
            log(f"WARNING: input guard {self.location} not written: {type(e).__name__}: {e}")


def record_skip(spark, spec: dict, record: dict) -> None:
    """The skipped object in the table's quarantine table (no record number: the whole
    object), beside the malformed records."""
    from pyspark.sql import functions as F

    literal_rows(spark, [(record["file"], record["reason"], record["run_id"])],
                 (("source_file", "string"), ("reason", "string"), ("run_id", "string"))).select(
        "source_file", F.lit(None).cast("long").alias("record_number"),
        F.lit(None).cast("long").alias("line_number"), "reason",
        F.lit(None).cast("string").alias("raw_fields"), "run_id",
        F.current_timestamp().alias("quarantined_at"),
    ).writeTo(spec["quarantine_table"]).append()


def skip_object(spark, spec: dict, record: dict) -> dict:
    """A table's metrics for a run that skipped its one suspect object."""
    ensure_tables(spark, spec)
    record_skip(spark, spec, record)
    log(f"QUARANTINED {record['file']}: {record['reason']}")
    return {"files": 0, "rows_read": 0, "quarantined": 0, "valid": 0, "inserted": 0,
            "updated": 0, "deleted": 0, "skipped": 0, "objects_skipped": 1, "latency": [],
            "phase_seconds": {}, "quarantine_examples": [
                {"file": record["file"], "record": None, "reason": record["reason"]}]}


def optional_arg(name: str) -> str | None:
    """An optional job argument (getResolvedOptions only knows required ones)."""
    from awsglue.utils import getResolvedOptions

    return getResolvedOptions(sys.argv, [name])[name] if f"--{name}" in sys.argv else None


def main() -> None:
    from awsglue.context import GlueContext
    from awsglue.job import Job
    from awsglue.utils import getResolvedOptions
    from pyspark.context import SparkContext

    # JOB_RUN_ID is one of Glue's reserved arguments: getResolvedOptions always resolves
    # it (None when absent) and naming it in the list raises "conflicting option string".
    started_ms = int(time.time() * 1000)  # before any listing: see clear_backlog_marker
    args = getResolvedOptions(sys.argv, ["JOB_NAME", "tables_config"])
    run_id = args.get("JOB_RUN_ID") or f"manual-{uuid.uuid4()}"
    compact_after = int(optional_arg("compact_after_files") or MAX_FILES_BEFORE_COMPACTION)
    bounded_files = int(optional_arg("bounded_files") or DEFAULT_BOUNDED_FILES)
    bounded_size = int(optional_arg("bounded_size") or 0)  # > 0: replaces the file count
    plan = {k: float(optional_arg(k) or v) for k, v in MAINTENANCE_DEFAULTS.items()}
    only = optional_arg("tables")  # a comma-separated subset, by source name
    sc = SparkContext.getOrCreate()
    glueContext = GlueContext(sc)
    spark = glueContext.spark_session
    job = Job(glueContext)
    job.init(args["JOB_NAME"], args)

    specs = load_tables(spark, args["tables_config"])
    if only:
        wanted = {t.strip() for t in only.split(",")}
        specs = [s for s in specs if s["name"] in wanted]
    guard_at = optional_arg("input_guard")
    guard = InputGuard(guard_at, args["JOB_NAME"], run_id) if guard_at else None
    if guard:
        guard.load()
    per_table = {}
    for spec in specs:  # each table on its own bookmark key (transformation_ctx)
        log(f"{spec['name']}: {spec['bronze_database']}.{spec['bronze_table']} -> "
            f"{spec['silver_table']}")
        cap, skip = guard.plan(spec["name"]) if guard else (None, None)
        bounds = (bounded_options(bounded_files, bounded_size) if cap is None
                  else {"boundedFiles": str(cap)})
        bronze = glueContext.create_dynamic_frame.from_catalog(
            database=spec["bronze_database"],
            table_name=spec["bronze_table"],
            transformation_ctx=spec["transformation_ctx"],
            # recurse: DMS's date-partitioned CDC files sit in folders below the table's
            additional_options={"attachFilename": SOURCE_FILE_COLUMN, "recurse": True,
                                **bounds},
        ).toDF()
        files = input_files(bronze)
        if skip is not None and files == [skip]:  # the bookmark passes it, unread
            table_metrics = skip_object(spark, spec, guard.skipping(spec["name"], skip))
            guard.read[spec["name"]] = files
        else:
            if guard:
                guard.reading(spec["name"], files)
            try:
                table_metrics = run(spark, bronze, spec, run_id, compact_after)
            except Exception as e:
                if guard:
                    guard.failed(spec["name"], e)
                raise
        table_metrics["backlog"] = input_left(spark, bronze, table_metrics, bounded_files,
                                              bounded_size, guarded=cap is not None)
        table_metrics["maintenance"] = upkeep(spark, spec, plan, table_metrics["backlog"])
        per_table[spec["name"]] = table_metrics
    metrics = {"job": args["JOB_NAME"], **summarize(run_id, per_table),
               "backlog": any(m["backlog"] for m in per_table.values())}
    print("CDCLAB_METRICS " + json.dumps(metrics, sort_keys=True), flush=True)
    marker = optional_arg("backlog_marker")
    if marker:
        write_backlog_marker(marker, run_id, per_table)
    job.commit()
    if guard:
        guard.committed()
    if marker and not only:  # only a run of every table knows that nothing waits
        clear_backlog_marker(marker, per_table, started_ms)


if __name__ == "__main__":
    main()
