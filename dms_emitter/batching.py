"""Pure batcher: rows of committed transactions into files, like DMS's
CdcMaxBatchInterval / CdcMinFileSize.

Rows are CSV lines (for Parquet in CsvFormat.line_format's layout, so memory and
CdcMinFileSize count the same text bytes). Each table has its own batch, as DMS cuts its
files per table (real output: each table's file closes CdcMaxBatchInterval after that
table's own first change; docs/dms-fidelity.md): a table's batch is due once its oldest
row has waited `interval_s` or its rows reach `size_bytes`, also in the middle of a
transaction: DMS's files are not transaction bounded, and memory stays bounded by the
batch size, not the transaction's. (Rows arrive only for committed transactions,
pgoutput protocol 1, so writing part of one is safe.) With `quiet_s` (the lab's own cut,
never DMS's) a batch is also due once no row has come for that long, between
transactions: an idle source's change is written at once instead of after the whole
interval, while a steady stream still fills its batch. The lab's short interval also
waits while a transaction is read: its rows go into one file up to the size, as DMS's
60 s interval gives a big transaction, not one file per second of its decoding (or per
pause while the server decodes it from disk).

The slot may be confirmed up to `safe_lsn()`: each batch remembers the end of the last
transaction complete before its first row arrived, and nothing after the oldest such
point is confirmed while that batch waits, so a crash replays its rows, never skips them.
A file holds one table, one header (and, for Parquet, one set of column types) and one
date folder: a schema change or a new commit date starts a new file.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Segment:
    folder: str  # the table's folder (<schema>/<table>)
    header: tuple[str, ...]  # the columns these rows carry
    lines: tuple[str, ...]  # encoded CSV rows
    types: tuple = ()  # Parquet: the columns' ColumnType, in header order
    partition: str = ""  # DatePartitionEnabled: the date folder below the table's


def line_size(line: str) -> int:
    """UTF-8 bytes of a line, without encoding it when it is ASCII (the usual case)."""
    return len(line) if line.isascii() else len(line.encode())


@dataclass(frozen=True)
class Transaction:
    commit_lsn: int
    end_lsn: int  # confirming this LSN releases the transaction from the slot
    segments: tuple[Segment, ...]  # empty when the builder handed rows out as they came
    size: int  # bytes of all lines (UTF-8)

    @classmethod
    def of(cls, commit_lsn: int, end_lsn: int, lines: list[str],
           header: tuple[str, ...] = (), folder: str = "") -> Transaction:
        return cls.of_segments(commit_lsn, end_lsn, [Segment(folder, header, tuple(lines))])

    @classmethod
    def of_segments(cls, commit_lsn: int, end_lsn: int,
                    segments: list[Segment]) -> Transaction:
        kept = tuple(s for s in segments if s.lines)
        size = sum(line_size(line) for s in kept for line in s.lines)
        return cls(commit_lsn, end_lsn, kept, size)

    @property
    def lines(self) -> tuple[str, ...]:
        return tuple(line for s in self.segments for line in s.lines)


@dataclass
class _Run:
    folder: str
    header: tuple[str, ...]
    types: tuple
    partition: str
    lines: list[str] = field(default_factory=list)


@dataclass
class Batch:
    """Rows in runs of one table folder, header, types and date folder; a table's runs
    keep its order."""

    runs: list[_Run] = field(default_factory=list)
    last: dict[str, int] = field(default_factory=dict)  # folder -> index of its last run
    size: int = 0
    rows: int = 0
    opened_at: float = 0.0
    last_at: float = 0.0  # when its newest row came

    def add(self, folder: str, header: tuple[str, ...], line: str, size: int = 0,
            types: tuple = (), partition: str = "") -> None:
        """`size`: the line's bytes, when the caller counts them (the batcher does)."""
        i = self.last.get(folder)
        if i is None or (self.runs[i].header, self.runs[i].types,
                         self.runs[i].partition) != (header, types, partition):
            self.last[folder] = i = len(self.runs)
            self.runs.append(_Run(folder, header, types, partition))
        self.runs[i].lines.append(line)
        self.size += size
        self.rows += 1

    def files(self) -> list[Segment]:
        return [Segment(r.folder, r.header, tuple(r.lines), r.types, r.partition)
                for r in self.runs]


class Batcher:
    def __init__(self, interval_s: float, size_bytes: int, quiet_s: float = 0.0) -> None:
        if interval_s <= 0 or size_bytes <= 0 or quiet_s < 0:
            raise ValueError(f"batch interval ({interval_s}s) and size ({size_bytes} bytes) "
                             f"must be positive, the quiet cut ({quiet_s}s) not negative")
        self.interval_s = interval_s
        self.size_bytes = size_bytes
        self.quiet_s = quiet_s  # 0: off (DMS's rule alone)
        # the caller is reading a transaction's rows: no quiet cut until it is complete
        self.mid_transaction = False
        self._batches: dict[str, Batch] = {}  # per table folder, in the order opened
        self._safe: dict[str, int] = {}  # per folder: confirmable while its batch waits

    @property
    def pending(self) -> bool:
        return bool(self._batches)

    def add_row(self, folder: str, header: tuple[str, ...], line: str, now: float,
                types: tuple = (), partition: str = "", safe_lsn: int = 0) -> None:
        """`safe_lsn`: the end LSN of the last transaction complete before this row's."""
        batch = self._batches.get(folder)
        if batch is None:
            batch = self._batches[folder] = Batch(opened_at=now)
            self._safe[folder] = safe_lsn
        batch.add(folder, header, line, line_size(line), types, partition)
        batch.last_at = now

    def add(self, txn: Transaction, now: float, safe_lsn: int = 0) -> None:
        """All rows of a transaction the builder collected whole."""
        for seg in txn.segments:
            for line in seg.lines:
                self.add_row(seg.folder, seg.header, line, now, seg.types, seg.partition,
                             safe_lsn)

    def _due(self, batch: Batch, now: float) -> bool:
        return batch.size >= self.size_bytes or now >= self._due_at(batch)

    def _due_at(self, batch: Batch) -> float:
        at = batch.opened_at + self.interval_s
        if self.quiet_s <= 0:
            return at
        if self.mid_transaction:  # the lab's rule: a transaction's rows, up to the size
            return math.inf
        return min(at, batch.last_at + self.quiet_s)

    def size_reached(self) -> bool:
        return any(b.size >= self.size_bytes for b in self._batches.values())

    def ready(self, now: float) -> bool:
        return any(self._due(b, now) for b in self._batches.values())

    def seconds_until_due(self, now: float) -> float | None:
        """How long the caller may block before `ready` can turn true by time alone."""
        if not self._batches:
            return None
        return max(0.0, min(self._due_at(b) for b in self._batches.values()) - now)

    def safe_lsn(self) -> int | None:
        """The highest LSN the slot may be confirmed to while batches wait (None: none
        waits, every row received is stored)."""
        return min(self._safe.values()) if self._safe else None

    def take(self, now: float | None = None) -> Batch:
        """The batches due at `now` (all of them when `now` is None: a flush), as one."""
        out = Batch()
        for folder in list(self._batches):
            batch = self._batches[folder]
            if now is not None and not self._due(batch, now):
                continue
            del self._batches[folder], self._safe[folder]
            out.opened_at = min(out.opened_at, batch.opened_at) if out.rows else batch.opened_at
            out.runs += batch.runs
            out.size += batch.size
            out.rows += batch.rows
        return out
