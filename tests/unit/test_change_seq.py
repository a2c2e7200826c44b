"""change_seq: fixed width, string order == (LSN, position) order, full load first."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dms_emitter.change_seq import (
    MAX_COUNTER,
    MAX_LSN,
    MAX_POSITION,
    WIDTH,
    change_seq,
    dms_change_seq,
    full_load_seq,
    split_change_seq,
)

lsn = st.integers(1, MAX_LSN)
pos = st.integers(1, MAX_POSITION)


@given(lsn, pos)
def test_fixed_width_and_round_trip(commit_lsn: int, position: int) -> None:
    seq = change_seq(commit_lsn, position)
    assert len(seq) == WIDTH and seq.isdigit()
    assert split_change_seq(seq) == (commit_lsn, position)


@given(st.lists(st.tuples(lsn, pos), min_size=2, max_size=30, unique=True))
def test_string_order_is_change_order(changes: list[tuple[int, int]]) -> None:
    ordered = sorted(changes)
    seqs = [change_seq(*c) for c in ordered]
    assert all(a < b for a, b in zip(seqs, seqs[1:], strict=False))  # strictly increasing


@given(st.integers(1, MAX_POSITION), st.integers(2, MAX_LSN // 2), st.integers(0, MAX_LSN // 2),
       pos)
def test_full_load_orders_before_its_cdc_and_after_everything_earlier(
    row: int, consistent: int, offset: int, p: int
) -> None:
    """A load taken at the slot's consistent point sorts before every change that slot
    streams (commits at or after the point) and after any earlier load or change."""
    load = full_load_seq(row, consistent)
    assert load < change_seq(consistent + offset, p)
    earlier = consistent - 2 - offset % (consistent - 1)  # any LSN below the load's
    if earlier >= 0:
        assert change_seq(earlier, p) < load
        assert full_load_seq(row, earlier + 1) < load  # an older load loses


def test_out_of_range_is_rejected_clearly() -> None:
    with pytest.raises(ValueError, match="position in transaction 0"):
        change_seq(5, 0)
    with pytest.raises(ValueError, match="commit LSN"):
        change_seq(MAX_LSN + 1, 1)
    with pytest.raises(ValueError, match="35 decimal digits"):
        split_change_seq("12x")


@given(st.integers(0, 10**17), st.integers(0, 10**17), st.integers(0, MAX_COUNTER),
       st.integers(0, MAX_COUNTER))
def test_dms_layout_orders_by_commit_time_then_change_number(t1: int, t2: int, n1: int,
                                                             n2: int) -> None:
    a, b = dms_change_seq(t1, n1), dms_change_seq(t2, n2)
    assert len(a) == 35 and a.isdigit()
    if t1 // 10_000 != t2 // 10_000:  # hundredths of a second
        assert (a < b) == (t1 < t2)
    else:
        assert (a < b) == (n1 < n2)


def test_dms_layout_spells_the_commit_time() -> None:
    from dms_emitter.pgoutput import to_pg_timestamp

    moment = to_pg_timestamp(datetime(2026, 11, 23, 10, 15, 0, 123456, tzinfo=UTC))
    assert dms_change_seq(moment, 42) == "2026112310150012" + "42".zfill(19)


def test_rows_sharing_one_wal_position_get_distinct_numbers() -> None:
    from dms_emitter import pgoutput as pg
    from dms_emitter.changes import one_table

    b = one_table("public", "t", ["id"])
    b.feed(pg.Relation(7, "public", "t", "d", (pg.Column(1, "id", 23, -1),)))
    b.feed(pg.Begin(900, 0, 1), 100)
    for i in range(3):  # one multi-insert record (COPY): one position, three rows
        b.feed(pg.Insert(7, (str(i),)), 500)
    b.feed(pg.Insert(7, ("9",)), 700)
    txn = b.feed(pg.Commit(0, 900, 950, 0), 950)
    assert txn is not None
    numbers = [int(line.rstrip().rsplit(",", 1)[1][16:]) for line in txn.lines]
    assert numbers == [500, 501, 502, 700]
