"""Reference model of the bronze -> silver merge rules (pure, no Spark).

jobs/bronze_to_silver.py implements the same rules in Spark SQL; the integration test
checks the job against this model, and `cdclab reconcile` uses the cleaning helpers to
compute the expected silver table from the source.

Rules (DESIGN.md invariants 2 and 4):
- per id, only the change with the greatest change_seq of a batch counts (one
  transaction shares a commit time, so timestamps cannot order changes);
- a change with change_seq <= the id's tombstone seq is dropped (no resurrection);
- matched and newer: 'D' deletes, 'I'/'U' replace every column;
- not matched: 'I'/'U' inserts, 'D' does nothing (insert+delete in a batch inserts nothing);
- the tombstone of every delete of the batch is upserted, keeping the max seq;
- a 'U' whose before image of the key (add-before-image-columns) differs from its key
  moved the row: it also deletes the old key, at its own change_seq (`old_key_deletes`),
  so a chain of key changes leaves the last key only and tombstones the others.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date, datetime

OPS = ("I", "U", "D")
CHANGE_SEQ_DIGITS = 35  # 20-digit commit LSN + 15-digit position in the transaction
# Java's \s (what Spark's split uses) is ASCII whitespace only; Python's is Unicode.
_LOCATION_SPLIT = re.compile(r",[ \t\n\x0b\f\r]*")


@dataclass(frozen=True)
class Change:
    """One validated bronze row (a CDC change or a full-load row)."""

    op: str
    id: int
    change_seq: str
    last_updated_ts: datetime  # UTC, naive
    url: str | None = None
    name: str | None = None
    since: date | None = None
    location: str | None = None
    response_time: str | None = None
    response_rate: str | None = None
    # the key's before image: on a U, the key the row had when PostgreSQL logged it
    # (REPLICA IDENTITY DEFAULT: only when the key changed); None when empty
    before_id: int | None = None

    @property
    def moved(self) -> bool:
        """A U that changed the key: the old key is gone from the source."""
        return self.op == "U" and self.before_id is not None and self.before_id != self.id


@dataclass(frozen=True)
class Row:
    """One silver row."""

    last_updated_ts: datetime
    id: int
    url: str | None
    name: str | None
    since: date | None
    location_city: str | None
    location_country: str | None
    response_time: str | None
    response_rate: str | None
    change_seq: str


Silver = dict[int, Row]
Tombstones = dict[int, str]


def clean_location(location: str | None) -> tuple[str | None, str | None]:
    """Split at the first comma (plus optional whitespace): (city, country)."""
    if location is None:
        return None, None
    parts = _LOCATION_SPLIT.split(location, maxsplit=1)
    return parts[0], (parts[1] if len(parts) > 1 else None)


clean = clean_location  # the name the brief uses


def clean_row(change: Change) -> Row:
    city, country = clean_location(change.location)
    return Row(
        last_updated_ts=change.last_updated_ts,
        id=change.id,
        url=change.url,
        name=change.name,
        since=change.since,
        location_city=city,
        location_country=country,
        response_time=change.response_time,
        response_rate=change.response_rate,
        change_seq=change.change_seq,
    )


def old_key_deletes(changes: Iterable[Change]) -> list[Change]:
    """The changes plus, before each U that moved its row, a D of the old key with the
    U's change_seq and commit time (one row, one sequence: no other change of that key
    can share it)."""
    out: list[Change] = []
    for c in changes:
        if c.moved:
            assert c.before_id is not None
            out.append(Change("D", c.before_id, c.change_seq, c.last_updated_ts))
        out.append(c)
    return out


def dedup(changes: Iterable[Change]) -> dict[int, Change]:
    """The change with the greatest change_seq per id."""
    latest: dict[int, Change] = {}
    for c in changes:
        if c.id not in latest or c.change_seq > latest[c.id].change_seq:
            latest[c.id] = c
    return latest


def apply_batch(
    silver: Silver, tombstones: Tombstones, changes: list[Change]
) -> tuple[Silver, Tombstones]:
    """Apply one batch; returns new dicts (inputs are not modified)."""
    silver, tombstones = dict(silver), dict(tombstones)
    winners = dedup(old_key_deletes(changes))
    for key, c in winners.items():
        if c.change_seq <= tombstones.get(key, ""):
            continue
        current = silver.get(key)
        if current is not None:
            if c.change_seq <= current.change_seq:
                continue
            if c.op == "D":
                del silver[key]
            else:
                silver[key] = clean_row(c)
        elif c.op != "D":
            silver[key] = clean_row(c)
    for key, c in winners.items():
        if c.op == "D" and c.change_seq > tombstones.get(key, ""):
            tombstones[key] = c.change_seq
    return silver, tombstones


def apply_in_order(changes: Iterable[Change]) -> Silver:
    """Ground truth: every change applied alone, in change_seq order (a moved row's old
    key deleted as its U is applied)."""
    silver: Silver = {}
    tombstones: Tombstones = {}
    for c in sorted(old_key_deletes(changes), key=lambda c: c.change_seq):
        silver, tombstones = apply_batch(silver, tombstones, [c])
    return silver


def make_change_seq(lsn: int, position: int) -> str:
    """The 35-digit change_seq: zero-padded commit LSN (20) + position (15)."""
    return f"{lsn:020d}{position:015d}"
