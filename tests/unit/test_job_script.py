"""The job script's pure parts (its record handling runs on Spark: test_job_records.py)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "jobs" / "bronze_to_silver.py"
_spec = importlib.util.spec_from_file_location("bronze_to_silver", SCRIPT)
job = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(job)

def test_percentiles_nearest_rank() -> None:
    p = job.percentiles([float(i) for i in range(1, 101)])
    assert (p["count"], p["p50"], p["p95"], p["max"]) == (100, 50.0, 95.0, 100.0)
    assert job.percentiles([])["count"] == 0


def columns_of(ddl: str) -> list[tuple[str, str]]:
    body = ddl.split("(", 1)[1].split(")\nUSING", 1)[0]
    body = "\n".join(line.split("--")[0] for line in body.splitlines())
    return [tuple(col.split()[:2]) for col in body.split(",") if col.strip()]


@pytest.mark.parametrize(
    ("embedded", "sql_file"),
    [("SILVER_DDL", "hosts_silver.sql"), ("TOMBSTONE_DDL", "hosts_silver_tombstones.sql"),
     ("QUARANTINE_DDL", "hosts_quarantine.sql")],
)
def test_embedded_ddl_matches_the_documentation_copy(embedded: str, sql_file: str) -> None:
    doc = (SCRIPT.parent / "ddl" / sql_file).read_text()
    doc = doc[doc.index("CREATE TABLE"):]
    assert columns_of(getattr(job, embedded)) == columns_of(doc)
    assert ("merge-on-read" in getattr(job, embedded)) == ("merge-on-read" in doc)
