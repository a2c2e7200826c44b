"""Emitter memory under a huge transaction and a huge row, on real PostgreSQL + MinIO.
Prints one JSON object.

    .venv/bin/python bench/bench_emitter_memory.py [--rows N] [--row-mb M]

One transaction inserts N rows (default 1,000,000), then one UPDATE writes a value of
M MB (default 64) into a text column. Each is timed until the slot is confirmed past it
(every change stored in S3). The emitter's peak RSS (VmHWM) is read after each step:
the target is at most 300 MB (issue 10). Files are cut at CdcMinFileSize inside the
transaction; the huge value is a LOB, cut at LobMaxSize like DMS's limited LOB mode.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from pipeline_contract.settings import load_pipeline

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import psycopg  # noqa: E402

from bench.bench_emitter import peak_rss_mb, wait  # noqa: E402
from cdclab import credentials  # noqa: E402
from cdclab.drain import current_wal_lsn, slot_confirmed_lsn  # noqa: E402
from cdclab.sample_data import seed  # noqa: E402
from cdclab.services.base import StackContext, start_service  # noqa: E402
from cdclab.services.minio import MinioService, s3_client  # noqa: E402
from cdclab.services.postgres import PostgresService  # noqa: E402
from dms_emitter.emitter import batch_size_kb  # noqa: E402
from dms_emitter.launcher import EmitterService  # noqa: E402
from pipeline_contract import settings  # noqa: E402
from tests.resources.stack_dirs import temp_state_dir  # noqa: E402

TARGET_MB = 300


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--row-mb", type=int, default=64)
    args = ap.parse_args()
    with temp_state_dir("bench-memory") as state:
        run(args, state)


def confirmed_past(dsn: str, step: str) -> float:
    target = current_wal_lsn(dsn)
    return wait(lambda: (slot_confirmed_lsn(dsn, load_pipeline().source.slot) or 0) >= target,
                1800, step)


def run(args: argparse.Namespace, state: Path) -> None:
    ctx = StackContext(pipeline=load_pipeline(), state_dir=state, env=credentials.generate())
    ctx.env[settings.ENV_STATE_DIR] = str(state)
    started = []
    p = settings.load_pipeline()
    table = f"{p.source.schema}.{p.source.table}"
    try:
        started.append(start_service(PostgresService(), ctx))
        started.append(start_service(MinioService(), ctx))
        dsn = ctx.env[settings.ENV_PG_DSN]
        with psycopg.connect(dsn) as conn:
            seed(conn, load_pipeline(), 10, seed=1)
        emitter = start_service(EmitterService(), ctx)
        started.append(emitter)
        pid = emitter.proc.pid
        after_start = peak_rss_mb(pid)

        t0 = time.monotonic()
        with psycopg.connect(dsn) as conn:  # one transaction
            conn.execute(
                f"INSERT INTO {table} (id, url, name, since, location, response_time, "
                "response_rate) SELECT i, 'https://www.airbnb.com/users/show/' || i, "
                "'Host ' || i || ', \"the\" best', DATE '2015-03-01' + (i %% 3000), "
                "'Lisbon, Portugal', 'within an hour', (i %% 100) || '%%' "
                "FROM generate_series(1000, 999 + %s) i", (args.rows,))
        committed = time.monotonic() - t0
        big_txn_s = confirmed_past(dsn, "the big transaction")
        after_txn = peak_rss_mb(pid)

        t1 = time.monotonic()
        with psycopg.connect(dsn) as conn:
            conn.execute(f"UPDATE {table} SET name = repeat('x', %s) WHERE id = 1000",
                         (args.row_mb << 20,))
        big_row_s = confirmed_past(dsn, "the big row") + (time.monotonic() - t1)
        after_row = peak_rss_mb(pid)

        s3 = s3_client(ctx.env)
        pages = s3.get_paginator("list_objects_v2").paginate(
            Bucket=p.lake.bronze_bucket, Prefix=p.bronze_prefix + "/")
        files = sum(page.get("KeyCount", 0) for page in pages)
        peak = max(v for v in (after_start, after_txn, after_row) if v is not None)
        print(json.dumps({
            "benchmark": "emitter_memory",
            "transaction": {"rows": args.rows, "insert_seconds": round(committed, 2),
                            "stored_seconds": round(big_txn_s, 2),
                            "rows_per_second": round(args.rows / big_txn_s)},
            "big_row": {"mb": args.row_mb, "stored_seconds": round(big_row_s, 2),
                        "lob_max_size_kb": p.dms.lob_max_size_kb},
            "bronze_files": files,
            "cdc_min_file_size_kb": batch_size_kb(p, os.environ),
            "emitter_peak_rss_mb": {"after_start": after_start, "after_transaction": after_txn,
                                    "after_big_row": after_row},
            "target_mb": TARGET_MB,
            "within_target": peak <= TARGET_MB,
            "cpus": os.cpu_count(),
        }, indent=2))
    finally:
        for running in reversed(started):
            running.stop()


if __name__ == "__main__":
    main()
