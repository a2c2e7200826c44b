"""The job script's pure parts (its record handling runs on Spark: test_job_records.py)."""

from __future__ import annotations

import dataclasses
import importlib.util
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cdclab.settings import load_pipeline
from cdclab.table_specs import (
    INTERNAL_PREFIX,
    ROLE_BEFORE_IMAGE,
    ROLE_CHANGE_SEQ,
    ROLE_OP,
    ROLE_TIMESTAMP,
    SPEC_VERSION,
    before_image_keys,
    build_spec,
)
from cdclab.tables_sync import layout_of
from dms_emitter.source_types import PgType, SourceColumn
from tests.resources.specs import hosts_source, hosts_spec

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
    return [tuple(col.replace("`", "").split()[:2]) for col in body.split(",") if col.strip()]


@pytest.mark.parametrize(
    ("embedded", "sql_file"),
    [(lambda spec: job.silver_ddl(spec), "hosts_silver.sql"),
     (lambda spec: job.tombstone_ddl(spec), "hosts_silver_tombstones.sql"),
     (lambda spec: job.QUARANTINE_DDL, "hosts_quarantine.sql")],
)
def test_the_demo_tables_ddl_matches_the_documentation_copy(embedded, sql_file: str) -> None:
    ddl = embedded(hosts_spec())
    doc = (SCRIPT.parent / "ddl" / sql_file).read_text()
    doc = doc[doc.index("CREATE TABLE"):]
    assert columns_of(ddl) == columns_of(doc)
    assert ("merge-on-read" in ddl) == ("merge-on-read" in doc)


def test_the_job_reads_the_spec_version_cdclab_writes() -> None:
    assert job.SPEC_VERSION == SPEC_VERSION
    assert (job.ROLE_OP, job.ROLE_TIMESTAMP, job.ROLE_CHANGE_SEQ, job.ROLE_BEFORE_IMAGE) == (
        ROLE_OP, ROLE_TIMESTAMP, ROLE_CHANGE_SEQ, ROLE_BEFORE_IMAGE)


@pytest.mark.parametrize("before", [False, True])
def test_the_job_finds_the_keys_before_image_as_cdclab_does(before: bool) -> None:
    spec = hosts_spec(before_image=before)
    assert job.before_image_keys(spec) == before_image_keys(spec)
    assert bool(job.before_image_keys(spec)) == before


def test_summary_totals_the_tables_and_pools_latencies() -> None:
    base = {"files": 1, "rows_read": 3, "quarantined": 1, "valid": 2, "inserted": 2,
            "updated": 0, "deleted": 0, "skipped": 0}
    a = base | {"latency": [1.0, 3.0], "phase_seconds": {"merge into silver": 1.0},
                "quarantine_examples": [{"file": "f", "record": 2, "reason": "bad Op"}]}
    b = base | {"latency": [2.0], "phase_seconds": {"merge into silver": 0.5}}
    m = job.summarize("jr_1", {"s.a": a, "s.b": b})
    assert (m["files"], m["rows_read"], m["inserted"], m["quarantined"]) == (2, 6, 4, 2)
    assert m["latency_seconds"]["p50"] == 2.0 and m["latency_seconds"]["count"] == 3
    assert m["phase_seconds"] == {"merge into silver": 1.5}
    assert m["quarantine_examples"] == a["quarantine_examples"]
    assert set(m["tables"]) == {"s.a", "s.b"} and "latency" not in m["tables"]["s.a"]


def test_the_jobs_own_columns_cannot_collide_with_a_tables() -> None:
    """A table may have a `reason` or `action` column: the job's own are prefixed, and
    the spec refuses a table column with that prefix."""
    assert job.INTERNAL == INTERNAL_PREFIX
    own = [job.FILE, job.RECORD, job.LINE, job.REASON, job.RAW, job.ORDER, job.OP, job.LOAD,
           job.RANK, job.ACTION, job.OLD_KEY, job.BEFORE, job.SOURCE_FILE_COLUMN]
    assert all(c.startswith(INTERNAL_PREFIX) for c in own) and len(set(own)) == len(own)
    source = hosts_source()
    clash = [*source.columns, SourceColumn("_cdclab_op", PgType("text"))]
    bad = dataclasses.replace(source, columns=clash, written_names=[c.name for c in clash])
    spec = build_spec(bad, layout_of(load_pipeline()))  # catalog names lose the leading _
    assert not any(c["name"].startswith(INTERNAL_PREFIX) for c in spec["bronze_columns"])
    assert "cdclab_op" in [c["name"] for c in spec["silver_columns"]]


@given(st.integers(0, 10**13), st.integers(0, 10**13),
       st.sampled_from(['{"source": "job"}', '{"source": "lambda"}', "{}", "not json", "[]"]))
def test_a_run_with_nothing_left_keeps_only_a_marker_announcing_a_late_file(written, started,
                                                                            body) -> None:
    """The Lambda writes the marker when a file lands while a run is going; that run's
    listing came too early, so it must keep the marker. A marker a run wrote (before this
    run's listing, one run at a time) is done with; so is anything written well before."""
    keep = job.keep_marker(written, started, body)
    if written < started - job.MARKER_CLOCK_MARGIN_MS or body == '{"source": "job"}':
        assert not keep
    else:
        assert keep
