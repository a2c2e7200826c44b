"""Where the time goes: source commit -> visible in silver, cut into its steps, at idle and
(--rate) under a background workload, on a fresh embedded stack. Prints one JSON object.

    .venv/bin/python bench/bench_freshness.py [--probes N] [--interval S] [--rate CHANGES/S]
        [--writers N] [--group K]

A probe commits single-row INSERT transactions (negative ids, a unique name), one every
--interval seconds, while a poller reads silver through pyiceberg every --poll seconds
(the table's current snapshot; on a new one, the rows still awaited). Afterwards each
probe's way is read from what the services already record, nothing added to them:
the emitter's `wrote` line of the CDC file holding it (its batch's first row received),
that file (its name time: the emitter's cut; its Last-Modified: stored), the
watcher's log (listed), the local Glue API's run (StartedOn, RunStartedOn, CompletedOn,
the job's CDCLAB_METRICS phase_seconds) and the silver snapshot's timestamp. The steps
are defined in bench/freshness_steps.py; docs/performance.md shows the figures.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import freshness_steps as fs  # noqa: E402
from process_memory import tree_memory  # noqa: E402

from dms_emitter.emitter import batch_size_kb, quiet_cut_seconds  # noqa: E402
from pipeline_contract import settings  # noqa: E402
from pipeline_contract.settings import PipelineSettings, load_pipeline  # noqa: E402

# changes per transaction of cdclab.workload's mix (WEIGHTS over SCENARIOS: a multi_update
# is 2-4 updates, insert_delete/update_delete/delete_reinsert are 2 changes)
CHANGES_PER_TRANSACTION = 1.32
IDLE_BASE, LOAD_BASE = 1, 100_001  # probe numbers; ids are their negatives
BIG_FIRST_ID = -3_000_000  # the big transaction's ids: below every probe's
BIG_UPDATED_NAME = "bench-big-update"
WORKLOAD_CHILD = (
    "import json, sys\n"
    "from cdclab.workload import run_workload\n"
    "from pipeline_contract.settings import load_pipeline\n"
    "print(json.dumps(run_workload(sys.argv[1], load_pipeline(), duration=float(sys.argv[2]),"
    " rate=float(sys.argv[3]), writer=int(sys.argv[4]), writers=int(sys.argv[5]),"
    " group=int(sys.argv[6]))),"
    " flush=True)\n"
)


def say(message: str) -> None:
    print(f"[bench_freshness {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr,
          flush=True)


@dataclass
class Seen:
    visible: float  # the scan that found the row had returned
    snapshot: float | None  # the first snapshot since the last poll that could add it


@dataclass
class SilverPoller:
    """Reads the silver table's current snapshot every `period` s; on a new one, scans it
    for the keys awaited. Runs in a thread of its own."""

    load: Callable[[], object]  # () -> pyiceberg Table
    key: str
    period: float = 0.1
    awaited: set[int] = field(default_factory=set)
    seen: dict[int, Seen] = field(default_factory=dict)
    errors: int = 0
    last_error: str = ""
    polls: int = 0

    def __post_init__(self) -> None:
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._known: set[int] = set()  # snapshot ids already considered
        self._thread = threading.Thread(target=self._loop, name="silver-poller", daemon=True)

    def start(self) -> None:
        from pyiceberg.expressions import In

        table = self.load()  # snapshots so far: none of them holds a probe row
        self._known = {s.snapshot_id for s in table.metadata.snapshots}
        # one scan first: the first pays for imports (pyarrow's), seconds, not the probes
        table.scan(row_filter=In(self.key, {-(2**31 - 1)}),
                   selected_fields=(self.key,)).to_arrow()
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def expect(self, key: int) -> None:
        with self._lock:
            self.awaited.add(key)

    def waiting(self, keys: set[int]) -> set[int]:
        with self._lock:
            return keys - set(self.seen)

    def _loop(self) -> None:
        from pyiceberg.expressions import In

        while not self._stop.is_set():
            started = time.time()
            try:
                self.polls += 1
                table = self.load()
                new = [s for s in table.metadata.snapshots if s.snapshot_id not in self._known]
                with self._lock:
                    wanted = self.awaited - set(self.seen)
                if new and wanted:
                    current = table.current_snapshot()
                    rows = table.scan(row_filter=In(self.key, wanted),
                                      selected_fields=(self.key,),
                                      snapshot_id=current.snapshot_id).to_arrow()
                    found = set(rows.column(self.key).to_pylist())
                    at = time.time()
                    first = fs.first_snapshot((s.timestamp_ms / 1000, operation(s))
                                              for s in new)
                    with self._lock:
                        for k in found & wanted:
                            self.seen[k] = Seen(at, first)
                self._known.update(s.snapshot_id for s in new)
            except Exception as e:  # a catalog hiccup: say so in the output, poll on
                self.errors += 1
                self.last_error = f"{type(e).__name__}: {e}"[:300]
            self._stop.wait(max(0.0, self.period - (time.time() - started)))


def operation(snapshot) -> str:
    """A pyiceberg snapshot's operation (append, overwrite, delete, replace)."""
    op = getattr(snapshot.summary, "operation", None)
    return str(getattr(op, "value", op) or "")


@dataclass
class Probe:
    number: int
    committed: float

    @property
    def key(self) -> int:
        return -self.number

    @property
    def marker(self) -> str:
        return fs.probe_marker(self.number)


def commit_probe(dsn: str, p: PipelineSettings, number: int) -> Probe:
    """One single-row INSERT transaction; its time is the client's once COMMIT returned."""
    import random

    import psycopg

    from cdclab.sample_data import COLUMNS, host
    from cdclab.workload import INSERT, Op, execute

    row = dict(zip(COLUMNS, host(random.Random(number), -number), strict=True))
    row["name"] = fs.probe_marker(number)
    with psycopg.connect(dsn, autocommit=True) as conn:
        execute(conn, p, [Op(INSERT, -number, row)])
        return Probe(number, time.time())


def bronze_objects_holding(env: Mapping[str, str], p: PipelineSettings,
                           markers: dict[str, int], since: float) -> dict[int, dict]:
    """probe number -> {key, stored (Last-Modified), named (its name's time)} of the CDC
    file holding the probe row, among the objects stored since `since`."""
    from cdclab.services.minio import s3_client
    from lambda_shim.watch_logic import name_time

    s3 = s3_client(dict(env))
    out: dict[int, dict] = {}
    pages = s3.get_paginator("list_objects_v2").paginate(
        Bucket=p.lake.bronze_bucket, Prefix=p.watched_prefix + "/")
    objects = sorted((o for page in pages for o in page.get("Contents", [])
                      if o["LastModified"].timestamp() >= since), key=lambda o: o["Key"])
    for obj in objects:
        key = obj["Key"]
        if key.endswith(".parquet"):
            raise SystemExit(f"bench_freshness: {key}: Parquet bronze files are not "
                             "searched; run with [dms] data_format = \"csv\"")
        body = s3.get_object(Bucket=p.lake.bronze_bucket, Key=key)["Body"].read()
        text = (gzip.decompress(body) if key.endswith(".gz") else body).decode(
            errors="replace")
        named = name_time(key)
        for marker, number in markers.items():
            if number not in out and marker in text:
                out[number] = {"key": key, "stored": obj["LastModified"].timestamp(),
                               "named": None if named is None
                               else named.replace(tzinfo=UTC).timestamp()}
    return out


def glue_runs(env: Mapping[str, str], job: str) -> list[dict]:
    """Every run as the local Glue API stores it (RunStartedOn and Metrics included:
    the raw call keeps what boto3 drops)."""
    from cdclab.services.glue_api import glue_call

    runs: list[dict] = []
    body: dict = {"JobName": job}
    while True:
        page = glue_call(env[settings.ENV_GLUE_ENDPOINT], "GetJobRuns", body, env=env)
        runs += page.get("JobRuns", [])
        if not page.get("NextToken"):
            return runs
        body = {"JobName": job, "NextToken": page["NextToken"]}


def wait_for_runs(env: Mapping[str, str], job: str, snapshots: list[float],
                  timeout: float) -> list[dict]:
    """The job's runs, once every run that wrote one of `snapshots` has ended (its
    phase_seconds come with its end), or after `timeout` s."""
    deadline = time.monotonic() + timeout
    while True:
        runs = glue_runs(env, job)
        holders = [fs.run_holding(runs, at) for at in snapshots]
        if all(r is None or "CompletedOn" in r for r in holders) or \
                time.monotonic() > deadline:
            return runs
        time.sleep(1.0)


def log_lines(state: Path, service: str) -> list[str]:
    """A service's log in the stack's state dir, as lines (none when it wrote none)."""
    log = state / "logs" / f"{service}.log"
    return log.read_text(errors="replace").splitlines() if log.exists() else []


def run_phase(name: str, env: Mapping[str, str], p: PipelineSettings, state: Path,
              poller: SilverPoller, *, first: int, probes: int, interval: float,
              settle: float) -> dict:
    """Commit `probes` probes `interval` apart, wait until silver shows them (at most
    `settle` s after the last), then read each one's way."""
    dsn = env[settings.ENV_PG_DSN]
    since = time.time() - 2
    done: list[Probe] = []
    say(f"{name}: {probes} probes, one every {interval}s")
    start = time.monotonic()
    for i in range(probes):
        poller.expect(-(first + i))
        done.append(commit_probe(dsn, p, first + i))
        time.sleep(max(0.0, start + (i + 1) * interval - time.monotonic()))
    keys = {pr.key for pr in done}
    deadline = time.monotonic() + settle
    while poller.waiting(keys) and time.monotonic() < deadline:
        time.sleep(0.2)
    late = sorted(poller.waiting(keys))
    say(f"{name}: {len(keys) - len(late)}/{len(keys)} visible; reading their ways")

    files = bronze_objects_holding(env, p, {pr.marker: pr.number for pr in done}, since)
    file_keys = [f["key"] for f in files.values()]
    noticed = fs.noticed_times(log_lines(state, "watcher"), file_keys)
    received = fs.received_times(log_lines(state, "emitter"), file_keys)
    runs = wait_for_runs(env, p.glue_job.name, [s.snapshot for s in poller.seen.values()
                                                  if s.snapshot is not None and s.snapshot
                                                  >= since], settle)
    times: list[fs.ProbeTimes] = []
    tails: list[float] = []  # silver commit -> CompletedOn: what keeps the next run waiting
    for pr in done:
        seen = poller.seen.get(pr.key)
        if seen is None:
            continue
        f = files.get(pr.number, {})
        run = fs.run_holding(runs, seen.snapshot) if seen.snapshot is not None else None
        run = run or {}
        if "CompletedOn" in run and seen.snapshot is not None:
            tails.append(run["CompletedOn"] - seen.snapshot)
        times.append(fs.ProbeTimes(
            committed=pr.committed, visible=seen.visible,
            received=received.get(f.get("key", "")), named=f.get("named"),
            stored=f.get("stored"), noticed=noticed.get(f.get("key", "")),
            requested=run.get("StartedOn"), running=run.get("RunStartedOn"),
            snapshot=seen.snapshot,
            phases=(run.get("Metrics") or {}).get("phase_seconds", {})))
    ours = [r for r in runs if r.get("StartedOn", 0) >= since]
    return {"probes": len(done), "not_visible": len(late), **fs.summarize(times),
            "lag_trend": fs.lag_trend([(t.committed, t.visible - t.committed)
                                       for t in times]),
            "run_after_silver_commit_seconds": fs.spread(tails),
            "glue_runs": run_figures(ours)}


def big_transaction(dsn: str, p: PipelineSettings, load: Callable[[], object], key: str,
                    rows: int, settle: float, job_runs: Callable[[], list[dict]]) -> dict:
    """One INSERT transaction of `rows` rows (COPY), then one UPDATE of all of them:
    source COMMIT -> every row visible in silver (after the UPDATE: with its new name),
    and the Glue runs requested meanwhile (`job_runs`: all of the job's): when the first
    was requested after the COMMIT (the emitter's file, its notice), and their phases."""
    import psycopg
    from psycopg import sql

    from cdclab.sample_data import hosts, insert_hosts

    lo, hi = BIG_FIRST_ID, BIG_FIRST_ID + rows - 1
    table = sql.Identifier(p.source.schema, p.source.table)
    out = {"rows": rows}
    say(f"big transaction: one INSERT of {rows} rows")
    with psycopg.connect(dsn) as conn:
        insert_hosts(conn, p, hosts(rows, seed=3, start_id=lo))
        conn.commit()
        windows = {"insert": time.time()}
        out["insert"] = wait_for_rows(load, key, lo, hi, rows, None, windows["insert"], settle)
        say(f"big transaction: insert visible in {out['insert']['seconds']}s; one UPDATE "
            f"of {rows} rows")
        conn.execute(sql.SQL("UPDATE {} SET name = %s WHERE {} BETWEEN %s AND %s").format(
            table, sql.Identifier(key)), (BIG_UPDATED_NAME, lo, hi))
        conn.commit()
        windows["update"] = time.time()
        out["update"] = wait_for_rows(load, key, lo, hi, rows, BIG_UPDATED_NAME,
                                      windows["update"], settle)
    deadline = time.time() + settle  # the last run ends after its silver commit
    while any("CompletedOn" not in r for r in job_runs()) and time.time() < deadline:
        time.sleep(0.5)
    runs = job_runs()
    for kind, committed in windows.items():
        seconds = out[kind].get("seconds") or settle
        mine = sorted((r for r in runs if committed <= r["StartedOn"] <= committed + seconds),
                      key=lambda r: r["StartedOn"])
        out[kind]["glue_runs"] = len(mine)
        out[kind]["first_run_requested_after_seconds"] = (
            round(mine[0]["StartedOn"] - committed, 2) if mine else None)
        out[kind]["runs"] = [
            {"requested_to_end_seconds": round(r["CompletedOn"] - r["StartedOn"], 2)
             if "CompletedOn" in r else None,
             "phase_seconds": (r.get("Metrics") or {}).get("phase_seconds")} for r in mine]
    return out


def wait_for_rows(load: Callable[[], object], key: str, lo: int, hi: int, rows: int,
                  name: str | None, committed: float, settle: float) -> dict:
    """Seconds from `committed` until silver holds `rows` rows with keys lo..hi (and, with
    `name`, that name), scanned on each new snapshot; None after `settle` s."""
    from pyiceberg.expressions import And, GreaterThanOrEqual, LessThanOrEqual

    last_snapshot, count = None, 0
    while time.time() - committed < settle:
        table = load()
        current = table.current_snapshot()
        if current is not None and current.snapshot_id != last_snapshot:
            last_snapshot = current.snapshot_id
            found = table.scan(row_filter=And(GreaterThanOrEqual(key, lo),
                                              LessThanOrEqual(key, hi)),
                               selected_fields=(key, "name"),
                               snapshot_id=current.snapshot_id).to_arrow()
            count = found.num_rows if name is None else \
                sum(v == name for v in found.column("name").to_pylist())
            if count >= rows:
                seconds = time.time() - committed
                return {"seconds": round(seconds, 2), "rows_per_second": round(rows / seconds)}
        time.sleep(0.25)
    return {"seconds": None, "visible_rows": count}


def idle_memory(stack) -> dict:
    """PSS of each service's process tree (a Glue run's JVM and the spare run process in
    glue's), MiB, with the stack idle: PSS counts a page shared by several processes once."""
    mib = {}
    for status in stack.status():
        if status.pid:
            mib[status.name] = round(tree_memory(status.pid)[1] / 2**20)
    return {"pss_mib": mib, "total_gib": round(sum(mib.values()) / 1024, 2)}


def rested_memory(stack, state: Path, rest: float, at_rest_within: float,
                  warmup: bool) -> dict:
    """idle_memory once the stack is at rest: the driver's JIT warm-up over and its two
    idle collections made (glue_local.driver.trim, 10 and 15 s after its last work;
    fs.driver_at_rest reads the glue service's log), waiting at most `at_rest_within` s
    after the idle probes. Beside it, the totals 5 s and `rest` s after the probes (what
    the runs before the twenty-fourth reported as `total_gib`)."""
    since = len(log_lines(state, "glue"))
    begun = time.monotonic()
    time.sleep(5)
    early = idle_memory(stack)["total_gib"]
    time.sleep(max(0.0, rest - 5))
    fixed = idle_memory(stack)
    while not (at_rest := fs.driver_at_rest(log_lines(state, "glue"), since, warmup)) \
            and time.monotonic() - begun < at_rest_within:
        time.sleep(1.0)
    rested = idle_memory(stack) if at_rest else fixed
    return rested | {"driver_at_rest": at_rest,
                     "rested_seconds": round(time.monotonic() - begun, 1),
                     "total_gib_after_5s": early, f"total_gib_after_{rest:g}s": fixed["total_gib"]}


def run_figures(runs: list[dict]) -> dict:
    """The phase's Glue runs: how many, their time from StartJobRun to the end, and each
    phase (all of them, those after the silver commit too)."""
    ended = [r for r in runs if "CompletedOn" in r and "RunStartedOn" in r]
    phases: dict[str, list[float]] = {}
    for r in ended:
        metrics = r.get("Metrics") or {}
        for name, s in (metrics.get("phase_seconds") or {}).items():
            phases.setdefault(name, []).append(s)
        upkeep = [t["maintenance"]["seconds"] for t in (metrics.get("tables") or {}).values()
                  if (t.get("maintenance") or {}).get("seconds") is not None]
        if upkeep:  # the job's scheduled Iceberg upkeep, after the bookmark's input
            phases.setdefault("upkeep", []).append(round(sum(upkeep), 3))
    return {"count": len(runs),
            "states": {s: sum(r["JobRunState"] == s for r in runs)
                       for s in sorted({r["JobRunState"] for r in runs})},
            "requested_to_end_seconds": fs.spread([r["CompletedOn"] - r["StartedOn"]
                                                   for r in ended]),
            "queued_seconds": fs.spread([r["RunStartedOn"] - r["StartedOn"] for r in ended]),
            "phase_seconds": {n: fs.spread(v) for n, v in sorted(phases.items())}}


def failed_runs(runs: list[dict]) -> dict:
    """The runs that ended without success: a bench whose silver still equals the source
    after a failed run (the next run redid its input) hides a fault, so it fails too."""
    failed = [r for r in runs if r["JobRunState"] in ("FAILED", "ERROR", "TIMEOUT")]
    return {"count": len(failed),
            "examples": [{"id": r["Id"], "state": r["JobRunState"],
                          "error": (r.get("ErrorMessage") or "")[:500]} for r in failed[:3]]}


def start_workload(dsn: str, rate: float, duration: float, writers: int = 1,
                   group: int = 1) -> list[subprocess.Popen]:
    """cdclab's workload in processes of their own (their CPU is not the probe's GIL):
    `writers` connections at once, each at its share of `rate` on its share of the ids
    (one connection commits at most ~740 transactions/s here), each committing `group`
    planned transactions at a time."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT), str(ROOT / "spark"), os.environ.get("PYTHONPATH", "")])}
    return [subprocess.Popen(
        [sys.executable, "-c", WORKLOAD_CHILD, dsn, str(duration),
         str(rate / CHANGES_PER_TRANSACTION / writers), str(w), str(writers), str(group)],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for w in range(writers)]


def workload_report(workers: list[subprocess.Popen], timeout: float) -> dict:
    """The writers' reports summed: transactions, changes and changes/s over the
    longest writer's time."""
    from cdclab.drain import lsn_to_int

    reports = []
    for worker in workers:
        out, err = worker.communicate(timeout=timeout)
        if worker.returncode != 0:
            raise SystemExit(f"bench_freshness: the workload failed "
                             f"(exit {worker.returncode}): {err.strip()[-1000:]}")
        reports.append(json.loads(out.strip().splitlines()[-1]))
    total = {k: sum(r.get(k, 0) for r in reports)
             for k in ("transactions", "commits", "inserts", "updates", "deletes")}
    seconds = max(r.get("seconds", 0.0) for r in reports)
    changes = total["inserts"] + total["updates"] + total["deletes"]
    return {**total, "writers": len(reports), "seeds": [r.get("seed") for r in reports],
            "seconds": seconds,
            "last_lsn": max((r["last_lsn"] for r in reports), key=lsn_to_int),
            "changes_per_second": round(changes / seconds, 1) if seconds else None}


def machine_facts() -> dict:
    pages = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    return {"cpus": os.cpu_count(), "cpus_usable": len(os.sched_getaffinity(0)),
            "memory_gib": round(pages / 2**30, 1), "load_avg_1_5_15": None,
            "note": "shared with other sessions' work"}


def pipeline_facts(p: PipelineSettings) -> dict:
    return {"batch_interval_seconds": float(os.environ.get(
                settings.ENV_BATCH_INTERVAL, p.dms.cdc_max_batch_interval_seconds
                or settings.LAB_BATCH_INTERVAL_S)),
            "batch_size_kb": batch_size_kb(p, os.environ),
            "batch_quiet_seconds": quiet_cut_seconds(p, os.environ),
            "watch_interval_seconds": float(os.environ.get(settings.ENV_WATCH_INTERVAL,
                                                           settings.LAB_WATCH_INTERVAL_S)),
            "max_concurrent_runs": p.glue_job.max_concurrent_runs,
            "spark_master": os.environ.get(settings.ENV_SPARK_MASTER,
                                           settings.LOCAL_SPARK_MASTER),
            "driver_warmup_seconds": settings.env_seconds(
                os.environ, settings.ENV_DRIVER_WARMUP, settings.LAB_DRIVER_WARMUP_S)}


def run(args: argparse.Namespace, state: Path) -> tuple[int, dict]:
    import psycopg

    from cdclab.drain import current_wal_lsn, wait_for_drain
    from cdclab.reconcile import reconcile, silver_catalog
    from cdclab.sample_data import seed
    from cdclab.setup import setup_lake
    from cdclab.supervisor import INFRA, PIPELINE, Stack
    from cdclab.tables_sync import published_specs

    p = load_pipeline()
    result: dict = {"benchmark": "freshness", "params": vars(args),
                    "machine": machine_facts(),
                    "pipeline": pipeline_facts(p)}
    timings: dict[str, float] = {}
    stack = Stack(state, pipeline=p, progress=say)
    poller: SilverPoller | None = None
    try:
        t = time.monotonic()
        stack.up(INFRA)
        env = stack.env()
        dsn = env[settings.ENV_PG_DSN]
        seeding = time.monotonic()
        with psycopg.connect(dsn) as conn:
            seed(conn, p, args.rows)
        timings["seed"] = time.monotonic() - seeding
        setup_lake(env, p, progress=say)
        stack.up(PIPELINE)
        timings["stack_up"] = time.monotonic() - t - timings["seed"]
        say("merging the full load into silver")
        timings["full_load_to_silver"] = wait_for_drain(env, p, current_wal_lsn(dsn),
                                                        progress=say)
        # stack_up holds the emitter's full load (it is ready once its LOAD files are
        # written): issue 27's full load is `up` to every row in silver, both together
        timings["up_to_silver"] = round(timings["stack_up"]
                                        + timings["full_load_to_silver"], 3)
        result["full_load_runs"] = run_figures(glue_runs(env, p.glue_job.name))
        spec = published_specs(env, p)[0]
        _catalog, namespace, table = spec["silver_table"].split(".", 2)
        catalog = silver_catalog(env)
        def load_silver():
            return catalog.load_table(f"{namespace}.{table}")

        if args.pause:
            say(f"resting {args.pause:.0f}s before the probes")
            time.sleep(args.pause)
        poller = SilverPoller(load_silver, spec["keys"][0], args.poll)
        poller.start()
        result["machine"]["load_avg_1_5_15"] = [round(x, 2) for x in os.getloadavg()]
        common = {"probes": args.probes, "interval": args.interval, "settle": args.settle}
        result["idle"] = run_phase("idle", env, p, state, poller, first=IDLE_BASE, **common)
        result["idle_memory"] = rested_memory(
            stack, state, args.rest, args.at_rest_within,
            warmup=settings.env_seconds(os.environ, settings.ENV_DRIVER_WARMUP,
                                        settings.LAB_DRIVER_WARMUP_S) > 0)
        if args.big_transaction:
            result["big_transaction"] = big_transaction(
                dsn, p, load_silver, spec["keys"][0], args.big_transaction, args.settle * 5,
                lambda: glue_runs(env, p.glue_job.name))
        if args.rate:
            # the load goes on while the last probes travel (about 15 s under load)
            duration = args.warmup + args.probes * args.interval + 15
            workers = start_workload(dsn, args.rate, duration, args.writers, args.group)
            try:
                say(f"load: ~{args.rate:.0f} changes/s from {args.writers} writer(s) "
                    f"committing {args.group} at a time, for {duration:.0f}s, probes after "
                    f"{args.warmup:.0f}s")
                time.sleep(args.warmup)
                load = run_phase("load", env, p, state, poller, first=LOAD_BASE, **common)
                load["workload"] = workload_report(workers, duration + 120)
            finally:
                for worker in workers:
                    if worker.poll() is None:
                        worker.kill()
                        worker.wait()
            result["load"] = load
        result["poller"] = {"polls": poller.polls, "errors": poller.errors,
                            "last_error": poller.last_error}
        poller.stop()
        poller = None
        if args.reconcile:
            say("draining, then reconciling silver with source")
            t = time.monotonic()
            wait_for_drain(env, p, current_wal_lsn(dsn), progress=say)
            result["silver_equals_source"] = reconcile(env, p).equal
            timings["drain_and_reconcile"] = time.monotonic() - t
        result["failed_runs"] = failed_runs(glue_runs(env, p.glue_job.name))
    finally:
        if poller is not None:
            poller.stop()
        stack.down()
    result["timings_seconds"] = {k: round(v, 1) for k, v in timings.items()}
    result["against_baseline"] = fs.against_baseline(result)
    equal = result.get("silver_equals_source", True)
    failed = (result.get("failed_runs") or {}).get("count", 0)
    return (0 if equal and not failed else 1), result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--probes", type=int, default=20, help="probe commits per phase")
    ap.add_argument("--interval", type=float, default=2.0, help="seconds between probes")
    ap.add_argument("--writers", type=int, default=1,
                    help="connections the workload commits from at once, each on its own "
                         "ids (one commits at most ~740 transactions/s here)")
    ap.add_argument("--group", type=int, default=1,
                    help="the workload's planned transactions per commit (> 1: an "
                         "application's multi-row transactions; more changes/s per writer)")
    ap.add_argument("--rate", type=float, default=0.0,
                    help="changes/s of a background workload for a second phase (0: none)")
    ap.add_argument("--warmup", type=float, default=10.0,
                    help="seconds of workload before the loaded phase's first probe")
    ap.add_argument("--rows", type=int, default=1000, help="rows seeded before the full load")
    ap.add_argument("--pause", type=float, default=0.0,
                    help="seconds the stack rests after the full load, before the first "
                         "probe (as a user would look at it; the Glue driver's JIT "
                         "warm-up works meanwhile)")
    ap.add_argument("--poll", type=float, default=0.1, help="silver poll period, seconds")
    ap.add_argument("--big-transaction", type=int, default=0, metavar="ROWS",
                    help="after the idle probes, one INSERT then one UPDATE transaction of "
                         "ROWS rows, each timed commit -> all visible (0: none)")
    ap.add_argument("--rest", type=float, default=20.0,
                    help="seconds after the idle probes of the fixed memory reading")
    ap.add_argument("--at-rest-within", type=float, default=120.0,
                    help="at most this long after the idle probes, wait for the driver at "
                         "rest (warm-up over, idle collections made) to read its memory")
    ap.add_argument("--settle", type=float, default=60.0,
                    help="seconds after the last probe to wait for it in silver")
    ap.add_argument("--no-reconcile", dest="reconcile", action="store_false",
                    help="skip the final silver == source check")
    ap.add_argument("--markdown", action="store_true",
                    help="also print docs/performance.md's table (to stderr)")
    args = ap.parse_args()

    from tests.resources.stack_dirs import temp_state_dir

    with temp_state_dir("bench-freshness") as state:
        os.environ[settings.ENV_STATE_DIR] = str(state)
        code, result = run(args, state)
    print(json.dumps(result, indent=2))
    if args.markdown:
        print(fs.markdown_table(result), file=sys.stderr)
    sys.exit(code)


if __name__ == "__main__":
    main()
