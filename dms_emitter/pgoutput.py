"""Pure decoder for PostgreSQL's pgoutput logical replication protocol (versions 1 and 2).

Version 2 (PostgreSQL 14+, `streaming 'on'`) also sends a large transaction while it is
still in progress, in Stream Start .. Stream Stop blocks whose change messages carry the
xid of their (sub)transaction; Stream Commit or Stream Abort ends it (protocol docs,
"Logical Replication Message Formats"). `Decoder` follows the blocks.

Also frames the streaming-replication CopyData envelope (XLogData 'w', keepalive 'k')
and builds standby status updates ('r'), so the I/O adapter only moves bytes.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

PG_EPOCH = datetime(2000, 1, 1, tzinfo=UTC)


class DecodeError(ValueError):
    """Malformed bytes; the message names the message type and the byte offset."""


class _Unchanged:
    """Sentinel: an unchanged TOASTed value ('u'), sent without its data."""

    _instance: _Unchanged | None = None

    def __new__(cls) -> _Unchanged:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNCHANGED_TOAST"


UNCHANGED_TOAST = _Unchanged()
# 't' text, 'b' binary, 'n' NULL, 'u' unchanged; a text value over BIG_VALUE bytes stays
# a memoryview of its UTF-8 bytes (decode with pipeline_contract.dms_format.values.text_of)
Value = str | bytes | memoryview | None | _Unchanged
BIG_VALUE = 1 << 20
TupleData = tuple[Value, ...]


@dataclass(frozen=True)
class Begin:
    final_lsn: int
    commit_ts: int  # microseconds since 2000-01-01 UTC
    xid: int


@dataclass(frozen=True)
class Commit:
    flags: int
    commit_lsn: int
    end_lsn: int
    commit_ts: int


@dataclass(frozen=True)
class Origin:
    commit_lsn: int
    name: str


@dataclass(frozen=True)
class Column:
    flags: int  # 1 = part of the key
    name: str
    type_oid: int
    type_modifier: int


@dataclass(frozen=True)
class Relation:
    oid: int
    namespace: str
    name: str
    replica_identity: str  # d default, n nothing, f full, i index
    columns: tuple[Column, ...]
    xid: int | None = None  # inside a streamed block: the (sub)transaction's


@dataclass(frozen=True)
class Type:
    oid: int
    namespace: str
    name: str
    xid: int | None = None


@dataclass(frozen=True)
class Insert:
    relation_oid: int
    new: TupleData
    xid: int | None = None


@dataclass(frozen=True)
class Update:
    relation_oid: int
    old_kind: str | None  # 'K' key only, 'O' full old row, None absent
    old: TupleData | None
    new: TupleData
    xid: int | None = None


@dataclass(frozen=True)
class Delete:
    relation_oid: int
    old_kind: str  # 'K' or 'O'
    old: TupleData
    xid: int | None = None


@dataclass(frozen=True)
class Truncate:
    options: int
    relation_oids: tuple[int, ...]
    xid: int | None = None


@dataclass(frozen=True)
class Message:
    flags: int
    lsn: int
    prefix: str
    content: bytes
    xid: int | None = None


@dataclass(frozen=True)
class StreamStart:
    xid: int  # the top-level transaction's
    first: bool  # its first block


@dataclass(frozen=True)
class StreamStop:
    pass


@dataclass(frozen=True)
class StreamCommit:
    xid: int
    flags: int
    commit_lsn: int
    end_lsn: int
    commit_ts: int


@dataclass(frozen=True)
class StreamAbort:
    xid: int
    subxid: int  # == xid: the whole transaction; else one subtransaction (a savepoint)


PgOutputMessage = (
    Begin | Commit | Origin | Relation | Type | Insert | Update | Delete | Truncate | Message
    | StreamStart | StreamStop | StreamCommit | StreamAbort
)

_NAMES = {
    "B": "Begin", "C": "Commit", "O": "Origin", "R": "Relation", "Y": "Type", "I": "Insert",
    "U": "Update", "D": "Delete", "T": "Truncate", "M": "Message", "S": "Stream Start",
    "E": "Stream Stop", "c": "Stream Commit", "A": "Stream Abort",
}
_STREAMED = "RYIUDTM"  # the messages that carry an xid inside a streamed block


_INT16 = struct.Struct(">h")
_XLOG_HEADER = struct.Struct(">QQq")
_INT32 = struct.Struct(">i")


class _Reader:
    def __init__(self, data: bytes, what: str) -> None:
        self.data = data
        self.pos = 0
        self.what = what

    def fail(self, why: str, at: int | None = None) -> DecodeError:
        offset = self.pos if at is None else at
        return DecodeError(f"malformed {self.what} message at byte offset {offset}: {why}")

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise self.fail(f"needs {n} more bytes, {len(self.data) - self.pos} left")
        chunk = self.data[self.pos : self.pos + n]
        self.pos += n
        return chunk

    def unpack(self, fmt: str) -> int:
        return struct.unpack(fmt, self.take(struct.calcsize(fmt)))[0]

    def byte(self) -> str:
        return chr(self.take(1)[0])

    def string(self) -> str:
        end = self.data.find(b"\0", self.pos)
        if end < 0:
            raise self.fail("unterminated string")
        start, self.pos = self.pos, end + 1
        try:
            return self.data[start:end].decode("utf-8")
        except UnicodeDecodeError as exc:
            raise self.fail(f"invalid UTF-8 in string ({exc.reason})", start) from None

    def tuple_data(self) -> TupleData:
        # The hot path of the emitter (one call per change): a tight loop over the buffer
        # with unpack_from instead of a method call per field.
        data, pos, size = self.data, self.pos, len(self.data)
        if pos + 2 > size:
            raise self.fail(f"needs 2 more bytes, {size - pos} left")
        (count,) = _INT16.unpack_from(data, pos)
        pos += 2
        values: list[Value] = []
        append = values.append
        for _ in range(count):
            if pos >= size:
                self.pos = pos
                raise self.fail(f"needs 1 more bytes, {size - pos} left")
            at, kind = pos, data[pos]
            pos += 1
            if kind == 0x74 or kind == 0x62:  # 't' text, 'b' binary
                if pos + 4 > size:
                    self.pos = pos
                    raise self.fail(f"needs 4 more bytes, {size - pos} left")
                (length,) = _INT32.unpack_from(data, pos)
                pos += 4
                if length < 0 or pos + length > size:
                    self.pos = pos
                    raise self.fail(f"needs {length} more bytes, {size - pos} left")
                raw = data[pos:pos + length]
                pos += length
                if kind == 0x62:
                    append(bytes(raw))
                    continue
                if length > BIG_VALUE and isinstance(raw, memoryview):
                    append(raw)  # left encoded: a LOB is cut before it is decoded
                    continue
                try:
                    append(str(raw, "utf-8"))
                except UnicodeDecodeError as exc:
                    raise self.fail(f"invalid UTF-8 in text value ({exc.reason})", at) from None
            elif kind == 0x6E:  # 'n'
                append(None)
            elif kind == 0x75:  # 'u'
                append(UNCHANGED_TOAST)
            else:
                raise self.fail(f"unknown tuple value kind {chr(kind)!r}", at)
        self.pos = pos
        return tuple(values)

    def end(self) -> None:
        if self.pos != len(self.data):
            raise self.fail(f"{len(self.data) - self.pos} trailing bytes")


def decode(data: bytes | memoryview, streamed: bool = False) -> PgOutputMessage:
    """Decode one pgoutput message (the payload of an XLogData record). Row messages
    are read in place (a 64 MB value is not copied); the rest as bytes. `streamed`:
    the message is inside a Stream Start .. Stop block (it carries an xid)."""
    if not data:
        raise DecodeError("malformed message at byte offset 0: empty message")
    tag = chr(data[0])
    if tag not in "IUD":
        data = bytes(data)
    if tag not in _NAMES:
        raise DecodeError(f"malformed message at byte offset 0: unknown message type {tag!r}")
    r = _Reader(data, _NAMES[tag])
    r.pos = 1
    xid = r.unpack(">I") if streamed and tag in _STREAMED else None
    msg = _decode_body(tag, r, xid)
    r.end()
    return msg


class Decoder:
    """Decodes messages in stream order, knowing whether they are in a streamed block."""

    def __init__(self) -> None:
        self.streaming = False

    def decode(self, data: bytes | memoryview) -> PgOutputMessage:
        msg = decode(data, self.streaming)
        if isinstance(msg, StreamStart):
            if self.streaming:
                raise DecodeError(f"Stream Start of xid {msg.xid} inside a streamed block")
            self.streaming = True
        elif isinstance(msg, StreamStop):
            if not self.streaming:
                raise DecodeError("Stream Stop outside a streamed block")
            self.streaming = False
        return msg


def _decode_body(tag: str, r: _Reader, xid: int | None = None) -> PgOutputMessage:
    if tag == "S":
        return StreamStart(r.unpack(">I"), r.unpack(">B") == 1)
    if tag == "E":
        return StreamStop()
    if tag == "c":
        return StreamCommit(r.unpack(">I"), r.unpack(">B"), r.unpack(">Q"), r.unpack(">Q"),
                            r.unpack(">q"))
    if tag == "A":  # protocol 2: no abort LSN and time (those come with version 4)
        return StreamAbort(r.unpack(">I"), r.unpack(">I"))
    if tag == "B":
        return Begin(r.unpack(">Q"), r.unpack(">q"), r.unpack(">I"))
    if tag == "C":
        return Commit(r.unpack(">B"), r.unpack(">Q"), r.unpack(">Q"), r.unpack(">q"))
    if tag == "O":
        return Origin(r.unpack(">Q"), r.string())
    if tag == "R":
        oid, namespace, name, identity = r.unpack(">I"), r.string(), r.string(), r.byte()
        cols = tuple(
            Column(r.unpack(">B"), r.string(), r.unpack(">I"), r.unpack(">i"))
            for _ in range(r.unpack(">h"))
        )
        return Relation(oid, namespace, name, identity, cols, xid)
    if tag == "Y":
        return Type(r.unpack(">I"), r.string(), r.string(), xid)
    if tag == "I":
        oid = r.unpack(">I")
        _expect(r, "N")
        return Insert(oid, r.tuple_data(), xid)
    if tag == "U":
        oid = r.unpack(">I")
        at, kind = r.pos, r.byte()
        old_kind, old = None, None
        if kind in "KO":
            old_kind, old = kind, r.tuple_data()
            at, kind = r.pos, r.byte()
        if kind != "N":
            raise r.fail(f"expected 'N', 'K' or 'O', got {kind!r}", at)
        return Update(oid, old_kind, old, r.tuple_data(), xid)
    if tag == "D":
        oid = r.unpack(">I")
        at, kind = r.pos, r.byte()
        if kind not in "KO":
            raise r.fail(f"expected 'K' or 'O', got {kind!r}", at)
        return Delete(oid, kind, r.tuple_data(), xid)
    if tag == "T":
        count, options = r.unpack(">I"), r.unpack(">B")
        return Truncate(options, tuple(r.unpack(">I") for _ in range(count)), xid)
    # "M"
    flags, lsn, prefix = r.unpack(">B"), r.unpack(">Q"), r.string()
    return Message(flags, lsn, prefix, r.take(r.unpack(">I")), xid)


def _expect(r: _Reader, want: str) -> None:
    at, got = r.pos, r.byte()
    if got != want:
        raise r.fail(f"expected {want!r}, got {got!r}", at)


def pg_timestamp(micros: int) -> datetime:
    """A pgoutput timestamp (µs since 2000-01-01 UTC) as an aware UTC datetime."""
    return PG_EPOCH + timedelta(microseconds=micros)


def to_pg_timestamp(moment: datetime) -> int:
    delta = moment - PG_EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def format_lsn(lsn: int) -> str:
    return f"{lsn >> 32:X}/{lsn & 0xFFFFFFFF:X}"


def parse_lsn(text: str) -> int:
    hi, _, lo = text.partition("/")
    try:
        return (int(hi, 16) << 32) | int(lo, 16)
    except ValueError:
        raise ValueError(f"not an LSN: {text!r} (expected like '0/16B3748')") from None


# --- the streaming replication envelope (CopyData payloads) --------------------------
@dataclass(frozen=True)
class XLogData:
    start_lsn: int
    end_lsn: int
    send_time: int
    payload: bytes | memoryview


@dataclass(frozen=True)
class Keepalive:
    end_lsn: int
    send_time: int
    reply_requested: bool


def decode_copy_data(data: bytes | memoryview) -> XLogData | Keepalive:
    view = memoryview(data)
    what = {"w": "XLogData", "k": "keepalive"}.get(chr(view[0]) if view else "", "CopyData")
    if what == "XLogData" and len(view) >= _XLOG_HEADER.size + 1:
        start, end, sent = _XLOG_HEADER.unpack_from(view, 1)
        return XLogData(start, end, sent, view[1 + _XLOG_HEADER.size:])  # no copy
    data = bytes(view)
    r = _Reader(data, what)
    tag = r.byte() if data else ""
    if tag == "w":
        return XLogData(r.unpack(">Q"), r.unpack(">Q"), r.unpack(">q"), data[r.pos :])
    if tag == "k":
        msg = Keepalive(r.unpack(">Q"), r.unpack(">q"), r.unpack(">B") == 1)
        r.end()
        return msg
    raise DecodeError(f"malformed CopyData at byte offset 0: unknown type {tag!r}")


def standby_status(flush_lsn: int, now_ts: int, reply: bool = False) -> bytes:
    """'r' standby status update: written = flushed = applied = flush_lsn."""
    return b"r" + struct.pack(">QQQqB", flush_lsn, flush_lsn, flush_lsn, now_ts, int(reply))


def to_pg_timestamp_now() -> int:
    return to_pg_timestamp(datetime.now(UTC))
