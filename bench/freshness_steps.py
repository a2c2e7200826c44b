"""Pure parts of bench_freshness: one probe's commit -> visible time cut into its steps,
percentiles over probes, and the readers of what the services already record (watcher log
lines, Glue runs, CDC file names). No I/O: tests/unit/test_freshness_steps.py.

The steps, in the order a change goes through them:

    wal_decode       source COMMIT -> the emitter has the batch's first row (WAL sent and
                        decoded; the `first received` time of the emitter's `wrote` line)
    emitter_batch    -> the emitter cuts the batch (the CDC file's name time)
    upload           -> the object is stored in bronze (its Last-Modified)
    notice           -> the watcher's listing finds it (watcher log)
    trigger          -> StartJobRun of the run that merged it (the Lambda's gate check, and
                        its retries while a run is going: MaxConcurrentRuns)
    run_queue        -> that run is RUNNING (the local runner picked it up: RunStartedOn)
    job_setup        -> the job's first phase (script, GlueContext, job.init, the bookmark's
                        listing of bronze); what the run spent before its phases
    ensure_tables, read, dedup, merge_commit
                     the job's own phases (CDCLAB_METRICS phase_seconds); merge_commit ends
                        at the silver snapshot (Iceberg commit through the REST catalog)
    catalog_refresh  silver snapshot -> a pyiceberg reader polling the catalog has read
                        the row
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

CHAIN = ("wal_decode", "emitter_batch", "upload", "notice", "trigger", "run_queue")
JOB_PHASES = ("ensure_tables", "read", "dedup", "merge_commit")
STEPS = (*CHAIN, "job_setup", *JOB_PHASES, "catalog_refresh")
# the job's phase names (jobs/bronze_to_silver.py Phases.done) -> steps; phases after the
# silver commit (merge tombstones, compact) are not on the way to a silver row
PHASE_STEPS = {"ensure tables": "ensure_tables", "read and validate": "read",
               "quarantine": "read", "dedup and classify": "dedup",
               "merge into silver": "merge_commit", "insert into silver": "merge_commit"}
TIMESTAMP_NAMES = ("received", "named", "stored", "noticed", "requested", "running", "snapshot")


@dataclass(frozen=True)
class ProbeTimes:
    """Epoch seconds of one probe row's way; None where nothing recorded it."""

    committed: float  # the probe's client right after COMMIT returned
    visible: float  # the poller had read the row from silver
    received: float | None = None  # the emitter had its batch's first row
    named: float | None = None  # the CDC file's name time (emitter cut the batch)
    stored: float | None = None  # the object's Last-Modified in bronze
    noticed: float | None = None  # the watcher listed it
    requested: float | None = None  # StartedOn of the run that merged it
    running: float | None = None  # RunStartedOn of that run
    snapshot: float | None = None  # the silver snapshot that made it visible
    phases: Mapping[str, float] = field(default_factory=dict)  # that run's phase_seconds

    def missing(self) -> list[str]:
        return [n for n in TIMESTAMP_NAMES if getattr(self, n) is None]


def job_phases(phase_seconds: Mapping[str, float]) -> dict[str, float]:
    """The run's phase_seconds as steps (phases after the silver commit left out)."""
    out = dict.fromkeys(JOB_PHASES, 0.0)
    for name, seconds in phase_seconds.items():
        step = PHASE_STEPS.get(name)
        if step is not None:
            out[step] += max(0.0, float(seconds))
    return out


def breakdown(t: ProbeTimes) -> dict[str, float]:
    """Seconds per step (STEPS); they add up to visible - committed. A missing timestamp
    or one out of order (a run already going when the file landed) makes its step 0 and
    leaves the time to the next step. The run's time up to the snapshot goes to its
    phases from the last one back; what is left is job_setup (a run that started before
    the file landed spent its earlier part on other work)."""
    if t.visible < t.committed:
        raise ValueError(f"probe visible at {t.visible} before its commit at {t.committed}")
    end = t.visible if t.snapshot is None else min(max(t.snapshot, t.committed), t.visible)
    steps: dict[str, float] = {}
    at = t.committed
    for name, when in zip(CHAIN, (t.received, t.named, t.stored, t.noticed, t.requested,
                                  t.running), strict=True):
        nxt = at if when is None else min(max(when, at), end)
        steps[name] = nxt - at
        at = nxt
    left = end - at
    phases = job_phases(t.phases)
    for name in reversed(JOB_PHASES):
        steps[name] = min(phases[name], left)
        left -= steps[name]
    steps["job_setup"] = left
    steps["catalog_refresh"] = t.visible - end
    return {name: steps[name] for name in STEPS}


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th quantile (0..1), linear between closest ranks (numpy's default)."""
    if not values:
        raise ValueError("percentile of no values")
    if not 0.0 <= q <= 1.0:
        raise ValueError(f"quantile {q}: expected 0..1")
    s = sorted(values)
    pos = q * (len(s) - 1)
    lo, hi = math.floor(pos), math.ceil(pos)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def spread(values: Sequence[float]) -> dict:
    """count, min, p50, p90, max (rounded to ms); count 0 alone for no values."""
    if not values:
        return {"count": 0}
    return {"count": len(values), "min": round(min(values), 3),
            "p50": round(percentile(values, 0.5), 3),
            "p90": round(percentile(values, 0.9), 3), "max": round(max(values), 3)}


def summarize(probes: Iterable[ProbeTimes]) -> dict:
    """commit -> visible and each step over the probes, and which timestamps were missing."""
    probes = list(probes)
    rows = [breakdown(p) for p in probes]
    missing: dict[str, int] = {}
    for p in probes:
        for name in p.missing():
            missing[name] = missing.get(name, 0) + 1
    return {"commit_to_visible_seconds": spread([p.visible - p.committed for p in probes]),
            "steps_seconds": {s: spread([r[s] for r in rows]) for s in STEPS},
            "missing_timestamps": missing}


def lag_trend(points: Sequence[tuple[float, float]]) -> dict:
    """Is the lag bounded? (commit time, commit -> visible) per probe: the least-squares
    slope of the lag over commit time (s of lag per s; a pipeline falling behind its
    input shows a steady rise) and the p50 of the first and last third of the probes."""
    if len(points) < 3:
        return {"count": len(points)}
    pts = sorted(points)
    n = len(pts)
    mean_t = sum(t for t, _ in pts) / n
    mean_l = sum(lag for _, lag in pts) / n
    var = sum((t - mean_t) ** 2 for t, _ in pts)
    slope = (sum((t - mean_t) * (lag - mean_l) for t, lag in pts) / var) if var else 0.0
    third = n // 3
    return {"count": n, "slope_seconds_per_second": round(slope, 4),
            "first_third_p50": round(percentile([lag for _, lag in pts[:third]], 0.5), 3),
            "last_third_p50": round(percentile([lag for _, lag in pts[-third:]], 0.5), 3)}


# Main at 13d5a8a, measured 2026-11-26 13:44 on this machine's size (2 cores), quiet,
# `--probes 15 --rate 500` (docs/performance.md, "Second run"): what each later run of the
# bench is compared with, and issue 27's targets (p50, p90 seconds).
BASELINE = {"commit": "13d5a8a", "measured": "2026-11-26T13:44Z", "rows": 1000,
            "idle": {"p50": 10.06, "p90": 14.20},
            "load": {"p50": 18.08, "p90": 24.72, "changes_per_second": 401}}
TARGETS = {"idle": {"p50": 1.5, "p90": 2.5}, "load": {"p50": 3.0, "p90": 5.0},
           "idle_memory_gib": 1.5,
           # `up` (services, the emitter's full load) to every row in silver, 1M rows
           "full_load_seconds": {"rows": 1_000_000, "seconds": 30.0},
           # one 100,000-row transaction, commit -> all visible: at least these rows/s
           "big_transaction_rows_per_second": {"insert": 25_000, "update": 20_000}}


def against_baseline(result: Mapping) -> dict:
    """Per phase measured (idle, load): commit -> visible p50/p90 as the baseline's
    multiple (`speedup`, > 1 is faster) and whether issue 27's target is met."""
    out: dict = {"baseline": BASELINE, "targets": TARGETS}
    rows = (result.get("params") or {}).get("rows", BASELINE["rows"])
    if rows != BASELINE["rows"]:  # probes merge into a bigger silver table: slower
        out["baseline_comparable"] = False
    for phase in ("idle", "load"):
        spread_ = (result.get(phase) or {}).get("commit_to_visible_seconds") or {}
        if not spread_.get("count"):
            continue
        out[phase] = {q: {"now": spread_[q], "baseline": BASELINE[phase][q],
                          "speedup": round(BASELINE[phase][q] / spread_[q], 2)
                          if spread_[q] > 0 else None,
                          "target": TARGETS[phase][q],
                          "target_met": spread_[q] <= TARGETS[phase][q]}
                      for q in ("p50", "p90")}
    memory = (result.get("idle_memory") or {}).get("total_gib")
    if memory is not None:
        out["idle_memory_gib"] = {"now": memory, "target": TARGETS["idle_memory_gib"],
                                  "target_met": memory <= TARGETS["idle_memory_gib"]}
    up_to_silver = (result.get("timings_seconds") or {}).get("up_to_silver")
    if up_to_silver is not None:
        target = TARGETS["full_load_seconds"]
        out["full_load_seconds"] = {"now": up_to_silver, "rows": rows, **(
            {"target": target["seconds"], "target_met": up_to_silver <= target["seconds"]}
            if rows == target["rows"] else {})}
    big = result.get("big_transaction") or {}
    for kind, target in TARGETS["big_transaction_rows_per_second"].items():
        rate = (big.get(kind) or {}).get("rows_per_second")
        if kind in big:
            out[f"big_{kind}_rows_per_second"] = {
                "now": rate, "target": target, "target_met": rate is not None and rate >= target}
    return out


# --- readers of what the services record ------------------------------------------------
_LOG_LINE = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d),(\d{3}) (\S+) (.*)$")
WATCHER_LOGGER = "lambda_shim.watcher"
NEW_OBJECTS = " new object(s): "


# glue_local's log lines (driver.py, jit_warmup.py) that tell when the warm driver rests
DRIVER_COLLECTED = "the idle Spark driver collected its heap"
WARMUP_ENDED = "JIT warm-up"  # its summary, or "JIT warm-up ended early: ..."
COLLECTIONS_AT_REST = 2  # glue_local.driver.IDLE_TRIM_SECONDS: two per idle spell


def driver_at_rest(lines: Sequence[str], since: int, warmup: bool = True) -> bool:
    """Whether the glue service's log (`lines`) shows its driver at rest: its JIT
    warm-up (when on) over, and both idle collections made after the later of the
    warm-up's end and line `since` (where the probes ended). The warm-up works only
    while no run needs the driver, so it can end long after the last run, and its work
    undoes the collections made meanwhile."""
    ended = max((i for i, line in enumerate(lines) if WARMUP_ENDED in line),
                default=None if warmup else -1)
    if ended is None:
        return False
    after = max(since, ended + 1)
    return sum(DRIVER_COLLECTED in line for line in lines[after:]) >= COLLECTIONS_AT_REST


def log_time(stamp: str, millis: str) -> float:
    """logging's asctime (local time) as epoch seconds."""
    return datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S").timestamp() + int(millis) / 1000


def noticed_times(lines: Iterable[str], keys: Iterable[str]) -> dict[str, float]:
    """When the watcher first listed each key: its "N new object(s): [...]" line (the
    watcher shows the first 10 keys of a listing; a key beyond them is not found)."""
    wanted = set(keys)
    found: dict[str, float] = {}
    for line in lines:
        m = _LOG_LINE.match(line)
        if m is None or m.group(3) != WATCHER_LOGGER or NEW_OBJECTS not in m.group(4):
            continue
        for key in [k for k in wanted if repr(k) in m.group(4)]:
            found[key] = log_time(m.group(1), m.group(2))
            wanted.discard(key)
    return found


_WROTE = re.compile(r"^wrote s3://[^/]+/(\S+): \d+ changes \(first received (\S+)\)$")


def received_times(lines: Iterable[str], keys: Iterable[str]) -> dict[str, float]:
    """When the emitter had the first row of the batch each key holds: its
    "wrote s3://<bucket>/<key>: N changes (first received <ISO time>)" line."""
    wanted = set(keys)
    found: dict[str, float] = {}
    for line in lines:
        m = _WROTE.match(line.strip())
        if m is not None and m.group(1) in wanted:
            found[m.group(1)] = datetime.fromisoformat(m.group(2)).timestamp()
    return found


def run_holding(runs: Iterable[Mapping], moment: float, slack: float = 0.5) -> dict | None:
    """The run that was going at `moment` (a silver snapshot's time): RunStartedOn <=
    moment <= CompletedOn, the latest started if several were; else one within `slack`
    of its bounds (the snapshot's and the API's clocks are read at different points)."""
    for margin in (0.0, slack):
        going = [r for r in runs if "RunStartedOn" in r and r["RunStartedOn"] - margin
                 <= moment <= r.get("CompletedOn", math.inf) + margin]
        if going:
            return dict(max(going, key=lambda r: r["RunStartedOn"]))
    return None


def first_snapshot(snapshots: Iterable[tuple[float, str]]) -> float | None:
    """Of the snapshots new since the last poll ((epoch seconds, operation)), the time of
    the first that could add the row (a compaction's `replace` cannot)."""
    times = [ts for ts, op in snapshots if op != "replace"]
    return min(times) if times else None


def probe_marker(n: int) -> str:
    """The probe row's name: unique text to find in a bronze file (no delimiter, quote)."""
    if n < 0:
        raise ValueError(f"probe number {n}: expected >= 0")
    return f"freshness-probe-{n:06d}x"


def markdown_table(result: Mapping) -> str:
    """bench_freshness's JSON as docs/performance.md's table: p50 / p90 seconds of each
    step and of commit -> visible, a column per phase measured (idle, load)."""
    phases = [name for name in ("idle", "load") if name in result]
    head = "| step | " + " | ".join(f"{n} p50 / p90 (s)" for n in phases) + " |"
    rows = [head, "|---|" + "---|" * len(phases)]

    def cell(s: Mapping) -> str:
        return f"{s['p50']:.2f} / {s['p90']:.2f}" if s.get("count") else "–"

    for step in STEPS:
        rows.append(f"| {step} | " + " | ".join(
            cell(result[n]["steps_seconds"][step]) for n in phases) + " |")
    rows.append("| **commit → visible** | " + " | ".join(
        f"**{cell(result[n]['commit_to_visible_seconds'])}**" for n in phases) + " |")

    def trend(t: Mapping) -> str:
        return (f"{t['first_third_p50']:.2f} → {t['last_third_p50']:.2f} "
                f"({t['slope_seconds_per_second']:+.3f} s/s)" if t.get("count", 0) >= 3
                else "–")

    if any("lag_trend" in result[n] for n in phases):
        rows.append("| lag: first → last third p50 (slope) | " + " | ".join(
            trend(result[n].get("lag_trend") or {}) for n in phases) + " |")
    return "\n".join(rows)
