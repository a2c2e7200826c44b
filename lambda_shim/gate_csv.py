"""A CSV object's bytes, checked streaming (object_gate.py picks the check by the key).
Deployed next to lambda_function.py: no cdclab import.

Memory is bounded by a read piece, never by the object, a record or a field:
- gzip integrity (whole stream, concatenated members, nothing after the end),
  decompressed at most `max_object_bytes` (a bomb stops there); strict UTF-8; no NUL
  (PostgreSQL text cannot hold one, so DMS never writes it);
- the CSV, scanned without holding a record: quoting, a header (when files carry one)
  of distinct, non-empty names that do not look like data, every record with the
  header's number of fields, no field over `max_field_chars`, no record over
  `max_record_chars`.
"""

from __future__ import annotations

import codecs
import re
import zlib
from collections.abc import Iterable, Iterator
from itertools import repeat

try:  # in the repository
    from lambda_shim.gate_base import (
        PIECE,
        Bad,
        CsvLayout,
        Defect,
        Limits,
        MiB,
        over_object,
    )
except ImportError:  # deployed: the files at the zip's root
    from gate_base import (
        PIECE,
        Bad,
        CsvLayout,
        Defect,
        Limits,
        MiB,
        over_object,
    )

# Header fields that are data: a timestamp/date, a number (incl. $AR_H_CHANGE_SEQ).
_DATA_LIKE = re.compile(r"^(\d{4}-\d{2}-\d{2}([ T]\d{2}:\d{2}.*)?|[+-]?\d+(\.\d+)?)$")
# PostgreSQL names are at most 63 bytes (NAMEDATALEN - 1); a header name this long is
# data, and the header record is read whole, so it is bounded apart from other records.
MAX_NAME_CHARS = 1024
MAX_HEADER_CHARS = 1 * MiB


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
                raise Bad(Defect(what)) from e
            if out:
                total += len(out)
                if total > limit:
                    raise Bad(over_object(limit))
                yield out
            if d.eof:
                members, data, d = members + 1, d.unused_data, None
                continue
            data = d.unconsumed_tail
            if not data and len(out) < PIECE:
                break  # this member needs the next chunk
    if d is not None:
        raise Bad(Defect("truncated gzip: the stream ends before its last member does"))


def capped(chunks: Iterable[bytes], limit: int) -> Iterator[bytes]:
    total = 0
    for chunk in chunks:
        total += len(chunk)
        if total > limit:
            raise Bad(over_object(limit))
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
    def _bad(self, reason: str, record: int | None = None, line: int | None = None) -> Bad:
        return Bad(Defect(reason, record or self.record + 1, line or self.start_line))

    def _width_bad(self, fields: int, record: int, line: int) -> Bad:
        what = "the header has" if self.header else "record 1 has"
        return self._bad(f"{fields} fields where {what} {self.width}", record, line)

    def _field_bad(self, field: int, record: int | None = None,
                   line: int | None = None) -> Bad:
        return self._bad(
            f"field {field} is over {self.limits.max_field_chars} characters (the gate's "
            "limit GATE_MAX_FIELD_CHARS, from LobMaxSize: DMS cuts LOBs there)", record, line)

    def _record_bad(self, record: int | None = None, line: int | None = None) -> Bad:
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
                raise Bad(bad)
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

    def _nul(self) -> Bad:
        return self._bad("a NUL character (U+0000): PostgreSQL text cannot hold one, so "
                         "DMS never writes it")


def csv_defect(data: Iterable[bytes], layout: CsvLayout = CsvLayout(),
               limits: Limits = Limits()) -> Defect | None:
    """The first defect of a CSV byte stream (strict UTF-8), or None."""
    try:
        _scan_csv(data, layout, limits)
    except Bad as e:
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
