"""`cdclab demo`: the whole pipeline end to end, measured, then reconciled.

up (infra) -> seed -> emitter (full load from the slot's snapshot) + watcher -> live
workload -> drain -> reconcile -> summary. Exits 0 only if silver equals source.
"""

from __future__ import annotations

import json
import shutil
import statistics
import time
from collections.abc import Callable
from pathlib import Path

from cdclab.drain import current_wal_lsn, job_runs, wait_for_drain
from cdclab.runtime import EmbeddedRuntime, Runtime
from cdclab.services.base import ServiceError
from cdclab.supervisor import INFRA, PIPELINE
from pipeline_contract import settings

METRICS_PREFIX = "CDCLAB_METRICS "


def _source_rows(dsn: str, src: settings.SourceSettings) -> int:
    import psycopg

    with psycopg.connect(dsn) as conn:
        return conn.execute(f'SELECT count(*) FROM "{src.schema}"."{src.table}"').fetchone()[0]


def run_metrics(run_logs: Path | None) -> list[dict]:
    """The CDCLAB_METRICS line of every Glue run log (none when the logs are out of reach)."""
    found = []
    if run_logs is None or not run_logs.is_dir():
        return found
    for log in sorted(run_logs.glob("*.log")):
        for line in log.read_text(errors="replace").splitlines():
            if line.startswith(METRICS_PREFIX):
                found.append(json.loads(line[len(METRICS_PREFIX):]))
    return found


def latency_summary(metrics: list[dict]) -> dict:
    """Commit-to-silver latency over every applied CDC change of every run."""
    samples: list[float] = []
    for m in metrics:
        samples.extend(m.get("latency_seconds", {}).get("samples", []))
    if not samples:
        return {"count": 0}
    samples.sort()
    q = statistics.quantiles(samples, n=100, method="inclusive") if len(samples) > 1 else samples
    return {
        "count": len(samples),
        "p50": round(statistics.median(samples), 3),
        "p95": round(q[94] if len(samples) > 1 else samples[0], 3),
        "max": round(samples[-1], 3),
    }


def run_demo(
    runtime: Runtime, *, rows: int, duration: float, rate: float, fresh: bool,
    keep_running: bool, progress: Callable[[str], None],
) -> int:
    """On the embedded runtime the demo starts what it needs; on compose, `docker compose
    up` already did (the full load included), so it checks and goes on from there."""
    from cdclab.reconcile import reconcile
    from cdclab.sample_data import seed
    from cdclab.setup import setup_lake
    from cdclab.workload import run_workload

    t0 = time.monotonic()
    p = runtime.pipeline
    stack = getattr(runtime, "stack", None)  # the embedded runtime's supervisor
    if stack is not None and fresh and stack.state_dir.exists():
        progress(f"--fresh: stopping the stack and wiping {stack.state_dir}")
        stack.down()
        shutil.rmtree(stack.state_dir)
        runtime = EmbeddedRuntime(p, progress)
        stack = runtime.stack
    elif fresh:
        raise ServiceError("--fresh wipes the embedded state; for compose: "
                           "docker compose down -v && docker compose up -d --wait")
    timings: dict[str, float] = {}

    if stack is not None:
        progress("1/6 starting PostgreSQL, MinIO, Iceberg REST catalog, Glue API (warm Spark)")
        stack.up(INFRA)
        env = stack.env()
        setup_lake(env, p, progress=progress)
    else:
        progress(f"1/6 checking the stack ({runtime.where})")
        env = runtime.require(*INFRA)
    timings["stack_up"] = time.monotonic() - t0

    import psycopg

    dsn = env[settings.ENV_PG_DSN]
    existing = _source_rows(dsn, p.source)
    if existing == 0:
        progress(f"2/6 seeding {rows} sample hosts")
        with psycopg.connect(dsn) as conn:
            seed(conn, p, rows)
    else:
        progress(f"2/6 source already has {existing} hosts; not seeding")

    t = time.monotonic()
    if stack is not None:
        progress("3/6 starting the watcher and the DMS emitter (full load from the slot snapshot)")
        stack.up(PIPELINE)
    else:
        progress("3/6 the DMS emitter and the watcher run in their containers")
    timings["pipeline_up"] = time.monotonic() - t
    # DMS's "full load, then ongoing replication": the live workload starts once the
    # full load is in silver, so its latency figures are steady-state CDC.
    progress("    merging the full load into silver")
    timings["full_load_to_silver"] = wait_for_drain(env, p, current_wal_lsn(dsn), progress=progress)
    full_load_runs = {r.run_id for r in job_runs(env, p.glue_job.name)}

    progress(f"4/6 live workload: {duration:.0f}s at ~{rate:.0f} transactions/s")
    t = time.monotonic()
    report = run_workload(dsn, p, duration=duration, rate=rate, seed=None, progress=progress)
    timings["workload"] = time.monotonic() - t
    target = current_wal_lsn(dsn)

    progress("5/6 waiting for the pipeline to drain")
    timings["drain"] = wait_for_drain(env, p, target, progress=progress)

    progress("6/6 reconciling silver with source")
    t = time.monotonic()
    result = reconcile(env, p)
    timings["reconcile"] = time.monotonic() - t
    timings["total"] = time.monotonic() - t0

    runs = job_runs(env, p.glue_job.name)
    metrics = run_metrics(runtime.glue_run_logs())
    latency = latency_summary([m for m in metrics if m.get("run_id") not in full_load_runs])
    summary = {
        "equal": result.equal,
        "source_rows": result.source_rows,
        "silver_rows": result.silver_rows,
        "mismatching_keys": result.mismatching_keys,
        "orphan_keys": result.orphan_keys,
        "hints": result.hints,
        "normalisations": result.normalisations,
        "workload": report if isinstance(report, dict) else str(report),
        "glue_runs": {s: sum(r.state == s for r in runs) for s in sorted({r.state for r in runs})},
        "commit_to_silver_seconds": latency,
        "timings_seconds": {k: round(v, 1) for k, v in timings.items()},
    }
    _print_summary(summary)
    summary_dir = stack.state_dir if stack is not None else settings.state_dir()
    summary_dir.mkdir(parents=True, exist_ok=True)
    (summary_dir / "demo-summary.json").write_text(json.dumps(summary, indent=2, default=str))
    if stack is None:
        progress("the compose stack keeps running: `docker compose ps`, "
                 "`docker compose down` to stop it")
    elif not keep_running:
        stack.down()
    else:
        progress("the stack is still running: `cdclab status`, `cdclab down` to stop it")
    return 0 if result.equal else 1


def _print_summary(s: dict) -> None:
    lat = s["commit_to_silver_seconds"]
    verdict = "silver EQUALS source" if s["equal"] else "silver DIFFERS from source"
    lines = [
        "",
        "cdclab demo — summary",
        f"  result          {verdict} ({s['source_rows']} source rows, "
        f"{s['silver_rows']} silver rows)",
        f"  workload        {s['workload']}",
        f"  Glue job runs   {s['glue_runs']}",
    ]
    if lat.get("count"):
        lines.append(
            f"  commit→silver   p50 {lat['p50']}s, p95 {lat['p95']}s, max {lat['max']}s "
            f"over {lat['count']} CDC changes"
        )
    for rule, count in s.get("normalisations", {}).items():
        lines.append(f"  compared as     {rule} ({count} values)")
    lines.append(f"  timings (s)     {s['timings_seconds']}")
    if not s["equal"]:
        lines.append(f"  mismatching ids {s['mismatching_keys']}")
        if s.get("orphan_keys"):
            lines.append(f"  orphan keys     {s['orphan_keys']}")
        lines += [f"  {hint}" for hint in s.get("hints", [])]
    print("\n".join(lines), flush=True)
