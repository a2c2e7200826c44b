"""The batcher: every row once, in order, in files of one table and header, due on
interval or size (also inside a transaction, like DMS's files; the lab's cuts wait for a
transaction's end, up to the size)."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from dms_emitter.batching import Batcher, Transaction

rows = st.lists(st.tuples(st.sampled_from(["a/t", "b/u"]), st.sampled_from([("x",), ("x", "y")]),
                          st.integers(1, 40), st.floats(0, 2)), max_size=60)


@given(rows, st.floats(0.1, 3), st.integers(1, 400), st.sampled_from([0.0, 0.05, 0.5]))
def test_every_row_once_in_order_per_table_in_files_of_one_header(
    plan: list[tuple[str, tuple[str, ...], int, float]], interval: float, size: int,
    quiet: float,
) -> None:
    batcher = Batcher(interval, size, quiet)
    now, files, sent = 0.0, [], []
    for n, (folder, header, width, gap) in enumerate(plan):
        now += gap
        line = f"{n}:" + "z" * width + "\n"
        sent.append((folder, line))
        batcher.add_row(folder, header, line, now)
        if batcher.ready(now):
            batch = batcher.take(now)  # only the tables whose batch is due
            assert batch.rows
            for f in batch.files():
                assert f.lines
            files += batch.files()
    if batcher.pending:
        files += batcher.take().files()
    for folder in ("a/t", "b/u"):
        written = [line for f in files if f.folder == folder for line in f.lines]
        assert written == [line for f, line in sent if f == folder]
    for f in files:
        assert f.lines


def test_closes_on_interval_or_size() -> None:
    b = Batcher(1.0, 100)
    assert not b.ready(0) and b.seconds_until_due(0) is None
    b.add(Transaction.of(1, 2, ["x\n"]), 10.0)
    assert not b.ready(10.5) and b.seconds_until_due(10.5) == 0.5
    assert b.ready(11.0)
    b.take()
    b.add_row("f", ("a",), "é" * 60 + "\n", 20.0)  # 121 UTF-8 bytes
    assert b.ready(20.0)  # size reached, no waiting


def test_a_quiet_batch_is_cut_before_its_interval_a_busy_one_is_not() -> None:
    """The lab's quiet cut: a lone change is written `quiet_s` after it came; rows that
    keep coming closer together than that fill the batch up to the interval."""
    b = Batcher(1.0, 10**9, quiet_s=0.125)
    b.add_row("a/t", ("x",), "a1\n", 10.0)
    assert b.seconds_until_due(10.0) == 0.125 and not b.ready(10.0625) and b.ready(10.125)
    b.take()
    for i in range(20):  # one row every 1/16 s: never quiet
        b.add_row("a/t", ("x",), f"{i}\n", 20.0 + i / 16)
        assert b.ready(20.0 + i / 16 + 1 / 32) == (i / 16 + 1 / 32 >= 1.0)
    assert b.ready(21.0) and len(b.take(21.0).files()[0].lines) == 20
    assert Batcher(1.0, 10**9).seconds_until_due(0) is None  # off by default


def test_the_lab_cuts_a_transaction_being_read_by_size_alone() -> None:
    """With the lab's cuts, neither a pause inside one transaction's rows (a big one
    decoded from disk by the server) nor the short interval cuts it: one file, as DMS's
    60 s interval gives it, unless it reaches the size. Once it is complete, the quiet
    cut applies again; DMS's rule alone (no quiet cut) still cuts it on the interval."""
    b = Batcher(1.0, 10**9, quiet_s=0.125)
    b.mid_transaction = True
    for i in range(12):  # a row every 0.25 s for 3 s: pauses longer than the quiet cut
        b.add_row("a/t", ("x",), f"{i}\n", 10.0 + i / 4)
        assert not b.ready(10.0 + i / 4 + 0.2)
    assert b.seconds_until_due(13.0) == math.inf
    b.mid_transaction = False
    assert b.ready(13.0) and len(b.take(13.0).files()[0].lines) == 12
    sized = Batcher(1.0, 8, quiet_s=0.125)
    sized.mid_transaction = True
    sized.add_row("a/t", ("x",), "1234567\n", 10.0)
    assert sized.ready(10.0)  # the size still bounds memory inside a transaction
    dms = Batcher(1.0, 10**9)
    dms.mid_transaction = True
    dms.add_row("a/t", ("x",), "a\n", 10.0)
    assert dms.seconds_until_due(10.5) == 0.5 and dms.ready(11.0)


def test_each_table_is_cut_on_its_own_interval() -> None:
    """Real DMS output: each table's file closes CdcMaxBatchInterval after that table's
    own first change (docs/dms-fidelity.md); one batch for all would cut B at A's time."""
    b = Batcher(60.0, 10**9)
    b.add_row("a/t", ("x",), "a1\n", 0.0)
    b.add_row("b/u", ("x",), "b1\n", 30.0)
    assert b.seconds_until_due(30.0) == 30.0
    assert not b.ready(59.9) and b.ready(60.0)
    first = b.take(60.0)
    assert [(f.folder, f.lines) for f in first.files()] == [("a/t", ("a1\n",))]
    b.add_row("a/t", ("x",), "a2\n", 61.0)
    assert b.seconds_until_due(61.0) == 29.0  # b/u's, opened at 30
    assert [(f.folder, f.lines) for f in b.take(90.0).files()] == [("b/u", ("b1\n",))]
    assert [(f.folder, f.lines) for f in b.take(121.0).files()] == [("a/t", ("a2\n",))]
    assert not b.pending


@given(st.lists(st.tuples(st.lists(st.sampled_from(["a/t", "b/u", "c/v"]), min_size=1,
                                   max_size=4),
                          st.floats(0, 3)), min_size=1, max_size=40),
       st.floats(0.5, 5), st.integers(20, 200), st.sampled_from([0.0, 0.1, 1.0]))
def test_the_slot_is_never_confirmed_past_a_row_not_yet_stored(txns, interval, size,
                                                               quiet) -> None:
    """The emitter confirms up to safe_lsn() (or everything received when nothing waits):
    never past a transaction with a row still in a batch, and with every batch written it
    reaches the last transaction (a table that keeps changing never holds the slot for
    good: its batch is cut on its own interval)."""
    b = Batcher(interval, size, quiet)
    now, seen_end, confirmed = 0.0, 0, 0
    unstored: dict[int, int] = {}  # transaction end LSN -> rows not yet in a file
    for n, (folders, gap) in enumerate(txns, 1):
        now += gap
        end = n * 10
        for i, folder in enumerate(folders):
            b.add_row(folder, ("x",), f"{end}:{i}\n", now, safe_lsn=seen_end)
            unstored[end] = unstored.get(end, 0) + 1
        seen_end = end
        if b.ready(now):
            for f in b.take(now).files():
                for line in f.lines:
                    e = int(line.split(":")[0])
                    unstored[e] -= 1
        safe = b.safe_lsn()
        confirmed = max(confirmed, seen_end if safe is None else min(seen_end, safe))
        waiting = [e for e, left in unstored.items() if left]
        assert not waiting or confirmed < min(waiting)
    b.take()
    assert b.safe_lsn() is None  # all stored: the caller confirms seen_end


@given(st.lists(st.tuples(st.integers(1, 12), st.floats(0, 2), st.floats(0, 0.5)),
                min_size=1, max_size=30),
       st.floats(0.1, 3), st.integers(1, 400), st.sampled_from([0.0, 0.05, 0.5]))
def test_transactions_read_row_by_row_lose_nothing_and_stay_within_the_size(
        txns, interval: float, size: int, quiet: float) -> None:
    """Transactions read a row at a time, as the emitter's loop feeds them (mid_transaction
    set while one is read): every row once, in order; no file grows past the size by more
    than its last row; and once the last transaction is complete, time alone cuts it."""
    b = Batcher(interval, size, quiet)
    now, sent, files = 0.0, [], []
    for t, (rows, gap, pause) in enumerate(txns):
        now += gap
        for i in range(rows):
            b.mid_transaction = i < rows - 1
            line = f"{t}.{i}\n"
            sent.append(line)
            b.add_row("a/t", ("x",), line, now)
            if b.ready(now):
                files += b.take(now).files()
            now += pause / rows
    assert not b.mid_transaction
    due = b.seconds_until_due(now)
    assert due is None or due <= interval + 1e-9  # (opened + interval) - now rounds up
    if b.pending:
        files += b.take().files()
    assert [line for f in files for line in f.lines] == sent
    for f in files:
        assert sum(len(line) for line in f.lines[:-1]) < size
