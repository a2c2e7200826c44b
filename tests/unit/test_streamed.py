"""A transaction streamed while in progress gives the rows it would have given whole."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dms_emitter import pgoutput as pg
from dms_emitter.batching import Transaction
from dms_emitter.changes import ChangeBuilder, ChangeError, one_table
from dms_emitter.dms_csv import CsvFormat
from dms_emitter.streamed import StreamedTransaction
from tests.unit.test_pgoutput import REL, ROW

TOP = 700  # the streamed transaction's xid
COMMIT = pg.StreamCommit(TOP, 0, 9_000, 9_100, 86_400_000_000)
OTHER = 800  # a small transaction committed between the blocks


def builder(memory_bytes: int = 1 << 20, before_image: bool = True,
            **options: object) -> ChangeBuilder:
    b = one_table("public", "hosts_demo", ["id"], before_image=before_image,
                  stream_memory_bytes=memory_bytes, **options)
    b.feed(REL)
    return b


@dataclass(frozen=True)
class Change:
    lsn: int
    msg: pg.Insert | pg.Update | pg.Delete
    subxid: int


def row(key: int, name: str) -> tuple:
    return (str(key), *ROW[1:2], name, *ROW[3:])


# a change: insert, update (maybe of the key) or delete of a key 1..5
change = st.builds(
    lambda kind, key, other, name: (
        pg.Insert(7, row(key, name)) if kind == 0
        else pg.Update(7, "O", row(key, "old"), row(other, name)) if kind == 1
        else pg.Delete(7, "O", row(key, name))),
    st.integers(0, 2), st.integers(1, 5), st.integers(1, 5), st.text("ab,\"\n", max_size=4))
# blocks of the transaction: its own changes, or a savepoint's, kept or rolled back
block = st.tuples(st.sampled_from(["top", "kept", "rolled back"]),
                  st.lists(change, min_size=1, max_size=6))


# how the files are written: DMS's change sequence or the lab's, before images or not,
# every Op or some, other delimiters
OPTIONS = [{}, {"before_image": False}, {"seq_layout": "lsn"},
           {"fmt": CsvFormat(cdc_ops=("I", "U"))},
           # no Op and no timestamp column: a row is its values and change sequence
           {"fmt": CsvFormat(cdc_ops=("I",), op_for_full_load=False, timestamp_column="",
                             delimiter="|", null_value="NULL")}]


def whole(changes: list[Change], **options: object) -> list[str]:
    b = builder(**options)
    b.feed(pg.Begin(COMMIT.commit_lsn, COMMIT.commit_ts, TOP))
    for c in changes:
        b.feed(c.msg, c.lsn)
    txn = b.feed(pg.Commit(0, COMMIT.commit_lsn, COMMIT.end_lsn, COMMIT.commit_ts))
    assert txn is not None
    return list(txn.lines)


def streamed(b: ChangeBuilder, changes: list[Change], cuts: set[int],
             aborts: dict[int, int]) -> tuple[list[str], list[Transaction]]:
    """The same changes in blocks cut before each index in `cuts`, a small transaction
    committed between blocks, and Stream Abort of a savepoint after its last change."""
    others: list[Transaction] = []
    feed = b.feed
    feed(pg.StreamStart(TOP, True))
    for i, c in enumerate(changes):
        if i in cuts:
            feed(pg.StreamStop())
            feed(pg.Begin(100 + i, 0, OTHER))
            feed(pg.Insert(7, row(90 + i, "other")), 100 + i)
            txn = feed(pg.Commit(0, 100 + i, 101 + i, 0))
            assert txn is not None
            others.append(txn)
            feed(pg.StreamStart(TOP, False))
        feed(pg.Update(c.msg.relation_oid, c.msg.old_kind, c.msg.old, c.msg.new, c.subxid)
             if isinstance(c.msg, pg.Update) else type(c.msg)(*_fields(c.msg), c.subxid),
             c.lsn, 200)
        if aborts.get(c.subxid) == i:
            feed(pg.StreamStop())
            feed(pg.StreamAbort(TOP, c.subxid))
            feed(pg.StreamStart(TOP, False))
    feed(pg.StreamStop())
    assert b.streamed_in_progress == 1
    txn = feed(COMMIT)
    assert txn is not None and txn.end_lsn == COMMIT.end_lsn and b.streamed_in_progress == 0
    return list(txn.lines), others


def _fields(msg: pg.Insert | pg.Delete) -> tuple:
    return (msg.relation_oid, msg.new) if isinstance(msg, pg.Insert) else (
        msg.relation_oid, msg.old_kind, msg.old)


@settings(max_examples=200, deadline=None)
@given(st.lists(block, min_size=1, max_size=5), st.data(), st.sampled_from([64, 1 << 20]),
       st.sampled_from(OPTIONS))
def test_streamed_rows_equal_the_whole_transactions(blocks: list, data: st.DataObject,
                                                    memory_bytes: int, options: dict) -> None:
    changes, kept, aborts = [], [], {}
    lsn = 1_000
    for n, (kind, msgs) in enumerate(blocks):
        subxid = TOP if kind == "top" else TOP + 1 + n
        for msg in msgs:
            lsn += 10
            c = Change(lsn, msg, subxid)
            changes.append(c)
            if kind != "rolled back":
                kept.append(c)
        if kind == "rolled back":
            aborts[subxid] = len(changes) - 1
    cuts = set(data.draw(st.lists(st.integers(1, len(changes) - 1), max_size=4))
               if len(changes) > 1 else [])
    b = builder(memory_bytes, **options)
    lines, others = streamed(b, changes, cuts, aborts)
    assert lines == whole(kept, **options)
    assert [len(t.lines) for t in others] == [1] * len(cuts)


def test_a_whole_abort_leaves_nothing_and_the_builder_goes_on() -> None:
    b = builder(memory_bytes=64)  # spilled at once
    b.feed(pg.StreamStart(TOP, True))
    b.feed(pg.Insert(7, row(1, "x"), TOP), 10, 100)
    b.feed(pg.StreamStop())
    b.feed(pg.StreamAbort(TOP, TOP))
    assert b.streamed_in_progress == 0
    b.feed(pg.Begin(50, 0, 1))
    b.feed(pg.Insert(7, row(2, "y")), 40)
    txn = b.feed(pg.Commit(0, 50, 60, 0))
    assert txn is not None and len(txn.lines) == 1


def test_unchanged_toast_is_looked_up_at_the_commit_not_before() -> None:
    asked: list[dict] = []
    now = {"name": "before commit"}

    def lookup(key: dict, cols: list) -> dict:
        asked.append(key)
        return dict(now)
    b = one_table("public", "hosts_demo", ["id"], lookup=lookup)
    b.feed(REL)
    b.feed(pg.StreamStart(TOP, True))
    b.feed(pg.Update(7, None, None, (*ROW[:2], pg.UNCHANGED_TOAST, *ROW[3:]), TOP), 10)
    b.feed(pg.StreamStop())
    assert asked == []
    now["name"] = "as committed"
    txn = b.feed(COMMIT)
    assert txn is not None and asked == [{"id": "1"}]
    assert ",as committed," in txn.lines[0]


def test_blocks_out_of_order_fail_clearly() -> None:
    b = builder()
    with pytest.raises(ChangeError, match="a later block of a transaction whose first"):
        b.feed(pg.StreamStart(TOP, False))
    with pytest.raises(ChangeError, match="Stream Commit of xid 700, never streamed"):
        b.feed(COMMIT)
    b.feed(pg.Begin(5, 0, 1))
    with pytest.raises(ChangeError, match="Stream Start of xid 700 inside a transaction"):
        b.feed(pg.StreamStart(TOP, True))


def test_a_rollback_drops_from_the_savepoints_first_row_on() -> None:
    t = StreamedTransaction(TOP, memory_bytes=1)  # every row spilled
    for n, subxid in enumerate([TOP, 1, 2, 2, 1, TOP]):
        if n == 5:
            t.abort(1)  # savepoint 1 and 2 inside it rolled back
        t.add(subxid, n)
    t.abort(3)  # never sent: nothing to drop
    assert list(t.committed_rows()) == [0, 5]
    assert not t.spilled  # closed after the commit
