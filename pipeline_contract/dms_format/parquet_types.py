"""Pure: the Parquet type DMS writes for a PostgreSQL column, and its value from the text
the CSV path writes.

Two documented tables compose: PostgreSQL type -> DMS type ("Source data types for
PostgreSQL", CHAP_Source.PostgreSQL) and DMS type -> Parquet type ("Target data types
for S3 Parquet", CHAP_Target.S3). Values start from the renderer's output
(pipeline_contract/dms_format/values.py), so full load and CDC, CSV and Parquet agree on
every rule the renderer applies (NUMERIC(28,6), MONEY, TrimSpaceInChar, timestamptz's
zone, timetz to UTC, LOB truncation, interval style). No pyarrow here: the writer maps
kinds to Arrow.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation, localcontext

from pipeline_contract.dms_format.source_types import PgType
from pipeline_contract.dms_format.values import (
    BYTEA_BASE64,
    BYTEA_HEX,
    MONEY_SCALE,
    UNBOUNDED_NUMERIC,
    RenderOptions,
)

# Parquet kinds (the "S3 parquet data type" column)
STRING, BINARY, BOOL = "string", "binary", "bool"
INT16, INT32, INT64, FLOAT, DOUBLE = "int16", "int32", "int64", "float", "double"
DECIMAL, DATE32, TIME32, TIMESTAMP = "decimal", "date32", "time32", "timestamp"
MAX_DECIMAL_PRECISION = 38  # NUMERIC(p,s) with p <= 38; 39 and more is a STRING


@dataclass(frozen=True)
class ColumnType:
    """A written column's Parquet type; precision and scale for DECIMAL only."""

    kind: str = STRING
    precision: int = 0
    scale: int = 0

    def describe(self) -> str:
        return f"decimal({self.precision},{self.scale})" if self.kind == DECIMAL else self.kind


STRING_COLUMN = ColumnType(STRING)  # Op, the timestamp column, add-column values
DEFAULT_RENDER = RenderOptions()


def column_type(pg: PgType, options: RenderOptions = DEFAULT_RENDER) -> ColumnType:
    """PostgreSQL type -> DMS type -> Parquet type. Everything DMS maps to STRING,
    WSTRING, CLOB or NCLOB is a STRING, as is any type the table does not list."""
    name = pg.name
    if name == "int2":
        return ColumnType(INT16)  # INT2
    if name == "int4":
        return ColumnType(INT32)  # INT4
    if name == "int8":
        return ColumnType(INT64)  # INT8
    if name == "float4":
        return ColumnType(FLOAT)  # REAL4
    if name == "float8":
        return ColumnType(DOUBLE)  # REAL8
    if name == "money":
        return ColumnType(DECIMAL, 38, MONEY_SCALE)  # NUMERIC(38,4)
    if name == "numeric":
        ps = pg.numeric_precision_scale
        if ps is None:  # NUMERIC(28,6), or STRING with MapUnboundedNumericAsString
            if options.map_unbounded_numeric_as_string:
                return STRING_COLUMN
            return ColumnType(DECIMAL, *UNBOUNDED_NUMERIC)
        precision, scale = ps
        # p >= 39 is a STRING; a negative scale (PostgreSQL 15+) has no Parquet DECIMAL
        # (not documented for DMS): kept as text
        if precision > MAX_DECIMAL_PRECISION or scale < 0 or scale > precision:
            return STRING_COLUMN
        return ColumnType(DECIMAL, precision, scale)
    if name == "bytea":
        return ColumnType(BINARY)  # BLOB -> BINARY
    if name == "date":
        return ColumnType(DATE32)  # DATE
    if name in ("time", "timetz"):
        return ColumnType(TIME32)  # TIME
    if name in ("timestamp", "timestamptz"):
        return ColumnType(TIMESTAMP)  # DATETIME
    if name == "bool" and options.map_boolean_as_boolean:
        return ColumnType(BOOL)  # MapBooleanAsBoolean: BOOLEAN -> BOOL
    # BOOLEAN is CHAR(5) "false or true" for a PostgreSQL source: a STRING, not BOOL
    return STRING_COLUMN


class ParquetValueError(ValueError):
    """A value the column's Parquet type cannot hold (NaN in a DECIMAL, a number wider
    than NUMERIC(28,6)); the caller writes NULL and says so."""


# --- text (as the CSV path writes it) -> the Parquet value ---------------------------
_DATE = re.compile(r"^(\d{4,})-(\d{2})-(\d{2})( BC)?$")
_TIMESTAMP = re.compile(r"^(\d{4,})-(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2})\.(\d{6})( BC)?$")
_TIME = re.compile(r"^(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,6}))?$")
_MICROS_PER_DAY = 86_400_000_000


def days_from_civil(year: int, month: int, day: int) -> int:
    """Days since 1970-01-01 in the proleptic Gregorian calendar, for any year
    (astronomical numbering: 1 BC is year 0), as Parquet's DATE counts them."""
    y = year - (month <= 2)
    era = (y if y >= 0 else y - 399) // 400
    yoe = y - era * 400
    doy = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146_097 + doe - 719_468


def _year(text: str, bc: str | None) -> int:
    # PostgreSQL prints 1 BC as "0001 ... BC": astronomical year 0
    return 1 - int(text) if bc else int(text)


def date_days(text: str) -> int:
    m = _DATE.match(text)
    if m is None:
        raise ParquetValueError(f"date {text!r} is not in ISO format")
    return days_from_civil(_year(m[1], m[4]), int(m[2]), int(m[3]))


def timestamp_micros(text: str) -> int:
    """'yyyy-MM-dd HH:mm:ss.SSSSSS[ BC]' (the renderer's DATETIME text) -> microseconds
    since the epoch, no zone (DMS's DATETIME has none)."""
    m = _TIMESTAMP.match(text)
    if m is None:
        raise ParquetValueError(f"timestamp {text!r} is not in the DATETIME format")
    days = days_from_civil(_year(m[1], m[8]), int(m[2]), int(m[3]))
    seconds = int(m[4]) * 3600 + int(m[5]) * 60 + int(m[6])
    return days * _MICROS_PER_DAY + seconds * 1_000_000 + int(m[7])


def time_millis(text: str) -> int:
    """TIME32: milliseconds of the day; finer digits are cut (DMS's rounding is not
    documented)."""
    m = _TIME.match(text)
    if m is None:
        raise ParquetValueError(f"time {text!r} is not in ISO format")
    frac = (m[4] or "").ljust(3, "0")[:3]
    return ((int(m[1]) * 60 + int(m[2])) * 60 + int(m[3])) * 1000 + int(frac)


def decimal_value(text: str, precision: int, scale: int) -> Decimal:
    try:
        value = Decimal(text)
    except InvalidOperation:
        raise ParquetValueError(f"{text!r} is not a number") from None
    if not value.is_finite():
        raise ParquetValueError(f"{text} has no DECIMAL({precision},{scale}) value")
    with localcontext() as ctx:
        ctx.prec = 100  # 38 digits and more must not raise inside quantize
        value = value.quantize(Decimal(1).scaleb(-scale))
    if value.adjusted() >= precision - scale:
        raise ParquetValueError(f"{text} does not fit DECIMAL({precision},{scale})")
    return value


def bytea_value(text: str, bytea_format: str) -> bytes:
    """The bytes behind the renderer's bytea text (its format is `bytea_format`)."""
    try:
        if bytea_format == BYTEA_HEX:
            return bytes.fromhex(text)
        if bytea_format == BYTEA_BASE64:
            return base64.b64decode(text, validate=True)
        return bytes.fromhex(text[2:])  # postgres: \x...
    except ValueError as exc:
        raise ParquetValueError(f"bytea {text[:20]!r}: {exc}") from None


Convert = Callable[[str], object]


def converter(col: ColumnType, options: RenderOptions = DEFAULT_RENDER,
              millis: bool = False) -> Convert | None:
    """text -> the value the Arrow array of `col` takes; None when the text itself is
    the value (STRING). `millis`: ParquetTimestampInMillisecond (cut, not rounded)."""
    kind = col.kind
    if kind == STRING:
        return None
    if kind in (INT16, INT32, INT64):
        return int
    if kind in (FLOAT, DOUBLE):
        return float  # NaN, Infinity, -Infinity, 1e+30 as PostgreSQL prints them
    if kind == DECIMAL:
        return lambda text: decimal_value(text, col.precision, col.scale)
    if kind == BINARY:
        return lambda text: bytea_value(text, options.bytea_format)
    if kind == DATE32:
        return date_days
    if kind == TIME32:
        return time_millis
    if kind == TIMESTAMP:
        if millis:
            return lambda text: timestamp_micros(text) // 1000
        return timestamp_micros
    if kind == BOOL:
        return lambda text: text == "true"
    raise ValueError(f"unknown Parquet kind {kind!r}")


# --- ParquetVersion, EncodingType and the page/group settings ------------------------
PARQUET_VERSIONS = ("parquet-1-0", "parquet-2-0")
ENCODINGS = ("rle-dictionary", "plain-dictionary", "plain")
DEFAULT_PAGE_BYTES = 1024 * 1024  # DataPageSize and DictPageSizeLimit: 1 MiB
DEFAULT_ROW_GROUP_LENGTH = 10_000  # RowGroupLength (API S3Settings)
MAX_ROW_GROUP_LENGTH = 64 * 1024 * 1024  # "set to the max row group length"


@dataclass(frozen=True)
class ParquetOptions:
    """The S3 endpoint's Parquet settings, as the emitter applies them."""

    version: str = "parquet-1-0"
    timestamp_millis: bool = False  # ParquetTimestampInMillisecond
    statistics: bool = True  # EnableStatistics
    encoding: str = "rle-dictionary"  # EncodingType
    data_page_size: int = DEFAULT_PAGE_BYTES
    row_group_length: int = DEFAULT_ROW_GROUP_LENGTH
    dict_page_size_limit: int = DEFAULT_PAGE_BYTES
    gzip: bool = False  # CompressionType GZIP: the column chunks' codec
    # TimestampColumnName: the one column DMS writes REQUIRED (CsvFormat sets it)
    timestamp_column: str = ""

    def __post_init__(self) -> None:
        if self.version not in PARQUET_VERSIONS:
            raise ValueError(f"parquet_version={self.version!r}: expected one of "
                             f"{PARQUET_VERSIONS}")
        if self.encoding not in ENCODINGS:
            raise ValueError(f"encoding_type={self.encoding!r}: expected one of {ENCODINGS}")
        for name in ("data_page_size", "row_group_length", "dict_page_size_limit"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name}={getattr(self, name)}: must be positive")

    @property
    def rows_per_group(self) -> int:
        return min(self.row_group_length, MAX_ROW_GROUP_LENGTH)
