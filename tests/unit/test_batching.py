"""The batcher closes files at transaction boundaries only, on interval or size."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from dms_emitter.batching import Batcher, Transaction

txns = st.lists(st.tuples(st.integers(1, 6), st.floats(0, 2)), max_size=40)


@given(txns, st.floats(0.1, 3), st.integers(1, 400))
def test_never_splits_a_transaction_and_loses_nothing(
    plan: list[tuple[int, float]], interval: float, size: int
) -> None:
    batcher = Batcher(interval, size)
    now, lsn, files, sent = 0.0, 0, [], []
    for n_lines, gap in plan:
        now += gap
        lsn += 10
        lines = [f"{lsn}-{i}\n" for i in range(n_lines)]
        sent.append(lines)
        batcher.add(Transaction.of(lsn, lsn + 1, lines), now)
        if batcher.ready(now):
            files.append(batcher.take())
    if batcher.pending:
        files.append(batcher.take())
    written = [t.lines for f in files for t in f.transactions]
    assert [list(t) for t in written] == sent  # whole transactions, in order, none lost
    for f in files:
        assert f.end_lsn == f.transactions[-1].end_lsn and f.transactions


def test_closes_on_interval_or_size() -> None:
    b = Batcher(1.0, 100)
    assert not b.ready(0) and b.seconds_until_due(0) is None
    b.add(Transaction.of(1, 2, ["x\n"]), 10.0)
    assert not b.ready(10.5) and b.seconds_until_due(10.5) == 0.5
    assert b.ready(11.0)
    b.take()
    b.add(Transaction.of(3, 4, ["y" * 120 + "\n"]), 20.0)
    assert b.ready(20.0)  # size reached, no waiting
