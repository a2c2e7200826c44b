"""Properties of the merge rules: order, batching and replay never change the result."""

from __future__ import annotations

from datetime import date, datetime

from hypothesis import given, settings
from hypothesis import strategies as st

from cdclab.merge_model import (
    Change,
    apply_batch,
    apply_in_order,
    clean_location,
    clean_row,
    make_change_seq,
)

TS = datetime(2026, 11, 22, 10, 15, 0)


def change(op: str, id_: int, lsn: int, pos: int = 0, name: str = "n") -> Change:
    return Change(op, id_, make_change_seq(lsn, pos), TS, name=name, location="Paris, France")


def run_batches(batches: list[list[Change]]) -> dict:
    silver: dict = {}
    tombs: dict = {}
    for batch in batches:
        silver, tombs = apply_batch(silver, tombs, batch)
    return silver


@st.composite
def change_sets(draw: st.DrawFn) -> list[Change]:
    """Changes on a few ids with unique, increasing change_seq (LSN, position)."""
    n = draw(st.integers(1, 25))
    out = []
    for i in range(n):
        op = draw(st.sampled_from("IUD"))
        out.append(change(op, draw(st.integers(1, 4)), lsn=1 + i // 3, pos=i % 3, name=f"v{i}"))
    return out


@st.composite
def deliveries(draw: st.DrawFn) -> tuple[list[Change], list[list[Change]]]:
    """A change set cut into batches, shuffled, with some batches replayed."""
    changes = draw(change_sets())
    shuffled = draw(st.permutations(changes))
    cuts = sorted(draw(st.sets(st.integers(1, max(1, len(shuffled) - 1)), max_size=5)))
    bounds = [0, *cuts, len(shuffled)]
    batches = [shuffled[a:b] for a, b in zip(bounds, bounds[1:], strict=False) if a < b]
    replays = draw(st.lists(st.sampled_from(batches), max_size=3))
    order = draw(st.permutations(batches + replays))
    return changes, list(order)


@settings(max_examples=300, deadline=None)
@given(deliveries())
def test_any_batching_order_and_replay_equals_in_order(case) -> None:
    changes, batches = case
    assert run_batches(batches) == apply_in_order(changes)


@settings(max_examples=100, deadline=None)
@given(deliveries())
def test_replaying_everything_changes_nothing(case) -> None:
    _, batches = case
    assert run_batches(batches + batches) == run_batches(batches)


def test_final_state_is_the_latest_change_per_id() -> None:
    changes = [change("I", 1, 1), change("U", 1, 2, name="new"), change("D", 2, 3)]
    silver = apply_in_order(changes + [change("I", 2, 1)])
    assert set(silver) == {1}
    assert silver[1].name == "new"


def test_insert_and_delete_in_one_batch_inserts_nothing() -> None:
    silver, tombs = apply_batch({}, {}, [change("I", 7, 5), change("D", 7, 5, 1)])
    assert silver == {}
    assert tombs == {7: make_change_seq(5, 1)}


def test_late_older_change_never_resurrects_a_delete() -> None:
    silver, tombs = apply_batch({}, {}, [change("I", 1, 1)])
    silver, tombs = apply_batch(silver, tombs, [change("D", 1, 9)])
    silver, tombs = apply_batch(silver, tombs, [change("U", 1, 5)])
    assert silver == {}
    # a newer insert of the same key is a real re-insert
    silver, tombs = apply_batch(silver, tombs, [change("I", 1, 10)])
    assert set(silver) == {1}


def test_older_change_never_overwrites_newer() -> None:
    silver, tombs = apply_batch({}, {}, [change("U", 1, 9, name="newest")])
    silver, _ = apply_batch(silver, tombs, [change("I", 1, 2, name="old")])
    assert silver[1].name == "newest"


def test_dedup_uses_change_seq_not_timestamp() -> None:
    # one transaction: identical commit timestamps, order only by position
    first = change("U", 1, 4, pos=1, name="first")
    second = change("U", 1, 4, pos=2, name="second")
    silver, _ = apply_batch({}, {}, [second, first])
    assert silver[1].name == "second"


def test_clean_location_splits_at_first_comma_only() -> None:
    assert clean_location("Paris, Ile-de-France, France") == ("Paris", "Ile-de-France, France")
    assert clean_location("Berlin,Germany") == ("Berlin", "Germany")
    assert clean_location("Nowhere") == ("Nowhere", None)
    assert clean_location("Paris,") == ("Paris", "")
    assert clean_location("") == ("", None)
    assert clean_location(None) == (None, None)


def test_clean_row_drops_location_and_keeps_seq() -> None:
    c = Change("I", 3, make_change_seq(0, 3), TS, "u", "n", date(2020, 1, 2), "Rome, Italy")
    row = clean_row(c)
    assert (row.location_city, row.location_country) == ("Rome", "Italy")
    assert row.change_seq == c.change_seq and row.since == date(2020, 1, 2)
    assert not hasattr(row, "location")
