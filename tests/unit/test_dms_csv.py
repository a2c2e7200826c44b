"""DMS CSV: round trips for awkward text, NULL vs empty string, names, clear parse errors."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dms_emitter.change_seq import change_seq
from dms_emitter.dms_csv import (
    CsvFormat,
    DmsCsvError,
    DmsRow,
    WritingClock,
    cdc_file_name,
    encode_file,
    encode_line,
    encode_row,
    format_ts,
    load_file_name,
    parse_dms_csv,
    parse_ts,
)
from pipeline_contract import settings

COLUMNS = ["id", "url", "name", "since", "location", "response_time", "response_rate"]
FMT = CsvFormat.from_settings(settings.load_pipeline().dms)
awkward = st.one_of(
    st.none(), st.just(""), st.sampled_from(['a, "b"', "O'Brien", "x\ny", "\r\n", '"', ","]),
    st.text(st.characters(blacklist_categories=["Cs"]), max_size=25),
)
moments = st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2100, 1, 1),
                       timezones=st.just(UTC))
rows = st.builds(
    DmsRow, st.sampled_from("IUD"), moments,
    st.lists(awkward, min_size=len(COLUMNS), max_size=len(COLUMNS)).map(tuple),
    st.builds(change_seq, st.integers(0, 2**64 - 1), st.integers(1, 10**15 - 1)),
)


@given(st.lists(rows, max_size=10), st.booleans())
def test_round_trip(dms_rows: list[DmsRow], quote_empty: bool) -> None:
    """Every value comes back, but '' written as DMS writes it (an empty field, like
    NULL) comes back NULL; the lab's quote_empty keeps it."""
    fmt = dataclasses.replace(FMT, quote_empty=quote_empty)
    text = encode_file([*COLUMNS, "change_seq"], [encode_row(r, fmt) for r in dms_rows], fmt)
    parsed = parse_dms_csv(text, "test.csv", fmt)
    assert len(parsed) == len(dms_rows)
    for got, want in zip(parsed, dms_rows, strict=True):
        assert got["Op"] == want.op
        assert parse_ts(got["last_updated_ts"]) == want.ts
        read = want.values if quote_empty else tuple(v or None for v in want.values)
        assert tuple(got[c] for c in COLUMNS) == read
        assert got["change_seq"] == want.change_seq


def test_an_empty_string_is_an_unquoted_empty_field_like_null() -> None:
    """Rfc4180 quotes only quotes, commas and newlines; real DMS output writes an empty
    value as an empty field (docs/dms-fidelity.md, rule 2). quote_empty: the lab's ""."""
    row = DmsRow("U", datetime(2026, 1, 2, 3, 4, 5, 6, UTC), ("1", None, "", "a,b", None,
                                                              'say "hi"', "Zürich"), "0" * 35)
    assert not FMT.quote_empty and not CsvFormat().quote_empty
    assert encode_row(row) == (
        'U,2026-01-02 03:04:05.000006,1,,,"a,b",,"say ""hi""",Zürich,' + "0" * 35 + "\n"
    )
    assert encode_row(row, CsvFormat(quote_empty=True)) == (
        'U,2026-01-02 03:04:05.000006,1,,"","a,b",,"say ""hi""",Zürich,' + "0" * 35 + "\n"
    )


@given(st.lists(st.integers(946684800 * 10**9, 4102444800 * 10**9), min_size=1, max_size=5))
def test_the_writing_clock_writes_each_moment_as_format_ts_does(moments_ns) -> None:
    """A full load's per-row time of writing, formatted a second at a time: the same text
    as format_ts of that moment (to the microsecond, truncated), second after second."""
    ticks = iter(moments_ns)
    clock = WritingClock(lambda: next(ticks))
    for ns in moments_ns:
        exact = datetime.fromtimestamp(ns // 10**9, UTC) + timedelta(
            microseconds=ns % 10**9 // 1000)
        assert clock() == format_ts(exact)


def test_timestamps_are_utc() -> None:
    plus2 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC).astimezone(
        __import__("datetime").timezone(timedelta(hours=2)))
    assert format_ts(plus2) == "2026-01-01 12:00:00.000000"
    with pytest.raises(ValueError, match="no time zone"):
        format_ts(datetime(2026, 1, 1))


def test_file_names() -> None:
    assert load_file_name(1) == "LOAD00000001.csv"
    # "an incremental hexadecimal counter" (CHAP_Target.S3)
    assert [load_file_name(n) for n in (9, 10, 16)] == [
        "LOAD00000009.csv", "LOAD0000000A.csv", "LOAD00000010.csv"]
    t = datetime(2026, 11, 22, 10, 15, 0, 123456, UTC)
    first = cdc_file_name(t)
    assert first == "20261122-101500123.csv"
    second = cdc_file_name(t, first)
    assert second == "20261122-101500124.csv"
    assert cdc_file_name(t - timedelta(seconds=1), second) > second  # clock went back


@pytest.mark.parametrize(("text", "message"), [
    ("", "f.csv:1: empty file"),
    ("a,b\n", "f.csv:1: header"),
    ("Op,x,change_seq\nI,1\n", "f.csv:2: 2 fields, header has 3"),
    ('Op,x,change_seq\nI,"a\nb",1\nZ,1,2\n', "f.csv:4: unknown Op 'Z'"),
    ('Op,x,change_seq\nI,"never closed,1\n', "f.csv:2: quoted field never closed"),
    ('Op,x,change_seq\nI,a"b,1\n', "f.csv:2: stray quote"),
    ('Op,x,change_seq\nI,"a"b,1\n', "f.csv:2: unexpected 'b' after a closing quote"),
])
def test_parse_errors_name_file_and_line(text: str, message: str) -> None:
    with pytest.raises(DmsCsvError, match=message.replace("(", r"\(")):
        parse_dms_csv(text, "f.csv")


def layout(**changes: object) -> CsvFormat:
    dms = dataclasses.replace(settings.load_pipeline().dms, **changes)
    return CsvFormat.from_settings(dms)


def test_layout_settings_follow_the_s3_target() -> None:
    row = DmsRow("I", datetime(2026, 1, 1, tzinfo=UTC), ("1", None, ""), "7")
    default = layout()
    assert encode_file(["id", "a", "b", "change_seq"], [encode_row(row, default)],
                       default) == (
        "Op,last_updated_ts,id,a,b,change_seq\nI,2026-01-01 00:00:00.000000,1,,,7\n")
    bare = layout(add_column_name=False, timestamp_column_name="",
                  include_op_for_full_load=False, csv_null_value="NULL")
    assert encode_file(["id", "a", "b", "change_seq"], [encode_row(row, bare, op=False)],
                       bare, op=False) == "1,NULL,,7\n"
    assert encode_row(row, layout(quote_empty_strings=True)).endswith(',1,,"",7\n')
    # "Indicating source DB operations in migrated S3 data": Op on CDC rows unless only
    # some ops are written and IncludeOpForFullLoad is false
    assert default.cdc_op_column and layout(include_op_for_full_load=False).cdc_op_column
    inserts = layout(cdc_inserts_only=True, include_op_for_full_load=False)
    assert inserts.cdc_ops == ("I",) and not inserts.cdc_op_column
    assert layout(cdc_inserts_and_updates=True).cdc_ops == ("I", "U")
    assert layout(cdc_inserts_and_updates=True).cdc_op_column


def test_rfc4180_false_writes_values_as_they_are() -> None:
    fmt = layout(rfc4180=False)
    assert encode_line(["a,b", 'say "hi"', "", None], fmt) == 'a,b,say "hi",,\n'
