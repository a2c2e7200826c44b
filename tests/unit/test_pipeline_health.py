"""Status says when data stops flowing, though every process is up."""

from __future__ import annotations

from datetime import UTC, datetime

from cdclab.pipeline_health import (
    IN_FLIGHT_STALL_SECONDS,
    PENDING_STALL_SECONDS,
    WATCHER_STALE_SECONDS,
    assess,
)

NOW = 1_800_000_000.0


def obj(age: float) -> dict:
    at = datetime.fromtimestamp(NOW - age, UTC).isoformat()
    return {"bucket": "b", "key": f"k{age}", "size": 1, "etag": "e", "last_modified": at}


def check(watcher=None, runs=None, slot=None, emitter_running=True, slot_expected=True):
    return assess(NOW, watcher=watcher, runs=runs, slot=slot, slot_name="s",
                  emitter_running=emitter_running, slot_expected=slot_expected)


def run(state: str, completed: float = NOW - 10, error: str = "") -> dict:
    return {"Id": f"jr_{state}_{completed}", "JobRunState": state, "CompletedOn": completed,
            "ErrorMessage": error}


def test_a_flowing_pipeline_has_no_problem() -> None:
    h = check({"updated_at": NOW - 5, "pending": [obj(3)], "in_flight": {"r": [obj(20)]}},
              [run("RUNNING"), run("SUCCEEDED", NOW - 30), run("FAILED", NOW - 60)],
              {"active": True, "wal_status": "reserved", "behind_bytes": 10})
    assert h.ok, h.problems
    assert h.facts["consecutive_failed_runs"] == 0
    assert h.facts["last_successful_run_seconds_ago"] == 30
    assert (h.facts["objects_waiting"], h.facts["oldest_waiting_seconds"]) == (1, 3)


def test_a_waiting_object_a_stuck_run_and_a_hung_watcher_are_problems() -> None:
    h = check({"updated_at": NOW - WATCHER_STALE_SECONDS - 1,
               "pending": [obj(PENDING_STALL_SECONDS + 1)], "attempts": 4,
               "last_error": "GlueJobAlreadyRunning: busy",
               "in_flight": {"jr_1": [obj(IN_FLIGHT_STALL_SECONDS + 1)]}})
    text = "\n".join(h.problems)
    assert "no listing for" in text and "GlueJobAlreadyRunning" in text
    assert "4 attempt(s)" in text and "jr_1" in text and len(h.problems) == 3


def test_consecutive_failed_runs_are_counted_up_to_the_last_success() -> None:
    h = check(runs=[run("RUNNING"), run("FAILED", error="PATH_NOT_FOUND x"), run("ERROR"),
                    run("SUCCEEDED", NOW - 100), run("FAILED")])
    assert h.facts["consecutive_failed_runs"] == 2
    [problem] = h.problems
    assert "last 2 run(s) ended FAILED" in problem and "PATH_NOT_FOUND x" in problem


def test_slot_invalidated_missing_or_not_connected() -> None:
    lost = check(slot={"active": False, "wal_status": "lost"})
    assert any("invalidated" in p for p in lost.problems)
    assert any("not connected" in p for p in lost.problems)
    assert "does not exist" in check(slot={}).problems[0]
    assert check(slot={}, slot_expected=False).ok  # a new lab: no slot yet
    assert check(slot=None).ok  # PostgreSQL cannot be asked: status shows it down
    assert check(slot={"active": False, "wal_status": "reserved"}, emitter_running=False).ok


def test_an_emitter_waiting_for_resync_is_a_problem_that_names_the_command() -> None:
    h = assess(NOW, watcher=None, runs=None, slot={}, slot_name="s", emitter_running=False,
               slot_expected=False,
               resync_needed={"reason": "the source database was rebuilt", "at": "t0"})
    assert not h.ok
    assert any("rebuilt" in p and "cdclab resync" in p for p in h.problems), h.problems
