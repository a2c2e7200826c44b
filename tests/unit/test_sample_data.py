"""Sample hosts: deterministic, realistic, and full of the awkward cases."""

from __future__ import annotations

import re
from datetime import date

from cdclab.sample_data import COLUMNS, hosts


def test_same_seed_same_rows_different_seed_different_rows() -> None:
    assert hosts(200, seed=7) == hosts(200, seed=7)
    assert hosts(200, seed=7) != hosts(200, seed=8)


def test_shapes_and_awkward_values_all_present() -> None:
    rows = hosts(3000, seed=1, start_id=10)
    assert [r[0] for r in rows] == list(range(10, 3010))
    assert all(len(r) == len(COLUMNS) for r in rows)
    names = [r[2] for r in rows if r[2]]
    for needle in [",", '"', "'", "\n"]:
        assert any(needle in n for n in names), needle
    assert any(not n.isascii() for n in names)
    assert any(re.search(r"[\u4e00-\u9fff]", n) for n in names)  # CJK
    assert any(re.search(r"[\U0001F300-\U0001FAFF]", n) for n in names)  # emoji
    for i, col in enumerate(COLUMNS[1:], start=1):
        assert any(r[i] is None for r in rows), f"no NULL in {col}"
    for i in (1, 2, 4, 5, 6):
        assert any(r[i] == "" for r in rows), f"no empty string in {COLUMNS[i]}"


def test_values_look_like_airbnb() -> None:
    for r in hosts(500, seed=3):
        host_id, url, _name, since, location, _rt, rate = r
        assert url in (None, "") or url == f"https://www.airbnb.com/users/show/{host_id}"
        assert since is None or isinstance(since, date)
        assert location in (None, "") or re.fullmatch(r"[^,]+, [^,]+", location)
        assert rate in (None, "") or re.fullmatch(r"\d{1,3}%", rate)
