"""`cdclab reconcile --against FILE`: expected text against silver values, by meaning."""

from __future__ import annotations

from datetime import date, datetime
from decimal import Decimal

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from cdclab.reconcile_against import compare, same


def test_values_compare_by_meaning() -> None:
    assert same("", None) and same(None, None) and not same("0", None)
    assert same("1.10", Decimal("1.1")) and same("+3.23800011e+01", float(np.float32(32.38)))
    assert same("32.38", float(np.float32(32.38)))  # a REAL within float32 precision
    assert same("1996-07-04", date(1996, 7, 4))
    assert same("2024-06-12 10:28:17.806650", datetime(2024, 6, 12, 10, 28, 17, 806650))
    assert same("2023-02-12T02:18:00.000Z", datetime(2023, 2, 12, 2, 18))
    assert same("t", True) and same("false", False) and not same("t", False)
    assert not same("abc", 1) and same("abc", "abc")


def test_missing_extra_different_and_duplicates_are_named() -> None:
    expected = [{"id": "1", "v": "a"}, {"id": "2", "v": "b"}, {"id": "3", "v": "c"}]
    silver = [{"id": 1, "v": "a"}, {"id": 2, "v": "B"}, {"id": 4, "v": "d"}, {"id": 4, "v": "d"}]
    r = compare("t", ["id"], expected, silver)
    assert not r.equal
    assert r.missing_in_silver == [("3",)] and r.extra_in_silver == [("4",)]
    assert r.duplicate_keys == [("4",)]
    assert r.different == [{"key": ["2"], "columns": {"v": {"expected": "b", "silver": "B"}}}]


@given(st.dictionaries(st.integers(0, 10**6), st.one_of(st.none(), st.integers(-10**9, 10**9)),
                       max_size=30))
def test_silver_equal_to_its_own_text_is_equal(rows) -> None:
    silver = [{"id": k, "n": v} for k, v in rows.items()]
    expected = [{"id": str(k), "n": "" if v is None else str(v)} for k, v in rows.items()]
    assert compare("t", ["id"], expected, silver).equal
