"""What `cdclab quarantine` and status show of what was set aside."""

from __future__ import annotations

from cdclab.quarantine import lines, quarantined_records


def test_records_are_counted_over_runs_with_examples_newest_first() -> None:
    runs = [
        {"Id": "jr_2", "Metrics": {"quarantined": 2, "quarantine_examples": [
            {"file": "s3://b/k2.csv", "record": 3, "reason": "bad Op 'X'"}]}},
        {"Id": "jr_1"},  # a run without metrics (failed, or not the shipped job)
        {"Id": "jr_0", "Metrics": {"quarantined": 1, "quarantine_examples": [
            {"file": "s3://b/k1.csv", "record": 2, "reason": "id is not an INT: 'x'"}]}},
    ]
    count, examples = quarantined_records(runs)
    assert count == 3
    assert [e["run_id"] for e in examples] == ["jr_2", "jr_0"]
    assert quarantined_records(None) == (0, [])


def test_lines_name_each_object_and_record_with_its_reason() -> None:
    summary = {
        "location": "s3://b/quarantine/", "table": "c.db.q", "objects": 1, "records": 1,
        "object_reasons": [{"key": "dms/t/x.csv", "reason": "3 fields where the header has 2",
                            "record": 3, "line": 4, "quarantined_at": "2026-11-23T10:00:00Z"}],
        "record_examples": [{"run_id": "jr_1", "file": "s3://b/k.csv", "record": 2,
                             "reason": "bad Op 'X'"}],
    }
    text = "\n".join(lines(summary, 5))
    assert "1 object(s) in s3://b/quarantine/, 1 record(s) in c.db.q" in text
    assert "dms/t/x.csv: 3 fields where the header has 2 (record 3, line 4)" in text
    assert "run jr_1: s3://b/k.csv record 2: bad Op 'X'" in text
    assert "?" in lines({**summary, "objects": None, "error": "down"}, 0)[0]
