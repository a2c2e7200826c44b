"""From a poison object to data flowing again, on a fresh embedded stack. Prints JSON.

    .venv/bin/python bench/bench_poison.py [--path gate|guard|both] [--rows N]

A poison object lands in the DMS folder while the pipeline streams; a row committed in
the source at the same moment must reach silver past it.
- gate: the finding's object (a `.csv.gz` cut short, its first record 70 MiB) with the
  pipeline's settings: the Lambda's gate refuses it and quarantines it.
- guard: a whole `.csv.gz` whose record holds a 200 MiB field, with a careless
  `[dms] lob_max_size_kb = 65536` that lets the gate pass it: the job's run kills the warm
  Spark driver (OutOfMemoryError), the runner starts a new one, and the job's input guard
  narrows its input until it skips the object.
Reported per path: seconds until silver equals the source (the new row included), Glue
runs that failed, driver deaths, where the object ended up, silver == source.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import signal
import sys
import time
from pathlib import Path

from pipeline_contract.settings import load_pipeline

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pipeline_contract import settings  # noqa: E402
from tests.resources.stack_dirs import temp_state_dir  # noqa: E402

HEADER = b"Op,last_updated_ts,id,url,name,since,location,response_time,response_rate,change_seq\n"
CARELESS_LOB_KB = 65536


def poison(path: str) -> bytes:
    """gate: the finding's object, a .csv.gz cut short whose first record is 70 MiB (the
    gate refuses it); guard: a whole .csv.gz whose one record holds a 200 MiB field, which
    a careless LobMaxSize lets through and which the 1 GiB driver cannot hold."""
    mib = 70 if path == "gate" else 200
    whole = gzip.compress(HEADER + b"I,2026-11-25 00:00:00,1,\"" + b"x" * (mib << 20)
                          + b"\",n,,Oslo,,,\n", compresslevel=9)
    return whole[: len(whole) * 2 // 3] if path == "gate" else whole


def careless_pipeline(state: Path) -> Path:
    """pipeline.toml with [dms] lob_max_size_kb raised: the gate's field limit with it."""
    text = (settings.REPO_ROOT / "cdclab" / "pipeline.toml").read_text()
    lines, in_dms, done = [], False, False
    for line in text.splitlines():
        if line.strip().startswith("["):
            if in_dms and not done:
                lines.append(f"lob_max_size_kb = {CARELESS_LOB_KB}")
                done = True
            in_dms = line.strip() == "[dms]"
        if in_dms and line.strip().startswith("lob_max_size_kb"):
            line, done = f"lob_max_size_kb = {CARELESS_LOB_KB}", True
        lines.append(line)
    path = state / "pipeline-careless.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


def run_path(path: str, rows: int) -> dict:
    with temp_state_dir(f"bench-poison-{path}") as state:
        os.environ[settings.ENV_STATE_DIR] = str(state)
        if path == "guard":
            os.environ[settings.ENV_PIPELINE_FILE] = str(careless_pipeline(state))
        else:
            os.environ.pop(settings.ENV_PIPELINE_FILE, None)
        return measure(state, rows, poison(path))


def measure(state: Path, rows: int, body: bytes) -> dict:
    import psycopg

    from cdclab.drain import current_wal_lsn, wait_for_drain
    from cdclab.reconcile import reconcile
    from cdclab.sample_data import seed
    from cdclab.services.glue_api import glue_client
    from cdclab.services.minio import s3_client
    from cdclab.setup import setup_lake
    from cdclab.supervisor import INFRA, PIPELINE, Stack

    p = settings.load_pipeline()
    stack = Stack(state, progress=lambda m: print(m, file=sys.stderr), pipeline=load_pipeline())
    try:
        stack.up(INFRA)
        setup_lake(stack.env(), load_pipeline())
        env = stack.env()
        with psycopg.connect(env[settings.ENV_PG_DSN]) as conn:
            seed(conn, load_pipeline(), rows, seed=7)
        stack.up(PIPELINE)
        env = stack.env()
        wait_for_drain(env, load_pipeline(), current_wal_lsn(env[settings.ENV_PG_DSN]), timeout=600)
        glue = glue_client(env)
        before = {r["Id"] for r in glue.get_job_runs(JobName=p.glue_job.name,
                                                     MaxResults=200)["JobRuns"]}
        key = f"{p.bronze_prefix}/{time.strftime('%Y%m%d-%H%M%S', time.gmtime())}999.csv.gz"
        s3 = s3_client(env)
        started = time.monotonic()
        s3.put_object(Bucket=p.lake.bronze_bucket, Key=key, Body=body)
        with psycopg.connect(env[settings.ENV_PG_DSN]) as conn:
            conn.execute("INSERT INTO public.hosts_demo (id, name, location) VALUES "
                         "(999999999, 'after the poison', 'Oslo, Norway')")
        flowing = None
        while time.monotonic() - started < 1800:
            try:
                if reconcile(env, load_pipeline()).equal:
                    flowing = round(time.monotonic() - started, 1)
                    break
            except Exception as e:  # silver being written, the catalog restarting
                print(f"reconcile: {type(e).__name__}: {e}", file=sys.stderr)
            time.sleep(1.0)
        runs = [r for r in glue.get_job_runs(JobName=p.glue_job.name, MaxResults=200)
                ["JobRuns"] if r["Id"] not in before]
        driver = json.loads((state / "glue" / "driver.json").read_text())
        try:
            s3.head_object(Bucket=p.lake.bronze_bucket, Key=key)
            where = "bronze (skipped by the job's input guard)"
        except Exception:
            where = "quarantine prefix (the gate)"
        return {
            "seconds_to_flowing_again": flowing,
            "silver_equals_source": flowing is not None,
            "runs_after_the_object": len(runs),
            "runs_failed": sum(r["JobRunState"] == "FAILED" for r in runs),
            "failure_reasons": sorted({(r.get("ErrorMessage") or "")[:120]
                                       for r in runs if r["JobRunState"] == "FAILED"}),
            "driver_deaths": driver.get("deaths", 0),
            "object_ended_in": where,
            "object_bytes": len(body),
        }
    finally:
        stack.down()


def main() -> None:
    # a stop (SIGTERM) still stops the stack it started (the finally blocks run)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--path", choices=["gate", "guard", "both"], default="both")
    ap.add_argument("--rows", type=int, default=500)
    args = ap.parse_args()
    paths = ["gate", "guard"] if args.path == "both" else [args.path]
    result = {"benchmark": "poison", "params": vars(args), "cpus": os.cpu_count(),
              **{path: run_path(path, args.rows) for path in paths}}
    print(json.dumps(result, indent=2))
    ok = all(result[path]["silver_equals_source"] for path in paths)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
