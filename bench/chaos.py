"""Chaos suite: kill -9 every service at random moments of a randomized workload, on
one embedded stack reused across trials; every trial must end drained, with silver equal
to the source and no duplicate keys. Prints one JSON object (stdout); progress on stderr.

    .venv/bin/python bench/chaos.py [--trials N] [--seed S] [--trial-seconds CAP]
    make chaos [CHAOS_TRIALS=100] [CHAOS_SEED=S]

A trial (its seed: the run's seed + its number):
  - a workload of DURATION seconds at RATE transactions/s on the source table: inserts,
    updates, deletes, multi-statement transactions (cdclab.workload's planner), one or two
    big transactions (hundreds of planned transactions plus a set-based UPDATE, as one),
    and traffic on a table without a primary key that the pipeline does not select
    (alone and inside the same transactions as the hosts' changes): it must disturb
    nothing;
  - while it runs, SIGKILL of one or more services' process groups, by the PIDs of the
    stack this run started: postgres, minio, iceberg-rest, glue (at a random moment, or
    `glue@merge`: while a run is RUNNING and its log shows the merge phase), emitter (at
    random, or `emitter@full_load`: the trial starts with `cdclab resync`, and the emitter
    dies during the full load it starts), watcher. Nobody restarts them but the keeper;
  - then: every service back and healthy, `wait_for_drain`, `reconcile`. The trial passes
    only when silver equals source with no duplicate keys, and no file of the PK-less
    table was written.

Trial k's first fault is KINDS[seed % len(KINDS)], so any 8 consecutive trials kill
every kind; 0-2 more faults (other services) are drawn from the seed. The stack and its
data carry over from trial to trial (realistic: nothing is reset), each trial is capped
(--trial-seconds) and the run stops at the first failure (--keep-going: carry on), whose
seed the JSON and stderr name. Replay a trial's plan with --seed <its seed> --trials 1
(on a fresh stack: timing and carried-over state are not replayed). A failed run keeps
its state dir (logs, data) for a post-mortem and prints where.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import shutil
import signal
import statistics
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from pipeline_contract.settings import load_pipeline

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from cdclab.services.registry import NAMES as SERVICES  # noqa: E402
from pipeline_contract import settings  # noqa: E402

# a kill of each service, and of two at their critical moment
KINDS = tuple(sorted((*SERVICES, "glue@merge", "emitter@full_load"), key=lambda k: (
    SERVICES.index(k.split("@")[0]), k)))
NOPK_TABLE = "chaos_events"  # no primary key, not selected by the table mappings
MERGE_STARTS = "dedup and classify:"  # the job's phase line printed just before its MERGE
MERGE_DONE = "merge into silver:"  # printed once the silver MERGE committed
RECOVERY_TIMEOUT = 240.0


def log(msg: str) -> None:
    print(f"[chaos {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# --- the plan of a trial (pure) -----------------------------------------------------------
@dataclass
class Fault:
    kind: str  # one of KINDS
    at: float  # seconds after the workload starts (after the resync, if any)
    option: str = ""  # glue@merge: "merging" (during the MERGE) | "merged" (right after)
    delay: float = 0.0  # glue@merge "merging" / emitter@full_load: wait after the signal

    @property
    def service(self) -> str:
        return self.kind.split("@")[0]


@dataclass
class TrialPlan:
    seed: int
    duration: float
    rate: float
    big_at: list[float]  # seconds into the workload
    big_size: int  # planned transactions per big transaction
    nopk_share: float  # share of transactions on the PK-less table alone
    mixed_share: float  # share with hosts' changes and PK-less rows in one transaction
    faults: list[Fault]

    @property
    def resync(self) -> bool:
        return any(f.kind == "emitter@full_load" for f in self.faults)


def plan_trial(seed: int, duration: tuple[float, float] = (6.0, 12.0),
               rate: float = 40.0) -> TrialPlan:
    """Everything random about a trial, from its seed."""
    rng = random.Random(seed)
    length = round(rng.uniform(*duration), 1)
    primary = KINDS[seed % len(KINDS)]
    others = [s for s in SERVICES if s != primary.split("@")[0]]
    extra = rng.choices((0, 1, 2), weights=(4, 4, 2))[0]
    kinds = [primary] + rng.sample(others, extra)
    faults = []
    for kind in kinds:
        if kind == "glue" and rng.random() < 0.5:
            kind = "glue@merge"
        if kind == "emitter" and primary != "emitter" and rng.random() < 0.3:
            kind = "emitter@full_load"
        fault = Fault(kind, round(rng.uniform(0.05, 0.85) * length, 2))
        if kind == "glue@merge":
            fault.option = rng.choice(("merging", "merged"))
            fault.at = round(rng.uniform(0.0, 0.5) * length, 2)
            fault.delay = round(rng.uniform(0.0, 0.8), 2) if fault.option == "merging" else 0
        if kind == "emitter@full_load":
            fault.at, fault.delay = 0.0, round(rng.uniform(0.0, 0.1), 2)
        faults.append(fault)
    bigs = rng.choices((1, 2), weights=(3, 1))[0]
    return TrialPlan(
        seed=seed, duration=length, rate=rate,
        big_at=sorted(round(rng.uniform(0.1, 0.9) * length, 2) for _ in range(bigs)),
        big_size=rng.randrange(200, 700), nopk_share=round(rng.uniform(0.05, 0.2), 3),
        mixed_share=round(rng.uniform(0.05, 0.15), 3), faults=faults)


# --- the workload ---------------------------------------------------------------------------
class Workload:
    """Randomized transactions that survive a PostgreSQL crash: on a lost connection it
    reconnects and re-reads the live ids (a commit lost with the connection may or may
    not have happened; reconcile compares with the source as it is, not with a model)."""

    def __init__(self, dsn: str, plan: TrialPlan, stop: threading.Event) -> None:
        self.dsn, self.plan, self.stop = dsn, plan, stop
        self.rng = random.Random(plan.seed ^ 0x5EED)
        self.counts = {"transactions": 0, "hosts_changes": 0, "big_transactions": 0,
                       "big_transaction_changes": 0, "nopk_transactions": 0,
                       "mixed_transactions": 0, "reconnects": 0, "errors": 0}
        self.conn = None
        self.planner = None
        self.error: str | None = None

    def _connect(self, deadline: float) -> None:
        import psycopg

        while True:
            try:
                self.conn = psycopg.connect(self.dsn, autocommit=True, connect_timeout=3)
                self._refresh()
                return
            except psycopg.OperationalError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)

    def _refresh(self) -> None:
        from cdclab.workload import Planner

        src = settings.load_pipeline().source
        ids = {r[0] for r in self.conn.execute(
            f'SELECT "{src.primary_key}" FROM "{src.schema}"."{src.table}"')}
        top = max(ids, default=0) + 1
        if self.planner is None:
            self.planner = Planner(ids, top, self.plan.seed)
        else:
            self.planner.live = ids
            self.planner.next_id = max(self.planner.next_id, top)

    def _nopk(self) -> None:
        rng, table = self.rng, NOPK_TABLE
        roll = rng.random()
        if roll < 0.5:
            rows = [(rng.randrange(10**6), f"v{rng.randrange(10**9)}")
                    for _ in range(rng.randrange(1, 20))]
            with self.conn.cursor() as cur:
                cur.executemany(f"INSERT INTO {table} (k, v) VALUES (%s, %s)", rows)
        elif roll < 0.8:
            self.conn.execute(f"UPDATE {table} SET v = v || '.' WHERE k %% 13 = %s",
                              [rng.randrange(13)])
        else:
            self.conn.execute(f"DELETE FROM {table} WHERE k %% 7 = %s", [rng.randrange(7)])

    def _hosts(self, transactions: int) -> int:
        from cdclab.workload import execute

        txn = [op for _ in range(transactions) for op in self.planner.transaction()]
        # one transaction (a savepoint inside an outer one)
        execute(self.conn, load_pipeline(), txn)
        return len(txn)

    def _big(self) -> int:
        src = settings.load_pipeline().source
        with self.conn.transaction():
            changes = self._hosts(self.plan.big_size)
            cur = self.conn.execute(
                f'UPDATE "{src.schema}"."{src.table}" SET response_time = %s '
                f'WHERE "{src.primary_key}" %% 5 = %s',
                [self.rng.choice(["within an hour", "within a day"]), self.rng.randrange(5)])
            self._nopk()
        return changes + cur.rowcount

    def _one(self, bigs: list[float], start: float) -> None:
        counts = self.counts
        if bigs and time.monotonic() - start >= bigs[0]:
            bigs.pop(0)
            counts["big_transaction_changes"] += self._big()
            counts["big_transactions"] += 1
            return
        roll = self.rng.random()
        if roll < self.plan.nopk_share:
            with self.conn.transaction():
                self._nopk()
            counts["nopk_transactions"] += 1
        elif roll < self.plan.nopk_share + self.plan.mixed_share:
            with self.conn.transaction():
                self._nopk()
                counts["hosts_changes"] += self._hosts(self.rng.randrange(1, 4))
                self._nopk()
            counts["mixed_transactions"] += 1
        else:
            counts["hosts_changes"] += self._hosts(1)

    def run(self) -> None:
        import psycopg

        plan, start = self.plan, time.monotonic()
        end = start + plan.duration
        bigs = list(plan.big_at)
        try:
            self._connect(end + 120)
            done = 0
            while time.monotonic() < end and not self.stop.is_set():
                try:
                    self._one(bigs, start)
                    self.counts["transactions"] += 1
                except (psycopg.OperationalError, psycopg.InterfaceError):
                    self.counts["reconnects"] += 1
                    with contextlib.suppress(Exception):
                        self.conn.close()
                    self._connect(end + 120)
                except psycopg.Error:  # e.g. a key the model thought free after a crash
                    self.counts["errors"] += 1
                    self._refresh()
                done += 1
                time.sleep(max(0.0, start + done / plan.rate - time.monotonic()))
            while bigs and not self.stop.is_set():  # planned, but the time ran out
                bigs[0] = 0.0
                self._one(bigs, start)
                self.counts["transactions"] += 1
        except Exception as exc:
            self.error = f"{type(exc).__name__}: {exc}"
        finally:
            with contextlib.suppress(Exception):
                self.conn.close()


# --- faults ---------------------------------------------------------------------------------
def _stack(state: Path):
    """A Stack of its own per thread: its lock depth and record are per instance."""
    from cdclab.supervisor import Stack

    return Stack(state, pipeline=load_pipeline())


def restarts(stack, name: str) -> int:
    life = stack.lives().get(name)
    return life.restarts if life else 0


def healthy(stack, name: str) -> bool:
    if stack.pid_of(name) is None:
        return False
    try:
        return bool(stack.services[name].healthy(stack.ctx))
    except Exception:  # not answering yet
        return False


def kill(stack, name: str) -> int:
    """SIGKILL the service's process group (a PID this run's stack started, checked by
    its start time), as an OOM kill would; returns the PID."""
    from cdclab.services.base import pid_alive

    pid = stack.pid_of(name)
    if pid is None:
        raise RuntimeError(f"{name} is not running")
    os.killpg(pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while pid_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return pid


def wait_recovered(stack, name: str, killed: int, timeout: float) -> float:
    """Seconds until `name` runs again (another PID than the one killed: only the keeper
    starts it) and answers its health check. Not by the keeper's restart count: a start
    the keeper counts as failed (e.g. after_start raised) may leave it running."""
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        if stack.pid_of(name) not in (None, killed) and healthy(stack, name):
            return time.monotonic() - start
        time.sleep(0.2)
    life = stack.lives().get(name)
    raise TimeoutError(f"{name} was not restarted healthy by the keeper within "
                       f"{timeout:.0f}s: {life}")


def parent_pid(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None


def starter(stack, name: str) -> str:
    """Who started the service's running process: "keeper" (its child), else the PID."""
    from cdclab.supervisor import KEEPER

    pid = stack.pid_of(name)
    parent = parent_pid(pid) if pid else None
    if parent is not None and parent == stack.pid_of(KEEPER):
        return "keeper"
    return "this runner" if parent == os.getpid() else f"pid {parent}"


def last_phase(path: Path) -> str:
    try:
        lines = [x for x in path.read_text(errors="replace").splitlines()
                 if x.startswith("bronze_to_silver:")]
    except OSError:
        return ""
    return lines[-1][len("bronze_to_silver: "):] if lines else ""


def wait_for_merge(state: Path, env: dict, fault: Fault, until: float) -> str:
    """Wait for a RUNNING run of the pipeline's job whose log shows the merge phase
    (option "merging": the MERGE has begun; "merged": silver committed, the bookmark
    not yet); returns what was seen."""
    from cdclab.services.glue_api import glue_client

    job = settings.load_pipeline().glue_job.name
    marker = MERGE_STARTS if fault.option == "merging" else MERGE_DONE
    logs = settings.glue_run_logs(state)
    glue = glue_client(env)
    while time.monotonic() < until:
        try:
            running = [r["Id"] for r in glue.get_job_runs(JobName=job)["JobRuns"]
                       if r["JobRunState"] == "RUNNING"]
        except Exception:  # the Glue API restarting
            running = []
        for run_id in running:
            path = logs / f"{run_id}.log"
            with contextlib.suppress(OSError):
                if marker in path.read_text(errors="replace"):
                    time.sleep(fault.delay)
                    return f"run {run_id} RUNNING, log at '{marker.rstrip(':')}'"
        time.sleep(0.1)
    return "no run reached the merge phase in time: killed anyway"


@dataclass
class FaultRecord:
    kind: str
    service: str
    planned_at: float
    killed_at: float | None = None  # seconds from the trial's start
    pid: int | None = None
    during: str = ""  # what the service was doing when it died
    after_kill: str = ""  # glue@merge: the run log's last phase line after the kill
    recovery_seconds: float | None = None
    restarted_by: str = ""  # "keeper" when the new process is the keeper's child
    error: str | None = None


class Trial:
    def __init__(self, state: Path, env: dict, plan: TrialPlan, cap: float) -> None:
        self.state, self.env, self.plan = state, env, plan
        self.t0 = time.monotonic()
        self.deadline = self.t0 + cap
        self.records = [FaultRecord(f.kind, f.service, f.at) for f in plan.faults]
        self.resync_done = threading.Event()
        self.workload_start = threading.Event()
        self.workload_start_at = 0.0
        self.notes: list[str] = []

    def elapsed(self) -> float:
        return round(time.monotonic() - self.t0, 2)

    def remaining(self) -> float:
        return max(1.0, self.deadline - time.monotonic())

    def _recover(self, stack, rec: FaultRecord) -> None:
        assert rec.pid is not None
        rec.recovery_seconds = round(wait_recovered(
            stack, rec.service, rec.pid, min(RECOVERY_TIMEOUT, self.remaining())), 2)
        rec.restarted_by = starter(stack, rec.service)

    def inject(self, fault: Fault, rec: FaultRecord) -> None:
        try:
            stack = _stack(self.state)
            self.resync_done.wait(self.remaining())
            self.workload_start.wait(self.remaining())
            wake = self.workload_start_at + fault.at
            time.sleep(max(0.0, wake - time.monotonic()))
            if fault.kind == "glue@merge":
                until = self.workload_start_at + self.plan.duration + 30
                rec.during = wait_for_merge(self.state, self.env, fault, until)
            else:
                rec.during = describe_moment(stack, fault.service, self.state)
            wait = time.monotonic() + 60  # an earlier fault may have it down still
            while stack.pid_of(fault.service) is None and time.monotonic() < wait:
                time.sleep(0.2)
            rec.pid = kill(stack, fault.service)
            rec.killed_at = self.elapsed()
            if fault.kind == "glue@merge":
                time.sleep(0.5)
                run = rec.during.split()[1] if rec.during.startswith("run ") else ""
                if run:
                    rec.after_kill = last_phase(settings.glue_run_logs(self.state)
                                                / f"{run}.log")
            self._recover(stack, rec)
        except Exception as exc:
            rec.error = f"{type(exc).__name__}: {exc}"

    def resync_and_kill(self, fault: Fault, rec: FaultRecord) -> None:
        """`cdclab resync` (whole), and SIGKILL of the emitter during the full load it
        starts; the keeper restarts the emitter, which loads again."""
        from cdclab.resync import resync
        from cdclab.services.base import ServiceError

        stack = _stack(self.state)
        killed = threading.Event()

        def killer() -> None:
            from dms_emitter.emitter import read_state

            watcher = _stack(self.state)
            path = self.state / "emitter" / "state.json"
            old = read_state(path).get("pid")
            while not killed.is_set() and time.monotonic() < self.deadline:
                st = read_state(path) if path.exists() else {}
                # a load too quick to be seen is killed just after: said so in `during`
                if (st.get("phase") in ("full_load", "streaming")
                        and st.get("pid") not in (None, old)):
                    time.sleep(fault.delay)
                    phase = read_state(path).get("phase")
                    try:
                        rec.pid = kill(watcher, "emitter")
                    except RuntimeError as exc:
                        rec.error = str(exc)
                        killed.set()
                        return
                    rec.killed_at = self.elapsed()
                    rec.during = (f"full load in progress ({fault.delay}s after it began)"
                                  if phase == "full_load" else
                                  f"phase {phase}: the full load had ended")
                    killed.set()
                    try:
                        self._recover(watcher, rec)
                    except Exception as exc:
                        rec.error = f"{type(exc).__name__}: {exc}"
                    return
                time.sleep(0.01)

        thread = threading.Thread(target=killer, daemon=True)
        thread.start()
        try:
            report = resync(stack, None, lambda m: None, wait=False)
            self.notes.append(f"resync archived {report.archived_objects} objects")
        except ServiceError as exc:  # the emitter died while `up` waited for its load
            self.notes.append(f"resync: {str(exc).splitlines()[0][:160]}")
        finally:
            killed.wait(self.remaining())
            thread.join(self.remaining())
            with contextlib.suppress(Exception):
                stack.up(["watcher"], keep=False)  # resync's last step, if its up failed
            self.resync_done.set()


def describe_moment(stack, name: str, state: Path) -> str:
    if name == "emitter":
        from dms_emitter.emitter import read_state

        st = read_state(state / "emitter" / "state.json")
        return f"phase {st.get('phase')}, confirmed {st.get('confirmed_lsn')}"
    if name == "glue":
        from cdclab.services.glue_api import glue_client

        with contextlib.suppress(Exception):
            job = settings.load_pipeline().glue_job.name
            runs = glue_client(stack.env()).get_job_runs(JobName=job)["JobRuns"]
            active = [r["JobRunState"] for r in runs if r["JobRunState"] in
                      ("STARTING", "RUNNING", "STOPPING", "WAITING")]
            return f"active runs: {active or 'none'}"
    return "workload running"


# --- one trial ------------------------------------------------------------------------------
@dataclass
class TrialResult:
    trial: int
    seed: int
    verdict: str  # "equal" | "DIFFERENT" | "TIMEOUT" | "ERROR"
    seconds: float
    faults: list[dict]
    workload: dict
    plan: dict
    recovered_seconds: float | None = None  # every service healthy again, after the faults
    drain_seconds: float | None = None
    source_rows: int = 0
    silver_rows: int = 0
    lost: int = 0  # in the source, missing in silver
    phantom: int = 0  # in silver, not in the source
    different: int = 0  # in both, other values
    duplicates: int = 0  # silver rows beyond the first of a key
    nopk_files: int = 0  # files written for the PK-less table (must be 0)
    mismatching_keys: list = field(default_factory=list)
    converged_later: bool | None = None  # a mismatch gone 20 s later (drain said too soon)
    notes: list[str] = field(default_factory=list)
    error: str | None = None
    keeper_log: list[str] = field(default_factory=list)  # its last lines, on a failure

    @property
    def passed(self) -> bool:
        return self.verdict == "equal"


def wait_all_healthy(stack, timeout: float) -> float:
    start = time.monotonic()
    while True:
        sick = [n for n in stack.wanted() if not healthy(stack, n)]
        if not sick:
            return time.monotonic() - start
        if time.monotonic() - start > timeout:
            lives = {n: str(stack.lives().get(n)) for n in sick}
            raise TimeoutError(f"never recovered within {timeout:.0f}s: {lives}")
        time.sleep(0.5)


def count_objects(env: dict, prefix: str) -> int:
    from cdclab.services.minio import s3_client

    s3 = s3_client(env)
    pages = s3.get_paginator("list_objects_v2").paginate(
        Bucket=settings.load_pipeline().lake.bronze_bucket, Prefix=prefix)
    return sum(len(page.get("Contents", [])) for page in pages)


def run_trial(number: int, seed: int, state: Path, cap: float,
              duration: tuple[float, float], rate: float) -> TrialResult:
    from cdclab.drain import current_wal_lsn, wait_for_drain
    from cdclab.reconcile import reconcile

    plan = plan_trial(seed, duration, rate)
    stack = _stack(state)
    env = stack.env()
    dsn = env[settings.ENV_PG_DSN]
    trial = Trial(state, env, plan, cap)
    result = TrialResult(number, seed, "ERROR", 0.0, [], {},
                         {k: v for k, v in asdict(plan).items() if k != "faults"})
    log(f"trial {number} seed {seed}: {plan.duration}s workload, faults "
        + ", ".join(f"{f.kind}{'/' + f.option if f.option else ''}@{f.at}s"
                    for f in plan.faults))
    stop = threading.Event()
    workload = Workload(dsn, plan, stop)
    threads = []
    try:
        for fault, rec in zip(plan.faults, trial.records, strict=True):
            target = trial.resync_and_kill if fault.kind == "emitter@full_load" else trial.inject
            threads.append(threading.Thread(target=target, args=(fault, rec), daemon=True))
        if not plan.resync:
            trial.resync_done.set()
        for t in threads:
            t.start()
        trial.workload_start_at = time.monotonic()
        trial.workload_start.set()
        workload_thread = threading.Thread(target=workload.run, daemon=True)
        workload_thread.start()
        workload_thread.join(plan.duration + trial.remaining())
        stop.set()
        for t in threads:
            t.join(trial.remaining())
        result.notes += trial.notes
        if workload.error:
            raise RuntimeError(f"workload: {workload.error}")
        failed = [r for r in trial.records if r.error]
        if failed:
            raise RuntimeError("; ".join(f"{r.kind}: {r.error}" for r in failed))
        result.recovered_seconds = round(wait_all_healthy(stack, trial.remaining()), 2)
        target = current_wal_lsn(dsn)
        result.drain_seconds = round(wait_for_drain(env, load_pipeline(), target,
                                                    timeout=trial.remaining()), 2)
        check = reconcile(env, load_pipeline())
        result.source_rows, result.silver_rows = check.source_rows, check.silver_rows
        result.lost, result.phantom = check.missing_in_silver, check.extra_in_silver
        result.different, result.duplicates = check.different, check.duplicate_rows
        result.mismatching_keys = (check.mismatching_keys + check.duplicate_ids)[:20]
        p = settings.load_pipeline()
        result.nopk_files = count_objects(
            env, f"{p.dms.bucket_folder.strip('/')}/{p.source.schema}/{NOPK_TABLE}/")
        if check.equal and not result.nopk_files:
            result.verdict = "equal"
        else:
            result.verdict = "DIFFERENT"
            time.sleep(20)
            result.converged_later = reconcile(env, load_pipeline()).equal
    except TimeoutError as exc:
        result.verdict, result.error = "TIMEOUT", str(exc)
    except Exception as exc:
        result.verdict = "ERROR"
        result.error = f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=4)}"
    finally:
        stop.set()
        if not result.passed:
            from cdclab.services.base import tail_lines

            with contextlib.suppress(OSError):
                result.keeper_log = tail_lines(state / "logs" / "keeper.log", 12)
        result.workload = workload.counts
        result.faults = [asdict(r) for r in trial.records]
        result.seconds = trial.elapsed()
    return result


# --- the run --------------------------------------------------------------------------------
def start_stack(stack, rows: int) -> None:
    """Infrastructure, lake, the PK-less table, seed rows, then the pipeline (full load
    merged and reconciled before the first trial)."""
    import psycopg

    from cdclab.drain import current_wal_lsn, wait_for_drain
    from cdclab.reconcile import reconcile
    from cdclab.sample_data import seed
    from cdclab.setup import setup_lake
    from cdclab.supervisor import INFRA, PIPELINE

    stack.up(INFRA)
    env = stack.env()
    setup_lake(env, load_pipeline())
    with psycopg.connect(env[settings.ENV_PG_DSN]) as conn:
        conn.execute(f"CREATE TABLE IF NOT EXISTS {NOPK_TABLE} "
                     "(k bigint, v text, at timestamptz DEFAULT now())")
        seed(conn, load_pipeline(), rows, seed=rows)
    stack.up(PIPELINE)
    env = stack.env()
    wait_for_drain(env, load_pipeline(), current_wal_lsn(env[settings.ENV_PG_DSN]), timeout=600)
    first = reconcile(env, load_pipeline())
    if not first.equal:
        raise RuntimeError(f"silver differs right after the full load: {first.to_json()}")


def percentile(values: list[float], q: float) -> float:
    s = sorted(values)
    return round(s[min(len(s) - 1, int(q * len(s)))], 2)


def totals(results: list[TrialResult], seconds: float) -> dict:
    faults = [f for r in results for f in r.faults]
    by_kind: dict[str, int] = {}
    recovery: dict[str, list[float]] = {}
    for f in faults:
        by_kind[f["kind"]] = by_kind.get(f["kind"], 0) + 1
        if f["recovery_seconds"] is not None:
            recovery.setdefault(f["service"], []).append(f["recovery_seconds"])
    trial_seconds = [r.seconds for r in results]
    return {
        "trials": len(results),
        "passed": sum(r.passed for r in results),
        "failed": sum(not r.passed for r in results),
        "lost": sum(r.lost for r in results),
        "phantom": sum(r.phantom for r in results),
        "different": sum(r.different for r in results),
        "duplicates": sum(r.duplicates for r in results),
        "nopk_files": sum(r.nopk_files for r in results),
        "faults_injected": sum(f["killed_at"] is not None for f in faults),
        "faults_by_kind": dict(sorted(by_kind.items())),
        "recovery_seconds": {s: {"n": len(v), "median": round(statistics.median(v), 2),
                                 "max": round(max(v), 2)}
                             for s, v in sorted(recovery.items())},
        "trial_seconds": ({"median": round(statistics.median(trial_seconds), 1),
                           "p90": percentile(trial_seconds, 0.9),
                           "max": round(max(trial_seconds), 1)} if results else {}),
        "seconds": round(seconds, 1),
    }


def main(argv: list[str] | None = None, out: Callable[[str], None] = print) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trials", type=int,
                    default=int(os.environ.get("CHAOS_TRIALS") or 100))
    ap.add_argument("--seed", type=int, default=int(os.environ["CHAOS_SEED"])
                    if os.environ.get("CHAOS_SEED") else None,
                    help="trial k runs with seed + k (default: random)")
    ap.add_argument("--trial-seconds", type=float, default=300.0,
                    help="cap on one trial, faults to reconcile (default 300)")
    ap.add_argument("--duration", type=float, nargs=2, default=(6.0, 12.0),
                    metavar=("MIN", "MAX"), help="workload seconds per trial")
    ap.add_argument("--rate", type=float, default=40.0, help="transactions/s")
    ap.add_argument("--rows", type=int, default=5000, help="hosts seeded at the start")
    ap.add_argument("--keep-going", action="store_true",
                    help="run every trial even after a failure")
    ap.add_argument("--out", type=Path,
                    help="write the whole JSON there; stdout then gets the summary only "
                         "(seed, ok, totals, failures)")
    ap.add_argument("--state-dir", type=Path,
                    help="where the stack lives (default: a temporary dir, removed "
                         "unless a trial failed or CDCLAB_KEEP_TEST_STATE=1)")
    args = ap.parse_args(argv)
    if threading.current_thread() is threading.main_thread():  # `make` stopped: clean up
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    base = args.seed if args.seed is not None else random.randrange(10**6)

    state = args.state_dir or Path(tempfile.mkdtemp(prefix="cdclab-chaos-"))
    state.mkdir(parents=True, exist_ok=True)
    state.chmod(0o755)  # the unprivileged PostgreSQL user (when we are root) traverses it
    os.environ[settings.ENV_STATE_DIR] = str(state)
    started = time.monotonic()
    results: list[TrialResult] = []
    doc: dict[str, Any] = {"benchmark": "chaos", "seed": base, "trials_asked": args.trials,
                           "state_dir": str(state)}
    from cdclab.supervisor import Stack

    # before anything starts: `down` at exit
    stack = Stack(state, progress=lambda m: None, pipeline=load_pipeline())
    try:
        log(f"seed {base}, {args.trials} trials, state in {state}: starting the stack")
        start_stack(stack, args.rows)
        doc["setup_seconds"] = round(time.monotonic() - started, 1)
        log(f"stack up, full load in silver ({doc['setup_seconds']}s)")
        for k in range(args.trials):
            r = run_trial(k, base + k, state, args.trial_seconds, tuple(args.duration),
                          args.rate)
            results.append(r)
            recovery = {f["kind"]: f["recovery_seconds"] for f in r.faults}
            log(f"trial {k} seed {r.seed}: {r.verdict} in {r.seconds}s (recovery {recovery}, "
                f"drain {r.drain_seconds}s; lost {r.lost}, phantom {r.phantom}, different "
                f"{r.different}, duplicates {r.duplicates}; {r.source_rows} rows)")
            if not r.passed:
                log(f"FAILED: trial {k} seed {r.seed}: {r.error or r.mismatching_keys}")
                if not args.keep_going:
                    break
    except BaseException as exc:
        doc["error"] = f"{type(exc).__name__}: {exc}"
        log(f"run aborted: {doc['error']}")
    finally:
        with contextlib.suppress(Exception):
            stack.down()
    failures = [{"trial": r.trial, "seed": r.seed, "verdict": r.verdict,
                 "error": (r.error or "").splitlines()[0] if r.error else None,
                 "replay": f"make chaos CHAOS_SEED={r.seed} CHAOS_TRIALS=1"}
                for r in results if not r.passed]
    ok = not failures and "error" not in doc and len(results) == args.trials
    doc |= {"ok": ok, "totals": totals(results, time.monotonic() - started),
            "failures": failures, "trials": [asdict(r) for r in results]}
    if ok and not args.state_dir and not os.environ.get("CDCLAB_KEEP_TEST_STATE"):
        shutil.rmtree(state, ignore_errors=True)
        doc["state_dir"] = None
    elif not ok:
        log(f"state kept for a post-mortem: {state} (logs/, glue-runs/)")
    log(f"totals: {json.dumps(doc['totals'])}")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(doc, indent=2, default=str) + "\n")
        doc = {k: doc[k] for k in ("benchmark", "seed", "ok", "totals", "failures", "state_dir")}
        doc["details"] = str(args.out)
    out(json.dumps(doc, indent=2, default=str))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
