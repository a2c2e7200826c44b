"""Emitter throughput and memory on real PostgreSQL + MinIO. Prints one JSON object.

    .venv/bin/python bench/bench_emitter.py [--full-load-rows N] [--cdc-changes N]

full load: rows/s from emitter start until it reports streaming (LOAD files in S3).
cdc: with the emitter stopped, a backlog of updates builds up in the slot; then the
emitter is restarted and timed until the slot is confirmed past the backlog, i.e. every
change decoded, encoded as DMS CSV, uploaded, and acknowledged (the durable rate).
memory: the emitter process's peak RSS (VmHWM).
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

from cdclab import credentials  # noqa: E402
from cdclab.drain import current_wal_lsn, slot_confirmed_lsn  # noqa: E402
from cdclab.sample_data import seed  # noqa: E402
from cdclab.services.base import StackContext, start_service  # noqa: E402
from cdclab.services.minio import MinioService, s3_client  # noqa: E402
from cdclab.services.postgres import PostgresService  # noqa: E402
from dms_emitter.launcher import EmitterService  # noqa: E402
from pipeline_contract import settings  # noqa: E402
from tests.resources.stack_dirs import temp_state_dir  # noqa: E402


def peak_rss_mb(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        return None
    return None


def emitter_pid(running) -> int:
    """The Python emitter process (the service's process group leader)."""
    return running.proc.pid


def wait(check, timeout: float, what: str) -> float:
    start = time.monotonic()
    while not check():
        if time.monotonic() - start > timeout:
            raise TimeoutError(what)
        time.sleep(0.05)
    return time.monotonic() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--full-load-rows", type=int, default=50_000)
    ap.add_argument("--cdc-changes", type=int, default=100_000)
    args = ap.parse_args()

    with temp_state_dir("bench") as state:
        run(args, state)


def run(args: argparse.Namespace, state: Path) -> None:
    ctx = StackContext(pipeline=load_pipeline(), state_dir=state, env=credentials.generate())
    ctx.env[settings.ENV_STATE_DIR] = str(state)
    started = []
    try:
        started.append(start_service(PostgresService(), ctx))
        started.append(start_service(MinioService(), ctx))
        dsn = ctx.env[settings.ENV_PG_DSN]
        with psycopg.connect(dsn) as conn:
            seed(conn, load_pipeline(), args.full_load_rows, seed=1)

        t0 = time.monotonic()
        emitter = start_service(EmitterService(), ctx)  # healthy = full load written
        started.append(emitter)
        full_load_s = time.monotonic() - t0

        emitter.stop()
        started.remove(emitter)
        table = settings.load_pipeline().source.table
        with psycopg.connect(dsn) as conn:
            ids = [r[0] for r in conn.execute(f"SELECT id FROM {table} ORDER BY id")]
            done = 0
            # Bulk updates in transactions of 5,000 rows, cycling over the table.
            while done < args.cdc_changes:
                batch = ids[: min(5000, args.cdc_changes - done)]
                conn.execute(
                    f"UPDATE {table} SET response_rate = (random() * 100)::int || '%%' "
                    "WHERE id = ANY(%s)", (batch,))
                conn.commit()
                done += len(batch)
                ids = ids[len(batch):] + batch
        target = current_wal_lsn(dsn)
        t1 = time.monotonic()
        emitter = start_service(EmitterService(), ctx)
        started.append(emitter)
        wait(lambda: (slot_confirmed_lsn(dsn, load_pipeline().source.slot) or 0) >= target, 900,
             "slot confirmation")
        cdc_s = time.monotonic() - t1

        s3 = s3_client(ctx.env)
        p = settings.load_pipeline()
        objects = s3.list_objects_v2(Bucket=p.lake.bronze_bucket, Prefix=p.bronze_prefix + "/")
        result = {
            "benchmark": "emitter",
            "full_load": {"rows": args.full_load_rows, "seconds": round(full_load_s, 2),
                          "rows_per_second": round(args.full_load_rows / full_load_s)},
            "cdc_backlog": {"changes": args.cdc_changes, "seconds": round(cdc_s, 2),
                            "changes_per_second": round(args.cdc_changes / cdc_s)},
            "bronze_files": objects.get("KeyCount", 0),
            "emitter_peak_rss_mb": peak_rss_mb(emitter_pid(emitter)),
            "cpus": os.cpu_count(),
        }
        print(json.dumps(result, indent=2))
    finally:
        for running in reversed(started):
            running.stop()


if __name__ == "__main__":
    main()
