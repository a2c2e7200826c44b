"""The warm driver's JIT, exercised while no run needs it.

A fresh JVM runs Spark's planner, its generated code and Iceberg's commit path
interpreted until HotSpot has compiled them: on a fresh stack a one-row run took about
twice as long as after a minute of work (docs/performance.md, eighteenth run). So once
the driver is up, and only while no run uses it, it runs a small CDC-shaped workload of
its own: a CSV batch read and checked, deduplicated by a window, classified by a join,
then MERGEd into an Iceberg table (merge-on-read, as the lab's). Its tables live in a
Hadoop catalog of its own in a private folder, never in the lake's catalog; the folder is
removed when it ends. A run that comes pauses it between two statements. AWS starts each
Glue run on a new JVM: this only shortens the lab's waits, the job sees nothing of it.
"""

from __future__ import annotations

import csv
import io
import logging
import random
import shutil
import threading
import time
from collections.abc import Callable
from pathlib import Path

log = logging.getLogger("glue_local.jit_warmup")

CATALOG = "cdclab_jit_warmup"  # a session-level catalog: runs' sessions never see it
TABLE = f"{CATALOG}.w.silver"
ROWS_PER_BATCH = 200
KEYS = 500  # keys drawn per batch: later batches update and delete earlier ones' rows
RECREATE_EVERY = 12  # batches; the table's delete files stay few
COLUMNS = "Op,seq,id,name,score,day,ts"
IDLE_POLL_SECONDS = 0.2  # how often a paused warm-up looks whether the driver is free


class Busy(Exception):
    """A run wants the driver (or the server stops): the batch going is dropped."""


def batch_csv(n: int, batch: int, rng: random.Random) -> str:
    """A DMS-like CSV batch (header, Op I/U/D, a 35-digit sequence) of `n` records."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(COLUMNS.split(","))
    for i in range(n):
        op = "I" if batch == 0 else rng.choice("IIUUUD")
        key = rng.randrange(KEYS)
        writer.writerow([op, f"{batch * 100_000 + i:035d}", key, f'name {key}, "{batch}"',
                         f"{rng.random() * 100:.3f}", f"2024-01-{1 + key % 28:02d}",
                         f"2024-01-01 00:00:{i % 60:02d}.{i:06d}"])
    return out.getvalue()


def statements() -> list[str]:
    """One batch's statements over its CSV (the view warm_raw), each a plan and Spark
    jobs like a run's."""
    checked = """
        SELECT *, CASE
            WHEN Op IS NULL OR Op NOT IN ('I', 'U', 'D') THEN 'bad Op'
            WHEN NOT (seq RLIKE '^[0-9]{35}$') THEN 'bad seq'
            WHEN try_cast(id AS BIGINT) IS NULL THEN 'bad id'
            WHEN score IS NOT NULL AND try_cast(score AS DOUBLE) IS NULL THEN 'bad score'
            WHEN try_cast(day AS DATE) IS NULL THEN 'bad day'
            WHEN try_cast(ts AS TIMESTAMP) IS NULL THEN 'bad ts' END AS reason,
            to_json(array(Op, seq, id, name)) AS raw, input_file_name() AS file
        FROM warm_raw"""
    latest = """
        SELECT Op, seq, CAST(id AS BIGINT) AS id, name, CAST(score AS DOUBLE) AS score,
            CAST(day AS DATE) AS day, CAST(ts AS TIMESTAMP) AS ts FROM (
            SELECT *, row_number() OVER (PARTITION BY id ORDER BY seq DESC) AS rn
            FROM warm_checked WHERE reason IS NULL) WHERE rn = 1"""
    return [
        f"CREATE OR REPLACE TEMPORARY VIEW warm_checked AS {checked}",
        "SELECT file, count(*), count(reason), min(seq), max(seq), "
        "collect_list(unix_micros(try_cast(ts AS TIMESTAMP))) FROM warm_checked GROUP BY file",
        f"CREATE OR REPLACE TEMPORARY VIEW warm_latest AS {latest}",
        f"""CREATE OR REPLACE TEMPORARY VIEW warm_src AS
            SELECT l.*, CASE WHEN t.id IS NULL THEN IF(l.Op = 'D', 'noop', 'insert')
                WHEN l.seq <= t.seq THEN 'stale' WHEN l.Op = 'D' THEN 'delete'
                ELSE 'update' END AS action
            FROM warm_latest l LEFT JOIN (SELECT id, seq FROM {TABLE}) t ON l.id = t.id""",
        "SELECT action, count(*) FROM warm_src GROUP BY action",
        f"""MERGE INTO {TABLE} t
            USING (SELECT * FROM warm_src WHERE action IN ('insert', 'update', 'delete')) s
            ON t.id = s.id
            WHEN MATCHED AND s.seq > t.seq AND s.Op = 'D' THEN DELETE
            WHEN MATCHED AND s.seq > t.seq THEN UPDATE SET t.seq = s.seq,
                t.name = s.name, t.score = s.score, t.day = s.day, t.ts = s.ts
            WHEN NOT MATCHED AND s.Op <> 'D' THEN INSERT (id, seq, name, score, day, ts)
                VALUES (s.id, s.seq, s.name, s.score, s.day, s.ts)""",
        f"SELECT summary FROM {TABLE}.snapshots ORDER BY committed_at DESC LIMIT 1",
    ]


def create_table(spark) -> None:
    spark.sql(f"DROP TABLE IF EXISTS {TABLE} PURGE")
    spark.sql(f"""CREATE TABLE {TABLE} (id BIGINT, seq STRING, name STRING, score DOUBLE,
        day DATE, ts TIMESTAMP) USING iceberg
        TBLPROPERTIES ('format-version'='2', 'write.delete.mode'='merge-on-read',
          'write.update.mode'='merge-on-read', 'write.merge.mode'='merge-on-read')""")


def exercise(session, folder: Path, seconds: float, busy: Callable[[], bool],
             stop: threading.Event | None = None, seed: int = 0,
             poll: float = IDLE_POLL_SECONDS) -> int:
    """Run warm-up batches in a new session of `session` until they have worked
    `seconds`, only while `busy()` is false: a batch a run interrupts is dropped, and the
    next starts once no run uses the driver. Returns the batches done. `folder` (removed
    at the end) holds the batches' CSV files and the catalog's warehouse; `stop` ends it
    early (the server stops)."""
    stop = stop or threading.Event()
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    spark = session.newSession()  # its catalog and views stay out of the runs' sessions
    spark.conf.set(f"spark.sql.catalog.{CATALOG}", "org.apache.iceberg.spark.SparkCatalog")
    spark.conf.set(f"spark.sql.catalog.{CATALOG}.type", "hadoop")
    spark.conf.set(f"spark.sql.catalog.{CATALOG}.warehouse", (folder / "warehouse").as_uri())
    spark.conf.set("spark.sql.session.timeZone", "UTC")
    worked, done, took = 0.0, 0, []

    def go_on() -> None:
        if busy() or stop.is_set():
            raise Busy

    try:
        while worked < seconds and not stop.is_set():
            if busy():
                stop.wait(poll)
                continue
            begun = time.monotonic()
            try:
                if done % RECREATE_EVERY == 0:  # the first batch too
                    go_on()
                    create_table(spark)
                path = folder / f"batch-{done % 2}.csv"
                path.write_text(batch_csv(ROWS_PER_BATCH, done % RECREATE_EVERY, rng))
                go_on()
                (spark.read.option("header", "true").option("multiLine", "true")
                 .option("escape", '"').csv(path.as_uri()).createOrReplaceTempView("warm_raw"))
                for sql in statements():
                    go_on()
                    spark.sql(sql).collect()
                took.append(time.monotonic() - begun)
                done += 1
            except Busy:
                pass
            worked += time.monotonic() - begun
    finally:
        try:
            spark.sql(f"DROP TABLE IF EXISTS {TABLE} PURGE")
        except Exception:  # the driver died or stops: the folder goes all the same
            log.debug("dropping the warm-up table failed", exc_info=True)
        shutil.rmtree(folder, ignore_errors=True)
    if took:
        log.info("JIT warm-up: %d batches in %.1fs of work (the first %.2fs, the last "
                 "%.2fs)", done, worked, took[0], took[-1])
    return done
