"""The change sequence, like DMS AR_H_CHANGE_SEQ: orders every change, replays included.

A fixed-width 35-digit decimal string: 20 digits of commit LSN, then 15 digits of the
change's position in its transaction. Fixed width makes string order equal numeric order.
Full-load rows use LSN 0 and their row number, so they sort before every CDC change.
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
