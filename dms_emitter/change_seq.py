"""The change sequence ($AR_H_CHANGE_SEQ): orders every change, replays included.

Two layouts, both fixed-width 35-digit decimal strings (string order = numeric order):
DMS's (the default, below), and the lab's "lsn" layout: 20 digits of commit LSN, then
15 digits of the change's position in its transaction, which orders by commit even if
the source's clock steps back. Full-load rows: DMS leaves the column empty; the lsn
layout gives them the slot's consistent point minus one and their row number.
"""

from __future__ import annotations

LSN_DIGITS = 20
POSITION_DIGITS = 15
WIDTH = LSN_DIGITS + POSITION_DIGITS
MAX_LSN = 2**64 - 1
MAX_POSITION = 10**POSITION_DIGITS - 1


def change_seq(commit_lsn: int, position: int) -> str:
    if not 0 <= commit_lsn <= MAX_LSN:
        raise ValueError(f"commit LSN {commit_lsn} out of range 0..{MAX_LSN}")
    if not 1 <= position <= MAX_POSITION:
        raise ValueError(f"position in transaction {position} out of range 1..{MAX_POSITION}")
    return f"{commit_lsn:0{LSN_DIGITS}d}{position:0{POSITION_DIGITS}d}"


def full_load_seq(row_number: int, consistent_lsn: int = 1) -> str:
    """Full-load row `row_number` (1-based) of the load taken at the slot's consistent
    point: just below it, so the rows order before every CDC change of that slot (whose
    commits are at or after the consistent point) and after everything of an earlier
    load or slot — a redone full load wins over what it replaces."""
    return change_seq(max(consistent_lsn - 1, 0), row_number)


def split_change_seq(seq: str) -> tuple[int, int]:
    """(commit LSN, position) of a change sequence; ValueError names a bad value."""
    if len(seq) != WIDTH or not seq.isdigit():
        raise ValueError(f"change_seq {seq!r} is not {WIDTH} decimal digits")
    return int(seq[:LSN_DIGITS]), int(seq[LSN_DIGITS:])


# --- DMS's layout --------------------------------------------------------------------
# $AR_H_CHANGE_SEQ as Qlik Replicate (DMS's engine) documents it: YYYYMMDDHHmmSShh, the
# commit time to the hundredth, then a 19-digit zero-prefixed change number. AWS says only
# "a timestamp and an auto-incrementing number". The lab's change number is the change's
# own WAL position: unique, and for one row always in commit order (a second transaction
# can change a row only after the first committed, so its change lies later in the WAL).
# A multi-row WAL record (COPY) gives several changes one position: they take the next
# numbers, still inside the record (every tuple in it takes more than a byte).
LAYOUT_DMS, LAYOUT_LSN = "dms", "lsn"
LAYOUTS = (LAYOUT_DMS, LAYOUT_LSN)
COUNTER_DIGITS = 19
MAX_COUNTER = 10**COUNTER_DIGITS - 1


def dms_time_prefix(commit_time_us: int) -> str:
    """YYYYMMDDHHmmSShh of a pgoutput commit time (µs since 2000-01-01 UTC)."""
    from dms_emitter.pgoutput import pg_timestamp

    moment = pg_timestamp(commit_time_us)
    return f"{moment:%Y%m%d%H%M%S}{moment.microsecond // 10_000:02d}"


def dms_change_seq(commit_time_us: int, change_number: int, prefix: str | None = None) -> str:
    """`prefix`: dms_time_prefix(commit_time_us), when the caller has it already."""
    if not 0 <= change_number <= MAX_COUNTER:
        raise ValueError(f"change number {change_number} out of range 0..{MAX_COUNTER}")
    return f"{prefix or dms_time_prefix(commit_time_us)}{change_number:0{COUNTER_DIGITS}d}"
