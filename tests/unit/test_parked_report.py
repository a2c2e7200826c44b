"""Objects the watcher parked show in `cdclab status` and `cdclab quarantine`, with their
error, until they are removed or overwritten."""

from __future__ import annotations

from datetime import UTC, datetime

from cdclab.pipeline_health import assess
from cdclab.quarantine import lines, parked_objects
from lambda_shim import watch_logic as logic
from lambda_shim.s3_events import S3Object

NOW = 1_800_000_000.0
LONG = "dms/db/public/t/" + "/".join(["f" * 250] * 3) + "/x.txt"


def watcher_state() -> dict:
    s = logic.WatchState()
    obj = S3Object("b", LONG, 6, "e", datetime.fromtimestamp(NOW - 50, UTC))
    logic.observe(s, [obj], NOW - 50)
    for i in range(logic.MAX_OBJECT_FAILURES):
        logic.record_object_failures(s, NOW - 40 + 10 * i, {LONG: "ClientError: KeyTooLong"})
    return {**logic.to_dict(s), "updated_at": NOW - 1}


def test_status_names_the_parked_object_and_its_error() -> None:
    h = assess(NOW, watcher=watcher_state(), runs=None, slot=None, slot_name="s",
               emitter_running=True, slot_expected=False)
    assert h.facts["objects_parked"] == 1 and h.facts["objects_waiting"] == 0
    [problem] = h.problems
    assert "1 object(s) parked" in problem and "KeyTooLong" in problem
    assert f"{logic.MAX_OBJECT_FAILURES} times alone" in problem


def test_cdclab_quarantine_lists_parked_objects() -> None:
    parked = parked_objects(watcher_state())
    assert [p["key"] for p in parked] == [LONG]
    text = "\n".join(lines({"location": "s3://b/quarantine/", "table": "c.db.q",
                            "objects": 0, "records": 0, "parked": parked}, 3))
    assert "1 object(s) parked" in text and f"parked {LONG}: ClientError: KeyTooLong" in text
    assert parked_objects(None) == [] and parked_objects({}) == []
