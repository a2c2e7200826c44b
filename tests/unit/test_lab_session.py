"""The pytest plugin's pure parts: hand-made DMS files, the backend choice, the example repo."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cdclab.init_project import FILES, render
from cdclab.lab_session import DmsFileError, dms_file_text, file_columns
from cdclab.private_stack import PrivateStackError, chosen_backend
from dms_emitter.dms_csv import CsvFormat, parse_records
from pipeline_contract.settings import PIPELINE_FILE, load_pipeline

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "my-pipeline"
MOMENT = datetime(2026, 11, 26, 9, 30, 0, 123456, tzinfo=UTC)
SPEC = {"bronze_columns": [
    {"name": "op", "role": "op"}, {"name": "last_updated_ts", "role": "timestamp"},
    {"name": "id", "role": "data"}, {"name": "name", "role": "data"},
    {"name": "change_seq", "role": "change_seq"}, {"name": "bi_id", "role": "before_image"},
    {"name": "virtual_seq", "role": "change_seq", "virtual": True},
]}
FMT = CsvFormat()

texts = st.one_of(st.none(), st.text(st.characters(blacklist_categories=("Cs",),
                                                   blacklist_characters="\x00"), max_size=12))
rows = st.lists(st.fixed_dictionaries({"id": st.integers(0, 10**6).map(str), "name": texts},
                                      optional={"Op": st.sampled_from("IUD")}),
                min_size=1, max_size=8)


def test_the_file_columns_are_the_specs_bronze_columns_in_order_without_virtual_ones() -> None:
    assert file_columns(SPEC, FMT) == [
        ("Op", "op"), ("last_updated_ts", "timestamp"), ("id", "data"), ("name", "data"),
        ("change_seq", "change_seq"), ("bi_id", "before_image")]


@given(rows)
def test_a_cdc_file_reads_back_as_the_rows_with_op_time_and_rising_change_sequences(
        given_rows) -> None:
    text = dms_file_text(given_rows, file_columns(SPEC, FMT), FMT, load=False, moment=MOMENT,
                         first_number=7)
    header, *records = [fields for _line, fields in parse_records(text)]
    assert header == ["Op", "last_updated_ts", "id", "name", "change_seq", "bi_id"]
    assert len(records) == len(given_rows)
    for row, (op, ts, id_, name, _seq, before) in zip(given_rows, records, strict=True):
        assert op == row.get("Op", "I") and ts == "2026-11-26 09:30:00.123456"
        assert id_ == row["id"] and before is None
        assert name == (row["name"] or None)  # '' and NULL: both an empty field, as DMS
    seqs = [r[4] for r in records]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    assert all(s.startswith("2026112609300012") and len(s) == 35 for s in seqs)


def test_a_full_load_file_has_inserts_and_empty_change_sequences_as_dms_writes_them() -> None:
    text = dms_file_text([{"id": "1", "name": "a"}], file_columns(SPEC, FMT), FMT, load=True,
                         moment=MOMENT, first_number=1)
    assert text.splitlines()[1] == "I,2026-11-26 09:30:00.123456,1,a,,"
    with pytest.raises(DmsFileError, match=r"row 0: Op 'U' is not one this file may hold \(I\)"):
        dms_file_text([{"Op": "U", "id": "1"}], file_columns(SPEC, FMT), FMT, load=True,
                      moment=MOMENT, first_number=1)


def test_bad_rows_are_refused_by_name() -> None:
    columns = file_columns(SPEC, FMT)
    with pytest.raises(DmsFileError, match="no rows"):
        dms_file_text([], columns, FMT, load=False, moment=MOMENT, first_number=1)
    with pytest.raises(DmsFileError, match=r"row 1: \['colour'\] are not columns"):
        dms_file_text([{"id": "1"}, {"id": "2", "colour": "red"}], columns, FMT, load=False,
                      moment=MOMENT, first_number=1)
    inserts_only = CsvFormat(cdc_ops=("I",))
    with pytest.raises(DmsFileError, match="Op 'D'"):
        dms_file_text([{"Op": "D", "id": "1"}], columns, inserts_only, load=False,
                      moment=MOMENT, first_number=1)


@given(st.sampled_from([None, "embedded", "containers"]),
       st.sampled_from([None, "embedded", "containers", "podman"]))
def test_the_backend_is_the_option_else_the_environment_else_embedded(option, env) -> None:
    environ = {} if env is None else {"CDCLAB_BACKEND": env}
    wanted = option or env or "embedded"
    if wanted == "podman":
        with pytest.raises(PrivateStackError, match="'podman' .*CDCLAB_BACKEND.*embedded, "
                                                    "containers"):
            chosen_backend(option, environ)
    else:
        assert chosen_backend(option, environ) == wanted


def test_the_example_repository_starts_from_what_cdclab_init_writes() -> None:
    defaults = load_pipeline(PIPELINE_FILE)
    for name in FILES:
        assert (EXAMPLE / name).read_text() == render(name, defaults), name


def test_the_plugin_is_registered_for_pytest_and_offers_its_fixtures() -> None:
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["entry-points"]["pytest11"] == {"cdclab": "cdclab.pytest_plugin"}
    from cdclab import pytest_plugin

    for fixture in ("cdclab_lab", "cdclab_source", "cdclab_run_job", "cdclab_dms_files"):
        assert callable(getattr(pytest_plugin, fixture)), fixture
