"""Backpressure, pure: a capped run that left input for later writes its backlog marker;
the watcher hands the Lambda each run's "Glue Job State Change" (and the sweep's
schedule), and the Lambda starts another run at once (no new upload) while the marker
exists, until a run leaves nothing; drain waits for that."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from cdclab.drain import JobRun, bronze_processed
from lambda_shim import watch_logic as logic
from lambda_shim.s3_events import S3Object

T0 = datetime(2026, 11, 22, 10, 0, tzinfo=UTC)


def obj(i: int) -> S3Object:
    return S3Object("b", f"dms/db/public/t/20261122-1000{i:05d}.csv", 10, "e",
                    T0 + timedelta(seconds=i))


def test_a_run_that_succeeded_hands_its_state_change_to_the_lambda() -> None:
    s = logic.WatchState()
    logic.observe(s, [obj(1)], 0.0)
    logic.record_accepted(s, 1.0, "jr_1", list(s.pending))
    assert not logic.due(s, 2.0)
    logic.record_run_ended(s, "jr_1", "SUCCEEDED", 3.0)
    assert logic.due(s, 3.0) and logic.run_ended_only(s) == "jr_1"  # nothing new, yet due
    assert logic.next_wakeup(s, 3.0, 1.0) == 0.0
    logic.record_accepted(s, 3.5, "jr_2", [])  # the Lambda found the marker: jr_2
    assert not s.ended and s.in_flight["jr_2"] == []
    logic.record_run_ended(s, "jr_2", "SUCCEEDED", 5.0)
    logic.record_event_delivered(s, "jr_2")  # no marker: the Lambda started nothing
    assert not logic.due(s, 5.0) and not s.in_flight and not s.ended
    assert logic.from_dict(logic.to_dict(s)) == s


def test_new_objects_go_before_a_run_state_change() -> None:
    s = logic.WatchState()
    logic.record_accepted(s, 0.0, "jr_1", [])
    logic.record_run_ended(s, "jr_1", "SUCCEEDED", 1.0)
    logic.observe(s, [obj(1)], 1.0)
    assert logic.due(s, 1.0) and logic.run_ended_only(s) is None
    logic.record_accepted(s, 1.5, "jr_2", ["k"])  # this run lists everything
    assert not s.ended


def test_a_failed_backlog_run_stays_due_with_back_off() -> None:
    s = logic.WatchState(backlog=True)
    logic.record_accepted(s, 0.0, "jr_1", [])
    logic.record_run_ended(s, "jr_1", "FAILED", 1.0)
    assert s.backlog and not logic.due(s, 1.0) and logic.due(s, s.next_attempt_at)
    assert logic.from_dict(logic.to_dict(s)).backlog  # survives a watcher restart


def test_a_run_not_ours_is_ignored() -> None:
    s = logic.WatchState()
    assert logic.record_run_ended(s, "jr_x", "SUCCEEDED", 1.0) == []
    assert not s.ended and not logic.due(s, 1.0)


def test_the_sweep_runs_on_its_schedule_and_after_a_clock_step_back() -> None:
    s = logic.WatchState()
    assert logic.sweep_due(s, 100.0, 600.0)
    s.last_sweep_at = 100.0
    assert not logic.sweep_due(s, 699.0, 600.0) and logic.sweep_due(s, 700.0, 600.0)
    assert logic.sweep_due(s, 50.0, 600.0)  # the clock went back: not stalled
    assert not logic.sweep_due(logic.WatchState(), 100.0, 0.0)  # 0: no sweep


@given(st.lists(st.integers(0, 30), min_size=1, max_size=6), st.integers(1, 7),
       st.lists(st.sampled_from(["SUCCEEDED", "FAILED"]), min_size=60, max_size=60))
def test_the_watcher_works_a_burst_off_in_capped_runs(bursts, cap, outcomes) -> None:
    """Files land in bursts; each run reads at most `cap` of the unread files (oldest
    first) and writes the backlog marker when it read `cap` (deletes it when it read
    less); runs fail at random. Driving the watcher's decisions with a Lambda that starts
    a run while the marker exists, every file is read, and the watcher is idle only when
    nothing is left."""
    s = logic.WatchState()
    landed, unread, marker = 0, [], False
    steps = iter(outcomes)
    for n in bursts:
        new = [obj(landed + i) for i in range(n)]
        landed += n
        logic.observe(s, new, float(landed))
        unread += [o.key for o in new]
        for i in range(400):
            if not logic.due(s, float("inf")):
                break
            if (ended := logic.run_ended_only(s)) is not None and not marker:
                logic.record_event_delivered(s, ended)  # the Lambda: no marker, no run
                continue
            run = f"jr_{landed}_{i}"  # an S3 event, a backlog retry or the marker's run
            logic.record_accepted(s, 0.0, run, [])
            outcome = next(steps, "SUCCEEDED")
            if outcome == "SUCCEEDED":
                take = unread[:cap]
                del unread[:len(take)]
                marker = len(take) >= cap
            logic.record_run_ended(s, run, outcome, 0.0)
        assert not logic.due(s, float("inf"))
        assert unread == []  # idle only when everything was read


def run(i: int, state: str = "SUCCEEDED", backlog: bool = False) -> JobRun:
    return JobRun(f"jr_{i}", state, T0 + timedelta(seconds=i), None, backlog)


def test_drain_waits_until_the_newest_run_left_no_backlog() -> None:
    newest = T0 + timedelta(seconds=5)
    assert not bronze_processed(newest, [run(4), run(6, backlog=True)])
    assert bronze_processed(newest, [run(6, backlog=True), run(7)])
    assert not bronze_processed(newest, [run(6), run(7, "RUNNING")])
    assert not bronze_processed(newest, [run(4)])
