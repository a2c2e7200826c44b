"""Pure batcher: groups whole transactions into files like DMS CdcMaxBatchInterval/CdcMinFileSize.

A batch closes at a transaction boundary once its oldest transaction has waited
`interval_s` or its size reached `size_bytes`. Transactions are added whole. A file
holds one header: a schema change (a new column list) starts a new file, even inside a
transaction, so the writer splits a batch into runs of one table and one header.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Segment:
    folder: str  # the table's folder (<schema>/<table>)
    header: tuple[str, ...]  # the columns these rows carry
    lines: tuple[str, ...]  # encoded CSV rows


@dataclass(frozen=True)
class Transaction:
    commit_lsn: int
    end_lsn: int  # confirming this LSN releases the transaction from the slot
    segments: tuple[Segment, ...]
    size: int  # bytes of all lines (UTF-8)

    @classmethod
    def of(cls, commit_lsn: int, end_lsn: int, lines: list[str],
           header: tuple[str, ...] = (), folder: str = "") -> Transaction:
        return cls.of_segments(commit_lsn, end_lsn, [Segment(folder, header, tuple(lines))])

    @classmethod
    def of_segments(cls, commit_lsn: int, end_lsn: int,
                    segments: list[Segment]) -> Transaction:
        kept = tuple(s for s in segments if s.lines)
        size = sum(len(line.encode()) for s in kept for line in s.lines)
        return cls(commit_lsn, end_lsn, kept, size)

    @property
    def lines(self) -> tuple[str, ...]:
        return tuple(line for s in self.segments for line in s.lines)


@dataclass
class Batch:
    transactions: list[Transaction] = field(default_factory=list)
    size: int = 0
    opened_at: float = 0.0

    @property
    def end_lsn(self) -> int:
        return self.transactions[-1].end_lsn

    @property
    def lines(self) -> list[str]:
        return [line for t in self.transactions for line in t.lines]

    def files(self) -> list[Segment]:
        """The batch as files: per table folder, consecutive rows of one header share a
        file; a table's files keep its rows in order."""
        runs: list[tuple[str, tuple[str, ...], list[str]]] = []
        last: dict[str, int] = {}
        for seg in (s for t in self.transactions for s in t.segments):
            i = last.get(seg.folder)
            if i is None or runs[i][1] != seg.header:
                last[seg.folder] = i = len(runs)
                runs.append((seg.folder, seg.header, []))
            runs[i][2].extend(seg.lines)
        return [Segment(folder, header, tuple(lines)) for folder, header, lines in runs]


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
        return bool(self._batch.transactions)

    def add(self, txn: Transaction, now: float) -> None:
        if not self._batch.transactions:
            self._batch.opened_at = now
        self._batch.transactions.append(txn)
        self._batch.size += txn.size

    def ready(self, now: float) -> bool:
        b = self._batch
        return bool(b.transactions) and (
            b.size >= self.size_bytes or now - b.opened_at >= self.interval_s
        )

    def seconds_until_due(self, now: float) -> float | None:
        """How long the caller may block before `ready` can turn true by time alone."""
        if not self._batch.transactions:
            return None
        return max(0.0, self._batch.opened_at + self.interval_s - now)

    def take(self) -> Batch:
        batch, self._batch = self._batch, Batch()
        return batch
