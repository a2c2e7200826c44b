"""bench/bench_user_repo.py's pure part: per-test figures from pytest's phase reports."""

from __future__ import annotations

import importlib.util
import json
import statistics
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("bench_user_repo",
                                               ROOT / "bench" / "bench_user_repo.py")
assert _spec and _spec.loader
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)

seconds = st.floats(min_value=0, max_value=600, allow_nan=False)
phases = st.tuples(seconds, seconds, seconds)  # setup, call, teardown


def reports(tests: list[tuple[float, float, float]]) -> list[dict]:
    return [{"test": f"tests/t.py::test[{i}]", "when": when, "seconds": s, "outcome": "passed"}
            for i, test in enumerate(tests)
            for when, s in zip(("setup", "call", "teardown"), test, strict=True)]


@given(st.lists(phases, min_size=2, max_size=12))
def test_the_first_test_carries_the_start_and_the_last_teardown_is_the_stop(tests) -> None:
    figures = bench.per_test_overhead(reports(tests))

    assert figures["tests"] == len(tests)
    assert figures["stack_start_seconds"] == round(tests[0][0], 3)
    assert figures["first_test_seconds"] == pytest.approx(sum(tests[0]), abs=1e-3)
    assert figures["stack_stop_seconds"] == round(tests[-1][2], 3)
    following = [sum(t) for t in tests[1:-1]] + [tests[-1][0] + tests[-1][1]]
    assert figures["following"]["n"] == len(tests) - 1
    assert figures["following"]["median"] == pytest.approx(statistics.median(following),
                                                           abs=1e-3)
    json.dumps(figures)  # the bench prints it as JSON


@given(st.lists(seconds, min_size=1, max_size=30))
def test_the_summary_lies_within_the_values(values) -> None:
    s = bench.summary(values)
    assert s["n"] == len(values)
    assert s["min"] <= s["median"] <= s["max"]
    assert s["min"] <= s["mean"] <= s["max"]


def test_no_values_summarise_to_nothing() -> None:
    assert bench.summary([]) == {"n": 0, "mean": None, "median": None, "min": None,
                                 "max": None}


def test_a_failed_test_is_named_not_timed() -> None:
    records = reports([(1.0, 0.1, 0.0), (0.0, 0.1, 2.0)])
    records[4]["outcome"] = "failed"
    with pytest.raises(ValueError, match=r"test\[1\]'? call: failed"):
        bench.per_test_overhead(records)


def test_no_reports_is_an_error() -> None:
    with pytest.raises(ValueError, match="no test reported"):
        bench.per_test_overhead([])
