"""Writes DMS's .parquet files with pyarrow: one schema per file, rows in row groups of
RowGroupLength, so memory stays bounded by one row group whatever the file's size.

Rows arrive as the CSV path's fields (text, None = NULL); parquet_types turns each into
its column's Parquet value. A value the type cannot hold (NaN in a DECIMAL) is written
NULL with a warning naming the column: never silently, never stopping the stream.
"""

from __future__ import annotations

import csv
from collections.abc import Callable, Iterable, Sequence
from typing import BinaryIO

import pyarrow as pa
import pyarrow.parquet as pq

from pipeline_contract.dms_format import parquet_types as pt
from pipeline_contract.dms_format.values import RenderOptions

Row = Sequence[str | None]
# The CDC batches hold rows as CSV lines in this one lossless layout (NULL is a NUL
# character, which PostgreSQL text never holds), so memory is counted as for CSV.
ROW_NULL = "\x00"
DEFAULT_OPTIONS = pt.ParquetOptions()


def arrow_type(col: pt.ColumnType, millis: bool = False) -> pa.DataType:
    kind = col.kind
    simple = {pt.STRING: pa.string(), pt.BINARY: pa.binary(), pt.BOOL: pa.bool_(),
              pt.INT16: pa.int16(), pt.INT32: pa.int32(), pt.INT64: pa.int64(),
              pt.FLOAT: pa.float32(), pt.DOUBLE: pa.float64(), pt.DATE32: pa.date32(),
              pt.TIME32: pa.time32("ms")}
    if kind in simple:
        return simple[kind]
    if kind == pt.DECIMAL:
        return pa.decimal128(col.precision, col.scale)
    if kind == pt.TIMESTAMP:
        # DMS's files carry the legacy TIMESTAMP_MILLIS / _MICROS annotation, which means
        # UTC-adjusted (docs/dms-fidelity.md): an Arrow timestamp with a zone writes it
        return pa.timestamp("ms" if millis else "us", tz="UTC")
    raise ValueError(f"unknown Parquet kind {kind!r}")


def arrow_schema(names: Sequence[str], types: Sequence[pt.ColumnType],
                 millis: bool = False, required: str = "") -> pa.Schema:
    """The file's schema: every column OPTIONAL but the first named `required` (DMS
    writes its TimestampColumnName REQUIRED)."""
    at = list(names).index(required) if required and required in names else -1
    return pa.schema([pa.field(n, arrow_type(t, millis), nullable=i != at)
                      for i, (n, t) in enumerate(zip(names, types, strict=True))])


def statistics_columns(names: Sequence[str], types: Sequence[pt.ColumnType],
                       enabled: bool) -> list[str] | bool:
    """EnableStatistics: statistics on every column chunk but DECIMAL ones, which DMS's
    files have none on; False when disabled."""
    if not enabled:
        return False
    return [n for n, t in zip(names, types, strict=True) if t.kind != pt.DECIMAL]


def parse_rows(lines: Iterable[str]) -> Iterable[list[str | None]]:
    """CDC batch lines (ROW_NULL layout) back to fields."""
    for fields in csv.reader(lines):
        # an empty line is one empty field (csv reads it as none)
        yield [None if f == ROW_NULL else f for f in fields] if fields else [""]


class ParquetFileWriter:
    """One .parquet file into `out` (a spool or a buffer); `close` writes the footer."""

    def __init__(self, out: BinaryIO, names: Sequence[str], types: Sequence[pt.ColumnType],
                 options: pt.ParquetOptions = DEFAULT_OPTIONS,
                 render: RenderOptions = pt.DEFAULT_RENDER,
                 warn: Callable[[str], None] = lambda _m: None) -> None:
        self.out, self.names, self.options, self.warn = out, list(names), options, warn
        self.schema = arrow_schema(names, types, options.timestamp_millis,
                                   options.timestamp_column)
        self._convert = [pt.converter(t, render, options.timestamp_millis) for t in types]
        self._columns: list[list[object]] = [[] for _ in names]
        self.rows = 0
        self._writer = pq.ParquetWriter(
            out, self.schema,
            version="1.0" if options.version == "parquet-1-0" else "2.4",
            use_dictionary=options.encoding != "plain",
            compression="gzip" if options.gzip else "none",
            write_statistics=statistics_columns(names, types, options.statistics),
            data_page_size=options.data_page_size,
            dictionary_pagesize_limit=options.dict_page_size_limit,
            store_schema=False)  # DMS's footers hold no ARROW:schema

    def add(self, row: Row) -> None:
        if len(row) != len(self.names):
            raise ValueError(f"{len(row)} fields for {len(self.names)} columns")
        for i, (value, convert) in enumerate(zip(row, self._convert, strict=True)):
            if value is not None and convert is not None:
                try:
                    value = convert(value)
                except (pt.ParquetValueError, ValueError) as exc:
                    self.warn(f"WARNING: column {self.names[i]!r}: {exc}; written as NULL "
                              "(its Parquet type cannot hold it)")
                    value = None
            self._columns[i].append(value)
        self.rows += 1
        if len(self._columns[0]) >= self.options.rows_per_group:
            self.flush()

    def flush(self) -> None:
        """Writes the buffered rows as one row group."""
        if not self._columns or not self._columns[0]:
            return
        arrays = [pa.array(col, type=f.type) for col, f in zip(self._columns, self.schema,
                                                              strict=True)]
        self._writer.write_table(pa.Table.from_arrays(arrays, schema=self.schema),
                                 row_group_size=self.options.rows_per_group)
        self._columns = [[] for _ in self.names]

    def close(self) -> None:
        self.flush()
        self._writer.close()


def write_file(out: BinaryIO, names: Sequence[str], types: Sequence[pt.ColumnType],
               rows: Iterable[Row], options: pt.ParquetOptions = DEFAULT_OPTIONS,
               render: RenderOptions = pt.DEFAULT_RENDER,
               warn: Callable[[str], None] = lambda _m: None) -> int:
    """A whole file from `rows`; returns the row count."""
    writer = ParquetFileWriter(out, names, types, options, render, warn)
    for row in rows:
        writer.add(row)
    writer.close()
    return writer.rows
