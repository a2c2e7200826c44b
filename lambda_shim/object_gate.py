"""Is a new bronze object safe for the Glue job to read? Pure: bytes in, verdict out.

One bad object must never stall the pipeline: the job reads every object under its
location, and one it cannot read (a `.gz` that is not gzip, a truncated one, a record
larger than a Spark task can hold) fails every run from then on, while its good
neighbours wait behind it. The Lambda checks each new object first and moves a bad one
to the quarantine prefix with the reason, so the job never sees it (lambda_function.py).
Deployed next to lambda_function.py: no cdclab import.

Every object gets a verdict, in memory bounded by a read chunk (never by the object, a
record or a field) and time bounded by `Limits.max_object_bytes`; a limit crossed is a
defect like any other, never "too large to check". Checked, streaming:
- the key: characters Hadoop reads as a glob or an escape (`[]{}*?\\`), control
  characters, a name that is not a DMS file (`.csv`, `.csv.gz`, `.parquet`);
- the bytes: gzip integrity (whole stream, concatenated members, nothing after the
  end), decompressed at most `max_object_bytes` (a bomb stops there); strict UTF-8;
  no NUL (PostgreSQL text cannot hold one, so DMS never writes it);
- the CSV, scanned without holding a record: quoting, a header (when files carry one)
  of distinct, non-empty names that do not look like data, every record with the
  header's number of fields, no field over `max_field_chars`, no record over
  `max_record_chars`;
- Parquet (DataFormat parquet), from its metadata before any data is read: `PAR1` at
  both ends, a footer within `max_parquet_footer_bytes`, parsed here (Thrift compact,
  no library needed) and held to the object: column chunks inside the file, row groups
  of at most `max_row_group_rows`, decompressed sizes within `max_object_bytes`; every
  page header walked (sizes that add up, pages within the read budget). Only then,
  where pyarrow is importable, every row group is read in small batches.

The limits' defaults come from the DMS endpoint's settings (lambda_shim/function_env.py
and docs/operations.md give the reasoning); the Lambda reads them from its environment.
"""

from __future__ import annotations

import codecs
import hashlib
import io
import posixpath
import re
import struct
import tempfile
import zlib
from array import array
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from itertools import repeat

DMS_SUFFIXES = (".csv", ".csv.gz", ".parquet")  # csv NONE | GZIP; parquet (codec inside)
PARQUET_MAGIC = b"PAR1"
SPOOL_IN_MEMORY = 8 * 1024 * 1024
GLOB_CHARACTERS = frozenset("[]{}*?\\")
REASON_SUFFIX = ".reason.json"  # beside each quarantined object: why, where, when
# "a sequence of Unicode characters encoded in UTF-8, with a maximum length of 1,024
# bytes" (Naming Amazon S3 objects); prefixes included
S3_MAX_KEY_BYTES = 1024
PIECE = 256 * 1024  # the most bytes the gate decodes or scans at once
MiB = 1024 * 1024

# Header fields that are data: a timestamp/date, a number (incl. $AR_H_CHANGE_SEQ).
_DATA_LIKE = re.compile(r"^(\d{4}-\d{2}-\d{2}([ T]\d{2}:\d{2}.*)?|[+-]?\d+(\.\d+)?)$")
# PostgreSQL names are at most 63 bytes (NAMEDATALEN - 1); a header name this long is
# data, and the header record is read whole, so it is bounded apart from other records.
MAX_NAME_CHARS = 1024
MAX_HEADER_CHARS = 1 * MiB


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


class _Bad(Exception):
    def __init__(self, defect: Defect) -> None:
        super().__init__(defect.reason)
        self.defect = defect


# --- keys -------------------------------------------------------------------------------
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


def quarantine_key(prefix: str, key: str) -> str:
    """Where a refused object goes: `<prefix>/<key>`, or, when that and its reason's name
    would pass S3's 1,024-byte key limit, a bounded name: the key's start, a hash of the
    whole key and its last characters (so retries of one key land on one name; the
    reason file holds the full key)."""
    prefix = prefix.strip("/")
    plain = f"{prefix}/{key}"
    budget = S3_MAX_KEY_BYTES - len(REASON_SUFFIX.encode())
    if len(plain.encode("utf-8", "surrogatepass")) <= budget:
        return plain
    digest = hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:32]
    tail = _utf8_cut(key[::-1], 64)[::-1]
    fixed = f"{prefix}/~{digest}~{tail}"
    room = budget - len(fixed.encode("utf-8", "surrogatepass"))
    if room < 0:
        raise ValueError(f"quarantine prefix {prefix!r} leaves no room for a key under "
                         f"S3's {S3_MAX_KEY_BYTES}-byte limit")
    return f"{prefix}/{_utf8_cut(key, room)}~{digest}~{tail}"


def _utf8_cut(text: str, limit: int) -> str:
    """The longest start of `text` of at most `limit` UTF-8 bytes (whole characters)."""
    out, used = [], 0
    for c in text:
        used += len(c.encode("utf-8", "surrogatepass"))
        if used > limit:
            break
        out.append(c)
    return "".join(out)


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


class _Spooled(Source):
    """A stream of chunks kept for random access (Parquet given as chunks): in memory up to
    SPOOL_IN_MEMORY, on disk beyond, at most `limit` bytes."""

    def __init__(self, file, chunks: Iterable[bytes], limit: int) -> None:
        self.file, self.size = file, 0
        for chunk in _reading(chunks):
            self.size += len(chunk)
            if self.size > limit:
                raise _Bad(_over_object(limit))
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


def _reading(chunks: Iterable[bytes]) -> Iterator[bytes]:
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


def _over_object(limit: int) -> Defect:
    return Defect(f"decompresses to more than {limit} bytes (the gate's limit "
                  "GATE_MAX_OBJECT_BYTES, from DMS's MaxFileSize and CdcMinFileSize): a "
                  "compression bomb, or a file DMS would have split")


# --- gzip -------------------------------------------------------------------------------
def gunzip(chunks: Iterable[bytes], limit: int = Limits.max_object_bytes) -> Iterator[bytes]:
    """Decompressed bytes, at most PIECE at a time (a bomb never inflates at once); a
    defect when the stream is not whole gzip (members may be concatenated, as gzip
    allows; anything else after the last member is refused) or inflates past `limit`."""
    d, members, total = None, 0, 0
    for chunk in chunks:
        data = chunk
        while data or d is not None:
            fresh = d is None
            if d is None:
                d = zlib.decompressobj(16 + zlib.MAX_WBITS)
            try:
                out = d.decompress(data, PIECE)
            except zlib.error as e:
                what = ("data after the end of the gzip stream" if members and fresh
                        else f"not valid gzip: {e}")
                raise _Bad(Defect(what)) from e
            if out:
                total += len(out)
                if total > limit:
                    raise _Bad(_over_object(limit))
                yield out
            if d.eof:
                members, data, d = members + 1, d.unused_data, None
                continue
            data = d.unconsumed_tail
            if not data and len(out) < PIECE:
                break  # this member needs the next chunk
    if d is not None:
        raise _Bad(Defect("truncated gzip: the stream ends before its last member does"))


def _capped(chunks: Iterable[bytes], limit: int) -> Iterator[bytes]:
    total = 0
    for chunk in chunks:
        total += len(chunk)
        if total > limit:
            raise _Bad(_over_object(limit))
        yield chunk


# --- CSV --------------------------------------------------------------------------------
_START, _PLAIN, _QUOTED, _QUOTE, _CR = range(5)  # where in a record the scan is


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


class _CsvScan:
    """Counts the fields of each record as Python's csv module (strict, QUOTE_MINIMAL or
    QUOTE_NONE) would split them, holding no record: only the header's names are kept.
    Records without quotes or carriage returns are counted whole lines at a time (C
    string methods); the others are walked from one special character to the next."""

    def __init__(self, layout: CsvLayout, limits: Limits) -> None:
        self.d, self.quoting, self.header = layout.delimiter, layout.quoting, layout.header
        self.limits = limits
        self.width: int | None = None  # fields of record 1
        self.record = 0  # records done
        self.line = 1  # the physical line being read
        self.start_line = 1  # where the current record started
        self.fields = self.field = self.chars = 0  # of the current record / field
        self.state, self.open, self.simple = _START, False, True
        self.names: list[str] = []  # record 1's fields, when it is the header
        self.name: list[str] = []
        d = re.escape(self.d)
        self.plain_stop = re.compile(f"[{d}\\n\\r\\x00]")
        self.quoted_stop = re.compile('["\\x00]')
        # whole records on one line, each field quoted (no line feed inside) or plain (no
        # quote at all); atomic: linear, whatever the text
        field = f'(?>"(?:[^"\\n]|"")*+"|[^"{d}\\n]*+)'
        self.lines_re = re.compile(f"(?>{field}(?:{d}{field})*+\\n)*+")
        self.quoted_re = re.compile('"(?:[^"\\n]|"")*+"')

    # -- where and why -------------------------------------------------------------
    def _bad(self, reason: str, record: int | None = None, line: int | None = None) -> _Bad:
        return _Bad(Defect(reason, record or self.record + 1, line or self.start_line))

    def _width_bad(self, fields: int, record: int, line: int) -> _Bad:
        what = "the header has" if self.header else "record 1 has"
        return self._bad(f"{fields} fields where {what} {self.width}", record, line)

    def _field_bad(self, field: int, record: int | None = None,
                   line: int | None = None) -> _Bad:
        return self._bad(
            f"field {field} is over {self.limits.max_field_chars} characters (the gate's "
            "limit GATE_MAX_FIELD_CHARS, from LobMaxSize: DMS cuts LOBs there)", record, line)

    def _record_bad(self, record: int | None = None, line: int | None = None) -> _Bad:
        return self._bad(f"the record is over {self.limits.max_record_chars} characters "
                         "(the gate's limit GATE_MAX_RECORD_CHARS)", record, line)

    # -- the current field grows, ends; the record ends ----------------------------
    def _take(self, text: str, start: int, end: int) -> None:
        n = end - start
        self.field += n
        self.chars += n
        if self.width is None and self.header:
            if self.field > MAX_NAME_CHARS:
                raise self._bad(f"no header: column {self.fields + 1} is over "
                                f"{MAX_NAME_CHARS} characters, not a column name")
            if self.chars > MAX_HEADER_CHARS:
                raise self._bad(f"no header: record 1 is over {MAX_HEADER_CHARS} "
                                "characters")
            self.name.append(text[start:end])
        if self.field > self.limits.max_field_chars:
            raise self._field_bad(self.fields + 1)
        if self.chars > self.limits.max_record_chars:
            raise self._record_bad()

    def _end_field(self) -> None:
        if self.width is None and self.header:
            self.names.append("".join(self.name))
            self.name = []
        self.fields += 1
        self.field = 0
        if self.fields > self.limits.max_columns:
            raise self._bad(f"more than {self.limits.max_columns} fields (the gate's limit "
                            "GATE_MAX_COLUMNS, Spark's CSV maxColumns)")

    def _end_record(self, at: int) -> int:
        """The record ends at a line feed; returns `at`, where the next one starts."""
        if self.width is None:
            if self.header and (bad := _header_defect(self.names)):
                raise _Bad(bad)
            self.width, self.names = self.fields, []
        elif self.fields != self.width:
            raise self._width_bad(self.fields, self.record + 1, self.start_line)
        self.record += 1
        self.fields = self.field = self.chars = 0
        self.state, self.open = _START, False
        self.line += 1
        self.start_line = self.line
        return at

    # -- scanning --------------------------------------------------------------------
    def feed(self, text: str) -> None:
        pos, n = 0, len(text)
        stop = -1  # the next carriage return or NUL at or after pos (n: none)
        self.simple = True  # no record over several lines seen in this piece yet
        while pos < n:
            if self.state == _START and not self.open and self.width is not None:
                if stop < pos:
                    stop = min((at for at in (text.find("\r", pos), text.find("\0", pos))
                                if at >= 0), default=n)
                pos = self._lines(text, pos, stop)
                if pos >= n:
                    break
            pos = self._walk(text, pos)

    def end(self) -> None:
        if self.state == _QUOTED:
            raise self._bad("not CSV: unexpected end of data (a quoted field never closes)")
        if self.open:
            self._end_field()
            self._end_record(0)

    def _lines(self, text: str, pos: int, stop: int) -> int:
        """Whole records on one line each, from a record's start up to `stop` (a carriage
        return or NUL): their fields counted by C string methods, quoted fields (checked
        by one regex) taken out first. Returns where the walk goes on."""
        end = text.rfind("\n", pos, stop)
        if end < pos:
            return pos
        block = counted = None
        if self.simple or not self.quoting:
            block = counted = text[pos:end]
            if self.quoting and '"' in block:
                counted = self._unquoted(block)
                # a record over several lines, or a damaged one, ahead: the regex (its
                # cost the lines it takes) for the rest of this piece
                self.simple = counted is not None
        if counted is None:
            end = self.lines_re.match(text, pos, end + 1).end() - 1
            if end < pos:
                return pos
            block = text[pos:end]
            counted = self.quoted_re.sub("", block)
        lines = counted.split("\n")
        width = self.width or 0
        counts = list(map(str.count, lines, repeat(self.d)))
        first = None
        if counts.count(width - 1) != len(counts):
            first = next(i for i, c in enumerate(counts) if c != width - 1)
        longest = min(self.limits.max_field_chars, self.limits.max_record_chars)
        if len(block) > longest:  # only with limits below a scanned piece
            originals = block.split("\n")
            at = next((i for i, line in enumerate(originals[:first]) if len(line) > longest),
                      None)
            if at is not None:  # the lines before it here, that one walked (its limits)
                if at == 0:
                    return pos
                lines, first = lines[:at], None
                end = pos + sum(map(len, originals[:at])) + at - 1
        if first is not None:
            raise self._width_bad(counts[first] + 1, self.record + first + 1,
                                  self.line + first)
        self.record += len(lines)
        self.line += len(lines)
        self.start_line = self.line
        return end + 1

    def _unquoted(self, block: str) -> str | None:
        """The block without its quoted fields, when every record in it lies on one line
        and quotes only open and close fields (else None): split at the quotes, the even
        parts lie outside them; an empty part between two is an escaped quote."""
        parts = block.split('"')
        if len(parts) % 2 == 0:
            return None
        outside = "".join(parts[0::2])
        if outside.count("\n") != block.count("\n"):
            return None
        ends = (self.d, "\n")
        if (parts[0] and parts[0][-1] not in ends) or (parts[-1] and parts[-1][0] not in ends):
            return None
        for part in parts[2:-1:2]:
            if part and (part[0] not in ends or part[-1] not in ends):
                return None
        return outside

    def _walk(self, text: str, pos: int) -> int:
        """From `pos` to the end of the current record or of `text`."""
        n, d = len(text), self.d
        while pos < n:
            state = self.state
            if state == _START:
                self.open = True
                if self.quoting and text[pos] == '"':
                    self.field += 1
                    self.chars += 1
                    self.state, pos = _QUOTED, pos + 1
                    continue
                self.state = state = _PLAIN
            if state == _PLAIN:
                m = self.plain_stop.search(text, pos)
                end = n if m is None else m.start()
                if end > pos:
                    self._take(text, pos, end)
                if m is None:
                    return n
                c, pos = text[end], end + 1
                if c == d:
                    self._end_field()
                    self.state = _START
                elif c == "\n":
                    self._end_field()
                    return self._end_record(pos)
                elif c == "\r":
                    self.state = _CR
                else:
                    raise self._nul()
            elif state == _QUOTED:
                m = self.quoted_stop.search(text, pos)
                end = n if m is None else m.start()
                if end > pos:
                    self.line += text.count("\n", pos, end)
                    self._take(text, pos, end)
                if m is None:
                    return n
                if text[end] == "\0":
                    raise self._nul()
                self.field += 1
                self.chars += 1
                self.state, pos = _QUOTE, end + 1
            elif state == _QUOTE:  # a quote inside a quoted field: escaped, or its end
                c = text[pos]
                if c == '"':
                    self._take(text, pos, pos + 1)
                    self.state = _QUOTED
                elif c == d:
                    self._end_field()
                    self.state = _START
                elif c == "\n":
                    self._end_field()
                    return self._end_record(pos + 1)
                elif c == "\r":
                    self.state = _CR
                else:
                    raise self._bad(f"not CSV: '{d}' expected after '\"'")
                pos += 1
            else:  # _CR: a carriage return outside quotes ends the record with its \n
                if text[pos] != "\n":
                    raise self._bad("not CSV: a carriage return outside quotes that no "
                                    "line feed follows")
                self._end_field()
                return self._end_record(pos + 1)
        return pos

    def _nul(self) -> _Bad:
        return self._bad("a NUL character (U+0000): PostgreSQL text cannot hold one, so "
                         "DMS never writes it")


def csv_defect(data: Iterable[bytes], layout: CsvLayout = CsvLayout(),
               limits: Limits = Limits()) -> Defect | None:
    """The first defect of a CSV byte stream (strict UTF-8), or None."""
    try:
        _scan_csv(data, layout, limits)
    except _Bad as e:
        return e.defect
    return None


def _scan_csv(data: Iterable[bytes], layout: CsvLayout, limits: Limits) -> None:
    scan = _CsvScan(layout, limits)
    decoder = codecs.getincrementaldecoder("utf-8")("strict")
    offset = 0
    for chunk in data:
        held = len(decoder.getstate()[0])  # bytes of a character split across chunks
        bad = None
        try:
            text = decoder.decode(chunk)
        except UnicodeDecodeError as e:
            # the text before the bad byte is scanned first, so the defect names the
            # record it is in
            text = e.object[:e.start].decode("utf-8")
            bad = (f"not UTF-8: byte 0x{e.object[e.start]:02x} at offset "
                   f"{offset - held + e.start}")
        offset += len(chunk)
        scan.feed(text)
        if bad:
            raise scan._bad(bad, line=scan.line)
    try:
        scan.feed(decoder.decode(b"", final=True))
    except UnicodeDecodeError as e:
        raise scan._bad("not UTF-8: the object ends inside a character",
                        line=scan.line) from e
    scan.end()


# --- Parquet ----------------------------------------------------------------------------
# Thrift compact protocol types (parquet.thrift's FileMetaData and PageHeader use it)
_STOP, _TRUE, _FALSE, _BYTE, _I16, _I32, _I64, _DOUBLE, _BINARY = range(9)
_LIST, _SET, _MAP, _STRUCT = 9, 10, 11, 12
_INTS = (_BYTE, _I16, _I32, _I64)
_MAX_DEPTH = 32  # parquet.thrift nests a few levels; deeper is not a Parquet footer


class _Short(Exception):
    """The bytes ended inside a Thrift value (a page header longer than the window read)."""


class _Thrift:
    """Reads Thrift compact values from bytes. Every element takes at least one byte and a
    container may not declare more elements than bytes remain, so reading or skipping
    costs time and memory in proportion to the bytes, whatever they declare."""

    def __init__(self, buf: bytes, what: str) -> None:
        self.buf, self.pos, self.what = buf, 0, what

    def bad(self, why: str) -> _Bad:
        return _Bad(Defect(f"not readable Parquet: {self.what}: {why}"))

    def byte(self) -> int:
        if self.pos >= len(self.buf):
            raise _Short
        self.pos += 1
        return self.buf[self.pos - 1]

    def varint(self) -> int:
        out = shift = 0
        while True:
            b = self.byte()
            out |= (b & 0x7F) << shift
            if not b & 0x80:
                return out
            shift += 7
            if shift > 63:
                raise self.bad("a varint longer than 64 bits")

    def int(self, kind: int) -> int:
        if kind not in _INTS:
            raise self.bad(f"Thrift type {kind} where an integer belongs")
        if kind == _BYTE:
            return self.byte()
        n = self.varint()
        return (n >> 1) ^ -(n & 1)

    def fields(self) -> Iterator[tuple[int, int]]:
        """(field id, type) of each field of a struct, up to its end."""
        last = 0
        while True:
            b = self.byte()
            kind = b & 0x0F
            if kind == _STOP:
                return
            last = last + (b >> 4) if b >> 4 else self.int(_I16)
            yield last, kind

    def count(self, n: int) -> int:
        if n < 0 or n > len(self.buf) - self.pos:
            raise self.bad(f"a container of {n} elements in {len(self.buf) - self.pos} bytes")
        return n

    def list_header(self) -> tuple[int, int]:
        b = self.byte()
        n = b >> 4
        return self.count(self.varint() if n == 15 else n), b & 0x0F

    def skip(self, kind: int, depth: int = 0) -> None:
        if depth > _MAX_DEPTH:
            raise self.bad("values nested too deeply")
        if kind in (_TRUE, _FALSE):
            return
        if kind in _INTS:
            self.int(kind)
        elif kind == _DOUBLE:
            self.advance(8)
        elif kind == _BINARY:
            self.advance(self.varint())
        elif kind in (_LIST, _SET):
            n, elem = self.list_header()
            for _ in range(n):
                self.skip_element(elem, depth + 1)
        elif kind == _MAP:
            n = self.count(self.varint())
            if n:
                kinds = self.byte()
                for _ in range(n):
                    self.skip_element(kinds >> 4, depth + 1)
                    self.skip_element(kinds & 0x0F, depth + 1)
        elif kind == _STRUCT:
            for _, field_kind in self.fields():
                self.skip(field_kind, depth + 1)
        else:
            raise self.bad(f"unknown Thrift type {kind}")

    def skip_element(self, kind: int, depth: int) -> None:
        if kind in (_TRUE, _FALSE):  # in a container a bool takes a byte
            self.advance(1)
        else:
            self.skip(kind, depth)

    def advance(self, n: int) -> None:
        if n < 0 or self.pos + n > len(self.buf):
            raise _Short
        self.pos += n

    def ints(self, wanted: dict[int, int], depth: int = 0) -> dict[int, int]:
        """A struct's integer fields in `wanted` (id -> default); the rest is skipped."""
        out = dict(wanted)
        for fid, kind in self.fields():
            if fid in wanted and kind in _INTS:
                out[fid] = self.int(kind)
            else:
                self.skip(kind, depth + 1)
        return out


# ColumnChunk facts the page walk needs, flat in an array('q'): 6 per column chunk
_CHUNK = ("start", "length", "uncompressed", "values", "group", "column")


def _footer(tail: bytes, data_end: int, limits: Limits) -> tuple[array, list[int]]:
    """Checks the FileMetaData against the object and the limits, as it parses it (nothing
    of it is kept but six numbers per column chunk). Returns those and the rows of each
    row group."""
    t = _Thrift(tail, "the footer")
    leaves: int | None = None
    chunks, groups = array("q"), []
    total = 0
    try:
        for fid, kind in t.fields():
            if fid == 2 and kind == _LIST:  # schema: the root, then one element per field
                n, _ = t.list_header()
                leaves = 0
                for _ in range(n):
                    leaves += t.ints({5: 0})[5] == 0  # num_children: a group has some
                if not 0 < leaves <= limits.max_columns:
                    raise t.bad(f"{leaves} columns (the gate allows 1 to "
                                f"{limits.max_columns}, GATE_MAX_COLUMNS)")
            elif fid == 4 and kind == _LIST:  # row groups
                if leaves is None:
                    raise t.bad("row groups before the schema")
                n, _ = t.list_header()
                for g in range(n):
                    rows, size = _row_group(t, g, leaves, data_end, limits, chunks)
                    total += size
                    if total > limits.max_object_bytes:
                        raise _Bad(_over_object(limits.max_object_bytes))
                    groups.append(rows)
            else:
                t.skip(kind)
    except _Short as e:
        raise t.bad("it ends inside a value") from e
    if leaves is None:
        raise t.bad("no schema")
    return chunks, groups


def _row_group(t: _Thrift, g: int, leaves: int, data_end: int, limits: Limits,
               chunks: array) -> tuple[int, int]:
    """One RowGroup: (its rows, its column chunks' decompressed bytes)."""
    rows, columns, size = 0, 0, 0
    for fid, kind in t.fields():
        if fid == 1 and kind == _LIST:
            n, _ = t.list_header()
            if n != leaves:
                raise t.bad(f"row group {g} has {n} column chunks for {leaves} columns")
            for c in range(n):
                size += _column_chunk(t, g, c, data_end, chunks)
            columns = n
        elif fid == 3 and kind in _INTS:
            rows = t.int(kind)
        else:
            t.skip(kind)
    if columns != leaves:
        raise t.bad(f"row group {g} has no column chunks")
    if not 0 <= rows <= limits.max_row_group_rows:
        raise t.bad(f"row group {g} declares {rows} rows (the gate allows "
                    f"{limits.max_row_group_rows}, GATE_MAX_ROW_GROUP_ROWS: DMS's "
                    "RowGroupLength)")
    return rows, size


def _column_chunk(t: _Thrift, g: int, c: int, data_end: int, chunks: array) -> int:
    meta = None
    for fid, kind in t.fields():
        if fid == 1 and kind == _BINARY:
            raise t.bad(f"row group {g} column {c} lies in another file (file_path)")
        if fid == 3 and kind == _STRUCT:
            # ColumnMetaData: 5 num_values, 6/7 total (un)compressed size, 9 data page
            # offset, 11 dictionary page offset
            meta = t.ints({5: -1, 6: -1, 7: -1, 9: -1, 11: -1})
        else:
            t.skip(kind)
    if meta is None:
        raise t.bad(f"row group {g} column {c} has no metadata")
    values, uncompressed, length, data_page, dictionary = (
        meta[5], meta[6], meta[7], meta[9], meta[11])
    start = dictionary if 4 <= dictionary < data_page else data_page
    where = f"row group {g} column {c}"
    if min(values, uncompressed, length) < 0 or start < 4:
        raise t.bad(f"{where} declares negative or missing sizes or offsets")
    if start + length > data_end:
        raise t.bad(f"{where} ({length} bytes at {start}) does not fit the "
                    f"{data_end} bytes before the footer")
    chunks.extend((start, length, uncompressed, values, g, c))
    return uncompressed


def _pages(source: Source, chunks: array, groups: list[int], limits: Limits) -> None:
    """Walks every page header of every column chunk: each page within its chunk, the
    pages filling it exactly, values within the chunk's, and the largest page of each
    column of a row group, added up, within the read budget."""
    header_limit = 2 * limits.max_field_chars + 64 * 1024  # a page's min/max statistics
    budget: dict[int, int] = {}
    for i in range(0, len(chunks), len(_CHUNK)):
        start, length, uncompressed, values, g, c = chunks[i:i + len(_CHUNK)]
        where = f"row group {g} column {c}"
        reader = _Window(source.read(start, start + length))
        at, seen, largest, pages = 0, 0, 0, 0
        while at < length:
            pages += 1
            if pages > values + 2:  # a dictionary page, then pages of at least a value
                raise _Bad(Defect(f"not readable Parquet: {where}: more pages than its "
                                  f"{values} values"))
            header, size = reader.header(min(header_limit, length - at), where)
            # PageHeader: 1 type, 2 uncompressed size, 3 compressed size; 5 DataPageHeader,
            # 7 DictionaryPageHeader, 8 DataPageHeaderV2, each with 1 num_values
            if min(header[2], header[3]) < 0:
                raise _Bad(Defect(f"not readable Parquet: {where}: a page with a negative "
                                  "size"))
            if header[3] > length - at - size:
                raise _Bad(Defect(f"not readable Parquet: {where}: a {header[3]}-byte page "
                                  f"passes the chunk's end"))
            if header[2] > uncompressed:
                raise _Bad(Defect(f"not readable Parquet: {where}: a page of {header[2]} "
                                  f"bytes in a chunk of {uncompressed}"))
            if header[1] != 2:  # a dictionary page holds no values of rows
                seen += header["values"]
            largest = max(largest, header[2])
            reader.skip(header[3])
            at += size + header[3]
        if seen > values or values > groups[g]:  # DMS's columns are flat: a value a row
            raise _Bad(Defect(f"not readable Parquet: {where}: {max(seen, values)} values "
                              f"in a row group of {groups[g]} rows"))
        budget[g] = budget.get(g, 0) + largest
        if budget[g] > limits.max_parquet_read_bytes:
            raise _Bad(Defect(
                f"row group {g}'s largest pages add up to more than "
                f"{limits.max_parquet_read_bytes} bytes (the gate's limit "
                "GATE_MAX_PARQUET_READ_BYTES, from DMS's DataPageSize): more than a reader "
                "may hold at once"))


class _Window:
    """A column chunk's bytes, read forward: page headers parsed from a window, page data
    skipped (memory: the window, at most a page header's limit, and a read piece)."""

    def __init__(self, chunks: Iterator[bytes]) -> None:
        self.chunks, self.buf, self.off = _reading(chunks), b"", 0

    def fill(self, n: int) -> bool:
        while len(self.buf) - self.off < n:
            more = next(self.chunks, None)
            if more is None:
                return False
            self.buf, self.off = self.buf[self.off:] + more, 0
        return True

    def header(self, limit: int, where: str) -> tuple[dict, int]:
        want = min(256, limit)
        while True:
            complete = self.fill(want)
            t = _Thrift(self.buf[self.off:self.off + want], f"{where}: a page header")
            try:
                h: dict = {1: -1, 2: -1, 3: -1, "values": 0}
                for fid, kind in t.fields():
                    if fid in (1, 2, 3) and kind in _INTS:
                        h[fid] = t.int(kind)
                    elif fid in (5, 7, 8) and kind == _STRUCT:
                        h["values"] = max(0, t.ints({1: 0})[1])
                    else:
                        t.skip(kind)
            except _Short:
                if want >= limit or not complete:
                    raise _Bad(Defect(f"not readable Parquet: {where}: a page header that "
                                      f"does not end within {want} bytes")) from None
                want = min(limit, want * 8)
                continue
            self.off += t.pos
            return h, t.pos

    def skip(self, n: int) -> None:
        while n > len(self.buf) - self.off:
            n -= len(self.buf) - self.off
            self.buf, self.off = next(self.chunks, b""), 0
            if not self.buf:
                return
        self.off += n


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


def parquet_defect(source: Source, limits: Limits = Limits()) -> Defect | None:
    """Metadata first (read here, bounded); then, with pyarrow at hand, every row group."""
    size = source.size
    head = b"".join(_reading(source.read(0, 4))) if size >= 12 else b""
    tail = b"".join(_reading(source.read(size - 8, size))) if size >= 12 else b""
    if bad := parquet_structure_defect(head, tail, size):
        return bad
    (length,) = struct.unpack("<I", tail[:4])
    if length > limits.max_parquet_footer_bytes:
        return Defect(f"a {length}-byte Parquet footer (the gate's limit "
                      f"GATE_MAX_PARQUET_FOOTER_BYTES is {limits.max_parquet_footer_bytes})")
    data_end = size - 8 - length
    footer = b"".join(_reading(source.read(data_end, size - 8)))
    chunks, groups = _footer(footer, data_end, limits)
    del footer
    _pages(source, chunks, groups, limits)
    return _arrow_defect(source, limits)


class _SourceFile(io.RawIOBase):
    """A Source as the file object pyarrow reads (each read a range of the object)."""

    def __init__(self, source: Source) -> None:
        self.source, self.pos, self.error = source, 0, None

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self.pos, io.SEEK_END: self.source.size}[whence]
        self.pos = max(0, base + offset)
        return self.pos

    def readinto(self, b) -> int:
        n = min(len(b), self.source.size - self.pos)
        if n <= 0:
            return 0
        try:
            data = b"".join(self.source.read(self.pos, self.pos + n))
        except Exception as e:  # kept: the caller tells a failed read from a bad file
            self.error = e
            raise
        b[:len(data)] = data
        self.pos += len(data)
        return len(data)


ARROW_BATCH_ROWS = 1024
ARROW_BUFFER_BYTES = 1024 * 1024


def _arrow_defect(source: Source, limits: Limits) -> Defect | None:
    """Every row group decoded, a small batch at a time, pages read one by one (their
    sizes were checked): damage inside the pages shows here."""
    try:
        import pyarrow.parquet as pq
    except ImportError:  # a Lambda without a pyarrow layer: the metadata checks only
        return None
    f = _SourceFile(source)
    try:
        pf = pq.ParquetFile(f, buffer_size=ARROW_BUFFER_BYTES, pre_buffer=False,
                            thrift_string_size_limit=limits.max_parquet_footer_bytes)
        for g in range(pf.metadata.num_row_groups):
            for _ in pf.iter_batches(batch_size=ARROW_BATCH_ROWS, row_groups=[g],
                                     use_threads=False):
                pass
    except Exception as e:  # pyarrow raises several types for a damaged file
        if f.error is not None:
            raise ReadError(f"reading the object failed: {f.error}") from f.error
        return Defect(f"not readable Parquet: {str(e)[:300]}")
    return None


# --- the verdict ------------------------------------------------------------------------
def content_defect(key: str, data: Iterable[bytes] | Source,
                   layout: CsvLayout = CsvLayout(), limits: Limits = Limits()) -> Defect | None:
    """The first defect in the object's bytes (chunks, or a Source with ranged reads), or
    None. Every object gets a verdict: a check that fails for any other reason than
    reading (a bug here) refuses the object, naming the error. A failed read raises
    its cause (the object is gone, S3 unreachable): then there is no verdict."""
    try:
        if key.endswith(".parquet"):
            if isinstance(data, Source):
                return parquet_defect(data, limits)
            with tempfile.SpooledTemporaryFile(max_size=SPOOL_IN_MEMORY) as f:
                return parquet_defect(_Spooled(f, data, limits.max_object_bytes), limits)
        if isinstance(data, Source):
            if not key.endswith(".gz") and data.size > limits.max_object_bytes:
                return _over_object(limits.max_object_bytes)
            data = data.read(0, data.size)
        stream = _reading(data)
        stream = (gunzip(stream, limits.max_object_bytes) if key.endswith(".gz")
                  else _capped(stream, limits.max_object_bytes))
        return csv_defect(stream, layout, limits)
    except _Bad as e:
        return e.defect
    except ReadError as e:
        raise (e.__cause__ or e) from None
    except Exception as e:
        return Defect(f"the gate could not check it ({type(e).__name__}: {str(e)[:200]})")


def inspect(key: str, data: Iterable[bytes] | Source, layout: CsvLayout = CsvLayout(),
            limits: Limits = Limits()) -> Defect | None:
    """Key first (no bytes read when it is bad), then content."""
    return key_defect(key) or content_defect(key, data, layout, limits)
