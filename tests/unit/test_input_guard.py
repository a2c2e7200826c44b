"""The job's input guard, pure: which earlier failures count against the files they read,
and how a table's next reads narrow until the one object that fails alone is skipped.

A model of the pipeline's runs checks it end to end: a bookmark over a queue of files
(Glue's boundedFiles takes the oldest), a poison object that fails every run reading it,
outages that fail runs whatever they read; the guard must skip the poison within a few
runs, never skip a good file, and never count an outage.
"""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

SCRIPT = Path(__file__).resolve().parents[2] / "jobs" / "bronze_to_silver.py"
_spec = importlib.util.spec_from_file_location("bronze_to_silver_guard", SCRIPT)
job = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(job)


def test_what_counts_against_the_input():
    assert job.input_failure("FAILED", "The Spark driver (JVM) died during this run: "
                             "java.lang.OutOfMemoryError (SparkExitCode.OOM)")
    assert job.input_failure("FAILED", "Py4JJavaError: An error occurred while calling "
                             "o93.collectToPython.\n: org.apache.spark.SparkException: Job "
                             "aborted ... java.io.EOFException: Unexpected end of input stream")
    assert job.input_failure("TIMEOUT", "Run exceeded its Timeout of 60 minutes")
    for error in ("The local Glue API process stopped while this run was RUNNING; the run "
                  "did not finish (restart of glue_local)",
                  "The local Glue API was shut down during this run",
                  "Py4JJavaError: An error occurred while calling o935.collectToPython.",
                  "Py4JJavaError: ... org.apache.iceberg.exceptions.RESTException: Error "
                  "occurred while processing GET request: Connection refused",
                  "SdkClientException: Unable to execute HTTP request: minio", None):
        assert not job.input_failure("FAILED", error), error
    for state in ("SUCCEEDED", "STOPPED", "RUNNING", None):
        assert not job.input_failure(state, "java.io.EOFException")


def inflight(run_id: str, files: list[str], table: str = "public.t") -> dict:
    return {"run_id": run_id, "table": table, "files": files}


def test_a_second_failure_on_the_same_files_halves_the_next_read():
    guard: dict = {}
    assert job.plan_read(guard, "public.t") == (None, None)
    guard = job.note_failure(guard, inflight("r1", ["c", "a", "b"]))
    assert job.plan_read(guard, "public.t") == (3, None)  # the same files again, no more
    assert job.plan_read(guard, "public.other") == (None, None)
    guard = job.note_failure(guard, inflight("r2", ["a", "b", "c"]))
    assert job.plan_read(guard, "public.t") == (2, None)
    guard = job.note_failure(guard, inflight("r3", ["a", "b"]))  # new files: count again
    assert job.plan_read(guard, "public.t") == (2, None)
    guard = job.note_failure(guard, inflight("r4", ["a", "b"]))
    guard = job.note_success(guard, {"public.t": ["a"]}, [])  # the older half was fine
    assert job.plan_read(guard, "public.t") == (1, None)
    guard = job.note_failure(guard, inflight("r5", ["b"]))
    guard = job.note_failure(guard, inflight("r6", ["b"]))
    assert job.plan_read(guard, "public.t") == (1, "b")
    skip = {"table": "public.t", "file": "b", "reason": "r5, r6"}
    guard = job.note_success(guard, {"public.t": ["b"]}, [skip])
    assert job.plan_read(guard, "public.t") == (None, None)
    assert guard["skipped"] == [skip] and job.guard_needed(guard)
    assert not job.guard_needed(job.note_success({}, {}, []))


def test_after_a_skip_a_job_that_fails_on_everything_skips_nothing_more():
    """A broken job fails on every input: one object may be skipped, then the table is on
    probation until a read succeeds, so the job's failure stays visible and the table's
    objects are not skipped one by one."""
    guard = job.note_success({}, {"public.t": ["a"]}, [{"table": "public.t", "file": "a"}])
    assert job.on_probation(guard, "public.t")
    guard = job.note_failure(guard, inflight("r1", ["b"]))
    guard = job.note_failure(guard, inflight("r2", ["b"]))
    assert job.plan_read(guard, "public.t") == (1, None)
    guard = job.note_success(guard, {"public.other": ["x"]}, [])  # another table's read
    assert job.on_probation(guard, "public.t")
    guard = job.note_success(guard, {"public.t": ["b"]}, [])  # this table's read worked
    assert not job.on_probation(guard, "public.t")


@st.composite
def pipelines(draw):
    files = draw(st.integers(1, 40))
    poison = draw(st.one_of(st.none(), st.integers(0, files - 1)))
    bound = draw(st.integers(1, 12))
    # runs failed by an outage (not counted), whatever they read
    outages = draw(st.sets(st.integers(0, 200), max_size=30))
    return files, poison, bound, outages


@given(pipelines())
def test_a_poison_object_is_skipped_within_a_few_runs_and_nothing_else_is(case):
    files, poison, bound, outages = case
    names = [f"f{i:03d}" for i in range(files)]
    bookmark, guard, skipped, run = 0, {}, [], 0
    failed_by_poison = 0
    while bookmark < files:
        run += 1
        assert run < 400, "the pipeline never drained"
        cap, skip = job.plan_read(guard, "public.t")
        read = names[bookmark:bookmark + min(cap or bound, bound)]
        if skip is not None:
            assert read == [skip]
            skipped.append(skip)
            guard = job.note_success(guard, {"public.t": read},
                                     [{"table": "public.t", "file": skip}])
            bookmark += 1
            continue
        outage = run in outages
        poisoned = poison is not None and names[poison] in read
        if outage or poisoned:
            error = ("java.net.ConnectException: Connection refused" if outage
                     else "The Spark driver (JVM) died during this run: OutOfMemoryError")
            failed_by_poison += not outage
            if job.input_failure("FAILED", error):
                guard = job.note_failure(guard, inflight(f"r{run}", read))
            continue
        guard = job.note_success(guard, {"public.t": read}, [])
        bookmark += len(read)
    assert skipped == ([] if poison is None else [names[poison]])
    # each halving costs two failures; the last file fails twice alone
    assert failed_by_poison <= 2 * math.ceil(math.log2(bound)) + 2


class NoFiles:
    """A frame Spark cannot trace to files: input_left counts the run's metrics only."""

    def inputFiles(self):  # noqa: N802 (Spark's name)
        raise RuntimeError("no files")


@given(pipelines(), st.integers(1, 30), st.booleans())
def test_no_good_file_is_stranded_when_the_poison_is_quarantined_mid_search(
        case, later, raced):
    """A run started before the poison's own S3 event was handled reads it and fails;
    the guard searches; the Lambda moves the poison aside `later` runs after the first
    failure. `raced`: it vanishes between that run's choice and Spark's listing, so the
    run reads less than it chose. The watcher forgets the objects of a run that succeeded
    without a backlog (only a later upload would bring them back): each good file must
    be read before that happens."""
    files, poison, bound, _ = case
    if poison is None:
        poison = files // 2
    names, bad = [f"f{i:03d}" for i in range(files)], f"f{poison:03d}"
    queue, guard, gone_at = list(names), {}, None  # the bookmark's unread files, oldest first
    for run in range(1, 400):
        if gone_at is not None and (run > gone_at or (run == gone_at and not raced)):
            queue = [n for n in queue if n != bad]
        if not [n for n in queue if n != bad]:
            return  # every good file was read
        cap, skip = job.plan_read(guard, "public.t")
        chosen = queue[:min(cap or bound, bound)]
        seen = [n for n in chosen if not (gone_at is not None and run >= gone_at and n == bad)]
        if skip is not None and chosen == [skip]:
            guard = job.note_success(guard, {"public.t": chosen},
                                     [{"table": "public.t", "file": skip}])
            metrics: dict = {"files": 0}
        elif bad in seen:
            guard = job.note_failure(guard, inflight(f"r{run}", seen))
            gone_at = run + later if gone_at is None else gone_at
            continue  # failed: the watcher keeps its objects pending
        else:
            guard = job.note_success(guard, {"public.t": seen}, [])
            metrics = {"files": len(seen)}
        queue = queue[len(chosen):]  # the bookmark passes what the run chose
        if not job.input_left(None, NoFiles(), metrics, bound, 0, guarded=cap is not None):
            stranded = [n for n in queue if n != bad]
            assert not stranded, f"run {run} reported no backlog; never read: {stranded}"
    raise AssertionError("the pipeline never drained")


def test_suspects_that_are_no_longer_there_end_the_search():
    """The run read files, none of them a suspect (the suspects were removed, or another
    run committed them): keeping them would cap every later run for good."""
    guard = job.note_failure({}, inflight("r1", ["a", "b"]))
    assert job.plan_read(guard, "public.t") == (2, None)
    guard = job.note_success(guard, {"public.t": ["c", "d"]}, [])
    assert job.plan_read(guard, "public.t") == (None, None)
    guard = job.note_failure({}, inflight("r1", ["a", "b"]))
    guard = job.note_success(guard, {"public.t": []}, [])  # the table had nothing left
    assert job.plan_read(guard, "public.t") == (None, None)
    guard = job.note_failure({}, inflight("r1", ["a", "b"]))
    guard = job.note_success(guard, {"public.other": ["x"]}, [])  # another table only
    assert job.plan_read(guard, "public.t") == (2, None)


@given(st.integers(2, 30), st.sets(st.integers(0, 29), min_size=1))
def test_the_guard_never_caps_runs_for_ever(files, gone):
    """Whatever happens to the suspects (some vanish before they are read again), the
    table's runs are uncapped again within a bounded number of successful runs."""
    names = [f"f{i:03d}" for i in range(files)]
    guard = job.note_failure({}, inflight("r1", names))
    guard = job.note_failure(guard, inflight("r2", names))
    queue = [n for i, n in enumerate(names) if i not in gone]  # what is still there
    for _ in range(files + 2):
        cap, skip = job.plan_read(guard, "public.t")
        if cap is None:
            return
        read, queue = queue[:cap], queue[cap:]
        guard = job.note_success(guard, {"public.t": read}, [])
    raise AssertionError(f"still capped: {guard}")
