"""The rows of a transaction PostgreSQL streams while it is in progress, kept until it ends.

pgoutput (protocol 2, `streaming 'on'`) sends a transaction whose decoded changes pass
`logical_decoding_work_mem` before its commit, so the emitter renders them as they come
instead of all at the commit. Nothing of it may be written before Stream Commit: it can
still abort, whole or one savepoint at a time. Past `memory_bytes` the rows go to an
anonymous temporary file (as PostgreSQL's own subscriber spills streamed changes), so a
transaction of any size is held in bounded memory.
"""

from __future__ import annotations

import pickle
import struct
import tempfile
from collections.abc import Iterator
from typing import IO, Any

DEFAULT_MEMORY_BYTES = 16 * 2**20  # of messages: about 25 MB of rendered rows
_LENGTH = struct.Struct(">Q")
ROW_OVERHEAD = 64  # bytes counted per row besides its message, for tiny changes


class StreamedTransaction:
    """One top-level transaction's rows in stream order. A row is any picklable value;
    the objects it refers to by `ref` (its table) stay in memory, one entry each."""

    def __init__(self, xid: int, memory_bytes: int = DEFAULT_MEMORY_BYTES) -> None:
        self.xid = xid
        self.memory_bytes = memory_bytes
        self.rows: list[Any] = []  # the newest rows, in memory
        self.held = 0  # bytes counted for self.rows
        self.count = 0  # rows added so far: the next row's number
        self.number = -1  # the last change number given (its owner's, DMS's layout)
        self._first: dict[int, int] = {}  # subxid -> number of its first row
        self.dropped: list[tuple[int, int]] = []  # [start, end) row numbers rolled back
        self._refs: list[object] = []
        self._ref_index: dict[int, int] = {}  # id(object) -> position in _refs
        self._spill: IO[bytes] | None = None

    def ref(self, obj: object) -> int:
        """A small number standing for `obj` in rows (what a spill file can hold)."""
        at = self._ref_index.get(id(obj))
        if at is None:
            at = self._ref_index[id(obj)] = len(self._refs)
            self._refs.append(obj)
        return at

    def deref(self, at: int) -> Any:
        return self._refs[at]

    def add(self, subxid: int, row: Any, size: int = 0) -> None:
        """`subxid`: the (sub)transaction that made the row; `size`: its message's bytes."""
        self._first.setdefault(subxid, self.count)
        self.rows.append(row)
        self.count += 1
        self.held += size + ROW_OVERHEAD
        if self.held >= self.memory_bytes:
            self._spill_rows()

    def abort(self, subxid: int) -> None:
        """A savepoint rolled back: every row from its first one on is left out, as
        PostgreSQL's subscriber truncates its stream file there. What followed in the
        stream was the savepoint's own or its children's (the rest of the transaction
        waits for the rollback)."""
        start = self._first.pop(subxid, None)
        if start is None:
            return  # nothing of it was sent
        self.dropped.append((start, self.count))
        for later in [x for x, first in self._first.items() if first >= start]:
            del self._first[later]

    @property
    def spilled(self) -> bool:
        return self._spill is not None

    def _spill_rows(self) -> None:
        if self._spill is None:
            # closed by close(), at the transaction's end
            self._spill = tempfile.TemporaryFile(prefix="cdclab-streamed-")  # noqa: SIM115
        chunk = pickle.dumps(self.rows, protocol=pickle.HIGHEST_PROTOCOL)
        self._spill.write(_LENGTH.pack(len(chunk)))
        self._spill.write(chunk)
        self.rows, self.held = [], 0

    def committed_rows(self) -> Iterator[Any]:
        """Every row not rolled back, in stream order; then the transaction is closed."""
        dropped = self.dropped
        try:
            for number, row in enumerate(self._all_rows()):
                if dropped and any(start <= number < end for start, end in dropped):
                    continue
                yield row
        finally:
            self.close()

    def _all_rows(self) -> Iterator[Any]:
        if self._spill is not None:
            self._spill.seek(0)
            while header := self._spill.read(_LENGTH.size):
                (length,) = _LENGTH.unpack(header)
                yield from pickle.loads(self._spill.read(length))  # noqa: S301 - our own file
        yield from self.rows

    def close(self) -> None:
        if self._spill is not None:
            self._spill.close()
            self._spill = None
        self.rows = []
