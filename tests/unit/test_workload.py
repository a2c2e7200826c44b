"""Workload planner: deterministic, covers the tricky scenarios, always valid against the model."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from cdclab.workload import DELETE, INSERT, UPDATE, Planner, apply_to_model


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
