"""Glue job: DMS CSV changes (bronze, Glue Data Catalog) -> MERGE INTO Iceberg silver.

Runs unchanged on AWS Glue 5.1 (--datalake-formats iceberg, catalog settings as --conf)
and locally, where it imports AWS's own `awsglue` (AWSGlueDataplanePython) over cdclab's
JVM side. Deployed alone: it must not import cdclab. The merge rules are those of
cdclab/merge_model.py:

- malformed rows go to the quarantine table (file, record number, reason, raw fields);
- per id only the change with the greatest change_seq counts (never the timestamp);
- changes at or below the id's tombstone seq are dropped (deletes stay deleted);
- MERGE ON id: newer D deletes, newer I/U replaces all columns, unmatched I/U inserts;
- the batch's deletes upsert the tombstones (max seq). Replaying a file is harmless.
"""

from __future__ import annotations

import json
import math
import re
import sys
import time
import uuid
from collections.abc import Iterator
from datetime import date, datetime

BRONZE_COLUMNS = (
    "op", "last_updated_ts", "id", "url", "name", "since", "location",
    "response_time", "response_rate", "change_seq",
)
OPS = ("I", "U", "D")
FULL_LOAD_LSN = "0" * 20
INT_MIN, INT_MAX = -(2**31), 2**31 - 1
# Java regex (Spark's split): first comma plus optional ASCII whitespace.
LOCATION_SPLIT = r",[ \t\n\x0B\f\r]*"
MAX_LOGGED_BAD_ROWS = 200
MAX_FILES_BEFORE_COMPACTION = 48  # data + delete files of a table
# Glue's attachFilename: each row's source file, the documented way (input_file_name()
# is empty for grouped, non-FileSplit reads).
SOURCE_FILE_COLUMN = "_cdclab_source_file"

_QUOTED = re.compile(r'"((?:[^"]|"")*)"')
_UNQUOTED = re.compile(r'[^,"\r\n]*')
_TS = re.compile(r"\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(\.\d{1,6})?")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_INT = re.compile(r"[+-]?\d{1,10}")
_SEQ = re.compile(r"\d{35}")

# DDL: the documentation copies live in jobs/ddl/*.sql.
SILVER_DDL = """CREATE TABLE IF NOT EXISTS {table} (
  last_updated_ts TIMESTAMP, id INT, url STRING, name STRING, since DATE,
  location_city STRING, location_country STRING, response_time STRING,
  response_rate STRING, change_seq STRING)
USING iceberg
TBLPROPERTIES ('format-version'='2', 'write.format.default'='parquet',
  'write.delete.mode'='merge-on-read', 'write.update.mode'='merge-on-read',
  'write.merge.mode'='merge-on-read')"""
TOMBSTONE_DDL = """CREATE TABLE IF NOT EXISTS {table} (
  id INT, change_seq STRING, deleted_at TIMESTAMP)
USING iceberg
TBLPROPERTIES ('format-version'='2', 'write.format.default'='parquet',
  'write.merge.mode'='merge-on-read', 'write.update.mode'='merge-on-read')"""
QUARANTINE_DDL = """CREATE TABLE IF NOT EXISTS {table} (
  source_file STRING, record_number BIGINT, line_number BIGINT, reason STRING,
  raw_fields STRING, run_id STRING, quarantined_at TIMESTAMP)
USING iceberg
TBLPROPERTIES ('format-version'='2', 'write.format.default'='parquet')"""


# --- pure parsing and validation (no Spark) -----------------------------------------
def parse_csv(text: str) -> Iterator[tuple[int, int, list[str | None] | None, str | None, str]]:
    """RFC 4180 records as (record_number, line_number, fields, error, raw_text).

    An empty unquoted field is NULL (None); a quoted "" is the empty string. Quoted
    fields may hold commas, doubled quotes and newlines. A malformed record yields
    fields=None and the reason; parsing resumes at the next line. Numbers are 1-based.
    """
    pos, n, line, record = 0, len(text), 1, 0
    while pos < n:
        record += 1
        start_line, start, fields, error = line, pos, [], None
        while True:
            if pos < n and text[pos] == '"':
                m = _QUOTED.match(text, pos)
                if m is None:
                    error, pos = "unterminated quoted field", n
                    break
                fields.append(m.group(1).replace('""', '"'))
                line += m.group(0).count("\n")
                pos = m.end()
            else:
                m = _UNQUOTED.match(text, pos)
                fields.append(m.group(0) or None)
                pos = m.end()
            if pos >= n:
                break
            ch = text[pos]
            if ch == ",":
                pos += 1
                continue
            if ch == "\n" or text.startswith("\r\n", pos):
                pos += 1 if ch == "\n" else 2
                line += 1
                break
            error = "unexpected quote" if ch == '"' else "text after closing quote"
            end = text.find("\n", pos)
            pos = n if end < 0 else end + 1
            line += 1 if end >= 0 else 0
            break
        raw = text[start:pos].rstrip("\r\n")
        yield record, start_line, (None if error else fields), error, raw


def validate(row: dict[str, str | None]) -> str | None:
    """Why a bronze row is malformed, or None if it is a valid change."""
    if row["op"] not in OPS:
        return f"bad Op {row['op']!r}"
    if row["id"] is None or not _INT.fullmatch(row["id"]) or not (
        INT_MIN <= int(row["id"]) <= INT_MAX
    ):
        return f"id is not an INT: {row['id']!r}"
    if row["change_seq"] is None or not _SEQ.fullmatch(row["change_seq"]):
        return f"change_seq is not 35 digits: {row['change_seq']!r}"
    ts = row["last_updated_ts"]
    if ts is None or not _TS.fullmatch(ts) or not _parses(datetime.fromisoformat, ts):
        return f"unparseable last_updated_ts {ts!r}"
    since = row["since"]
    if since is not None and not (_DATE.fullmatch(since) and _parses(date.fromisoformat, since)):
        return f"unparseable since {since!r}"
    return None


def is_full_load_file(path: str) -> bool:
    """DMS names full-load files LOAD00000001.csv...; CDC files are named by time."""
    return path.rsplit("/", 1)[-1].startswith("LOAD")


def _parses(fn, value: str) -> bool:
    try:
        fn(value)
    except ValueError:
        return False
    return True


def parse_file(path: str, data: bytes) -> Iterator[tuple]:
    """Every record of one DMS file as an output tuple (see RECORD_FIELDS); header skipped."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        yield (path, 0, 0, f"file is not UTF-8: {e}", None) + (None,) * len(BRONZE_COLUMNS)
        return
    header: list[str] | None = None
    header_error = None
    for record, line, fields, error, raw in parse_csv(text):
        if header is None and header_error is None:
            names = [(f or "").strip().lower() for f in fields or []]
            missing = [c for c in BRONZE_COLUMNS if c not in names]
            if error or missing or len(set(names)) != len(names):
                header_error = f"bad header ({error or 'missing ' + ','.join(missing)})"
            header = names
            continue
        reason = header_error or error
        values: dict[str, str | None] = {}
        if reason is None:
            if len(fields) != len(header):
                reason = f"{len(fields)} columns, header has {len(header)}"
            else:
                values = dict(zip(header, fields, strict=True))
                if values["change_seq"] is None and is_full_load_file(path):
                    # AWS DMS leaves $AR_H_CHANGE_SEQ empty on full-load rows: they come
                    # before every change, so they get the lowest sequence.
                    values["change_seq"] = f"{FULL_LOAD_LSN}{record:015d}"
                reason = validate(values)
        if reason is not None:
            yield (path, record, line, reason, raw) + (None,) * len(BRONZE_COLUMNS)
        else:
            yield (path, record, line, None, None) + tuple(values[c] for c in BRONZE_COLUMNS)


def percentiles(values: list[float]) -> dict[str, float | int | None]:
    """Nearest-rank p50/p95/max."""
    if not values:
        return {"count": 0, "p50": None, "p95": None, "max": None}
    s = sorted(values)

    def rank(q: float) -> float:
        return round(s[max(0, math.ceil(q * len(s)) - 1)], 3)

    return {"count": len(s), "p50": rank(0.5), "p95": rank(0.95), "max": round(s[-1], 3)}


# --- the Spark job --------------------------------------------------------------------
def record_schema():
    from pyspark.sql.types import LongType, StringType, StructField, StructType

    fields = [
        StructField("source_file", StringType()),
        StructField("record_number", LongType()),
        StructField("line_number", LongType()),
        StructField("reason", StringType()),
        StructField("raw_fields", StringType()),
    ]
    return StructType(fields + [StructField(c, StringType()) for c in BRONZE_COLUMNS])


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


def ensure_tables(spark, silver: str, tombstones: str, quarantine: str) -> None:
    for ns in sorted({namespace_of(t) for t in (silver, tombstones, quarantine)}):
        spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {ns}")
    spark.sql(SILVER_DDL.format(table=silver))
    spark.sql(TOMBSTONE_DDL.format(table=tombstones))
    spark.sql(QUARANTINE_DDL.format(table=quarantine))


class UnaccountedRowsError(RuntimeError):
    """Rows were read whose file is unknown: committing the bookmark could lose them."""


def input_files(bronze_df, file_column: str = SOURCE_FILE_COLUMN) -> list[str]:
    """The files this run read, from Glue's attachFilename column. Fails (before
    job.commit() can advance the bookmark) if any row lacks its file name, or rows were
    read but no file recorded: never a silent skip."""
    per_file = {r[0]: r[1] for r in bronze_df.groupBy(file_column).count().collect()}
    unnamed, rows = per_file.pop(None, 0), sum(per_file.values())
    files = sorted(per_file)
    if unnamed or (rows and not files):
        raise UnaccountedRowsError(
            f"{unnamed} of {rows + unnamed} bronze rows have no {file_column}: "
            f"refusing to commit the job bookmark")
    return files


def run(spark, bronze_df, silver: str, tombstones: str, quarantine: str, run_id: str,
        compact_after: int = MAX_FILES_BEFORE_COMPACTION) -> dict:
    """Everything after the bronze read (`bronze_df` carries SOURCE_FILE_COLUMN, Glue's
    attachFilename); returns the metrics."""
    from pyspark.sql import functions as F
    from pyspark.sql.window import Window

    phases = Phases()
    spark.conf.set("spark.sql.session.timeZone", "UTC")  # DMS timestamps are UTC
    ensure_tables(spark, silver, tombstones, quarantine)
    phases.done("ensure tables")
    files = input_files(bronze_df)
    phases.done("list new files", f"{len(files)} files")
    metrics: dict = {"run_id": run_id, "files": len(files), "rows_read": 0, "quarantined": 0}
    if not files:
        return metrics | {"valid": 0, "inserted": 0, "updated": 0, "deleted": 0,
                          "skipped": 0, "latency_seconds": percentiles([]),
                          "phase_seconds": phases.seconds}

    rdd = spark.sparkContext.binaryFiles(",".join(files)).flatMap(lambda f: parse_file(*f))
    parsed = spark.createDataFrame(rdd, record_schema()).cache()
    bad = parsed.where("reason IS NOT NULL")
    totals = parsed.agg(F.count(F.lit(1)).alias("rows"), F.count("reason").alias("bad")).first()
    metrics["rows_read"], metrics["quarantined"] = totals["rows"], totals["bad"]
    phases.done("parse", f"{metrics['rows_read']} records")
    if metrics["quarantined"]:
        for r in bad.limit(MAX_LOGGED_BAD_ROWS).collect():
            log(f"QUARANTINED {r.source_file} record {r.record_number} "
                f"(line {r.line_number}): {r.reason}")
        bad.select(
            "source_file", "record_number", "line_number", "reason", "raw_fields",
            F.lit(run_id).alias("run_id"), F.current_timestamp().alias("quarantined_at"),
        ).createOrReplaceTempView("bad_rows")
        spark.sql(f"""MERGE INTO {quarantine} q USING bad_rows b
            ON q.source_file = b.source_file AND q.record_number = b.record_number
               AND q.raw_fields <=> b.raw_fields
            WHEN NOT MATCHED THEN INSERT *""")
        phases.done("quarantine", f"{metrics['quarantined']} records")

    loc = F.split(F.col("location"), LOCATION_SPLIT, 2)
    cleaned = parsed.where("reason IS NULL").select(
        F.col("op").alias("Op"),
        F.col("last_updated_ts").cast("timestamp").alias("last_updated_ts"),
        F.col("id").cast("int").alias("id"),
        "url", "name",
        F.col("since").cast("date").alias("since"),
        F.when(F.col("location").isNotNull(), loc.getItem(0)).alias("location_city"),
        F.when(F.size(loc) > 1, loc.getItem(1)).alias("location_country"),
        "response_time", "response_rate", "change_seq",
        # full-load rows are not CDC changes: no commit-to-silver latency for them
        F.regexp_extract("source_file", r"(^|/)(LOAD[^/]*)$", 2).alias("_load_file"),
    )
    latest = (
        cleaned.withColumn("_rn", F.row_number().over(
            Window.partitionBy("id").orderBy(F.col("change_seq").desc())))
        .where("_rn = 1").drop("_rn")
    )
    latest.createOrReplaceTempView("batch_latest")
    # Classify against the current tables; MERGE re-checks the same conditions.
    src = spark.sql(f"""
        SELECT l.*, CASE
            WHEN t.id IS NULL THEN IF(l.Op = 'D', 'noop', 'insert')
            WHEN l.change_seq <= t.change_seq THEN 'stale'
            WHEN l.Op = 'D' THEN 'delete' ELSE 'update' END AS action
        FROM batch_latest l
        LEFT JOIN {tombstones} d ON l.id = d.id
        LEFT JOIN {silver} t ON l.id = t.id
        WHERE d.id IS NULL OR l.change_seq > d.change_seq
    """).cache()  # evaluated once, before the MERGE changes silver
    src.createOrReplaceTempView("batch_src")
    # One pass: counts per action, and the commit times of the applied CDC changes.
    by_action = spark.sql("""
        SELECT action, count(*) AS n, collect_list(CASE
            WHEN action IN ('insert', 'update', 'delete')
             AND _load_file = ''
            THEN unix_micros(last_updated_ts) / 1e6 END) AS ts
        FROM batch_src GROUP BY action""").collect()
    counts = {r.action: r.n for r in by_action}
    applied_ts = [t for r in by_action for t in r.ts]
    phases.done("dedup and classify")

    spark.sql(f"""
        MERGE INTO {silver} t
        USING (SELECT * FROM batch_src WHERE action IN ('insert', 'update', 'delete')) s
        ON t.id = s.id
        WHEN MATCHED AND s.change_seq > t.change_seq AND s.Op = 'D' THEN DELETE
        WHEN MATCHED AND s.change_seq > t.change_seq THEN UPDATE SET
            t.last_updated_ts = s.last_updated_ts, t.url = s.url, t.name = s.name,
            t.since = s.since, t.location_city = s.location_city,
            t.location_country = s.location_country, t.response_time = s.response_time,
            t.response_rate = s.response_rate, t.change_seq = s.change_seq
        WHEN NOT MATCHED AND s.Op <> 'D' THEN INSERT
            (last_updated_ts, id, url, name, since, location_city, location_country,
             response_time, response_rate, change_seq)
            VALUES (s.last_updated_ts, s.id, s.url, s.name, s.since, s.location_city,
             s.location_country, s.response_time, s.response_rate, s.change_seq)
    """)
    now = time.time()
    phases.done("merge into silver")
    written = [silver]
    if counts.get("delete", 0) or counts.get("noop", 0) or counts.get("stale", 0):
        merge_tombstones(spark, tombstones)
        phases.done("merge tombstones")
        written.append(tombstones)
    # only a table written by this run can have gained files
    compacted = [t for t in written if maintain(spark, t, compact_after)]
    if compacted:
        phases.done("compact", ", ".join(compacted))
    src.unpersist()  # the runner's session is warm and shared by later runs
    parsed.unpersist()
    latencies = [now - ts for ts in applied_ts]
    return metrics | {
        "valid": metrics["rows_read"] - metrics["quarantined"],
        "inserted": counts.get("insert", 0),
        "updated": counts.get("update", 0),
        "deleted": counts.get("delete", 0),
        # older than silver, or a delete of an absent row (tombstoned below)
        "skipped": counts.get("stale", 0) + counts.get("noop", 0),
        "latency_seconds": percentiles(latencies) | {"samples": latency_samples(latencies)},
        "phase_seconds": phases.seconds,
    }


def maintain(spark, table: str, max_files: int = MAX_FILES_BEFORE_COMPACTION) -> bool:
    """Compact once merge-on-read data and delete files pile up (each run adds a few),
    so scans and MERGEs stay fast in a long-running lab. Snapshots are kept (time travel).
    """
    row = spark.sql(
        f"SELECT summary FROM {table}.snapshots ORDER BY committed_at DESC LIMIT 1").first()
    summary = row.summary if row else {}
    files = int(summary.get("total-data-files", 0)) + int(summary.get("total-delete-files", 0))
    if files <= max_files:
        return False
    catalog, name = table.split(".", 1)
    spark.sql(f"""CALL {catalog}.system.rewrite_data_files(table => '{name}',
        options => map('rewrite-all', 'true', 'remove-dangling-deletes', 'true'))""")
    return True


def merge_tombstones(spark, tombstones: str) -> None:
    """Upsert the batch's deletes (max seq per id) so no older change resurrects a row."""
    spark.sql(f"""
        MERGE INTO {tombstones} t
        USING (SELECT id, change_seq, last_updated_ts AS deleted_at
               FROM batch_latest WHERE Op = 'D') s
        ON t.id = s.id
        WHEN MATCHED AND s.change_seq > t.change_seq THEN UPDATE SET
            t.change_seq = s.change_seq, t.deleted_at = s.deleted_at
        WHEN NOT MATCHED THEN INSERT (id, change_seq, deleted_at)
            VALUES (s.id, s.change_seq, s.deleted_at)
    """)


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
    args = getResolvedOptions(sys.argv, [
        "JOB_NAME", "bronze_database", "bronze_table", "silver_table", "tombstone_table",
        "quarantine_table",
    ])
    run_id = args.get("JOB_RUN_ID") or f"manual-{uuid.uuid4()}"
    compact_after = int(optional_arg("compact_after_files") or MAX_FILES_BEFORE_COMPACTION)
    sc = SparkContext.getOrCreate()
    glueContext = GlueContext(sc)
    spark = glueContext.spark_session
    job = Job(glueContext)
    job.init(args["JOB_NAME"], args)

    bronze = glueContext.create_dynamic_frame.from_catalog(
        database=args["bronze_database"],
        table_name=args["bronze_table"],
        transformation_ctx="hostsIncrementalInputDF",
        additional_options={"attachFilename": SOURCE_FILE_COLUMN},
    ).toDF()
    metrics = run(spark, bronze, args["silver_table"], args["tombstone_table"],
                  args["quarantine_table"], run_id, compact_after)
    metrics = {"job": args["JOB_NAME"], **metrics}
    print("CDCLAB_METRICS " + json.dumps(metrics, sort_keys=True), flush=True)
    job.commit()


if __name__ == "__main__":
    main()
