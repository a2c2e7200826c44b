"""The JIT warm-up's CDC-shaped batches (pure; tests/integration/test_jit_warmup.py runs
them on the driver)."""

from __future__ import annotations

import csv
import io
import random
import re

from hypothesis import given
from hypothesis import strategies as st

from glue_local import jit_warmup


@given(st.integers(1, 300), st.integers(0, jit_warmup.RECREATE_EVERY - 1), st.integers())
def test_a_batch_is_dms_shaped_csv_with_quoted_text(n: int, batch: int, seed: int) -> None:
    text = jit_warmup.batch_csv(n, batch, random.Random(seed))
    header, *rows = list(csv.reader(io.StringIO(text)))
    assert header == jit_warmup.COLUMNS.split(",")
    assert len(rows) == n and all(len(r) == len(header) for r in rows)
    assert {r[0] for r in rows} <= ({"I"} if batch == 0 else {"I", "U", "D"})
    assert all(len(r[1]) == 35 and r[1].isdigit() for r in rows)
    assert len({r[1] for r in rows}) == n  # one sequence per change
    assert all(0 <= int(r[2]) < jit_warmup.KEYS for r in rows)


def test_every_statement_reads_the_batch_or_the_warm_up_catalog_only() -> None:
    """Never a table of the lake's catalog: every qualified name is the warm-up's own."""
    tables = {t for sql in jit_warmup.statements()
              for t in re.findall(r"\b[A-Za-z_]\w*\.\w+\.\w+\b", sql)}
    assert tables and all(t.startswith(f"{jit_warmup.CATALOG}.") for t in tables), tables
