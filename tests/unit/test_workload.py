"""Workload planner: deterministic, covers the tricky scenarios, always valid against the model."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cdclab.workload import (
    DELETE,
    INSERT,
    UPDATE,
    IdPool,
    Planner,
    apply_to_model,
    writer_share,
)


def test_deterministic() -> None:
    assert Planner({1, 2, 3}, 4, seed=5).plan(50) == Planner({1, 2, 3}, 4, seed=5).plan(50)


@settings(max_examples=30)
@given(st.sets(st.integers(1, 50), max_size=20), st.integers(0, 2**31))
def test_every_op_is_valid_against_the_table_model(ids: set[int], seed: int) -> None:
    model = {i: {"id": i} for i in ids}
    planner = Planner(ids, 51, seed)
    for txn in planner.plan(60):
        for op in txn:
            if op.kind == INSERT:
                assert op.id not in model and op.values["id"] == op.id
            else:
                assert op.id in model, op
            apply_to_model(model, [[op]])
    assert set(model) == planner.live


def test_covers_the_tricky_scenarios() -> None:
    txns = Planner(set(range(1, 101)), 101, seed=1).plan(600)
    kinds = [tuple(op.kind for op in t) for t in txns]
    same_id = [t for t in txns if len(t) == 2 and t[0].id == t[1].id]
    assert (INSERT, DELETE) in kinds and (UPDATE, DELETE) in kinds and (DELETE, INSERT) in kinds
    assert all(len({op.id for op in t}) == 1 for t in same_id)
    assert any(len(t) > 2 and all(op.kind == UPDATE for op in t) for t in txns)
    assert any(op.kind == UPDATE and "location" in op.values for t in txns for op in t)


@given(st.integers(0, 2**31), st.integers(1, 60), st.integers(1, 60))
def test_hold_rows_keeps_the_table_near_its_size(seed: int, start: int, hold: int) -> None:
    """A soak's steady state: once at the held size, the table stays within one row of
    it (an insert_delete or delete_reinsert leaves the size as it is)."""
    planner = Planner(set(range(1, start + 1)), start + 1, seed, hold_rows=hold)
    sizes = []
    for _ in range(400):
        planner.transaction()
        sizes.append(len(planner.live))
    reached = next(i for i, n in enumerate(sizes) if abs(n - hold) <= 1)
    assert all(abs(n - hold) <= 1 for n in sizes[reached:])


@settings(max_examples=50)
@given(st.sets(st.integers(-20, 80), max_size=40), st.integers(1, 5), st.integers(0, 2**31))
def test_writers_touch_only_their_own_ids(ids: set[int], writers: int, seed: int) -> None:
    """Several writers at once (a bench's load beyond one connection's rate): each plans
    against its share of the ids and inserts ids no other writer and no row has, so all
    their plans stay valid however the database interleaves them."""
    model = {i: {"id": i} for i in ids}
    for writer in range(writers):
        own, next_id = writer_share(ids, writer, writers)
        assert own == {i for i in ids if i % writers == writer}
        planner = Planner(own, next_id, seed + writer, id_step=writers)
        for txn in planner.plan(40):
            for op in txn:
                assert op.id % writers == writer, (writer, op)
                if op.kind == INSERT:  # no writer inserts a key another one holds
                    assert op.id not in model, (writer, op)
                else:
                    assert op.id in model, (writer, op)
                apply_to_model(model, [[op]])


def test_a_writer_outside_the_writers_is_refused() -> None:
    with pytest.raises(ValueError, match="writer 3 of 3"):
        writer_share({1, 2}, 3, 3)


@given(st.sets(st.integers(0, 30)),
       st.lists(st.tuples(st.booleans(), st.integers(0, 40)), max_size=80),
       st.integers(0, 2**31))
def test_the_id_pool_holds_what_a_set_would_and_picks_a_member(start, steps, seed) -> None:
    import random

    pool, model, rng = IdPool(start), set(start), random.Random(seed)
    for add, i in steps:
        (pool.add if add else pool.discard)(i)
        (model.add if add else model.discard)(i)
        assert len(pool) == len(model) and pool.as_set() == model
        assert (i in pool) == (i in model)
        picked = pool.pick(rng)
        assert picked in model if model else picked is None
