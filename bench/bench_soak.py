"""Soak: the embedded stack under a steady CDC workload, watched for growth. Prints JSON.

    .venv/bin/python bench/bench_soak.py [--minutes 60] [--rate 200] [--sample-seconds S]
    make soak [SOAK_MINUTES=60] [SOAK_ARGS="--check equal"]

A fresh stack in a temporary state dir: seed, full load, then a randomized workload at
`--rate` row changes per second for `--minutes`, sampling every service's process tree
RSS (the Glue API's Spark driver and run processes included), the state dir's size by
part, and, every few samples, the JVMs' live heap (after a full GC). Growth is measured
over the second half of the soak: the median of its last quarter against the median of
its third quarter (medians ride out a run process or a merge in flight), in percent; the
target is <= 5 % for every process of the pipeline and for the pipeline's own state.
Memory is each process tree's summed RSS, and its PSS beside it (summed RSS counts a
shared page once per process: postgres's shared buffers once per backend). The source
database (postgres, RDS's stand-in) is reported apart, like its data files: its buffer
cache fills with its growing tables up to shared_buffers. The source table stays near
--rows rows (an insert planned above that deletes instead, and the other way round), so
the source and silver reach a steady size; --grow lets it grow as the workload inserts
more than it deletes. Data that grows by design is reported apart: bronze objects (DMS
files, kept for audit as on S3), the source database's files, silver's data files. At
the end the pipeline drains and silver is reconciled with the source.

The Glue job's upkeep runs with a short schedule (`--maintenance-interval-minutes`,
`--snapshot-retention-minutes`) so that the soak reaches its steady state; with the
defaults of pipeline.toml Iceberg metadata grows until the time-travel window is full.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import sys
import threading
import time
import tomllib
from pathlib import Path

from pipeline_contract.settings import load_pipeline

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pipeline_contract import settings  # noqa: E402
from tests.resources.stack_dirs import temp_state_dir  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from process_memory import tree_memory  # noqa: E402

TARGET_GROWTH_PCT = 5.0
CHUNK_SECONDS = 10.0  # the workload's rate is re-aimed at changes/s every chunk
HEAP_EVERY = 4  # live heap every 4th sample: the histogram's full GC pauses the JVM
JVM_SERVICES = ("glue", "iceberg-rest")


def jvm_live_heap(pid: int) -> int | None:
    """Live heap of the JVMs in a process tree, bytes: jcmd's class histogram runs a full
    GC first, so this is what is still reachable (RSS stops moving once the heap is
    committed, so it cannot see a leak inside the heap). None: no JVM, or no jcmd."""
    import subprocess

    import psutil

    try:
        p = psutil.Process(pid)
        javas = [q.pid for q in (p, *p.children(recursive=True)) if q.name() == "java"]
    except psutil.Error:
        return None
    total, seen = 0, False
    for jpid in javas:
        try:
            out = subprocess.run(["jcmd", str(jpid), "GC.class_histogram"],
                                 capture_output=True, text=True, timeout=120).stdout
        except (OSError, subprocess.TimeoutExpired):
            continue
        last = out.strip().splitlines()[-1:] or [""]
        words = last[0].split()  # "Total <instances> <bytes>"
        if words[:1] == ["Total"] and len(words) == 3:
            total, seen = total + int(words[2]), True
    return total if seen else None


def state_parts(state: Path, p: settings.PipelineSettings) -> dict[str, int]:
    """Bytes under the state dir by part (apparent sizes)."""
    parts: dict[str, int] = {}
    bronze, silver = p.lake.bronze_bucket, p.lake.silver_bucket
    for root, _dirs, files in os.walk(state):
        rel = Path(root).relative_to(state).parts
        for name in files:
            try:
                size = (Path(root) / name).lstat().st_size
            except OSError:
                continue
            top = rel[0] if rel else "."
            if bronze in rel:
                part = "bronze_objects"
            elif silver in rel:
                part = "silver_metadata" if "metadata" in rel else "silver_data"
            elif top == "postgres":
                part = "postgres"
            else:
                part = top
            parts[part] = parts.get(part, 0) + size
    return parts


DATA_PARTS = ("bronze_objects", "postgres", "silver_data")  # grow with the data by design
# the source database (RDS's stand-in), reported apart like its data files: its buffer
# cache fills with its growing tables up to shared_buffers (postgres/postgresql.conf)
SOURCE_PROCESSES = ("postgres",)
# bounded by count or size, full only after hours: the keeper's rotation (20 MB x 4 per
# service log, the newest 500 Glue run logs); reported with their growth, judged apart.
# "tmp": the JVM services' temp dirs, emptied at each start (one start's jar copies,
# ~380 MB, plus Spark's shuffle files, which come and go with the runs)
CAPPED_PARTS = ("logs", "tmp")


def growth_pct(values: list[float]) -> float | None:
    """Median of the last quarter vs the third quarter, in percent."""
    n = len(values)
    if n < 4:
        return None
    q3, q4 = values[n // 2: 3 * n // 4], values[3 * n // 4:]
    base = statistics.median(q3)
    return round(100.0 * (statistics.median(q4) - base) / base, 2) if base else None


def say(msg: str) -> None:
    print(f"soak: {msg}", file=sys.stderr, flush=True)


def pipeline_view() -> dict:
    """What `cdclab status` says of the flow: objects waiting, runs, problems."""
    from cdclab import runtime
    from cdclab.cli import emitter_summary, pipeline_health
    from cdclab.pipeline_health import job_runs

    rt = runtime.current(load_pipeline())
    env = rt.env()
    runs, emitter = job_runs(env, rt.pipeline.glue_job.name), rt.emitter_state()
    health = pipeline_health(rt, env, rt.status(), runs, emitter)
    newest = (runs or [{}])[0]
    return {**health.facts, "problems": health.problems,
            "runs_listed": len(runs or []), "newest_run": newest.get("JobRunState"),
            "changes_emitted": emitter_summary(emitter).get("changes_written", 0)}


def view_line(at: float, total: float, view: dict) -> str:
    problems = "; ".join(view.get("problems", [])) or "no problems"
    return (f"{at:.0f}/{total:.0f}s: {view.get('changes_emitted', 0)} changes emitted, "
            f"{view.get('objects_waiting', '?')} objects waiting "
            f"(oldest {view.get('oldest_waiting_seconds', 0)}s), "
            f"{view.get('objects_in_runs', '?')} in runs, newest run "
            f"{view.get('newest_run')}; {problems}")


def post_mortem(state: Path) -> None:
    """Why the pipeline did not drain: status and the last lines of the pipeline's logs."""
    from cdclab.services.base import tail_lines

    with contextlib.suppress(Exception):
        say("did not drain; pipeline: " + json.dumps(pipeline_view(), default=str))
    for name in ("watcher", "glue", "emitter"):
        with contextlib.suppress(OSError):
            say(f"--- last lines of logs/{name}.log ---\n"
                + "\n".join(tail_lines(state / "logs" / f"{name}.log", 30)))


def pipeline_file(args: argparse.Namespace, where: Path) -> Path:
    """pipeline.toml with the soak's upkeep schedule (the job's DefaultArguments)."""
    text = settings.PIPELINE_FILE.read_text()
    raw = tomllib.loads(text)
    m = raw.setdefault("maintenance", {})
    m["interval_minutes"] = args.maintenance_interval_minutes
    m["snapshot_retention_hours"] = args.snapshot_retention_minutes / 60
    out, skip = [], False
    for line in text.splitlines():  # drop the [maintenance] table, append the soak's
        if line.strip() == "[maintenance]":
            skip = True
            continue
        if skip and line.startswith("["):
            skip = False
        if not skip:
            out.append(line)
    out.append("[maintenance]")
    out += [f"{k} = {json.dumps(v)}" for k, v in m.items()]
    path = where / "pipeline-soak.toml"
    path.write_text("\n".join(out) + "\n")
    return path


def workload(dsn: str, seconds: float, rate: float, stop: threading.Event,
             report: dict, hold_rows: int = 0) -> None:
    from cdclab.workload import run_workload

    per_txn = 1.5  # row changes per transaction, re-measured as it goes
    end = time.monotonic() + seconds
    while not stop.is_set() and time.monotonic() < end:
        chunk = min(CHUNK_SECONDS, end - time.monotonic())
        if chunk <= 0:
            break
        r = run_workload(dsn, load_pipeline(), duration=chunk, rate=rate / per_txn,
                         hold_rows=hold_rows)
        for k in ("transactions", "inserts", "updates", "deletes"):
            report[k] = report.get(k, 0) + r[k]
        report["seconds"] = report.get("seconds", 0.0) + r["seconds"]
        changes = report["inserts"] + report["updates"] + report["deletes"]
        if report["transactions"]:
            per_txn = changes / report["transactions"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--minutes", type=float, default=60.0)
    ap.add_argument("--rate", type=float, default=200.0, help="row changes per second")
    ap.add_argument("--rows", type=int, default=5000, help="seeded source rows")
    ap.add_argument("--sample-seconds", type=float, default=None,
                    help="sampling period (default: 1/40 of the soak, 5..60 s)")
    ap.add_argument("--maintenance-interval-minutes", type=float, default=None,
                    help="the job's upkeep period (default: a tenth of the soak, >= 1)")
    ap.add_argument("--snapshot-retention-minutes", type=float, default=None,
                    help="time travel window (default: a fifth of the soak, >= 1)")
    ap.add_argument("--grow", action="store_true",
                    help="let the source table grow (the workload inserts more than it "
                         "deletes); by default it stays near --rows, a steady state")
    ap.add_argument("--drain-timeout", type=float, default=900.0)
    ap.add_argument("--check", choices=("target", "equal"), default="target",
                    help="exit 1 unless silver equals the source and growth is within the "
                         "target (target), or only unless silver equals the source (equal: "
                         "CI's shortened soak, too short for growth to settle)")
    args = ap.parse_args()
    if args.maintenance_interval_minutes is None:
        args.maintenance_interval_minutes = max(1.0, round(args.minutes / 10, 1))
    if args.snapshot_retention_minutes is None:
        args.snapshot_retention_minutes = max(1.0, round(args.minutes / 5, 1))
    if args.sample_seconds is None:
        args.sample_seconds = min(60.0, max(5.0, args.minutes * 60 / 40))
    with temp_state_dir("bench-soak") as state:
        os.environ[settings.ENV_STATE_DIR] = str(state)
        os.environ[settings.ENV_PIPELINE_FILE] = str(pipeline_file(args, state))
        result = soak(args, state)
    print(json.dumps(result, indent=2))
    ok = result["silver_equals_source"] and (args.check == "equal" or result["within_target"])
    sys.exit(0 if ok else 1)


def soak(args: argparse.Namespace, state: Path) -> dict:
    import psycopg

    from cdclab.demo import run_metrics
    from cdclab.drain import current_wal_lsn, wait_for_drain
    from cdclab.reconcile import reconcile
    from cdclab.sample_data import seed
    from cdclab.setup import setup_lake
    from cdclab.supervisor import INFRA, KEEPER, PIPELINE, Stack

    p = settings.load_pipeline()
    quiet = lambda _m: None  # noqa: E731
    stack = Stack(state, progress=quiet, pipeline=load_pipeline())
    try:
        t0 = time.monotonic()
        stack.up(INFRA)
        env = stack.env()
        setup_lake(env, load_pipeline(), progress=quiet)
        dsn = env[settings.ENV_PG_DSN]
        with psycopg.connect(dsn) as conn:
            seed(conn, load_pipeline(), args.rows)
        stack.up(PIPELINE)
        say(f"stack up in {time.monotonic() - t0:.0f}s; full load of {args.rows} rows")
        full_load = wait_for_drain(env, load_pipeline(), current_wal_lsn(dsn),
                                   timeout=args.drain_timeout)
        say(f"full load drained; {args.minutes} min of workload at {args.rate} changes/s")
        names = [*INFRA, *PIPELINE, KEEPER]

        stop, report = threading.Event(), {}
        worker = threading.Thread(target=workload, daemon=True, args=(
            dsn, args.minutes * 60, args.rate, stop, report, 0 if args.grow else args.rows))
        started = time.monotonic()
        worker.start()
        samples = []
        while worker.is_alive():
            at = time.monotonic() - started
            memory = {n: tree_memory(pid) if (pid := stack.pid_of(n)) else (0, 0)
                      for n in names}
            rss = {n: m[0] for n, m in memory.items()}
            pss = {n: m[1] for n, m in memory.items()}
            parts = state_parts(state, p)
            try:
                view = pipeline_view()
                say(view_line(at, args.minutes * 60, view))
            except Exception as e:  # a view is for people: never stops the soak
                view = {"error": f"{type(e).__name__}: {e}"}
                say(f"{at:.0f}s: no pipeline view ({view['error'][:200]})")
            heap = ({n: jvm_live_heap(pid) if (pid := stack.pid_of(n)) else None
                     for n in JVM_SERVICES} if len(samples) % HEAP_EVERY == 0 else None)
            samples.append({"t": round(at, 1), "rss": rss, "pss": pss, "state": parts,
                            "heap": heap,
                            "waiting": view.get("objects_waiting")})
            worker.join(max(0.0, args.sample_seconds - (time.monotonic() - started - at)))
        workload_seconds = time.monotonic() - started
        say(f"workload done after {workload_seconds:.0f}s; draining")
        try:
            drain = wait_for_drain(env, load_pipeline(), current_wal_lsn(dsn),
                                   timeout=args.drain_timeout,
                                   progress=say)
        except TimeoutError:
            post_mortem(state)
            raise
        say(f"drained in {drain:.0f}s; reconciling")
        equal = reconcile(env, load_pipeline())
        restarts = {n: life.restarts for n, life in stack.lives().items()}
        runs = run_metrics(settings.glue_run_logs(state))
    finally:
        stack.down()
    return summarize(args, samples, report, workload_seconds, runs, {
        "stack_up_and_full_load": round(full_load + 0.0, 1),
        "drain_after_workload": round(drain, 1),
        "total": round(time.monotonic() - t0, 1)}, getattr(equal, "equal", bool(equal)),
        restarts)


def summarize(args, samples, report, workload_seconds, runs, timings, equal,
              restarts) -> dict:
    half = samples[len(samples) // 2:]
    processes = {}
    for name in samples[0]["rss"]:
        series = [s["rss"][name] / 2**20 for s in samples]
        shared_out = [s["pss"][name] / 2**20 for s in samples]
        processes[name] = {"rss_mib_first": round(series[0], 1),
                           "rss_mib_last": round(series[-1], 1),
                           "rss_mib_max": round(max(series), 1),
                           "growth_pct_last_half": growth_pct(series),
                           "pss_mib_last": round(shared_out[-1], 1),
                           "pss_growth_pct_last_half": growth_pct(shared_out),
                           "source_database": name in SOURCE_PROCESSES}
    heaps = {}
    for name in JVM_SERVICES:
        series = [s["heap"][name] / 2**20 for s in samples
                  if s.get("heap") and s["heap"].get(name) is not None]
        if series:
            heaps[name] = {"live_mib_first": round(series[0], 1),
                           "live_mib_last": round(series[-1], 1),
                           "live_mib_max": round(max(series), 1), "samples": len(series),
                           "growth_pct_last_half": growth_pct(series)}
    parts = sorted({k for s in samples for k in s["state"]})
    state_by_part = {}
    for part in parts:
        series = [s["state"].get(part, 0) for s in samples]
        state_by_part[part] = {"mib_first": round(series[0] / 2**20, 2),
                               "mib_last": round(series[-1] / 2**20, 2),
                               "growth_pct_last_half": growth_pct([float(v) for v in series]),
                               "grows_with_data": part in DATA_PARTS,
                               "capped_by_rotation": part in CAPPED_PARTS}
    own = [float(sum(v for k, v in s["state"].items()
                     if k not in DATA_PARTS and k not in CAPPED_PARTS)) for s in samples]
    minutes_half = (half[-1]["t"] - half[0]["t"]) / 60 if len(half) > 1 else 0
    data_rate = {part: round((half[-1]["state"].get(part, 0) - half[0]["state"].get(part, 0))
                             / 2**20 / minutes_half, 3) if minutes_half else None
                 for part in DATA_PARTS}
    checked = [m["growth_pct_last_half"] for n, m in processes.items()
               if n not in SOURCE_PROCESSES] + [growth_pct(own)]
    changes = report.get("inserts", 0) + report.get("updates", 0) + report.get("deletes", 0)
    files = [m.get("files", 0) for m in runs]
    upkeep = [t.get("maintenance") for m in runs for t in m.get("tables", {}).values()
              if t.get("maintenance")]
    return {
        "benchmark": "soak",
        "params": vars(args),
        "workload": {**report, "changes": changes,
                     "changes_per_second": round(changes / workload_seconds, 1)
                     if workload_seconds else None},
        "samples": len(samples),
        "process_rss": processes,
        # not part of within_target (the measure is RSS): a leak inside a
        # committed heap shows here first; a run in flight at a sample adds its objects
        "jvm_live_heap": heaps,
        "state_dir": {
            "pipeline_state_mib_last": round(own[-1] / 2**20, 2),
            "pipeline_state_growth_pct_last_half": growth_pct(own),
            "data_growth_mib_per_minute_last_half": data_rate,
            "by_part": state_by_part,
        },
        "glue_runs": {"count": len(runs), "backlog_runs": sum(bool(m.get("backlog"))
                                                             for m in runs),
                      "max_files_per_run": max(files, default=0),
                      "maintenance_runs": len(upkeep),
                      "maintenance_errors": sorted({e for u in upkeep
                                                    for e in u.get("errors", [])})[:5]},
        "max_objects_waiting": max((s.get("waiting") or 0 for s in samples), default=0),
        "restarts": restarts,
        "target_growth_pct": TARGET_GROWTH_PCT,
        "within_target": all(g is not None and g <= TARGET_GROWTH_PCT for g in checked),
        "silver_equals_source": equal,
        "timings_seconds": timings,
        "cpus": os.cpu_count(),
    }


if __name__ == "__main__":
    main()
