"""Randomized insert/update/delete workload against the source: pure planner + executor.

The planner covers the cases CDC pipelines get wrong: several statements in one
transaction, updates to `location`, insert+delete of one id in one transaction, update
then delete, delete then re-insert of the same id.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import psycopg
from psycopg import sql

from cdclab.sample_data import COLUMNS, PLACES, RESPONSE_TIMES, host, host_name
from pipeline_contract import settings

INSERT, UPDATE, DELETE = "insert", "update", "delete"
SCENARIOS = ("insert", "update", "update_location", "multi_update", "delete",
             "insert_delete", "update_delete", "delete_reinsert")
WEIGHTS = (30, 25, 15, 10, 8, 4, 4, 4)


@dataclass(frozen=True)
class Op:
    kind: str  # insert | update | delete
    id: int
    values: dict[str, Any] = field(default_factory=dict)  # insert: all columns; update: changed


Transaction = list[Op]


class IdPool:
    """The live ids: add, discard and a seeded random pick in constant time (a list and
    each id's place in it), where a pick from a sorted copy cost the writer half its CPU
    on a table of tens of thousands of rows."""

    def __init__(self, ids: set[int] | frozenset[int]) -> None:
        self._ids = sorted(ids)
        self._at = {i: n for n, i in enumerate(self._ids)}

    def __len__(self) -> int:
        return len(self._ids)

    def __contains__(self, i: object) -> bool:
        return i in self._at

    def add(self, i: int) -> None:
        if i not in self._at:
            self._at[i] = len(self._ids)
            self._ids.append(i)

    def discard(self, i: int) -> None:
        n = self._at.pop(i, None)
        if n is None:
            return
        last = self._ids.pop()
        if n < len(self._ids):  # the last id takes the freed place
            self._ids[n] = last
            self._at[last] = n

    def pick(self, rng: random.Random) -> int | None:
        return self._ids[rng.randrange(len(self._ids))] if self._ids else None

    def as_set(self) -> set[int]:
        return set(self._ids)


class Planner:
    """Pure: plans transactions against a model of the live ids (seeded RNG)."""

    def __init__(self, live_ids: set[int], next_id: int, seed: int = 0,
                 hold_rows: int = 0, id_step: int = 1) -> None:
        self.rng = random.Random(seed)
        self._live = IdPool(live_ids)
        self.next_id = next_id
        # > 1: new ids go next_id, next_id + id_step, ... (one writer's share of the ids)
        self.id_step = id_step
        # > 0: keep the table near this many rows (a soak's steady state): an insert
        # planned above it deletes instead, a delete planned below it inserts instead
        self.hold_rows = hold_rows

    def _new_row(self) -> dict[str, Any]:
        row = host(self.rng, self.next_id)
        self.next_id += self.id_step
        return dict(zip(COLUMNS, row, strict=True))

    @property
    def live(self) -> set[int]:
        """The ids the planned transactions leave in the table (a copy)."""
        return self._live.as_set()

    @live.setter
    def live(self, ids: set[int]) -> None:
        self._live = IdPool(ids)

    def _pick(self) -> int | None:
        return self._live.pick(self.rng)

    def _update(self, host_id: int, location: bool) -> Op:
        rng = self.rng
        values: dict[str, Any] = {}
        if location or rng.random() < 0.3:
            city, country = rng.choice(PLACES)
            values["location"] = f"{city}, {country}" if rng.random() > 0.05 else None
        choices = {
            "name": lambda: host_name(rng) if rng.random() > 0.05 else "",
            "response_time": lambda: rng.choice(RESPONSE_TIMES),
            "response_rate": lambda: f"{rng.randrange(0, 101)}%" if rng.random() > 0.1 else None,
        }
        for col in rng.sample(sorted(choices), rng.randrange(0 if values else 1, 3)):
            values[col] = choices[col]()
        return Op(UPDATE, host_id, values)

    def transaction(self) -> Transaction:
        kind = self.rng.choices(SCENARIOS, WEIGHTS)[0]
        if self.hold_rows and len(self._live) > self.hold_rows and kind == "insert":
            kind = "delete"
        elif self.hold_rows and len(self._live) < self.hold_rows and kind in (
                "delete", "update_delete"):
            kind = "insert"
        target = self._pick()
        if target is None or kind == "insert":
            row = self._new_row()
            self._live.add(row["id"])
            return [Op(INSERT, row["id"], row)]
        if kind in ("update", "update_location"):
            return [self._update(target, kind == "update_location")]
        if kind == "multi_update":
            ops = [self._update(target, True)]
            for _ in range(self.rng.randrange(1, 4)):
                other = self._pick() if self.rng.random() < 0.6 else target
                ops.append(self._update(other or target, self.rng.random() < 0.5))
            return ops
        if kind == "delete":
            self._live.discard(target)
            return [Op(DELETE, target)]
        if kind == "insert_delete":
            row = self._new_row()
            return [Op(INSERT, row["id"], row), Op(DELETE, row["id"])]
        if kind == "update_delete":
            self._live.discard(target)
            return [self._update(target, True), Op(DELETE, target)]
        # delete_reinsert: the same id comes back with new values
        row = self._new_row()
        row["id"] = target
        if row["url"]:
            row["url"] = f"https://www.airbnb.com/users/show/{target}"
        return [Op(DELETE, target), Op(INSERT, target, row)]

    def plan(self, transactions: int) -> list[Transaction]:
        return [self.transaction() for _ in range(transactions)]


def apply_to_model(model: dict[int, dict[str, Any]], txns: list[Transaction]) -> None:
    """Pure: what the table should look like after the transactions (for tests, reconcile)."""
    for txn in txns:
        for op in txn:
            if op.kind == INSERT:
                model[op.id] = dict(op.values)
            elif op.kind == UPDATE:
                model[op.id].update(op.values)
            else:
                del model[op.id]


def execute(conn: psycopg.Connection, p: settings.PipelineSettings,
            txn: Transaction, *more: Transaction) -> None:
    """Run one planned transaction and commit it; planned transactions in `more` go into
    the same commit after it (a writer that commits in groups)."""
    src = p.source
    table = sql.SQL("{}.{}").format(sql.Identifier(src.schema), sql.Identifier(src.table))
    key = sql.Identifier(src.primary_key)
    with conn.transaction():
        for op in (op for planned in (txn, *more) for op in planned):
            if op.kind == INSERT:
                cols = list(op.values)
                conn.execute(sql.SQL("INSERT INTO {} ({}) VALUES ({})").format(
                    table, sql.SQL(", ").join(map(sql.Identifier, cols)),
                    sql.SQL(", ").join(sql.Placeholder() * len(cols))),
                    list(op.values.values()))
            elif op.kind == UPDATE:
                sets = sql.SQL(", ").join(
                    sql.SQL("{} = %s").format(sql.Identifier(c)) for c in op.values)
                conn.execute(sql.SQL("UPDATE {} SET {} WHERE {} = %s").format(table, sets, key),
                             [*op.values.values(), op.id])
            else:
                conn.execute(sql.SQL("DELETE FROM {} WHERE {} = %s").format(table, key), [op.id])


def writer_share(ids: set[int], writer: int, writers: int) -> tuple[set[int], int]:
    """Pure: the ids one of `writers` concurrent writers owns (id mod writers == writer)
    and the first new id it may insert (above every id now in the table), so writers
    never touch each other's rows and their plans stay valid."""
    if not 0 <= writer < writers:
        raise ValueError(f"writer {writer} of {writers}: expected 0 <= writer < writers")
    first = max(ids, default=0) + 1
    return ({i for i in ids if i % writers == writer},
            first + (writer - first) % writers)


def run_workload(
    dsn: str, p: settings.PipelineSettings, *, duration: float | None = None,
    transactions: int | None = None,
    rate: float = 40.0, seed: int | None = None,
    progress: Callable[[str], None] | None = None, hold_rows: int = 0,
    writer: int = 0, writers: int = 1, group: int = 1,
) -> dict[str, Any]:
    """Run planned transactions at ~`rate`/s until `duration` seconds or `transactions`
    done; `hold_rows` > 0 keeps the table near that many rows (Planner). With `writers`
    > 1 this is writer number `writer` of that many, run at once: each owns its share of
    the ids (writer_share). `group` > 1 commits that many planned transactions at once
    (`rate` still counts planned ones): more changes/s from one connection."""
    if duration is None and transactions is None:
        raise ValueError("run_workload needs duration or transactions")
    seed = random.randrange(2**31) if seed is None else seed
    src = p.source
    counts = {INSERT: 0, UPDATE: 0, DELETE: 0}
    done = commits = 0
    with psycopg.connect(dsn, autocommit=True) as conn:
        ids = {r[0] for r in conn.execute(sql.SQL("SELECT {} FROM {}.{}").format(
            sql.Identifier(src.primary_key), sql.Identifier(src.schema),
            sql.Identifier(src.table)))}
        own, next_id = writer_share(ids, writer, writers)
        planner = Planner(own, next_id, seed, -(-hold_rows // writers), id_step=writers)
        start = time.monotonic()
        last_report = start
        while True:
            now = time.monotonic()
            if transactions is not None and done >= transactions:
                break
            if duration is not None and now - start >= duration:
                break
            txns = planner.plan(group if transactions is None
                                else min(group, transactions - done))
            execute(conn, p, *txns)
            done += len(txns)
            commits += 1
            for op in (op for txn in txns for op in txn):
                counts[op.kind] += 1
            if progress and now - last_report >= 5:
                progress(f"workload: {done} transactions ({counts})")
                last_report = now
            if rate > 0:
                time.sleep(max(0.0, start + done / rate - time.monotonic()))
        lsn = conn.execute("SELECT pg_current_wal_lsn()::text").fetchone()[0]  # type: ignore
    return {"seed": seed, "transactions": done, "commits": commits, "inserts": counts[INSERT],
            "updates": counts[UPDATE], "deletes": counts[DELETE],
            "seconds": round(time.monotonic() - start, 3), "last_lsn": lsn}
