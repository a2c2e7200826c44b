"""DMS's other bronze layouts through the same job: DataFormat parquet with date-based
folder partitioning (CDC files in <table>/<yyyy>/<mm>/<dd>/). The job reads them through
a ParquetHiveSerDe catalog table (recursing into the date folders); after a randomized
workload silver equals source for the demo table and a table of many types. Embedded
only (the test's own pipeline.toml)."""

from __future__ import annotations

import json
import os
import random
from collections.abc import Iterator

import psycopg
import pytest

from cdclab.drain import current_wal_lsn, wait_for_drain
from cdclab.reconcile import reconcile
from cdclab.sample_data import seed
from cdclab.services.minio import s3_client
from cdclab.tables_sync import published_specs
from cdclab.workload import run_workload
from pipeline_contract import settings
from pipeline_contract.settings import load_pipeline
from tests.resources.pipeline_stack import pipeline_stack
from tests.resources.stack import CONTAINERS, backend

pytestmark = [pytest.mark.integration, pytest.mark.slow,
              pytest.mark.skipif(backend() == CONTAINERS,
                                 reason="points the embedded stack at its own pipeline.toml")]

SEED = int(os.environ.get("CDCLAB_TEST_SEED", random.randrange(1_000_000)))
PAYMENTS = """CREATE TABLE public.payments (
  id int PRIMARY KEY, amount numeric(12,2), fee money, ok boolean, at timestamptz,
  day date, ratio real, weight double precision, blob bytea, tags text[], note text)"""
MAPPINGS = {"rules": [
    {"rule-type": "selection", "rule-id": "1", "rule-name": "two",
     "object-locator": {"schema-name": "public", "table-name": "%"}, "rule-action": "include"},
    {"rule-type": "transformation", "rule-id": "2", "rule-name": "seq",
     "rule-target": "column", "object-locator": {"schema-name": "%", "table-name": "%"},
     "rule-action": "add-column", "value": "change_seq", "expression": "$AR_H_CHANGE_SEQ",
     "data-type": {"type": "string", "length": 50}},
]}


def payments(conn: psycopg.Connection, rng: random.Random, transactions: int) -> None:
    for _ in range(transactions):
        with conn.transaction():
            for _ in range(rng.randint(1, 3)):
                pid = rng.randint(1, 60)
                if rng.random() < 0.75:
                    conn.execute(
                        "INSERT INTO public.payments VALUES (%s, %s, %s, %s, now() - %s * "
                        "interval '1 second', %s, %s, %s, %s, %s, %s) ON CONFLICT (id) DO "
                        "UPDATE SET amount = EXCLUDED.amount, ok = EXCLUDED.ok, "
                        "note = EXCLUDED.note, blob = EXCLUDED.blob",
                        (pid, rng.choice([round(rng.uniform(-1e6, 1e6), 2), None]),
                         rng.choice(["12.34", "-0.5", None]), rng.choice([True, False, None]),
                         rng.randint(0, 10**6), rng.choice(["2020-02-29", "1999-12-31", None]),
                         rng.choice([0.1, -2.5, None]), rng.choice([1e-9, 3.0, None]),
                         rng.choice([b"\x00\xff", b"", None]),
                         rng.choice([["a", "b"], [], None]),
                         rng.choice(["", None, "with, comma", 'q"uote', "ünï"])))
                else:
                    conn.execute("DELETE FROM public.payments WHERE id = %s", (pid,))


@pytest.fixture(scope="module")
def parquet_stack(tmp_path_factory) -> Iterator[dict[str, str]]:
    work = tmp_path_factory.mktemp("parquet")
    (work / "mappings.json").write_text(json.dumps(MAPPINGS))

    def prepare(env: dict[str, str]) -> None:
        with psycopg.connect(env[settings.ENV_PG_DSN], autocommit=True) as conn:
            conn.execute(PAYMENTS)
            seed(conn, load_pipeline(), 200, seed=SEED)
            payments(conn, random.Random(SEED), 60)

    changes = {"table_mappings": f'"{work / "mappings.json"}"', "data_format": '"parquet"',
               "date_partition_enabled": "true"}
    with pipeline_stack(work, changes, prepare) as env:
        yield env


def test_parquet_date_partitioned_bronze_reaches_silver_equal_to_the_source(
        parquet_stack: dict[str, str]) -> None:
    print(f"workload seed {SEED}")
    env = parquet_stack
    dsn = env[settings.ENV_PG_DSN]
    specs = published_specs(env, settings.load_pipeline())
    assert {s["bronze_format"] for s in specs} == {"parquet"}
    with psycopg.connect(dsn, autocommit=True) as conn:
        payments(conn, random.Random(SEED + 1), 80)
    run_workload(dsn, load_pipeline(), transactions=80, rate=60, seed=SEED)
    wait_for_drain(env, load_pipeline(), current_wal_lsn(dsn), timeout=420)
    result = reconcile(env, load_pipeline())
    assert result.equal, f"seed {SEED}: {json.dumps(result.to_json(), default=str)[:3000]}"
    assert set(result.tables) == {"public.hosts_demo", "public.payments"}
    p = settings.load_pipeline()
    keys = [o["Key"] for page in s3_client(env).get_paginator("list_objects_v2").paginate(
        Bucket=p.lake.bronze_bucket, Prefix=p.watched_prefix + "/")
        for o in page.get("Contents", [])]
    cdc = [k for k in keys if "/LOAD" not in k]
    assert cdc and all(k.endswith(".parquet") for k in keys)
    # <folder>/<table>/<yyyy>/<mm>/<dd>/<file>: three more levels than the table's folder
    assert all(k.count("/") == p.bronze_prefix.count("/") + 4 for k in cdc), cdc[:3]


def test_a_column_added_at_the_source_flows_through_parquet_after_a_sync(
        parquet_stack: dict[str, str]) -> None:
    """Parquet is read by name: after ADD COLUMN and `cdclab tables --sync` (the job adds
    the column to silver) files of both shapes merge, nothing is quarantined."""
    from cdclab.setup import setup_lake

    env = parquet_stack
    dsn = env[settings.ENV_PG_DSN]
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("ALTER TABLE public.payments ADD COLUMN extra text")
    setup_lake(env, load_pipeline())
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("UPDATE public.payments SET extra = 'x' || id WHERE id % 2 = 0")
        payments(conn, random.Random(SEED + 2), 20)
    wait_for_drain(env, load_pipeline(), current_wal_lsn(dsn), timeout=420)
    result = reconcile(env, load_pipeline(), "public.payments")
    assert result.equal, json.dumps(result.to_json(), default=str)[:3000]
    spec = {s["name"]: s for s in published_specs(env, settings.load_pipeline())}["public.payments"]
    assert "extra" in [c["name"] for c in spec["silver_columns"]]
