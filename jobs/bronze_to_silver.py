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
import sys
import time
import uuid

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
MAX_REPORTED_BAD_ROWS = 5  # in the run's metrics (cdclab status / quarantine show them)
MAX_FILES_BEFORE_COMPACTION = 48  # data + delete files of a table
# Glue's attachFilename: each row's source file, the documented way (input_file_name()
# is empty for grouped, non-FileSplit reads).
SOURCE_FILE_COLUMN = "_cdclab_source_file"

# Java regexes (rlike) for the text forms DMS writes.
TS_PATTERN = r"^\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(\.\d{1,6})?$"
DATE_PATTERN = r"^\d{4}-\d{2}-\d{2}$"
INT_PATTERN = r"^[+-]?\d{1,10}$"
SEQ_PATTERN = r"^\d{35}$"

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


# --- record validation (Spark column expressions; reading is Glue's) ----------------
def _shown(name: str):
    """A column's value as a quarantine reason shows it: quoted, or NULL."""
    from pyspark.sql import functions as F

    return F.coalesce(F.concat(F.lit("'"), F.col(name), F.lit("'")), F.lit("NULL"))


def _not_a(name: str, pattern: str, sql_type: str):
    """True unless the column has the text form `pattern` and casts to `sql_type`
    (try_cast rejects what the pattern lets through, like 2020-02-30)."""
    from pyspark.sql import functions as F

    value = F.col(name)
    return (value.isNull() | ~value.rlike(pattern)
            | F.expr(f"try_cast(`{name}` AS {sql_type})").isNull())


def reason_column():
    """Why a bronze record (named columns, BRONZE_COLUMNS) is malformed; NULL when it is
    a valid change. The first failing check names the reason."""
    from pyspark.sql import functions as F

    return (
        F.when(F.col("op").isNull() | ~F.col("op").isin(*OPS),
               F.concat(F.lit("bad Op "), _shown("op")))
        .when(_not_a("id", INT_PATTERN, "bigint")
              | ~F.expr("try_cast(id AS bigint)").between(INT_MIN, INT_MAX),
              F.concat(F.lit("id is not an INT: "), _shown("id")))
        .when(F.col("change_seq").isNull() | ~F.col("change_seq").rlike(SEQ_PATTERN),
              F.concat(F.lit("change_seq is not 35 digits: "), _shown("change_seq")))
        .when(_not_a("last_updated_ts", TS_PATTERN, "timestamp"),
              F.concat(F.lit("unparseable last_updated_ts "), _shown("last_updated_ts")))
        .when(F.col("since").isNotNull() & _not_a("since", DATE_PATTERN, "date"),
              F.concat(F.lit("unparseable since "), _shown("since")))
    )


def bronze_records(bronze_df, file_column: str = SOURCE_FILE_COLUMN):
    """Glue's rows as quarantine-ready records (RECORD_COLUMNS + BRONZE_COLUMNS).

    record_number counts the file's records as read, the header being record 1 (Glue's
    readers report no line numbers: line_number is NULL). Full-load rows have no
    $AR_H_CHANGE_SEQ (DMS leaves it empty): they come before every change, so they get
    the lowest sequences, by record number. raw_fields is the record's fields as JSON.
    """
    from pyspark.sql import functions as F
    from pyspark.sql.window import Window

    in_file = Window.partitionBy(file_column).orderBy("_read_order")
    record_number = F.col("record_number")
    is_load = F.regexp_extract(F.col(file_column), r"(^|/)LOAD[^/]*$", 0) != ""
    return (
        bronze_df.withColumn("_read_order", F.monotonically_increasing_id())
        .withColumn("record_number", (F.row_number().over(in_file) + 1).cast("long"))
        .withColumn("raw_fields", F.to_json(F.array(*[F.col(c) for c in BRONZE_COLUMNS])))
        .withColumn("change_seq", F.when(
            F.col("change_seq").isNull() & is_load,
            F.concat(F.lit(FULL_LOAD_LSN), F.lpad(record_number.cast("string"), 15, "0")),
        ).otherwise(F.col("change_seq")))
        .withColumn("reason", reason_column())
        .select(F.col(file_column).alias("source_file"), "record_number",
                F.lit(None).cast("long").alias("line_number"), "reason", "raw_fields",
                *BRONZE_COLUMNS)
    )


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


def ensure_tables(spark, silver: str, tombstones: str, quarantine: str) -> None:
    for ns in sorted({namespace_of(t) for t in (silver, tombstones, quarantine)}):
        spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {ns}")
    spark.sql(SILVER_DDL.format(table=silver))
    spark.sql(TOMBSTONE_DDL.format(table=tombstones))
    spark.sql(QUARANTINE_DDL.format(table=quarantine))


class UnaccountedRowsError(RuntimeError):
    """Rows were read whose file is unknown: committing the bookmark could lose them."""


def account(records) -> tuple[list[str], int, int]:
    """(files, rows, quarantined) of this run's records (bronze_records), in one pass.
    The files come from Glue's attachFilename column. Fails (before job.commit() can
    advance the bookmark) if any row lacks its file name, or rows were read but no file
    recorded: never a silent skip."""
    from pyspark.sql import functions as F

    per_file = {r[0]: (r[1], r[2]) for r in records.groupBy("source_file").agg(
        F.count(F.lit(1)), F.count("reason")).collect()}
    unnamed = per_file.pop(None, (0, 0))[0]
    rows = sum(n for n, _ in per_file.values())
    files = sorted(per_file)
    if unnamed or (rows and not files):
        raise UnaccountedRowsError(
            f"{unnamed} of {rows + unnamed} bronze rows have no source file "
            f"(Glue's attachFilename): refusing to commit the job bookmark")
    return files, rows, sum(bad for _, bad in per_file.values())


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
    # Read once (the bronze files are Glue's to read), numbered, validated, cached.
    parsed = bronze_records(bronze_df).cache()
    files, rows, quarantined = account(parsed)
    phases.done("read and validate", f"{len(files)} files, {rows} records")
    metrics: dict = {"run_id": run_id, "files": len(files), "rows_read": rows,
                     "quarantined": quarantined}
    if not files:
        parsed.unpersist()
        return metrics | {"valid": 0, "inserted": 0, "updated": 0, "deleted": 0,
                          "skipped": 0, "latency_seconds": percentiles([]),
                          "phase_seconds": phases.seconds}

    bad = parsed.where("reason IS NOT NULL")
    if metrics["quarantined"]:
        logged = bad.limit(MAX_LOGGED_BAD_ROWS).collect()
        for r in logged:
            log(f"QUARANTINED {r.source_file} record {r.record_number}: {r.reason}")
        metrics["quarantine_examples"] = [
            {"file": r.source_file, "record": r.record_number, "reason": r.reason}
            for r in logged[:MAX_REPORTED_BAD_ROWS]]
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
