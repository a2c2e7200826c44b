"""Many tables through one pipeline, with no code change: DMS table mappings select the
demo table and every table of a `sales` schema (a composite key, a spaced mixed-case
name, numbers, booleans, timestamps, arrays); the generic Glue job merges each into its
own silver table from the specs cdclab builds; after a randomized workload on all of
them silver equals source, table by table, with no key held twice. Embedded only: the
test points the stack at its own pipeline.toml (CDCLAB_PIPELINE_FILE)."""

from __future__ import annotations

import json
import os
import random
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from cdclab.drain import current_wal_lsn, wait_for_drain
from cdclab.reconcile import reconcile
from cdclab.sample_data import seed
from cdclab.setup import setup_lake
from cdclab.tables_sync import published_specs
from cdclab.workload import run_workload
from pipeline_contract import settings
from pipeline_contract.settings import load_pipeline
from tests.resources.pipeline_stack import pipeline_stack
from tests.resources.stack import CONTAINERS, backend
from tests.resources.waiting import wait_for

pytestmark = [pytest.mark.integration, pytest.mark.slow,
              pytest.mark.skipif(backend() == CONTAINERS,
                                 reason="points the embedded stack at its own pipeline.toml")]

SEED = int(os.environ.get("CDCLAB_TEST_SEED", random.randrange(1_000_000)))
SALES_DDL = """
CREATE SCHEMA IF NOT EXISTS sales;
CREATE TABLE sales."Order Lines" (
  order_id bigint, line smallint, sku text NOT NULL, price numeric(10,2), paid boolean,
  placed_at timestamptz, weight double precision, tags text[], note varchar(40),
  PRIMARY KEY (order_id, line));
CREATE TABLE sales.customers (id int PRIMARY KEY, name text, since date, credit money);
CREATE TYPE sales.mood AS ENUM ('sad', 'ok', 'happy');
CREATE TABLE sales.kinds (
  id uuid PRIMARY KEY, doc jsonb, addr inet, span interval, ratio real, big numeric,
  code char(5), mood sales.mood, at timestamp, t time, raw bytea, flags boolean[]);
"""
KINDS = """INSERT INTO sales.kinds VALUES (gen_random_uuid(), %s, %s, %s, %s, %s, %s, %s, %s,
  %s, %s, %s)"""
MAPPINGS = {"rules": [
    {"rule-type": "selection", "rule-id": "1", "rule-name": "demo",
     "object-locator": {"schema-name": "public", "table-name": "hosts_demo"},
     "rule-action": "include"},
    {"rule-type": "selection", "rule-id": "2", "rule-name": "sales",
     "object-locator": {"schema-name": "sales", "table-name": "%"}, "rule-action": "include"},
    {"rule-type": "transformation", "rule-id": "3", "rule-name": "seq",
     "rule-target": "column", "object-locator": {"schema-name": "%", "table-name": "%"},
     "rule-action": "add-column", "value": "change_seq", "expression": "$AR_H_CHANGE_SEQ",
     "data-type": {"type": "string", "length": 50}},
]}


@pytest.fixture(scope="module")
def many_tables(tmp_path_factory) -> Iterator[dict[str, str]]:
    work = tmp_path_factory.mktemp("many")
    (work / "mappings.json").write_text(json.dumps(MAPPINGS))

    def prepare(env: dict[str, str]) -> None:
        with psycopg.connect(env[settings.ENV_PG_DSN], autocommit=True) as conn:
            conn.execute(SALES_DDL)
            seed(conn, load_pipeline(), 300, seed=SEED)
            sales_workload(conn, random.Random(SEED), 150)

    with pipeline_stack(work, {"table_mappings": f'"{work / "mappings.json"}"'},
                        prepare) as env:
        yield env


def sales_workload(conn: psycopg.Connection, rng: random.Random, transactions: int) -> None:
    """Inserts, updates and deletes on both sales tables, several per transaction."""
    for _ in range(transactions):
        with conn.transaction():
            for _ in range(rng.randint(1, 4)):
                order, line = rng.randint(1, 40), rng.randint(1, 3)
                kind = rng.random()
                if kind < 0.5:
                    conn.execute(
                        'INSERT INTO sales."Order Lines" VALUES (%s, %s, %s, %s, %s, '
                        "now() - %s * interval '1 minute', %s, %s, %s) "
                        "ON CONFLICT (order_id, line) DO UPDATE SET price = EXCLUDED.price, "
                        "paid = EXCLUDED.paid, tags = EXCLUDED.tags",
                        (order, line, f"SKU-{rng.randint(1, 99)}",
                         round(rng.uniform(0, 9999), 2), rng.choice([True, False, None]),
                         rng.randint(0, 10_000), rng.choice([0.5, 1e-3, 12.25, None]),
                         rng.choice([["a", "b,c"], [], None, ['q"uote']]),
                         rng.choice(["", None, "note, with comma", "ünïcode"])))
                elif kind < 0.8:
                    conn.execute('UPDATE sales."Order Lines" SET paid = NOT coalesce(paid, '
                                 "false), note = %s WHERE order_id = %s",
                                 (rng.choice(["x", None, ""]), order))
                else:
                    conn.execute('DELETE FROM sales."Order Lines" WHERE order_id = %s AND '
                                 "line = %s", (order, line))
                if rng.random() < 0.3:  # DMS's renderings of many more types
                    conn.execute(KINDS, (
                        rng.choice(['{"a": [1, "x,y"]}', "{}", None]),
                        rng.choice(["10.0.0.1", "10.0.0.0/8", None]),
                        rng.choice(["1 day 02:00:00", "-3 mons", None]),
                        rng.choice(["NaN", "Infinity", "0.1", None]),
                        rng.choice(["0.6111111", "12345678901234567.5", "-1", None]),
                        rng.choice(["ab", "", None]), rng.choice(["sad", "happy", None]),
                        rng.choice(["infinity", "2024-02-29 12:00:00.5", None]),
                        rng.choice(["04:05:06.789", None]),
                        rng.choice([b"\x00\x01", b"", None]),
                        rng.choice([[True, None], [], None])))
                cid = rng.randint(1, 30)
                if rng.random() < 0.7:
                    conn.execute("INSERT INTO sales.customers VALUES (%s, %s, %s, %s) "
                                 "ON CONFLICT (id) DO UPDATE SET name = EXCLUDED.name, "
                                 "credit = EXCLUDED.credit",
                                 (cid, f"Customer {rng.randint(1, 9)}",
                                  rng.choice(["2020-02-29", None]),
                                  rng.choice(["12.5", "-3", None])))
                else:
                    conn.execute("DELETE FROM sales.customers WHERE id = %s", (cid,))


def test_every_selected_table_reaches_its_own_silver_and_equals_the_source(
        many_tables: dict[str, str]) -> None:
    print(f"workload seed {SEED}")
    env = many_tables
    dsn = env[settings.ENV_PG_DSN]
    specs = {s["name"]: s for s in published_specs(env, settings.load_pipeline())}
    assert set(specs) == {"public.hosts_demo", "sales.Order Lines", "sales.customers",
                          "sales.kinds"}
    lines = specs["sales.Order Lines"]
    assert lines["keys"] == ["order_id", "line"]
    assert lines["silver_table"].endswith(".order_lines_silver")
    with psycopg.connect(dsn, autocommit=True) as conn:  # live changes on every table
        sales_workload(conn, random.Random(SEED + 1), 120)
    run_workload(dsn, load_pipeline(), transactions=120, rate=60, seed=SEED)
    wait_for_drain(env, load_pipeline(), current_wal_lsn(dsn), timeout=420)
    result = reconcile(env, load_pipeline())
    assert result.equal, f"seed {SEED}: {json.dumps(result.to_json(), default=str)[:3000]}"
    assert set(result.tables) == set(specs)
    for name, one in result.tables.items():
        assert one["source_rows"] > 0, name
        assert one["duplicate_rows"] == 0, name
    assert reconcile(env, load_pipeline(), "sales.customers").table == "sales.customers"


def test_a_table_created_while_streaming_is_merged_after_a_sync(
        many_tables: dict[str, str]) -> None:
    """The emitter picks the new table up by itself; `cdclab tables --sync` (setup_lake)
    gives the job its spec; its files written before the sync are read then (bookmark)."""
    env = many_tables
    dsn = env[settings.ENV_PG_DSN]
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("CREATE TABLE sales.returns (id int PRIMARY KEY, reason text)")
        conn.execute("INSERT INTO sales.returns SELECT g, 'r' || g FROM generate_series(1, 20) g")
    wait_for_drain(env, load_pipeline(), current_wal_lsn(dsn), timeout=420)
    setup_lake(env, load_pipeline())
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("UPDATE sales.returns SET reason = 'late' WHERE id <= 5")
        conn.execute("DELETE FROM sales.returns WHERE id > 15")
    # the emitter looks for new tables every 15 s (its full load comes then): wait
    # until the job has merged what it wrote
    last: list = []

    def merged() -> bool:
        wait_for_drain(env, load_pipeline(), current_wal_lsn(dsn), timeout=420)
        last[:] = [reconcile(env, load_pipeline(), "sales.returns")]
        return last[0].equal

    try:
        wait_for(merged, 240, "sales.returns in silver", every=5)
    except AssertionError as exc:
        raise AssertionError(f"{exc}: {json.dumps(last[0].to_json(), default=str)}") from None
    assert last[0].source_rows == 15


def test_the_pipeline_file_is_the_tests_own(many_tables: dict[str, str]) -> None:
    assert Path(os.environ[settings.ENV_PIPELINE_FILE]).name == "pipeline.toml"
    assert settings.load_pipeline().source.table_mappings.endswith("mappings.json")
