"""DataFormat parquet: the Parquet type DMS writes for each PostgreSQL type, and the value
from the CSV path's text (CHAP_Target.S3 "Target data types for S3 Parquet" composed with
CHAP_Source.PostgreSQL "Source data types for PostgreSQL")."""

from __future__ import annotations

import io
from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal

import pyarrow.parquet as pq
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dms_emitter.changes import one_table
from dms_emitter.dms_csv import CsvFormat
from dms_emitter.parquet_file import parse_rows, write_file
from pipeline_contract.dms_format import parquet_types as pt
from pipeline_contract.dms_format.source_types import VARHDRSZ, PgType
from pipeline_contract.dms_format.values import RenderOptions, render_timestamp

EPOCH = date(1970, 1, 1)


def numeric(p: int, s: int) -> PgType:
    return PgType("numeric", "N", ((p << 16) | (s & 0x7FF)) + VARHDRSZ)


@pytest.mark.parametrize(("pg", "expected"), [
    (PgType("int2"), pt.ColumnType(pt.INT16)),
    (PgType("int4"), pt.ColumnType(pt.INT32)),
    (PgType("int8"), pt.ColumnType(pt.INT64)),
    (PgType("float4"), pt.ColumnType(pt.FLOAT)),
    (PgType("float8"), pt.ColumnType(pt.DOUBLE)),
    (numeric(10, 2), pt.ColumnType(pt.DECIMAL, 10, 2)),
    (numeric(38, 0), pt.ColumnType(pt.DECIMAL, 38, 0)),
    (numeric(39, 2), pt.STRING_COLUMN),  # "If precision is 39 or greater, then use STRING"
    (numeric(5, -2), pt.STRING_COLUMN),  # no Parquet DECIMAL with a negative scale
    (PgType("numeric"), pt.ColumnType(pt.DECIMAL, 28, 6)),  # NUMERIC(28,6)
    (PgType("money"), pt.ColumnType(pt.DECIMAL, 38, 4)),  # NUMERIC(38,4)
    (PgType("bytea"), pt.ColumnType(pt.BINARY)),  # BLOB -> BINARY
    (PgType("date"), pt.ColumnType(pt.DATE32)),
    (PgType("time"), pt.ColumnType(pt.TIME32)),
    (PgType("timetz"), pt.ColumnType(pt.TIME32)),
    (PgType("timestamp"), pt.ColumnType(pt.TIMESTAMP)),
    (PgType("timestamptz"), pt.ColumnType(pt.TIMESTAMP)),
    (PgType("bool", "B"), pt.STRING_COLUMN),  # CHAR(5) "false or true" by default
    (PgType("text"), pt.STRING_COLUMN), (PgType("jsonb"), pt.STRING_COLUMN),
    (PgType("_int4", "A"), pt.STRING_COLUMN), (PgType("interval", "T"), pt.STRING_COLUMN),
    (PgType("uuid"), pt.STRING_COLUMN), (PgType("mood", "E"), pt.STRING_COLUMN),
])
def test_postgresql_type_to_parquet_type(pg: PgType, expected: pt.ColumnType) -> None:
    assert pt.column_type(pg) == expected


def test_map_unbounded_numeric_as_string_writes_a_string() -> None:
    options = RenderOptions(map_unbounded_numeric_as_string=True)
    assert pt.column_type(PgType("numeric"), options) == pt.STRING_COLUMN


def test_map_boolean_as_boolean_writes_a_parquet_boolean() -> None:
    """PostgreSQL source MapBooleanAsBoolean: BOOLEAN -> BOOL ([S3] Parquet table)."""
    options = RenderOptions(map_boolean_as_boolean=True)
    assert pt.column_type(PgType("bool", "B"), options) == pt.ColumnType(pt.BOOL)
    assert pt.converter(pt.ColumnType(pt.BOOL))("false") is False


@given(st.dates())
def test_dates_count_days_from_the_epoch(d: date) -> None:
    assert pt.date_days(d.isoformat()) == (d - EPOCH).days


@given(st.datetimes(min_value=datetime(1, 1, 1), max_value=datetime(9999, 12, 31)))
def test_timestamps_count_microseconds_from_the_epoch(moment: datetime) -> None:
    text = render_timestamp(moment.isoformat(sep=" "))  # the CSV path's DATETIME text
    expected = (moment - datetime(1970, 1, 1)) // timedelta(microseconds=1)
    assert pt.timestamp_micros(text) == expected
    millis = pt.converter(pt.ColumnType(pt.TIMESTAMP), millis=True)
    assert millis is not None and millis(text) == expected // 1000  # cut, not rounded


def test_bc_and_infinity_timestamps() -> None:
    # 1 BC is astronomical year 0; -infinity is written 4713-01-01 00:00:00 BC
    assert pt.date_days("0001-12-31 BC") == pt.days_from_civil(0, 12, 31)
    assert pt.days_from_civil(0, 12, 31) + 1 == pt.date_days("0001-01-01")
    assert pt.timestamp_micros("4713-01-01 00:00:00.000000 BC") == (
        pt.days_from_civil(-4712, 1, 1) * 86_400_000_000)


@given(st.times())
def test_times_are_milliseconds_of_the_day(t: time) -> None:
    ms = ((t.hour * 60 + t.minute) * 60 + t.second) * 1000 + t.microsecond // 1000
    assert pt.time_millis(t.isoformat()) == ms


@given(st.decimals(min_value=-10**7, max_value=10**7, places=2))
def test_decimals_keep_their_scale(value: Decimal) -> None:
    assert pt.decimal_value(str(value), 10, 2) == value


@pytest.mark.parametrize("text", ["NaN", "Infinity", "123456789.00", "x"])
def test_values_a_decimal_cannot_hold_are_refused(text: str) -> None:
    with pytest.raises(pt.ParquetValueError):
        pt.decimal_value(text, 10, 2)


@given(st.binary(max_size=40))
def test_bytea_from_each_csv_format(data: bytes) -> None:
    for fmt, text in (("hex", data.hex()), ("postgres", "\\x" + data.hex())):
        assert pt.bytea_value(text, fmt) == data
    import base64
    assert pt.bytea_value(base64.b64encode(data).decode(), "base64") == data


def test_options_are_checked_naming_the_setting() -> None:
    for bad, named in (({"version": "parquet-3-0"}, "parquet_version"),
                       ({"encoding": "delta"}, "encoding_type"),
                       ({"data_page_size": 0}, "data_page_size")):
        with pytest.raises(ValueError, match=named):
            pt.ParquetOptions(**bad)
    assert pt.ParquetOptions(row_group_length=10**9).rows_per_group == 64 * 1024 * 1024


def read(body: bytes):
    return pq.ParquetFile(io.BytesIO(body))


@pytest.mark.parametrize(("options", "codec", "version"), [
    (pt.ParquetOptions(), "UNCOMPRESSED", "1.0"),
    (pt.ParquetOptions(version="parquet-2-0", gzip=True), "GZIP", "2.6"),
])
def test_file_settings(options: pt.ParquetOptions, codec: str, version: str) -> None:
    out = io.BytesIO()
    types = [pt.STRING_COLUMN, pt.ColumnType(pt.INT32), pt.ColumnType(pt.TIMESTAMP)]
    rows = [["I", str(i), "2024-01-02 03:04:05.123456"] for i in range(25)]
    write_file(out, ["Op", "id", "ts"], types, rows,
               pt.ParquetOptions(**{**options.__dict__, "row_group_length": 10}))
    f = read(out.getvalue())
    md = f.metadata
    assert (md.num_rows, md.num_row_groups, md.format_version) == (25, 3, version)
    assert md.row_group(0).column(0).compression == codec
    assert md.row_group(0).column(0).statistics is not None  # EnableStatistics default
    assert str(f.schema_arrow.field("ts").type) == "timestamp[us, tz=UTC]"
    assert f.read().column("id").to_pylist() == list(range(25))


def test_statistics_off_millis_and_plain_encoding() -> None:
    out = io.BytesIO()
    opts = pt.ParquetOptions(statistics=False, timestamp_millis=True, encoding="plain")
    write_file(out, ["ts"], [pt.ColumnType(pt.TIMESTAMP)],
               [["2024-01-02 03:04:05.123456"]], opts)
    f = read(out.getvalue())
    col = f.metadata.row_group(0).column(0)
    assert col.statistics is None and "PLAIN_DICTIONARY" not in col.encodings
    assert str(f.schema_arrow.field("ts").type) == "timestamp[ms, tz=UTC]"
    assert f.read().column("ts").to_pylist() == [datetime(2024, 1, 2, 3, 4, 5, 123000,
                                                          tzinfo=UTC)]


@pytest.mark.parametrize("millis", [True, False])
@pytest.mark.parametrize("booleans", [True, False])
def test_the_footer_is_as_dms_writes_it(millis: bool, booleans: bool) -> None:
    """A real DMS .parquet footer (docs/dms-fidelity.md rule 4): the timestamp column
    REQUIRED, timestamps TIMESTAMP_MILLIS/_MICROS (UTC-adjusted), no statistics on
    DECIMAL chunks, no ARROW:schema; booleans BOOLEAN with MapBooleanAsBoolean."""
    out = io.BytesIO()
    render = RenderOptions(map_boolean_as_boolean=booleans)
    fmt = CsvFormat(timestamp_column="dms_ts", parquet=pt.ParquetOptions(
        timestamp_millis=millis))
    assert fmt.parquet is not None and fmt.parquet.timestamp_column == "dms_ts"
    names = ["Op", "dms_ts", "id", "amount", "fee", "r", "t", "at", "ok"]
    types = [pt.STRING_COLUMN, pt.STRING_COLUMN, pt.ColumnType(pt.INT64),
             pt.ColumnType(pt.DECIMAL, 15, 2), pt.ColumnType(pt.DECIMAL, 38, 4),
             pt.ColumnType(pt.FLOAT), pt.STRING_COLUMN, pt.ColumnType(pt.TIMESTAMP),
             pt.column_type(PgType("bool", "B"), render)]
    rows = [["I", "2022-07-26 06:46:18.616807", "1", "12.50", "1.0000", "+1.50000000e+00",
             "x", "2024-01-02 03:04:05.123456", "true"],
            ["I", "2022-07-26 06:46:18.616900", None, None, None, None, None, None, None]]
    write_file(out, names, types, rows, fmt.parquet, render)
    f = read(out.getvalue())
    assert f.metadata.metadata is None  # no key-value metadata: no ARROW:schema
    schema = f.metadata.schema
    required = [schema.column(i).name for i in range(len(names))
                if schema.column(i).max_definition_level == 0]
    assert required == ["dms_ts"]
    at = schema.column(names.index("at"))
    assert at.converted_type == ("TIMESTAMP_MILLIS" if millis else "TIMESTAMP_MICROS")
    assert "isAdjustedToUTC=true" in str(at.logical_type)
    group = f.metadata.row_group(0)
    stats = {names[i]: group.column(i).is_stats_set for i in range(len(names))}
    assert stats == {**dict.fromkeys(names, True), "amount": False, "fee": False}
    ok = schema.column(names.index("ok"))
    assert (ok.physical_type, ok.converted_type) == (
        ("BOOLEAN", "NONE") if booleans else ("BYTE_ARRAY", "UTF8"))
    got = f.read().to_pylist()[0]
    assert got["ok"] == (True if booleans else "true") and got["r"] == 1.5
    assert got["at"] == datetime(2024, 1, 2, 3, 4, 5, 123000 if millis else 123456,
                                 tzinfo=UTC)


def test_an_unholdable_value_is_null_with_a_warning() -> None:
    out, warnings = io.BytesIO(), []
    write_file(out, ["n"], [pt.ColumnType(pt.DECIMAL, 5, 2)], [["NaN"], ["1.50"]],
               warn=warnings.append)
    assert read(out.getvalue()).read().column("n").to_pylist() == [None, Decimal("1.50")]
    assert len(warnings) == 1 and "'n'" in warnings[0] and "NULL" in warnings[0]


@given(st.lists(st.one_of(st.none(), st.text(alphabet=st.characters(
    blacklist_categories=("Cs",), blacklist_characters="\x00"))), min_size=1, max_size=5))
def test_batch_lines_keep_null_apart_from_empty(values: list[str | None]) -> None:
    from dms_emitter.dms_csv import PARQUET_ROWS, encode_line
    assert list(parse_rows([encode_line(values, PARQUET_ROWS)])) == [values]


def test_builder_gives_parquet_rows_their_types() -> None:
    from dms_emitter import pgoutput as pg
    fmt = CsvFormat(parquet=pt.ParquetOptions())
    rows = []
    b = one_table("public", "t", ["id"], fmt,
                  on_row=lambda *a: rows.append(a))
    rel = pg.Relation(1, "public", "t", "d", (pg.Column(1, "id", 23, -1),
                                              pg.Column(0, "v", 1700, -1)))
    b.feed(rel)
    b.feed(pg.Begin(100, 0, 7))
    b.feed(pg.Insert(1, ("5", None)))
    folder, header, line, types, partition = rows[0]
    assert header == ("id", "v", "change_seq") and partition == ""
    assert [t.describe() for t in types] == ["string", "string", "int32", "decimal(28,6)",
                                             "string"]
    assert next(iter(parse_rows([line])))[2:4] == ["5", None]


def test_builder_puts_rows_in_their_commit_date_folder() -> None:
    from dms_emitter import pgoutput as pg
    from dms_emitter.date_partition import DatePartitioning
    rows = []
    b = one_table("public", "t", ["id"], on_row=lambda *a: rows.append(a),
                  partitions=DatePartitioning(True, "YYYYMMDDHH", "DASH"))
    b.feed(pg.Relation(1, "public", "t", "d", (pg.Column(1, "id", 23, -1),)))
    commit = datetime(2024, 3, 4, 5, 6, tzinfo=UTC)
    pg_ts = (commit - datetime(2000, 1, 1, tzinfo=UTC)) // timedelta(microseconds=1)
    b.feed(pg.Begin(100, pg_ts, 7))
    b.feed(pg.Insert(1, ("5",)))
    assert rows[0][4] == "2024-03-04-05"


def test_parquet_floats_take_the_csv_paths_printf_text() -> None:
    """The Parquet value comes from the CSV text: %+.8e / %+.16e and glibc's specials."""
    import math
    real, double = pt.converter(pt.ColumnType(pt.FLOAT)), pt.converter(pt.ColumnType(pt.DOUBLE))
    assert real("+3.23800011e+01") == 32.3800011
    assert double("-1.1118453000000000e-01") == -0.11118453
    assert math.isnan(real("+nan")) and double("+inf") == math.inf and real("-inf") == -math.inf
    assert math.copysign(1, double("-0.0000000000000000e+00")) == -1
