"""Properties of the merge rules: order, batching and replay never change the result."""

from __future__ import annotations

import dataclasses
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


def change(op: str, id_: int, lsn: int, pos: int = 0, name: str = "n",
           before: int | None = None) -> Change:
    return Change(op, id_, make_change_seq(lsn, pos), TS, name=name, location="Paris, France",
                  before_id=before)


def run_batches(batches: list[list[Change]]) -> dict:
    silver: dict = {}
    tombs: dict = {}
    for batch in batches:
        silver, tombs = apply_batch(silver, tombs, batch)
    return silver


@st.composite
def change_sets(draw: st.DrawFn) -> list[Change]:
    """Changes on a few ids with unique, increasing change_seq (LSN, position); some U
    carry a before image of the key (another id: a key change)."""
    n = draw(st.integers(1, 25))
    out = []
    for i in range(n):
        op = draw(st.sampled_from("IUD"))
        before = draw(st.none() | st.integers(1, 4)) if op == "U" else None
        out.append(change(op, draw(st.integers(1, 4)), lsn=1 + i // 3, pos=i % 3,
                          name=f"v{i}", before=before))
    return out


def cut(draw: st.DrawFn, changes: list[Change]) -> list[list[Change]]:
    """The changes cut into batches (files), shuffled, with some batches replayed."""
    shuffled = draw(st.permutations(changes))
    cuts = sorted(draw(st.sets(st.integers(1, max(1, len(shuffled) - 1)), max_size=5)))
    bounds = [0, *cuts, len(shuffled)]
    batches = [shuffled[a:b] for a, b in zip(bounds, bounds[1:], strict=False) if a < b]
    replays = draw(st.lists(st.sampled_from(batches), max_size=3))
    return list(draw(st.permutations(batches + replays)))


@st.composite
def delivered(draw: st.DrawFn, changes: list[Change]) -> list[list[Change]]:
    return cut(draw, changes)


@st.composite
def deliveries(draw: st.DrawFn) -> tuple[list[Change], list[list[Change]]]:
    """A change set cut into batches, shuffled, with some batches replayed."""
    changes = draw(change_sets())
    return changes, cut(draw, changes)


KEYS = range(1, 7)


@st.composite
def source_histories(draw: st.DrawFn) -> tuple[list[Change], dict[int, str], set[int]]:
    """Statements on a source table as DMS writes them with the key's before image
    (REPLICA IDENTITY DEFAULT: set only on an UPDATE of the key): (changes, the table's
    rows at the end as id -> name, the ids a key change left)."""
    rows: dict[int, str] = {}
    moved_from: set[int] = set()
    out: list[Change] = []
    lsn, pos = 1, 0
    for i in range(draw(st.integers(1, 30))):
        if draw(st.booleans()):  # the next transaction
            lsn, pos = lsn + 1, 0
        pos += 1
        free = [k for k in KEYS if k not in rows]
        kind = draw(st.sampled_from(("insert", "update", "move", "delete")))
        if kind == "insert" or not rows:
            if not free:
                continue
            key = draw(st.sampled_from(free))
            out.append(change("I", key, lsn, pos, f"v{i}"))
        elif kind == "update":
            key = draw(st.sampled_from(sorted(rows)))
            out.append(change("U", key, lsn, pos, f"v{i}"))
        elif kind == "move":  # UPDATE ... SET id = <free> WHERE id = <old>
            if not free:
                continue
            old, key = draw(st.sampled_from(sorted(rows))), draw(st.sampled_from(free))
            del rows[old]
            moved_from.add(old)
            out.append(change("U", key, lsn, pos, f"v{i}", before=old))
        else:
            key = draw(st.sampled_from(sorted(rows)))
            del rows[key]
            out.append(change("D", key, lsn, pos))
            continue
        rows[key] = f"v{i}"
    return out, rows, moved_from


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


@settings(max_examples=300, deadline=None)
@given(source_histories(), st.data())
def test_with_the_before_image_silver_equals_the_source_whatever_the_delivery(
        history, data: st.DataObject) -> None:
    changes, rows, _ = history
    silver = run_batches(data.draw(delivered(changes)))
    assert {k: r.name for k, r in silver.items()} == rows
    assert apply_in_order(changes) == silver


@settings(max_examples=200, deadline=None)
@given(source_histories(), st.data())
def test_without_the_before_image_only_old_keys_of_key_changes_are_left(
        history, data: st.DataObject) -> None:
    """AWS's flaw the before image fixes: a key change is one U with the new key."""
    changes, rows, moved_from = history
    bare = [dataclasses.replace(c, before_id=None) for c in changes]
    silver = run_batches(data.draw(delivered(bare)))
    assert {k: silver[k].name for k in rows} == rows
    assert set(silver) - set(rows) <= moved_from


def test_a_chain_of_key_changes_in_one_file_leaves_the_last_key_only() -> None:
    """30017 -> 30018 -> 30019 -> 30020 (the real orders file of docs/dms-fidelity.md)."""
    chain = [change("I", 30017, 5, 1), change("U", 30018, 6, 1, before=30017),
             change("U", 30019, 7, 1, before=30018),
             change("U", 30020, 8, 1, "last", before=30019)]
    silver, tombs = apply_batch({}, {}, chain)
    assert set(silver) == {30020} and silver[30020].name == "last"
    assert tombs == {30017: make_change_seq(6, 1), 30018: make_change_seq(7, 1),
                     30019: make_change_seq(8, 1)}
    # replayed, or its insert delivered again later: nothing comes back
    for batch in (chain, chain[:1], chain[1:2]):
        silver, tombs = apply_batch(silver, tombs, batch)
        assert set(silver) == {30020}


def test_a_key_change_before_its_insert_never_resurrects_the_old_key() -> None:
    silver, tombs = apply_batch({}, {}, [change("U", 2, 6, before=1)])  # the later file
    assert set(silver) == {2} and tombs == {1: make_change_seq(6, 0)}
    silver, tombs = apply_batch(silver, tombs, [change("I", 1, 5)])  # the earlier one
    assert set(silver) == {2}


def test_deleting_the_new_key_after_a_key_change_leaves_neither() -> None:
    changes = [change("I", 1, 1), change("U", 2, 2, before=1), change("D", 2, 3)]
    for batches in ([changes], [[c] for c in changes], [[c] for c in reversed(changes)]):
        assert run_batches(batches) == {}
    _, tombs = apply_batch({}, {}, changes)
    assert tombs == {1: make_change_seq(2, 0), 2: make_change_seq(3, 0)}


def test_a_key_changed_back_and_an_old_key_reused() -> None:
    changes = [change("I", 1, 1, name="a"), change("U", 2, 2, before=1),
               change("U", 1, 3, name="back", before=2), change("I", 2, 4, name="new")]
    assert {k: r.name for k, r in apply_batch({}, {}, changes)[0].items()} == {
        1: "back", 2: "new"}
    assert run_batches([[c] for c in reversed(changes)]) == apply_in_order(changes)


def test_a_before_image_equal_to_the_key_deletes_nothing() -> None:
    """REPLICA IDENTITY FULL logs the key on every update: no key change."""
    silver, tombs = apply_batch({}, {}, [change("I", 1, 1), change("U", 1, 2, before=1)])
    assert set(silver) == {1} and tombs == {}


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
