"""The Lambda's object gate: every file DMS could write passes, whatever its values and
however S3 chunks it; damaged ones are named with the record where it shows."""

from __future__ import annotations

import csv
import gzip

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dms_emitter.dms_csv import encode_line
from lambda_shim.object_gate import CsvLayout, content_defect, inspect, is_hidden, key_defect

HEADER = ["Op", "last_updated_ts", "id", "name", "change_seq"]
# commas, quotes, newlines, unicode; no NUL: PostgreSQL text cannot hold one
values = st.one_of(st.none(), st.text(st.characters(blacklist_categories=("Cs",),
                                                    blacklist_characters="\x00"), max_size=30))


def dms_csv(rows: list[list[str | None]], header: list[str] | None = HEADER) -> bytes:
    """The emitter's own encoder (Rfc4180: quoted where needed, NULL an empty field)."""
    lines = [encode_line(header)] if header else []
    return "".join(lines + [encode_line(r) for r in rows]).encode()


rows_st = st.lists(st.lists(values, min_size=len(HEADER), max_size=len(HEADER)), max_size=8)


def chunked(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({0, len(data), *(c % (len(data) + 1) for c in cuts)})
    return [data[a:b] for a, b in zip(points, points[1:], strict=False)]


@settings(max_examples=200, deadline=None)
@given(rows=rows_st, gz=st.booleans(), cuts=st.lists(st.integers(0, 10**6), max_size=6))
def test_every_file_dms_could_write_passes_however_it_is_chunked(rows, gz, cuts) -> None:
    data = dms_csv(rows)
    key = "dms/t/20261122-101500123.csv" + (".gz" if gz else "")
    if gz:
        data = gzip.compress(data)
    assert inspect(key, chunked(data, cuts)) is None


@settings(max_examples=100, deadline=None)
@given(rows=rows_st, cut=st.integers(1, 10**6))
def test_a_truncated_gzip_is_refused(rows, cut) -> None:
    data = gzip.compress(dms_csv(rows))
    short = data[: 1 + cut % (len(data) - 1)]
    defect = content_defect("x.csv.gz", [short])
    assert defect is not None and "gzip" in defect.reason


@settings(max_examples=100, deadline=None)
@given(rows=st.lists(st.lists(values, min_size=5, max_size=5), min_size=1, max_size=6),
       at=st.integers(0, 100), extra=st.sampled_from([-1, 1, 3]))
def test_a_record_with_the_wrong_field_count_is_named(rows, at, extra) -> None:
    at %= len(rows)
    rows = [list(r) for r in rows]
    rows[at] = rows[at][:extra] if extra < 0 else rows[at] + ["x"] * extra
    data = dms_csv(rows)
    defect = content_defect("x.csv", [data])
    assert defect is not None
    assert defect.record == at + 2  # the header is record 1
    assert defect.reason == f"{len(rows[at])} fields where the header has 5"
    # the line is where that record starts (quoted newlines make records span lines)
    start = data.decode().split("\n")[defect.line - 1]
    assert next(csv.reader([start + "\n" if start.count('"') % 2 == 0 else start]))


def test_not_gzip_empty_header_only_and_gzip_members() -> None:
    assert "not valid gzip" in content_defect("a.csv.gz", [b"not gzip at all\n"]).reason
    assert content_defect("a.csv", []) is None  # empty: nothing to read
    assert content_defect("a.csv.gz", []) is None
    assert content_defect("a.csv", [dms_csv([])]) is None  # header only
    two = gzip.compress(dms_csv([["I", "t", "1", "a", "1"]])) + gzip.compress(b"U,t,1,b,2\n")
    assert content_defect("a.csv.gz", [two]) is None  # concatenated members, as gzip allows
    tail = gzip.compress(dms_csv([])) + b"garbage"
    assert "after the end" in content_defect("a.csv.gz", [tail]).reason


def test_invalid_utf8_and_nul_and_bad_quoting() -> None:
    bad = dms_csv([["I", "t", "1", "ok", "1"]]) + b"U,t,2,\xff\xfe,2\n"
    d = content_defect("a.csv", [bad])
    assert "not UTF-8: byte 0xff" in d.reason and (d.record, d.line) == (3, 3)
    d = content_defect("a.csv", [dms_csv([]) + b'I,t,1,"open,2\n'])
    assert d is not None and "not CSV" in d.reason or "fields" in d.reason
    d = content_defect("a.csv", [dms_csv([]) + b'I,t,1,"a"b,2\n'])
    assert d is not None and d.record == 2 and "not CSV" in d.reason


@pytest.mark.parametrize("first", [
    "I,2026-11-22 10:15:00.123456,1,a,00000000000000000000000000000000001",
    "Op,,id,name,change_seq", "Op,id,id,name,change_seq",
])
def test_a_file_without_a_header_is_refused(first) -> None:
    d = content_defect("a.csv", [(first + "\n").encode()])
    assert d is not None and d.reason.startswith("no header") and d.record == 1


def test_layout_without_header_or_quoting() -> None:
    body = b"I,2026-11-22 10:15:00,1,a,1\nU,2026-11-22 10:15:00,1,b\"c,2\n"
    assert content_defect("a.csv", [body], CsvLayout(header=False, quoting=False)) is None
    d = content_defect("a.csv", [body + b"D,1\n"], CsvLayout(header=False, quoting=False))
    assert d.reason == "2 fields where record 1 has 5" and d.record == 3
    assert content_defect("a.csv", [b"Op|id\nI|1\n"], CsvLayout(delimiter="|")) is None


@pytest.mark.parametrize(("key", "words"), [
    ("dms/t/20261122-999999999 [1] {a,b}.csv.gz", "[ ] { }"),
    ("dms/t/a*b.csv", "*"), ("dms/t/a?b.csv", "?"), ("dms/t/a\\b.csv", "\\"),
    ("dms/t/a\nb.csv", "control"), ("dms/t/notes.txt", "not a DMS file"),
    ("dms/t/LOAD00000001.csv.bz2", "not a DMS file"),
])
def test_keys_hadoop_or_the_reader_cannot_take(key, words) -> None:
    assert words in key_defect(key).reason
    assert inspect(key, iter(())) is not None  # refused before any byte is read


@pytest.mark.parametrize("key", [
    "dms/t/LOAD0000000A.csv", "dms/t/20261122-101500123.csv.gz",
    "dms/t/with space, comma %20 ünïcode.csv",
])
def test_keys_that_are_fine(key) -> None:
    assert key_defect(key) is None


def test_hidden_names_are_skipped_like_the_reader_skips_them() -> None:
    assert is_hidden("dms/t/_SUCCESS") and is_hidden("dms/t/.tmp.csv")
    assert is_hidden("dms/t/x_$folder$") and not is_hidden("dms/t/LOAD00000001.csv")
    # a hidden name whose key breaks the folder's listing (XML 1.0 cannot carry \x01:
    # every run's S3A listing fails) is not skipped: the gate refuses it
    for key in ("dms/t/\x01|/_hidden.csv", "dms/t/a/.x\uffff", "dms/t/[a]/_x"):
        assert not is_hidden(key) and key_defect(key) is not None


# --- DataFormat parquet ----------------------------------------------------------------
def parquet_file(rows: int = 30, group: int = 10) -> bytes:
    import io

    from dms_emitter.parquet_file import write_file
    from pipeline_contract.dms_format import parquet_types as pt
    out = io.BytesIO()
    write_file(out, ["Op", "id", "name"],
               [pt.STRING_COLUMN, pt.ColumnType(pt.INT32), pt.STRING_COLUMN],
               [["I", str(i), f"n{i}"] for i in range(rows)],
               pt.ParquetOptions(row_group_length=group, gzip=True))
    return out.getvalue()


PARQUET_KEY = "dms/t/2024/03/04/20240304-101500123.parquet"


@settings(max_examples=30, deadline=None)
@given(cuts=st.lists(st.integers(0, 10**6), max_size=6))
def test_a_parquet_file_passes_however_it_is_chunked(cuts) -> None:
    data = parquet_file()
    assert inspect(PARQUET_KEY, chunked(data, cuts)) is None
    assert inspect("dms/t/LOAD00000001.parquet", [data]) is None


@pytest.mark.parametrize(("damage", "reason"), [
    (lambda d: b"", "not Parquet: 0 bytes"),
    (lambda d: b"PK" + d[2:], "not Parquet: starts with"),
    (lambda d: d[:-100], "truncated Parquet: ends with"),
    (lambda d: d[:-8] + b"\xff\xff\xff\x00PAR1", "footer length"),
    # pages damaged inside, the frame intact: only reading finds it
    (lambda d: d[:4] + b"\x00" * 200 + d[204:], "not readable Parquet"),
])
def test_a_damaged_parquet_file_is_quarantined_with_its_reason(damage, reason) -> None:
    defect = inspect(PARQUET_KEY, [damage(parquet_file())])
    assert defect is not None and reason in defect.reason


def test_parquet_keys_are_dms_files() -> None:
    assert key_defect(PARQUET_KEY) is None
    assert "none of .csv, .csv.gz, .parquet" in key_defect("dms/t/x.parquet.gz").reason


GATE_API = [  # what callers (the Lambda, the watcher, cdclab, tests, bench) import from here
    "ARROW_BATCH_ROWS", "ARROW_BUFFER_BYTES", "DMS_SUFFIXES", "GLOB_CHARACTERS",
    "MAX_HEADER_CHARS", "MAX_NAME_CHARS", "PARQUET_MAGIC", "PIECE", "REASON_SUFFIX",
    "S3_MAX_KEY_BYTES", "SPOOL_IN_MEMORY", "BytesSource", "CsvLayout", "Defect", "Limits",
    "MiB", "ReadError", "Source", "content_defect", "csv_defect", "gunzip", "inspect",
    "is_hidden", "key_defect", "listing_defect", "parquet_defect", "parquet_structure_defect",
    "quarantine_key",
]


def test_every_gate_name_is_importable_from_object_gate() -> None:
    """The checks live in gate_base, gate_csv and gate_parquet; object_gate offers them all."""
    from lambda_shim import object_gate

    assert sorted(object_gate.__all__) == sorted(GATE_API)
    assert all(hasattr(object_gate, name) for name in GATE_API)
