"""The object gate's vocabulary: its limits, the CSV layout, the verdict (Defect), and an
object's bytes as a Source read in bounded pieces. Deployed next to lambda_function.py:
no cdclab import.

The limits' defaults come from the DMS endpoint's settings (lambda_shim/function_env.py
and docs/operations.md give the reasoning); the Lambda reads them from its environment.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

PIECE = 256 * 1024  # the most bytes the gate decodes or scans at once
SPOOL_IN_MEMORY = 8 * 1024 * 1024
MiB = 1024 * 1024


@dataclass(frozen=True)
class Limits:
    """What the gate lets through. Defaults: the DMS endpoint's own defaults (CHAP_Target.S3,
    task settings), worked out in lambda_shim/function_env.py; the deployed function
    and the local watcher get them from the pipeline's settings (GATE_* variables)."""

    # one CSV field: 4 x LobMaxSize (limited LOB mode cuts LOBs there; hex doubles a
    # bytea, CSV quoting doubles quotes), at least 1 MiB for wide non-LOB strings
    max_field_chars: int = 1 * MiB
    # one CSV record: 16 such fields
    max_record_chars: int = 16 * MiB
    # fields in one record: Spark's CSV reader's maxColumns default
    max_columns: int = 20480
    # bytes of CSV an object decompresses to (Parquet: its pages, decompressed): DMS's
    # MaxFileSize (1 GB) or CdcMinFileSize, whichever is larger, plus one record
    max_object_bytes: int = 1024 * MiB + 16 * MiB
    # Parquet: the footer (FileMetaData) and each page header are parsed in memory
    max_parquet_footer_bytes: int = 8 * MiB
    # Parquet: rows in one row group (DMS: RowGroupLength, default 10,024 in the guide)
    max_row_group_rows: int = 10_024
    # Parquet: the largest page of each column of a row group, added up: what a reader
    # holds at once (64 x DMS's DataPageSize / DictPageSizeLimit, 1,024,000 bytes)
    max_parquet_read_bytes: int = 64 * 1_024_000


@dataclass(frozen=True)
class CsvLayout:
    """How the DMS endpoint writes its CSV (AddColumnName, CsvDelimiter, Rfc4180)."""

    header: bool = True
    delimiter: str = ","
    quoting: bool = True

    def __post_init__(self) -> None:
        if len(self.delimiter) != 1 or self.delimiter in '"\r\n\0':
            raise ValueError(f"CSV delimiter {self.delimiter!r}: the gate reads one "
                             "character other than a quote, CR, LF or NUL")


@dataclass(frozen=True)
class Defect:
    """Why an object is quarantined; `record` counts CSV records from 1 (the header),
    `line` is the physical line where that record starts (for bad bytes: their line)."""

    reason: str
    record: int | None = None
    line: int | None = None

    def describe(self) -> str:
        where = "" if self.record is None else f" (record {self.record}, line {self.line})"
        return self.reason + where


class ReadError(Exception):
    """Reading the object failed (S3 unreachable, the object gone): not a verdict on it.
    The cause is re-raised to the caller, which retries or forgets the object."""


class Bad(Exception):
    def __init__(self, defect: Defect) -> None:
        super().__init__(defect.reason)
        self.defect = defect

# --- where the bytes come from ----------------------------------------------------------
class Source:
    """An object's bytes: its size and any range of them, as chunks."""

    size: int

    def read(self, start: int, end: int) -> Iterator[bytes]:
        raise NotImplementedError


class BytesSource(Source):
    def __init__(self, data: bytes) -> None:
        self.data, self.size = data, len(data)

    def read(self, start: int, end: int) -> Iterator[bytes]:
        for at in range(start, min(end, self.size), PIECE):
            yield self.data[at:min(end, at + PIECE)]


class Spooled(Source):
    """A stream of chunks kept for random access (Parquet given as chunks): in memory up to
    SPOOL_IN_MEMORY, on disk beyond, at most `limit` bytes."""

    def __init__(self, file, chunks: Iterable[bytes], limit: int) -> None:
        self.file, self.size = file, 0
        for chunk in reading(chunks):
            self.size += len(chunk)
            if self.size > limit:
                raise Bad(over_object(limit))
            self.file.write(chunk)

    def read(self, start: int, end: int) -> Iterator[bytes]:
        self.file.seek(start)
        left = min(end, self.size) - start
        while left > 0:
            chunk = self.file.read(min(PIECE, left))
            if not chunk:
                return
            left -= len(chunk)
            yield chunk


def reading(chunks: Iterable[bytes]) -> Iterator[bytes]:
    """The chunks, at most PIECE bytes each; a failure to read them is a ReadError."""
    it = iter(chunks)
    while True:
        try:
            chunk = next(it)
        except StopIteration:
            return
        except Exception as e:
            raise ReadError(f"reading the object failed: {e}") from e
        for at in range(0, len(chunk), PIECE):
            yield bytes(chunk[at:at + PIECE])


def over_object(limit: int) -> Defect:
    return Defect(f"decompresses to more than {limit} bytes (the gate's limit "
                  "GATE_MAX_OBJECT_BYTES, from DMS's MaxFileSize and CdcMinFileSize): a "
                  "compression bomb, or a file DMS would have split")
