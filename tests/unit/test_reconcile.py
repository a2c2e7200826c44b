"""Reconcile's pure comparison: what counts as equal, and what gets reported."""

from __future__ import annotations

import dataclasses
from datetime import date

from hypothesis import given
from hypothesis import strategies as st

from cdclab.reconcile import MAX_REPORTED_KEYS, compare, expected_silver

source_row = st.fixed_dictionaries(
    {
        "url": st.none() | st.text(max_size=20),
        "name": st.none() | st.text(max_size=20),
        "since": st.none() | st.dates(min_value=date(2008, 1, 1)),
        "location": st.none() | st.text(max_size=30),
        "response_time": st.none() | st.text(max_size=10),
        "response_rate": st.none() | st.text(max_size=5),
    }
)
tables = st.dictionaries(st.integers(1, 10_000), source_row, max_size=40).map(
    lambda d: [{"id": k, **v} for k, v in d.items()]
)


def test_location_is_split_at_the_first_comma() -> None:
    rows = [
        {"id": 1, "url": "u", "name": "n", "since": date(2020, 1, 2),
         "location": "Washington, D.C., United States", "response_time": None,
         "response_rate": "90%"},
        {"id": 2, "url": None, "name": None, "since": None, "location": "Nowhere",
         "response_time": None, "response_rate": None},
        {"id": 3, "url": None, "name": None, "since": None, "location": None,
         "response_time": None, "response_rate": None},
    ]
    exp = expected_silver(rows)
    assert exp[1][4:6] == ("Washington", "D.C., United States")
    assert exp[2][4:6] == ("Nowhere", None)
    assert exp[3][4:6] == (None, None)


@given(tables)
def test_a_table_equals_itself(rows: list[dict]) -> None:
    exp = expected_silver(rows)
    result = compare(exp, dict(exp))
    assert result.equal and result.source_rows == result.silver_rows == len(rows)
    assert result.mismatching_keys == []


@given(tables, st.data())
def test_every_difference_is_found(rows: list[dict], data: st.DataObject) -> None:
    exp = expected_silver(rows)
    actual = dict(exp)
    touched: set[int] = set()
    for key in data.draw(st.lists(st.sampled_from(sorted(exp)), max_size=5)) if exp else []:
        actual.pop(key, None)  # missing in silver
        touched.add(key)
    extra = data.draw(st.sets(st.integers(20_000, 30_000), max_size=3))
    for key in extra:
        actual[key] = (key,) + (None,) * 7
    touched |= extra
    result = compare(exp, actual)
    assert result.equal == (not touched)
    assert result.mismatching_keys == sorted(touched)[:MAX_REPORTED_KEYS]
    assert result.missing_in_silver + result.extra_in_silver == len(touched)
    assert result.orphan_keys == sorted(extra)[:MAX_REPORTED_KEYS]  # in silver only


def test_a_changed_value_is_reported_with_an_example() -> None:
    rows = [{"id": 7, "url": "a", "name": "Zoë, \"the\" host", "since": None,
             "location": "Köln, Germany", "response_time": None, "response_rate": None}]
    exp = expected_silver(rows)
    actual = {7: exp[7][:1] + ("b",) + exp[7][2:]}
    result = compare(exp, actual)
    assert not result.equal and result.different == 1 and result.mismatching_keys == [7]
    assert result.examples[0]["source"]["url"] == "a"
    assert result.examples[0]["silver"]["url"] == "b"


def test_status_masks_the_database_password() -> None:
    from cdclab.redact import mask_password

    assert (mask_password("postgresql://cdclab:s3cr:et@127.0.0.1:5432/airbnb_db")
            == "postgresql://cdclab:***@127.0.0.1:5432/airbnb_db")
    assert mask_password("postgresql://127.0.0.1/db") == "postgresql://127.0.0.1/db"


def test_an_id_silver_holds_twice_makes_it_unequal_even_with_equal_values() -> None:
    from cdclab.reconcile import compare, keyed

    row = (7, "u", "n", None, "c", None, None, None)
    actual, duplicates = keyed([row, row, (8, *row[1:])])
    result = compare({7: row, 8: (8, *row[1:])}, actual, duplicates)
    assert not result.equal
    assert result.duplicate_ids == [7] and result.duplicate_rows == 1
    assert result.silver_rows == 3 and result.mismatching_keys == []


@given(tables)
def test_the_spec_driven_expectation_equals_the_demo_tables_model(rows: list[dict]) -> None:
    """Any table's expected rows (from its spec and the bronze text) agree with the demo
    table's hand-written model: cast, `since` as DATE, `location` split."""
    from cdclab.reconcile import expected_rows
    from tests.resources.specs import hosts_spec

    spec = hosts_spec()
    text = [(str(r["id"]), r["url"], r["name"], r["since"] and r["since"].isoformat(),
             r["location"], r["response_time"], r["response_rate"], "") for r in rows]
    got, refused = expected_rows(spec, text, quote_empty=True)  # '' kept apart
    assert refused == 0
    assert {k[0]: v for k, v in got.items()} == expected_silver(rows)


@given(tables)
def test_with_dms_unquoted_empties_a_source_empty_string_is_expected_as_null(
        rows: list[dict]) -> None:
    """quote_empty_strings false (AWS's behaviour): '' is an empty field, read as NULL;
    the expectation does the same and counts what it changed, under a named rule."""
    from collections import Counter

    from cdclab.reconcile import EMPTY_AS_NULL, expected_rows
    from tests.resources.specs import hosts_spec

    text = [(str(r["id"]), r["url"], r["name"], r["since"] and r["since"].isoformat(),
             r["location"], r["response_time"], r["response_rate"], "") for r in rows]
    normalised: Counter[str] = Counter()
    got, refused = expected_rows(hosts_spec(), text, normalised=normalised)
    as_null = [{k: (None if v == "" else v) for k, v in r.items()} for r in rows]
    assert refused == 0 and {k[0]: v for k, v in got.items()} == expected_silver(as_null)
    empties = sum(v == "" for t in text for v in t[:-1])  # the last: full load's seq
    assert normalised == (Counter({EMPTY_AS_NULL: empties}) if empties else Counter())


def test_a_key_that_reads_as_null_is_expected_in_quarantine_not_in_silver() -> None:
    from cdclab.reconcile import expected_rows
    from cdclab.tables_sync import layout_of
    from pipeline_contract.dms_format.source_types import PgType, SourceColumn
    from pipeline_contract.settings import load_pipeline
    from pipeline_contract.table_specs import SourceTable, build_spec

    columns = [SourceColumn("code", PgType("text"), True), SourceColumn("v", PgType("int4"))]
    spec = build_spec(SourceTable("public", "t", "public/t", columns, ["code", "v"],
                                  ["change_seq"], ["code"]), layout_of(load_pipeline()))
    got, refused = expected_rows(spec, [("", "1", ""), ("a", "2", "")])
    assert refused == 1 and list(got) == [("a",)]


def test_values_read_back_as_glue_reads_them_and_refused_rows_are_counted() -> None:
    from decimal import Decimal

    from cdclab.reconcile import as_read, typed

    assert as_read(None) is None and as_read("") is None  # '' unquoted reads as NULL
    assert as_read("", quote_empty=True) == ""  # the lab's "" keeps it
    assert as_read(None, null_value="NULL") == "NULL"
    assert typed("decimal(10,2)", "1.005") == Decimal("1.01")  # Spark rounds half up
    assert typed("float", "0.1") != 0.1 and typed("double", "0.1") == 0.1
    assert typed("double", "NaN") == "NaN" and typed("boolean", "false") is False
    assert typed("timestamp", "2024-01-02 03:04:05.000001").microsecond == 1
    import pytest

    from cdclab.reconcile import Unconvertible
    with pytest.raises(Unconvertible):
        typed("date", "4713-01-01 BC")


def test_pyiceberg_is_quiet_only_about_files_already_gone(caplog) -> None:
    import contextlib
    import logging

    from pyiceberg.catalog import delete_files

    from cdclab.reconcile import silver_catalog
    from pipeline_contract import settings

    class Io:
        def __init__(self, exc: OSError) -> None:
            self.exc = exc

        def delete(self, path: str) -> None:
            raise self.exc

    with contextlib.suppress(Exception):  # nothing answers: only the filter matters here
        silver_catalog({settings.ENV_CATALOG_URI: "http://127.0.0.1:9"})
    with caplog.at_level(logging.WARNING, logger="pyiceberg.catalog"):
        delete_files(Io(FileNotFoundError("gone")), {"s3://b/m.json"}, "metadata")
        assert not caplog.records
        delete_files(Io(PermissionError("denied")), {"s3://b/m.json"}, "metadata")
        assert [r.getMessage() for r in caplog.records] == [
            "Failed to delete metadata file s3://b/m.json"]


def test_old_keys_of_primary_key_updates_are_named_orphans_with_their_cause() -> None:
    """DMS writes a primary-key UPDATE as one U row with the new key (real output:
    northwind orders 30017 -> 30018 -> 30019 -> 30020). Replayed without the before image
    the old keys stay in silver: reconcile names them orphans, and the hint says why."""
    from datetime import datetime

    from cdclab.merge_model import Change, apply_in_order, make_change_seq
    from cdclab.reconcile import (
        ORPHANS_WITH_BEFORE_IMAGE,
        ORPHANS_WITHOUT_BEFORE_IMAGE,
        orphan_hint,
        total,
    )
    from tests.resources.specs import hosts_spec

    t = datetime(2024, 7, 5, 20, 21, 50)
    chain = [Change("I", 30017, make_change_seq(1, 1), t, name="VINET")]
    for n, (old, new) in enumerate([(30017, 30018), (30018, 30019), (30019, 30020)], 2):
        chain.append(Change("U", new, make_change_seq(n, 1), t, name="VINET", before_id=old))
    source = [{"id": 30020, "url": None, "name": "VINET", "since": None, "location": None,
               "response_time": None, "response_rate": None}]

    def silver(changes: list[Change]) -> dict:
        rows = apply_in_order(changes)
        return expected_silver([{"id": r.id, "url": r.url, "name": r.name, "since": r.since,
                                 "location": None, "response_time": r.response_time,
                                 "response_rate": r.response_rate} for r in rows.values()])

    fixed = compare(expected_silver(source), silver(chain))
    assert fixed.equal and fixed.orphan_keys == []
    flawed = compare(expected_silver(source),
                     silver([dataclasses.replace(c, before_id=None) for c in chain]))
    assert not flawed.equal and flawed.missing_in_silver == flawed.different == 0
    assert flawed.orphan_keys == [30017, 30018, 30019]

    plain, imaged = hosts_spec(), hosts_spec(before_image=True)
    assert orphan_hint(plain) == ORPHANS_WITHOUT_BEFORE_IMAGE.format(table="public.hosts_demo")
    assert orphan_hint(imaged) == ORPHANS_WITH_BEFORE_IMAGE.format(table="public.hosts_demo")
    assert "primary-key UPDATE" in orphan_hint(plain) and "before_image_columns" in (
        orphan_hint(plain))
    flawed.hints = [orphan_hint(plain)]
    both = total({"public.hosts_demo": flawed, "public.other": fixed})
    assert both.orphan_keys == ["public.hosts_demo:30017", "public.hosts_demo:30018",
                                "public.hosts_demo:30019"]
    assert both.hints == [f"public.hosts_demo: {orphan_hint(plain)}"]


@given(st.one_of(st.none(), st.text(max_size=5)),
       st.sampled_from(["csv", "parquet"]), st.booleans())
def test_a_source_text_in_silver_is_null_for_csv_empties_and_itself_otherwise(
        text: str | None, data_format: str, quote_empty: bool) -> None:
    """What notebook 03 compares silver with: with CSV bronze and AWS's unquoted empties
    a source '' reads as NULL; Parquet and the lab's quoted "" keep it."""
    from cdclab.reconcile import source_text_in_silver
    from pipeline_contract.settings import load_pipeline

    dms = dataclasses.replace(load_pipeline().dms, data_format=data_format,
                              quote_empty_strings=quote_empty, csv_null_value="")
    got = source_text_in_silver(text, dms)
    empty_is_null = data_format == "csv" and not quote_empty
    assert got == (None if text == "" and empty_is_null else text)


# values that compare equal across types, or that Python hashes alike though unequal
tricky = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 3),
    st.sampled_from([2**61, 2**61 - 1, -2**61, 2**62 - 1, -(2**62 - 1), 0]),
    st.floats(allow_nan=False), st.sampled_from([1.0, 0.0, -0.0, 2.0**61]),
    st.decimals(allow_nan=False, places=2, min_value=-10, max_value=10),
    st.text(max_size=3), st.binary(max_size=3), st.sampled_from(["a", b"a"]),
    st.dates(), st.lists(st.integers(0, 2), max_size=2))
records = st.lists(tricky, min_size=3, max_size=3).map(tuple)


@given(st.dictionaries(st.integers(0, 30), records, max_size=20),
       st.dictionaries(st.integers(0, 30), records, max_size=20),
       st.dictionaries(st.integers(0, 30), st.integers(2, 4), max_size=3))
def test_comparing_fingerprints_gives_the_verdict_comparing_records_gives(
        expected: dict, actual: dict, duplicates: dict) -> None:
    """Reconcile holds a table as fingerprints and reads again in full only the keys whose
    fingerprints differ: the verdict, counts, keys and examples are those of comparing
    every record, also where Python's hash of unequal values is equal (-1 and -2, b'a'
    and 'a') or where equal values differ in type (1 and 1.0, Decimal('1') and 1)."""
    from cdclab.reconcile import compare_fingerprints, fingerprint

    columns = ("a", "b", "c")
    asked: list[set] = []

    def records(keys: set) -> tuple[dict, dict]:
        asked.append(keys)
        return ({k: v for k, v in expected.items() if k in keys},
                {k: v for k, v in actual.items() if k in keys})

    full = compare(expected, actual, duplicates, columns)
    by_fingerprint = compare_fingerprints(
        {k: fingerprint(v) for k, v in expected.items()},
        {k: fingerprint(v) for k, v in actual.items()}, duplicates, records, columns)
    assert by_fingerprint == full
    assert len(asked) == 1 and len(asked[0]) <= full.different + 3 + sum(
        1 for k in expected.keys() & actual.keys()
        if expected[k] == actual[k] and fingerprint(expected[k]) != fingerprint(actual[k]))


def test_fingerprints_tell_apart_what_python_hashes_alike_and_not_what_is_equal() -> None:
    from decimal import Decimal

    from cdclab.reconcile import compare_fingerprints, fingerprint

    expected = {1: (1, "x", -1), 2: (-1, "x", 0), 3: ("a", None, 0), 4: (2.0**61, "x", 0),
                5: (Decimal("1.50"), True, 0), 6: ([1, 2], "x", 0)}
    actual = {1: (1.0, "x", -1), 2: (-2, "x", 0), 3: (b"a", None, 0), 4: (1.0, "x", 0),
              5: (Decimal("1.5"), 1, 0), 6: ([1, 2], "x", 0)}
    assert fingerprint(expected[2]) != fingerprint(actual[2])
    assert fingerprint(expected[3]) != fingerprint(actual[3])
    assert fingerprint(expected[6]) == fingerprint(actual[6])

    def records(keys: set) -> tuple[dict, dict]:
        return ({k: expected[k] for k in keys}, {k: actual[k] for k in keys})

    result = compare_fingerprints({k: fingerprint(v) for k, v in expected.items()},
                                  {k: fingerprint(v) for k, v in actual.items()}, {},
                                  records, ("a", "b", "c"))
    assert result == compare(expected, actual, {}, ("a", "b", "c"))
    assert result.mismatching_keys == [2, 3, 4] and not result.equal



def test_a_key_gone_by_the_second_read_counts_as_different_not_as_an_error() -> None:
    """The source (or silver) may move on between reconcile's two reads: key 1 left
    silver, key 2 left both (deleted, and the delete merged)."""
    from cdclab.reconcile import compare_fingerprints, fingerprint

    expected, actual = {1: (1, "a", "x"), 2: (2, "b", "x")}, {1: (1, "a", "y"), 2: (2, "b", "y")}
    result = compare_fingerprints(
        {k: fingerprint(v) for k, v in expected.items()},
        {k: fingerprint(v) for k, v in actual.items()}, {},
        lambda keys: ({1: expected[1]}, {}), ("a", "b", "c"))
    assert result.different == 1 and result.mismatching_keys == [1] and not result.equal
