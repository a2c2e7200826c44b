"""The one value renderer: PostgreSQL output text -> the text DMS writes (docs/dms-fidelity.md)."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pipeline_contract.dms_format.source_types import BUILTIN, PgType, SourceColumn, builtin
from pipeline_contract.dms_format.values import (
    RenderError,
    RenderOptions,
    RowRenderer,
    float32_of,
    render_double,
    render_money,
    render_real,
    render_timestamp,
    render_timetz,
    render_unbounded_numeric,
    renderer_for,
    truncate_lob,
)

NUMERIC_10_2 = PgType("numeric", "N", ((10 << 16) | 2) + 4, 1700)


DEFAULTS = RenderOptions()


def render(type_name: str, text: str, options: RenderOptions = DEFAULTS,
           typmod: int = -1) -> str:
    oid = next(o for o, (n, _) in BUILTIN.items() if n == type_name)
    t = builtin(oid, typmod)
    assert t is not None
    rule = renderer_for(t, options)
    return text if rule is None else rule(text)


@pytest.mark.parametrize(("type_name", "text", "expected"), [
    ("bool", "t", "true"),
    ("bool", "f", "false"),
    ("int2", "-32768", "-32768"),
    ("int8", "9223372036854775807", "9223372036854775807"),
    ("numeric", "0.611111104488373", "0.611111"),  # AWS's own example
    ("numeric", "12", "12.000000"),
    ("numeric", "-0.0000005", "-0.000001"),
    ("numeric", "NaN", "NaN"),
    # real / double precision: C's %+.8e of the float32 / %+.16e (real DMS output,
    # docs/dms-fidelity.md rule 1); NaN and infinities as glibc prints them (not seen)
    ("float4", "32.38", "+3.23800011e+01"),
    ("float4", "-1.5", "-1.50000000e+00"),
    ("float4", "0", "+0.00000000e+00"),
    ("float4", "-0", "-0.00000000e+00"),
    ("float4", "1e-45", "+1.40129846e-45"),
    ("float4", "3.4028235e+38", "+3.40282347e+38"),
    ("float4", "NaN", "+nan"),
    ("float4", "-Infinity", "-inf"),
    ("float8", "21804.858784530072", "+2.1804858784530072e+04"),
    ("float8", "1e+300", "+1.0000000000000001e+300"),
    ("float8", "-0.11118453", "-1.1118453000000000e-01"),
    ("float8", "NaN", "+nan"),
    ("float8", "Infinity", "+inf"),
    ("money", "$1,234,567.89", "1234567.8900"),
    ("money", "-$12.50", "-12.5000"),
    ("text", 'say "hi", bye', 'say "hi", bye'),
    ("bpchar", "ab   ", "ab"),
    ("date", "2024-02-29", "2024-02-29"),
    ("date", "infinity", "9999-12-31"),
    ("date", "-infinity", "4713-01-01 BC"),
    ("time", "03:04:05.5", "03:04:05.5"),
    ("timetz", "03:04:05.5-07", "10:04:05.5"),
    ("timetz", "23:30:00+05:30", "18:00:00"),
    ("timetz", "01:00:00+02", "23:00:00"),
    ("timestamp", "2024-01-02 03:04:05", "2024-01-02 03:04:05.000000"),
    ("timestamp", "2024-01-02 03:04:05.5", "2024-01-02 03:04:05.500000"),
    ("timestamp", "infinity", "9999-12-31 23:59:59.000000"),
    ("timestamp", "-infinity", "4713-01-01 00:00:00.000000 BC"),
    ("timestamp", "0044-03-15 12:00:00.5 BC", "0044-03-15 12:00:00.500000 BC"),
    ("timestamptz", "2024-01-01 21:34:05.1234+00", "2024-01-01 21:34:05.123400"),
    ("timestamptz", "2024-01-01 21:34:05+05:30", "2024-01-01 21:34:05.000000"),
    ("interval", "1 year 2 mons 3 days 04:05:06", "1 year 2 mons 3 days 04:05:06"),
    ("uuid", "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"),
    ("jsonb", '{"a": 1}', '{"a": 1}'),
    ("inet", "10.0.0.1", "10.0.0.1"),
    ("cidr", "10.0.0.0/24", "10.0.0.0/24"),
    ("bytea", "\\x0102ff", "0102ff"),
])
def test_each_type_renders_as_the_fidelity_table_says(type_name: str, text: str,
                                                      expected: str) -> None:
    assert render(type_name, text) == expected


def test_settings_change_what_is_written() -> None:
    assert render("bpchar", "ab  ", RenderOptions(trim_space_in_char=False)) == "ab  "
    assert render("numeric", "0.611111104488373",
                  RenderOptions(map_unbounded_numeric_as_string=True)) == "0.611111104488373"
    assert render("bytea", "\\x0102ff", RenderOptions(bytea_format="base64")) == "AQL/"
    assert render("bytea", "\\x0102ff", RenderOptions(bytea_format="postgres")) == "\\x0102ff"
    with pytest.raises(ValueError, match="bytea format"):
        RenderOptions(bytea_format="raw")


def test_bounded_numeric_and_unknown_types_are_written_as_postgres_prints_them() -> None:
    assert renderer_for(NUMERIC_10_2) is None
    assert NUMERIC_10_2.numeric_precision_scale == (10, 2)
    assert renderer_for(PgType("mood", "E")) is None  # enum label
    assert renderer_for(PgType("_int4", "A")) is None  # '{1,2}'


def test_bad_text_names_the_column() -> None:
    rows = RowRenderer([SourceColumn("ok", PgType("bool", "B")),
                        SourceColumn("flag", PgType("bool", "B"))])
    assert rows.row(["t", None]) == ("true", None)
    with pytest.raises(RenderError, match="column 'flag'.*boolean 'yes'"):
        rows.row(["t", "yes"])


@given(st.datetimes(min_value=datetime(1, 1, 1), max_value=datetime(9999, 12, 31)))
def test_timestamps_always_carry_six_fraction_digits_and_keep_their_value(
        moment: datetime) -> None:
    text = moment.isoformat(sep=" ")  # Python drops a zero fraction, like PostgreSQL
    out = render_timestamp(text)
    assert len(out.split(".")[1]) == 6
    assert datetime.strptime(out, "%Y-%m-%d %H:%M:%S.%f") == moment


@given(st.decimals(min_value=Decimal("-1e21"), max_value=Decimal("1e21"), allow_nan=False,
                   places=12))
def test_unbounded_numeric_is_numeric_28_6(value: Decimal) -> None:
    out = render_unbounded_numeric(str(value))
    assert len(out.split(".")[1]) == 6
    assert abs(Decimal(out) - value) <= Decimal("0.0000005")


@given(st.decimals(min_value=Decimal("-92233720368547758.08"),
                   max_value=Decimal("92233720368547758.07"), places=2))
def test_money_is_numeric_38_4(value: Decimal) -> None:
    sign = "-" if value < 0 else ""
    text = f"{sign}${abs(value):,.2f}"  # lc_monetary=C prints it like this
    assert Decimal(render_money(text)) == value
    assert render_money(text).split(".")[1] == f"{abs(value):.2f}".split(".")[1] + "00"


@given(st.times(), st.integers(-15 * 60, 15 * 60))
def test_timetz_moves_to_utc(wall: object, offset_minutes: int) -> None:
    offset = timedelta(minutes=offset_minutes)
    sign = "+" if offset_minutes >= 0 else "-"
    hh, mm = divmod(abs(offset_minutes), 60)
    text = wall.isoformat() + f"{sign}{hh:02d}:{mm:02d}"  # type: ignore[attr-defined]
    out = render_timetz(text)
    day = datetime(2000, 1, 2, tzinfo=UTC)
    expected = (datetime.combine(day.date(), wall, tzinfo=UTC) - offset).time()  # type: ignore[arg-type]
    assert datetime.strptime(out.split(".")[0], "%H:%M:%S").time() == expected.replace(
        microsecond=0)


@given(st.text(max_size=300), st.integers(0, 400))
def test_lob_truncation_cuts_at_the_byte_limit_never_inside_a_character(text: str,
                                                                        limit: int) -> None:
    cut = truncate_lob(text, limit)
    if len(text.encode()) <= limit:
        assert cut is None
    else:
        assert cut is not None and text.startswith(cut)
        assert limit - 3 <= len(cut.encode()) <= limit
    assert truncate_lob("\\x" + "ab" * 10, 4, binary=True) == "\\xabababab"


def test_only_lob_types_are_cut() -> None:
    seen: list[tuple[str, int]] = []
    rows = RowRenderer([SourceColumn("t", PgType("text", "S")),
                        SourceColumn("v", PgType("varchar", "S")),
                        SourceColumn("a", PgType("_int4", "A"))],
                       RenderOptions(lob_max_size_kb=1), lambda c, n: seen.append((c, n)))
    out = rows.row(["x" * 2000, "y" * 2000, "{" + "1," * 600 + "1}"])
    assert [len(v or "") for v in out] == [1024, 2000, 1024]
    assert seen == [("t", 2000), ("a", 1203)]


def test_a_big_value_is_cut_before_it_is_decoded() -> None:
    seen: list[tuple[str, int]] = []
    rows = RowRenderer([SourceColumn("t", PgType("text", "S")),
                        SourceColumn("b", PgType("bytea", "U")),
                        SourceColumn("v", PgType("varchar", "S"))],
                       RenderOptions(lob_max_size_kb=1), lambda c, n: seen.append((c, n)))
    big = memoryview(("é" * 3000).encode())  # 6000 bytes
    assert rows.text(0, big) == "é" * 512
    assert rows.text(1, memoryview(b"\\x" + b"ab" * 3000)) == "\\x" + "ab" * 1024
    assert rows.text(2, big) == "é" * 3000  # not a LOB: whole
    assert seen == [("t", 6000), ("b", 6002)]


def _job_float_pattern() -> re.Pattern[str]:
    """The job's FLOAT_PATTERN (a Java regex this simple reads the same in Python)."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "jobs" / "bronze_to_silver.py"
    spec = importlib.util.spec_from_file_location("bronze_to_silver_patterns", path)
    job = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(job)
    return re.compile(job.FLOAT_PATTERN)


FLOAT_PATTERN = _job_float_pattern()
PG_SPECIAL = {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}


def pg_text(x: float, digits: int) -> str:
    """A PostgreSQL float's text: NaN/Infinity spelled its way, else `digits` digits."""
    return PG_SPECIAL.get(repr(x), f"{x:.{digits}g}")


@given(st.floats(width=32))
def test_real_is_cs_printf_of_the_float32_and_the_job_reads_it(x: float) -> None:
    out = render_real(pg_text(x, 9))  # 9 digits identify any float32
    assert out == f"{x:+.8e}" and FLOAT_PATTERN.match(out)
    assert float32_of(out) == x or x != x  # parses back to the same float32


@given(st.floats())
def test_double_is_cs_printf_with_17_digits_and_round_trips(x: float) -> None:
    out = render_double(pg_text(x, 17))
    assert out == f"{x:+.16e}" and FLOAT_PATTERN.match(out)
    assert float(out) == x or x != x


def test_real_text_on_a_float32_midpoint_takes_the_nearer_float32() -> None:
    """Double rounding: the text's double is exactly halfway between two float32, the
    text itself is not; strtof (and so DMS) takes the nearer one."""
    above = str(Decimal(1 + 2**-24) + Decimal(2) ** -60)  # just above the midpoint
    assert float(above) == 1 + 2**-24
    assert float32_of(above) == 1 + 2**-23
    assert float32_of(str(Decimal(1 + 2**-24))) == 1.0  # a tie: the even one
    with pytest.raises(RenderError, match="real 'x'"):
        render_real("x")
