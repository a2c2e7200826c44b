"""Pure batcher: rows of committed transactions into files, like DMS's
CdcMaxBatchInterval / CdcMinFileSize.

A batch is due once its oldest row has waited `interval_s` or its rows reach
`size_bytes`, also in the middle of a transaction: DMS's files are not transaction
bounded, and memory stays bounded by the batch size, not the transaction's. (Rows arrive
only for committed transactions, pgoutput protocol 1, so writing part of one is safe;
the slot is confirmed only at transaction ends whose rows are all stored.) A file holds
one table and one header: a schema change starts a new file.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Segment:
    folder: str  # the table's folder (<schema>/<table>)
    header: tuple[str, ...]  # the columns these rows carry
    lines: tuple[str, ...]  # encoded CSV rows


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
class Batch:
    """Rows in runs of one table folder and one header; a table's runs keep its order."""

    runs: list[tuple[str, tuple[str, ...], list[str]]] = field(default_factory=list)
    last: dict[str, int] = field(default_factory=dict)  # folder -> index of its last run
    size: int = 0
    rows: int = 0
    opened_at: float = 0.0

    def add(self, folder: str, header: tuple[str, ...], line: str, size: int = 0) -> None:
        """`size`: the line's bytes, when the caller counts them (the batcher does)."""
        i = self.last.get(folder)
        if i is None or self.runs[i][1] != header:
            self.last[folder] = i = len(self.runs)
            self.runs.append((folder, header, []))
        self.runs[i][2].append(line)
        self.size += size
        self.rows += 1

    def files(self) -> list[Segment]:
        return [Segment(folder, header, tuple(lines)) for folder, header, lines in self.runs]


class Batcher:
    def __init__(self, interval_s: float, size_bytes: int) -> None:
        if interval_s <= 0 or size_bytes <= 0:
            raise ValueError(f"batch interval ({interval_s}s) and size ({size_bytes} bytes) "
                             "must be positive")
        self.interval_s = interval_s
        self.size_bytes = size_bytes
        self._batch = Batch()

    @property
    def pending(self) -> bool:
        return self._batch.rows > 0

    def add_row(self, folder: str, header: tuple[str, ...], line: str, now: float) -> None:
        if not self._batch.rows:
            self._batch.opened_at = now
        self._batch.add(folder, header, line, line_size(line))

    def add(self, txn: Transaction, now: float) -> None:
        """All rows of a transaction the builder collected whole."""
        for seg in txn.segments:
            for line in seg.lines:
                self.add_row(seg.folder, seg.header, line, now)

    def size_reached(self) -> bool:
        return self._batch.size >= self.size_bytes

    def ready(self, now: float) -> bool:
        b = self._batch
        return b.rows > 0 and (b.size >= self.size_bytes or now - b.opened_at >= self.interval_s)

    def seconds_until_due(self, now: float) -> float | None:
        """How long the caller may block before `ready` can turn true by time alone."""
        if not self._batch.rows:
            return None
        return max(0.0, self._batch.opened_at + self.interval_s - now)

    def take(self) -> Batch:
        batch, self._batch = self._batch, Batch()
        return batch
