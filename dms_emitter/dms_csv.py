"""Pure encoder/decoder for the AWS DMS S3-target CSV format (pipeline.toml [dms]).

Columns: Op, <timestamp column>, <table columns in table order>, <change_seq column>.
RFC 4180 quoting, only where a value needs it, as DMS does: NULL is CsvNullValue
(an empty field by default) and an empty string an empty field too, unless the lab's
quote_empty writes it `""`.
"""

from __future__ import annotations

import gzip
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta, tzinfo

from pipeline_contract.dms_format.parquet_types import (
    DEFAULT_PAGE_BYTES,
    DEFAULT_ROW_GROUP_LENGTH,
    ParquetOptions,
)
from pipeline_contract.settings import DmsSettings

OP_INSERT, OP_UPDATE, OP_DELETE = "I", "U", "D"
OPS = (OP_INSERT, OP_UPDATE, OP_DELETE)
OP_COLUMN = "Op"
_CDC_NAME_FORMAT = "%Y%m%d-%H%M%S"


class DmsCsvError(ValueError):
    """Malformed DMS CSV; the message names the file and line."""


@dataclass(frozen=True)
class CsvFormat:
    """The S3 target's CSV layout settings (CHAP_Target.S3), as the emitter applies them."""

    timestamp_column: str = "last_updated_ts"  # TimestampColumnName; "" = no column
    change_seq_column: str = "change_seq"
    delimiter: str = ","
    row_delimiter: str = "\n"
    null_value: str = ""  # CsvNullValue: written unquoted for NULL
    add_header: bool = True  # AddColumnName
    op_for_full_load: bool = True  # IncludeOpForFullLoad
    cdc_ops: tuple[str, ...] = OPS  # CdcInsertsOnly: (I,); CdcInsertsAndUpdates: (I, U)
    gzip: bool = False  # CompressionType GZIP
    # An empty string as an empty field, as DMS writes it (Rfc4180 quotes only quotes,
    # commas and newlines; real output: an empty bytea is an empty field, see
    # docs/dms-fidelity.md), so with CsvNullValue "" it reads as NULL. True: "" (the
    # lab's deviation, keeping '' apart from NULL).
    quote_empty: bool = False
    # Rfc4180 false: no quoting at all, values written as they are (a delimiter or a
    # newline inside one then ends it, as the S3 settings page says of a source)
    rfc4180: bool = True
    # DataFormat parquet: these settings, and the CSV-only ones above do not apply
    parquet: ParquetOptions | None = None

    def __post_init__(self) -> None:
        # the Parquet writer needs TimestampColumnName too (it is REQUIRED there)
        if self.parquet is not None and self.parquet.timestamp_column != self.timestamp_column:
            object.__setattr__(self, "parquet", replace(
                self.parquet, timestamp_column=self.timestamp_column))

    @property
    def suffix(self) -> str:
        """File name ending; ".gz" added for GZIP (DMS's exact name is not documented).
        Parquet compresses inside the file, which stays .parquet."""
        if self.parquet is not None:
            return ".parquet"
        return ".csv.gz" if self.gzip else ".csv"

    @property
    def line_format(self) -> CsvFormat:
        """How rows are held in memory until written: the file's own CSV layout, or
        for Parquet one lossless layout (NULL as a NUL character, which PostgreSQL text
        never holds) that parquet_file.parse_rows reads back."""
        return self if self.parquet is None else PARQUET_ROWS

    def compress(self, body: bytes) -> bytes:
        # level 6: about twice as fast as 9, on the one streaming thread
        return gzip.compress(body, compresslevel=6, mtime=0) if self.gzip else body

    @classmethod
    def from_settings(cls, dms: DmsSettings) -> CsvFormat:
        """The layout of checked [dms] settings (pipeline_contract.settings checks them when they
        are loaded or built, for the emitter and `cdclab deploy` alike)."""
        ops = ((OP_INSERT,) if dms.cdc_inserts_only else
               (OP_INSERT, OP_UPDATE) if dms.cdc_inserts_and_updates else OPS)
        gzipped = dms.compression_type.upper() == "GZIP"
        parquet = None
        if dms.data_format == "parquet":
            parquet = ParquetOptions(
                version=dms.parquet_version, timestamp_millis=dms.parquet_timestamp_in_millisecond,
                statistics=dms.enable_statistics, encoding=dms.encoding_type,
                data_page_size=dms.data_page_size or DEFAULT_PAGE_BYTES,
                row_group_length=dms.row_group_length or DEFAULT_ROW_GROUP_LENGTH,
                dict_page_size_limit=dms.dict_page_size_limit or DEFAULT_PAGE_BYTES,
                gzip=gzipped)
        return cls(timestamp_column=dms.timestamp_column_name,
                   change_seq_column=dms.change_seq_column, delimiter=dms.csv_delimiter,
                   row_delimiter=dms.csv_row_delimiter, null_value=dms.csv_null_value,
                   add_header=dms.add_column_name, op_for_full_load=dms.include_op_for_full_load,
                   cdc_ops=ops, gzip=gzipped and parquet is None,
                   quote_empty=dms.quote_empty_strings, rfc4180=dms.rfc4180, parquet=parquet)

    @property
    def cdc_op_column(self) -> bool:
        """CDC rows carry Op unless only some ops are written and IncludeOpForFullLoad
        is false ("CDC records are written without an indication" then)."""
        return self.cdc_ops == OPS or self.op_for_full_load

    def header(self, columns: Sequence[str], op: bool = True) -> list[str]:
        """Op, the timestamp column, then the written columns (the table's, then those
        of add-column rules such as the change sequence)."""
        return [*([OP_COLUMN] if op else []),
                *([self.timestamp_column] if self.timestamp_column else []), *columns]

    def fields(self, op: str | None, ts: str,
               values: Iterable[str | None]) -> list[str | None]:
        """A row's fields in header order; `op` None when the file has no Op column."""
        return [*([op] if op is not None else []),
                *([ts] if self.timestamp_column else []), *values]


# Parquet rows in memory (CsvFormat.line_format): RFC 4180, NULL as a NUL character
PARQUET_ROWS = CsvFormat(null_value="\x00", quote_empty=False)


@dataclass(frozen=True)
class DmsRow:
    op: str
    ts: datetime  # UTC: commit time (CDC) or load time (full load)
    values: tuple[str | None, ...]  # table columns, text form, None = NULL
    change_seq: str


def format_ts(moment: datetime) -> str:
    """yyyy-MM-dd HH:mm:ss.SSSSSS in UTC."""
    if moment.tzinfo is None:
        raise ValueError(f"timestamp {moment!r} has no time zone; DMS files are in UTC")
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S.%f")


class WritingClock:
    """The time now as format_ts writes it, for each row of a full load (its time of
    writing): the date and second are formatted once a second, not per row (strftime per
    row was a fifth of a full load's CPU). `now_ns`: the clock, in epoch nanoseconds."""

    def __init__(self, now_ns: Callable[[], int] = time.time_ns) -> None:
        self._now_ns, self._second, self._prefix = now_ns, None, ""

    def __call__(self) -> str:
        second, nanos = divmod(self._now_ns(), 1_000_000_000)
        if second != self._second:
            self._second = second
            self._prefix = datetime.fromtimestamp(second, UTC).strftime("%Y-%m-%d %H:%M:%S")
        return f"{self._prefix}.{nanos // 1000:06d}"


def encode_line(fields: Iterable[str | None], fmt: CsvFormat = CsvFormat()) -> str:
    return encode_fields(fields, fmt) + fmt.row_delimiter


def encode_fields(fields: Iterable[str | None], fmt: CsvFormat = CsvFormat()) -> str:
    """Fields joined by the delimiter, no row delimiter: two parts joined by the delimiter
    are the line of their fields together."""
    # one loop, no call per field: this runs for every field of every change
    d, null, empty = fmt.delimiter, fmt.null_value, '""' if fmt.quote_empty else ""
    if not fmt.rfc4180:
        return d.join(null if v is None else v for v in fields)
    out = []
    for v in fields:
        if v is None:
            out.append(null)
        elif not v:
            out.append(empty)
        elif d not in v and '"' not in v and "\n" not in v and "\r" not in v:
            out.append(v)
        else:
            out.append('"' + v.replace('"', '""') + '"')
    return d.join(out)


def encode_row(row: DmsRow, fmt: CsvFormat = CsvFormat(), op: bool = True) -> str:
    """A row whose values end with its change sequence (the default add-column)."""
    if row.op not in OPS:
        raise ValueError(f"unknown DMS Op {row.op!r} (expected one of {OPS})")
    return encode_line(fmt.fields(row.op if op else None, format_ts(row.ts),
                                  (*row.values, row.change_seq)), fmt)


def encode_file(columns: Sequence[str], lines: Iterable[str], fmt: CsvFormat = CsvFormat(),
                op: bool = True) -> str:
    """A whole file: the header row (AddColumnName), then already-encoded row lines.
    `columns` are all written columns, added ones included."""
    head = encode_line(fmt.header(columns, op), fmt) if fmt.add_header else ""
    return head + "".join(lines)


def load_file_name(number: int, suffix: str = ".csv") -> str:
    return f"LOAD{number:08X}{suffix}"


def cdc_file_name(moment: datetime, previous: str | None = None,
                  suffix: str = ".csv", zone: tzinfo = UTC) -> str:
    """yyyyMMdd-HHmmssSSS.csv (UTC, or DatePartitionTimezone's `zone`); when that does
    not sort after `previous`, the millisecond after previous's (a clock step back, or
    an autumn hour repeated in `zone`, never reorders the files)."""
    millis = moment.astimezone(zone)
    millis = millis.replace(microsecond=(millis.microsecond // 1000) * 1000)
    name = _cdc_name(millis, suffix)
    if previous is None or name > previous:
        return name
    stem = previous.split(".", 1)[0]
    try:
        last = datetime.strptime(stem + "000", "%Y%m%d-%H%M%S%f")
    except ValueError:  # not a CDC name: count up from ours
        last = millis.replace(tzinfo=None)
    while name <= previous:
        last += timedelta(milliseconds=1)
        name = _cdc_name(last, suffix)
    return name


def _cdc_name(moment: datetime, suffix: str) -> str:
    return f"{moment.strftime(_CDC_NAME_FORMAT)}{moment.microsecond // 1000:03d}{suffix}"


# --- parsing --------------------------------------------------------------------------
def parse_records(
    text: str, source: str = "<text>", delimiter: str = ","
) -> list[tuple[int, list[str | None]]]:
    """RFC 4180 records as (first line number, fields); unquoted empty field -> None."""
    records: list[tuple[int, list[str | None]]] = []
    pos, line, n = 0, 1, len(text)
    while pos < n:
        start_line = line
        fields: list[str | None] = []
        while True:
            if pos < n and text[pos] == '"':
                pos += 1
                parts: list[str] = []
                while True:
                    close = text.find('"', pos)
                    if close < 0:
                        raise DmsCsvError(
                            f"{source}:{start_line}: quoted field never closed (starts on line "
                            f"{line})"
                        )
                    parts.append(text[pos:close])
                    line += text.count("\n", pos, close)
                    pos = close + 1
                    if pos < n and text[pos] == '"':
                        parts.append('"')
                        pos += 1
                        continue
                    break
                fields.append("".join(parts))
                if pos < n and text[pos] not in (delimiter, "\n", "\r"):
                    raise DmsCsvError(f"{source}:{line}: unexpected {text[pos]!r} after a "
                                      "closing quote")
            else:
                end = pos
                while end < n and text[end] not in (delimiter, "\n", '"'):
                    end += 1
                if end < n and text[end] == '"':
                    raise DmsCsvError(f"{source}:{line}: stray quote inside an unquoted field")
                raw = text[pos:end]
                if raw.endswith("\r") and (end == n or text[end] == "\n"):
                    raw = raw[:-1]  # CRLF row delimiter
                fields.append(raw if raw else None)
                pos = end
            if pos < n and text[pos] == "\r" and pos + 1 < n and text[pos + 1] == "\n":
                pos += 1
            if pos >= n:
                break
            if text[pos] == delimiter:
                pos += 1
                continue
            if text[pos] == "\n":
                pos += 1
                line += 1
                break
            raise DmsCsvError(f"{source}:{line}: unexpected {text[pos]!r}")
        records.append((start_line, fields))
    return records


def parse_dms_csv(
    text: str, source: str = "<text>", fmt: CsvFormat = CsvFormat()
) -> list[dict[str, str | None]]:
    """Rows of a DMS CSV file (with header) as dicts by column name; None is NULL."""
    records = parse_records(text, source, fmt.delimiter)
    if not records:
        raise DmsCsvError(f"{source}:1: empty file, expected a header row")
    _, header = records[0]
    names = [h or "" for h in header]
    # the change sequence comes after the table's columns (before-image columns follow it)
    if len(names) < 3 or names[0] != OP_COLUMN or fmt.change_seq_column not in names[2:]:
        raise DmsCsvError(
            f"{source}:1: header {names!r} must start with {OP_COLUMN!r} and have a "
            f"{fmt.change_seq_column!r} column"
        )
    rows = []
    for line, fields in records[1:]:
        if len(fields) != len(names):
            raise DmsCsvError(
                f"{source}:{line}: {len(fields)} fields, header has {len(names)}"
            )
        if fields[0] not in OPS:
            raise DmsCsvError(f"{source}:{line}: unknown Op {fields[0]!r}")
        rows.append(dict(zip(names, fields, strict=True)))
    return rows


def parse_ts(text: str) -> datetime:
    return datetime.strptime(text, "%Y-%m-%d %H:%M:%S.%f").replace(tzinfo=UTC)
