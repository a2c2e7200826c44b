"""A Parquet object (DataFormat parquet), checked from its metadata before any data is
read (object_gate.py picks the check by the key). Deployed next to lambda_function.py:
no cdclab import.

`PAR1` at both ends, a footer within `max_parquet_footer_bytes`, parsed here (Thrift
compact, no library needed) and held to the object: column chunks inside the file, row
groups of at most `max_row_group_rows`, decompressed sizes within `max_object_bytes`;
every page header walked (sizes that add up, pages within the read budget). Only then,
where pyarrow is importable, every row group is read in small batches.
"""

from __future__ import annotations

import io
import struct
from array import array
from collections.abc import Iterator

try:  # in the repository
    from lambda_shim.gate_base import (
        Bad,
        Defect,
        Limits,
        ReadError,
        Source,
        over_object,
        reading,
    )
except ImportError:  # deployed: the files at the zip's root
    from gate_base import (
        Bad,
        Defect,
        Limits,
        ReadError,
        Source,
        over_object,
        reading,
    )

PARQUET_MAGIC = b"PAR1"

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

    def bad(self, why: str) -> Bad:
        return Bad(Defect(f"not readable Parquet: {self.what}: {why}"))

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
                        raise Bad(over_object(limits.max_object_bytes))
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
                raise Bad(Defect(f"not readable Parquet: {where}: more pages than its "
                                  f"{values} values"))
            header, size = reader.header(min(header_limit, length - at), where)
            # PageHeader: 1 type, 2 uncompressed size, 3 compressed size; 5 DataPageHeader,
            # 7 DictionaryPageHeader, 8 DataPageHeaderV2, each with 1 num_values
            if min(header[2], header[3]) < 0:
                raise Bad(Defect(f"not readable Parquet: {where}: a page with a negative "
                                  "size"))
            if header[3] > length - at - size:
                raise Bad(Defect(f"not readable Parquet: {where}: a {header[3]}-byte page "
                                  f"passes the chunk's end"))
            if header[2] > uncompressed:
                raise Bad(Defect(f"not readable Parquet: {where}: a page of {header[2]} "
                                  f"bytes in a chunk of {uncompressed}"))
            if header[1] != 2:  # a dictionary page holds no values of rows
                seen += header["values"]
            largest = max(largest, header[2])
            reader.skip(header[3])
            at += size + header[3]
        if seen > values or values > groups[g]:  # DMS's columns are flat: a value a row
            raise Bad(Defect(f"not readable Parquet: {where}: {max(seen, values)} values "
                              f"in a row group of {groups[g]} rows"))
        budget[g] = budget.get(g, 0) + largest
        if budget[g] > limits.max_parquet_read_bytes:
            raise Bad(Defect(
                f"row group {g}'s largest pages add up to more than "
                f"{limits.max_parquet_read_bytes} bytes (the gate's limit "
                "GATE_MAX_PARQUET_READ_BYTES, from DMS's DataPageSize): more than a reader "
                "may hold at once"))


class _Window:
    """A column chunk's bytes, read forward: page headers parsed from a window, page data
    skipped (memory: the window, at most a page header's limit, and a read piece)."""

    def __init__(self, chunks: Iterator[bytes]) -> None:
        self.chunks, self.buf, self.off = reading(chunks), b"", 0

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
                    raise Bad(Defect(f"not readable Parquet: {where}: a page header that "
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
    head = b"".join(reading(source.read(0, 4))) if size >= 12 else b""
    tail = b"".join(reading(source.read(size - 8, size))) if size >= 12 else b""
    if bad := parquet_structure_defect(head, tail, size):
        return bad
    (length,) = struct.unpack("<I", tail[:4])
    if length > limits.max_parquet_footer_bytes:
        return Defect(f"a {length}-byte Parquet footer (the gate's limit "
                      f"GATE_MAX_PARQUET_FOOTER_BYTES is {limits.max_parquet_footer_bytes})")
    data_end = size - 8 - length
    footer = b"".join(reading(source.read(data_end, size - 8)))
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
