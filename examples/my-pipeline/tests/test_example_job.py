"""The example job's pure logic, with plain pytest (no Spark, no Glue).

Run: python -m pytest tests/ ; the whole job runs in the lab with `cdclab job run`.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "jobs" / "example_job.py"


def load_job():
    spec = importlib.util.spec_from_file_location("example_job", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_latest_change_per_key_wins_and_deletes_drop_out() -> None:
    job = load_job()
    rows = [
        {"Op": "I", "id": 1, "change_seq": "0001", "name": "a"},
        {"Op": "U", "id": 1, "change_seq": "0003", "name": "c"},
        {"Op": "U", "id": 1, "change_seq": "0002", "name": "b"},  # late, older
        {"Op": "I", "id": 2, "change_seq": "0001", "name": "x"},
        {"Op": "D", "id": 2, "change_seq": "0004", "name": "x"},
    ]
    assert job.latest_per_key(rows, "id", "change_seq") == [
        {"Op": "U", "id": 1, "change_seq": "0003", "name": "c"}]


def test_an_unknown_op_is_refused() -> None:
    job = load_job()
    with pytest.raises(ValueError, match="Op must be one of"):
        job.latest_per_key([{"Op": "X", "id": 1, "change_seq": "1"}], "id", "change_seq")
