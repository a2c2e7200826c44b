"""Is a new bronze object safe for the Glue job to read? Pure: bytes in, verdict out.

One bad object must never stall the pipeline: the job reads every object under its
location, and one it cannot read (a `.gz` that is not gzip, a truncated one) fails every
run from then on, while its good neighbours wait behind it. The Lambda checks each new
object first and moves a bad one to the quarantine prefix with the reason, so the job
never sees it (lambda_function.py). Deployed next to lambda_function.py: no cdclab
import.

Checked, streaming (memory bounded by one record):
- the key: characters Hadoop reads as a glob or an escape (`[]{}*?\\`), control
  characters, a name that is not a DMS file (`.csv`, `.csv.gz`, `.parquet`);
- the bytes: gzip integrity (whole stream, concatenated members, nothing after the end);
  strict UTF-8;
- the CSV: parseable, a header (when files carry one) of distinct, non-empty names that
  do not look like data, and every record with the header's number of fields;
- Parquet (DataFormat parquet): `PAR1` at both ends and a footer that fits the object
  (structure, no library needed); then, where pyarrow is importable, the footer parses
  and every row group reads, one at a time (spooled to disk past 8 MB: memory bounded by
  a row group).
"""

from __future__ import annotations

import codecs
import csv
import posixpath
import re
import struct
import tempfile
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

DMS_SUFFIXES = (".csv", ".csv.gz", ".parquet")  # csv NONE | GZIP; parquet (codec inside)
PARQUET_MAGIC = b"PAR1"
SPOOL_IN_MEMORY = 8 * 1024 * 1024
GLOB_CHARACTERS = frozenset("[]{}*?\\")
REASON_SUFFIX = ".reason.json"  # beside each quarantined object: why, where, when
# A record larger than this is not checked further (the object passes on to the job,
# which reads it distributed): the check's memory stays bounded.
MAX_RECORD_CHARS = 64 * 1024 * 1024
# Header fields that are data: a timestamp/date, a number (incl. $AR_H_CHANGE_SEQ).
_DATA_LIKE = re.compile(r"^(\d{4}-\d{2}-\d{2}([ T]\d{2}:\d{2}.*)?|[+-]?\d+(\.\d+)?)$")


@dataclass(frozen=True)
class CsvLayout:
    """How the DMS endpoint writes its CSV (AddColumnName, CsvDelimiter, Rfc4180)."""

    header: bool = True
    delimiter: str = ","
    quoting: bool = True


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


class TooLargeToCheck(Exception):
    """A record beyond MAX_RECORD_CHARS: not a defect, just not checked."""


def is_hidden(key: str) -> bool:
    """Names Glue's readers skip (as Hive does): `_…`, `.…`, folder markers."""
    name = posixpath.basename(key)
    return not name or name.startswith(("_", ".")) or name.endswith("_$folder$")


def key_defect(key: str) -> Defect | None:
    bad = sorted({c for c in key if c in GLOB_CHARACTERS})
    if bad:
        return Defect(f"object key has {' '.join(bad)}: Hadoop paths read these as a glob "
                      "pattern or an escape, so readers may not find the object")
    if any(ord(c) < 32 or ord(c) == 127 for c in key):
        return Defect("object key has control characters")
    if not key.endswith(DMS_SUFFIXES):
        return Defect("not a DMS file: the name ends in none of .csv, .csv.gz, .parquet, "
                      "so the reader cannot know its format")
    return None


class _Bad(Exception):
    def __init__(self, defect: Defect) -> None:
        super().__init__(defect.reason)
        self.defect = defect


def gunzip(chunks: Iterable[bytes]) -> Iterator[bytes]:
    """Decompressed bytes; a defect when the stream is not whole gzip (members may be
    concatenated, as gzip allows; anything else after the last member is refused)."""
    d = zlib.decompressobj(16 + zlib.MAX_WBITS)
    started = False
    for chunk in chunks:
        while chunk:
            started = True
            try:
                out = d.decompress(chunk)
            except zlib.error as e:
                raise _Bad(Defect(f"not valid gzip: {e}")) from e
            if out:
                yield out
            if not d.eof:
                break
            chunk = d.unused_data
            if chunk:
                if not chunk.startswith(b"\x1f\x8b"):
                    raise _Bad(Defect("data after the end of the gzip stream"))
                d = zlib.decompressobj(16 + zlib.MAX_WBITS)
    if started and not d.eof:
        raise _Bad(Defect("truncated gzip: the stream ends before its last member does"))


def _lines(chunks: Iterable[bytes], counter: list[int]) -> Iterator[str]:
    """Strict UTF-8 text, line by line (ends kept, as csv wants); counter[0] = lines."""
    decoder = codecs.getincrementaldecoder("utf-8")("strict")
    offset, pending = 0, ""
    for chunk in chunks:
        held = len(decoder.getstate()[0])  # bytes of a character split across chunks
        bad = None
        try:
            text = decoder.decode(chunk)
        except UnicodeDecodeError as e:
            # the lines before the bad byte go to the parser first, so the defect names
            # the record it is in
            text = e.object[:e.start].decode("utf-8")
            bad = (f"not UTF-8: byte 0x{e.object[e.start]:02x} at offset "
                   f"{offset - held + e.start}")
        offset += len(chunk)
        pending += text
        parts = pending.split("\n")
        pending = parts.pop()
        if len(pending) > MAX_RECORD_CHARS:
            raise TooLargeToCheck
        for part in parts:
            counter[0] += 1
            yield part + "\n"
        if bad:
            raise _Bad(Defect(bad, line=counter[0] + 1))
    try:
        pending += decoder.decode(b"", final=True)
    except UnicodeDecodeError as e:
        raise _Bad(Defect("not UTF-8: the object ends inside a character",
                          line=counter[0] + 1)) from e
    if pending:
        counter[0] += 1
        yield pending


def _header_defect(header: list[str]) -> Defect | None:
    for i, name in enumerate(header, 1):
        if not name.strip():
            return Defect(f"no header: column {i} has an empty name", 1, 1)
        if _DATA_LIKE.match(name):
            return Defect(f"no header: column {i} is {name[:40]!r}, a value, not a name",
                          1, 1)
    seen = set()
    for name in header:
        if name in seen:
            return Defect(f"no header: column name {name[:40]!r} appears twice", 1, 1)
        seen.add(name)
    return None


def parquet_structure_defect(head: bytes, tail: bytes, size: int) -> Defect | None:
    """Pure: the first 4 and last 8 bytes of an object of `size` bytes."""
    if size < 12:
        return Defect(f"not Parquet: {size} bytes, shorter than the two magic numbers and "
                      "a footer length")
    if head != PARQUET_MAGIC:
        return Defect(f"not Parquet: starts with {head!r}, not {PARQUET_MAGIC!r}")
    if tail[4:] != PARQUET_MAGIC:
        return Defect(f"truncated Parquet: ends with {tail[4:]!r}, not {PARQUET_MAGIC!r} "
                      "(no footer)")
    (footer,) = struct.unpack("<I", tail[:4])
    if footer == 0 or footer > size - 12:
        return Defect(f"truncated Parquet: footer length {footer} does not fit the "
                      f"{size}-byte object")
    return None


def parquet_defect(chunks: Iterable[bytes]) -> Defect | None:
    """Structure first; then, with pyarrow at hand, the footer and every row group."""
    with tempfile.SpooledTemporaryFile(max_size=SPOOL_IN_MEMORY) as spool:
        head, tail, size = b"", b"", 0
        for chunk in chunks:
            if len(head) < 4:
                head += chunk[:4 - len(head)]
            tail = (tail + chunk)[-8:]
            size += len(chunk)
            spool.write(chunk)
        bad = parquet_structure_defect(head, tail, size)
        if bad is not None:
            return bad
        try:
            import pyarrow.parquet as pq
        except ImportError:  # a Lambda without a pyarrow layer: structure only
            return None
        spool.seek(0)
        try:
            f = pq.ParquetFile(spool)
            for group in range(f.metadata.num_row_groups):
                f.read_row_group(group)
        except Exception as e:  # pyarrow raises several types for a damaged file
            return Defect(f"not readable Parquet: {str(e)[:300]}")
    return None


def content_defect(key: str, chunks: Iterable[bytes],
                   layout: CsvLayout = CsvLayout()) -> Defect | None:
    """The first defect in the object's bytes, or None (also None when a record is too
    large to check: the job reads it)."""
    if key.endswith(".parquet"):
        return parquet_defect(chunks)
    data = gunzip(chunks) if key.endswith(".gz") else chunks
    lines_read = [0]
    reader = csv.reader(
        _lines(data, lines_read), delimiter=layout.delimiter, strict=layout.quoting,
        quoting=csv.QUOTE_MINIMAL if layout.quoting else csv.QUOTE_NONE)
    width = None
    previous_limit = csv.field_size_limit(MAX_RECORD_CHARS)
    try:
        record = 0
        start_line = 1
        for row in reader:
            record += 1
            if not row:
                row = [""]  # an empty line: one empty field (one-column tables)
            if width is None:
                width = len(row)
                if layout.header and (bad := _header_defect(row)):
                    return bad
            elif len(row) != width:
                what = "the header has" if layout.header else "record 1 has"
                return Defect(f"{len(row)} fields where {what} {width}", record, start_line)
            start_line = lines_read[0] + 1
        return None
    except _Bad as e:
        d = e.defect
        return Defect(d.reason, None if d.line is None else record + 1, d.line)
    except csv.Error as e:
        if "field larger than field limit" in str(e):
            return None
        return Defect(f"not CSV: {e}", record + 1, start_line)
    except TooLargeToCheck:
        return None
    finally:
        csv.field_size_limit(previous_limit)


def inspect(key: str, chunks: Iterable[bytes], layout: CsvLayout = CsvLayout()) -> Defect | None:
    """Key first (no bytes read when it is bad), then content."""
    return key_defect(key) or content_defect(key, chunks, layout)


def quarantine_key(prefix: str, key: str) -> str:
    return f"{prefix.strip('/')}/{key}"
