"""The job script's pure parts (its record handling runs on Spark: test_job_records.py)."""

from __future__ import annotations

import dataclasses
import importlib.util
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cdclab.merge_model import Change, clean_row, make_change_seq, old_key_deletes
from cdclab.tables_sync import layout_of
from pipeline_contract.dms_format.source_types import PgType, SourceColumn
from pipeline_contract.settings import load_pipeline
from pipeline_contract.table_overrides import TRANSFORMS
from pipeline_contract.table_specs import (
    INTERNAL_PREFIX,
    ROLE_BEFORE_IMAGE,
    ROLE_CHANGE_SEQ,
    ROLE_OP,
    ROLE_TIMESTAMP,
    SPEC_VERSION,
    SourceTable,
    before_image_keys,
    build_spec,
)
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
    assert (job.TRANSFORM_SPLIT,) == TRANSFORMS  # the job computes every transform a spec names


@pytest.mark.parametrize("before", [False, True])
def test_the_job_finds_the_keys_before_image_as_cdclab_does(before: bool) -> None:
    spec = hosts_spec(before_image=before)
    assert job.before_image_keys(spec) == before_image_keys(spec)
    assert bool(job.before_image_keys(spec)) == before


@given(st.lists(st.sampled_from(["o", "p", "q", "r"]), min_size=1, max_size=4, unique=True),
       st.sets(st.sampled_from(["o", "p", "q", "r"])))
def test_a_key_change_is_told_only_with_every_key_columns_before_image(
        key: list[str], imaged: set[str]) -> None:
    """Both sides agree; a partial before image of the key (non-lob leaving a text key
    column out) tells no key change, so the job deletes nothing."""
    columns = [SourceColumn(n, PgType("int4"), n in key) for n in ("o", "p", "q", "r")]
    source = SourceTable("s", "t", "s/t", columns, [c.name for c in columns],
                         ["change_seq"], key, [(f"BI_{n}", n) for n in sorted(imaged)])
    spec = build_spec(source, layout_of(load_pipeline()))
    got = job.before_image_keys(spec)
    assert got == before_image_keys(spec)
    assert got == ({k: f"bi_{k}" for k in spec["keys"]} if set(key) <= imaged else {})


def test_an_old_keys_delete_is_its_key_at_the_updates_sequence_and_time() -> None:
    assert job.old_key_columns(hosts_spec(before_image=True)) == {
        "last_updated_ts": True, "id": 0, "url": None, "name": None, "since": None,
        "location_city": None, "location_country": None, "response_time": None,
        "response_rate": None, "change_seq": True}


_UPDATES = st.builds(
    Change, op=st.just("U"), id=st.integers(1, 9),
    change_seq=st.integers(1, 10**6).map(lambda n: make_change_seq(n, 1)),
    last_updated_ts=st.datetimes(), url=st.none() | st.text(max_size=3),
    name=st.none() | st.text(max_size=3), location=st.none() | st.just("Paris, France"),
    before_id=st.none() | st.integers(1, 9))


@given(_UPDATES)
def test_the_jobs_old_key_delete_is_the_merge_models(u: Change) -> None:
    """From a U's silver row, the job's plan of the old key's D gives the row the merge
    model's old_key_deletes makes; only a U that moved its key makes one."""
    plan = job.old_key_columns(hosts_spec(before_image=True))
    row = dataclasses.asdict(clean_row(u))
    deletes = [c for c in old_key_deletes([u]) if c is not u]
    assert len(deletes) == (u.before_id is not None and u.before_id != u.id)
    for d in deletes:
        made = {name: (row[name] if source is True else None if source is None
                       else (u.before_id,)[source]) for name, source in plan.items()}
        assert made == dataclasses.asdict(clean_row(d))


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
           job.RANK, job.ACTION, job.OLD_KEY, job.BEFORE, job.FILL, job.PART, job.BASE,
           job.SOURCE_FILE_COLUMN]
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


FILE_NAME = st.text(st.sampled_from("LOADabc0123-./_"), max_size=20)


@given(folders=st.lists(FILE_NAME.filter(lambda s: "/" not in s), max_size=3), name=FILE_NAME)
def test_a_full_load_file_is_told_by_its_own_name_only(folders: list[str], name: str) -> None:
    path = "/".join(["s3://bronze", *folders, name])
    base = path.rsplit("/", 1)[-1]
    assert (re.search(job.FULL_LOAD_FILE, path) is not None) == base.startswith("LOAD")


def accounting(files: list[str], changes: int = 0, quarantined: int = 0) -> object:
    return job.Accounting(files=files, rows=len(files), quarantined=quarantined, spans=[],
                          changes=changes)


def test_only_batches_of_inserts_skip_the_classification() -> None:
    load = ["s3://b/dms/public/hosts/LOAD00000001.csv", "s3://b/dms/public/hosts/LOAD0002.csv"]
    cdc = "s3://b/dms/public/hosts/20260105-090140000.csv"
    assert job.only_inserts(accounting(load))
    assert job.only_inserts(accounting([*load, cdc]))  # CDC files of INSERTs only too
    assert not job.only_inserts(accounting(load, changes=1))  # a U or a D
    assert not job.only_inserts(accounting([cdc], changes=1))
    assert not job.only_inserts(accounting([]))
    # every record quarantined: nothing to append, the usual path counts nothing
    assert not job.only_inserts(accounting(load, quarantined=len(load)))


def test_a_key_range_bounds_silver_only_for_ranged_key_types() -> None:
    spec = hosts_spec()  # id INT
    assert job.key_within("t.`id`", spec, None) == "TRUE"
    assert job.key_within("t.`id`", spec, (-3, 12)) == (
        "t.`id` BETWEEN CAST(-3 AS INT) AND CAST(12 AS INT)")
    text = {**spec, "silver_columns": [{**c, "type": "string"} if c["name"] == "id" else c
                                       for c in spec["silver_columns"]]}
    assert job.key_within("id", text, ("61275C", "C3A9")) == (  # hex(): a'\ and é
        "id BETWEEN CAST(X'61275C' AS STRING) AND CAST(X'C3A9' AS STRING)")
    assert "timestamp" not in job.RANGED_KEY_TYPES  # naive datetimes: the driver's zone
