"""The batcher: every row once, in order, in files of one table and header, due on
interval or size (also inside a transaction, like DMS's files)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from dms_emitter.batching import Batcher, Transaction

rows = st.lists(st.tuples(st.sampled_from(["a/t", "b/u"]), st.sampled_from([("x",), ("x", "y")]),
                          st.integers(1, 40), st.floats(0, 2)), max_size=60)


@given(rows, st.floats(0.1, 3), st.integers(1, 400))
def test_every_row_once_in_order_per_table_in_files_of_one_header(
    plan: list[tuple[str, tuple[str, ...], int, float]], interval: float, size: int
) -> None:
    batcher = Batcher(interval, size)
    now, files, sent = 0.0, [], []
    for n, (folder, header, width, gap) in enumerate(plan):
        now += gap
        line = f"{n}:" + "z" * width + "\n"
        sent.append((folder, line))
        batcher.add_row(folder, header, line, now)
        if batcher.ready(now):
            batch = batcher.take()
            assert batch.size >= size or now - batch.opened_at >= interval
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
