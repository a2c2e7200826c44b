"""Resets converge: a dropped slot, a rebuilt source (its system identifier changed) and
lost emitter state each stop the emitter with a clear status instead of a silent
divergence, and one `cdclab resync` re-snapshots: silver equals the source again, rows
deleted meanwhile are gone, no id twice, and the earlier files stay in the archive.

Embedded stack: `cdclab resync` drives the embedded supervisor.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys

import psycopg
import pytest

from cdclab.drain import current_wal_lsn, wait_for_drain
from cdclab.reconcile import reconcile, silver_catalog
from cdclab.sample_data import seed
from cdclab.services.base import ServiceError
from cdclab.services.minio import s3_client
from cdclab.workload import run_workload
from pipeline_contract import settings
from pipeline_contract.settings import load_pipeline
from tests.resources.stack import EMBEDDED, backend

pytestmark = [
    pytest.mark.integration, pytest.mark.slow,
    pytest.mark.skipif(backend() != EMBEDDED, reason="cdclab resync drives the embedded stack"),
]

SEED = int(os.environ.get("CDCLAB_TEST_SEED", random.randrange(1_000_000)))
CLI = [sys.executable, "-m", "cdclab.cli"]


@pytest.fixture(scope="module")
def pipeline(stack):
    with psycopg.connect(stack.env[settings.ENV_PG_DSN]) as conn:
        if not conn.execute("SELECT count(*) FROM public.hosts_demo").fetchone()[0]:
            seed(conn, load_pipeline(), 800, seed=SEED)
    stack.start_pipeline()
    env = stack.env
    run_workload(env[settings.ENV_PG_DSN], load_pipeline(), transactions=60, rate=60, seed=SEED)
    wait_for_drain(env, load_pipeline(), current_wal_lsn(env[settings.ENV_PG_DSN]), timeout=420)
    assert reconcile(env, load_pipeline()).equal
    return stack


def emitter_state_path(stack):
    return stack.state_dir / "emitter" / "state.json"


def status(stack) -> tuple[int, dict]:
    done = subprocess.run([*CLI, "status", "--json"], env=stack.cli_env, capture_output=True,
                          text=True, timeout=60)
    return done.returncode, json.loads(done.stdout)


def delete_some_rows(dsn: str, n: int) -> list[int]:
    """Rows deleted while nothing records it: phantoms in silver unless re-snapshotted."""
    with psycopg.connect(dsn) as conn:
        ids = [r[0] for r in conn.execute(
            "DELETE FROM public.hosts_demo WHERE id IN (SELECT id FROM public.hosts_demo "
            "ORDER BY random() LIMIT %s) RETURNING id", (n,)).fetchall()]
    return ids


def assert_stopped_for_resync(stack, word: str) -> None:
    with pytest.raises(ServiceError):  # the emitter exits at once, saying why
        stack.start("emitter")
    waiting = json.loads(emitter_state_path(stack).read_text())["resync_needed"]
    assert word in waiting["reason"], waiting
    code, doc = status(stack)
    assert code == 3
    assert any("cdclab resync" in p and word in p for p in doc["pipeline"]["problems"]), doc


def run_resync(stack, *args: str) -> dict:
    done = subprocess.run([*CLI, "resync", *args, "--json"], env=stack.cli_env,
                          capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def silver_ids(env) -> list[int]:
    lake = settings.load_pipeline().lake
    table = silver_catalog(env).load_table(f"{lake.glue_database}.{lake.silver_table}")
    return table.scan(selected_fields=("id",)).to_arrow().column("id").to_pylist()


def check_converged(stack, report: dict, deleted: list[int]) -> None:
    assert report["reconcile"]["equal"], report["reconcile"]
    ids = silver_ids(stack.env)
    assert len(ids) == len(set(ids)), "duplicate ids in silver"
    # the workload after the deletes numbers new rows from the highest id left, so a
    # deleted top id may come back as a new row: only ids the source lacks now are phantoms
    with psycopg.connect(stack.env[settings.ENV_PG_DSN]) as conn:
        back = {r[0] for r in conn.execute("SELECT id FROM public.hosts_demo WHERE id = ANY(%s)",
                                           (deleted,))}
    assert not (set(deleted) - back) & set(ids), "rows deleted at the source are still in silver"
    p = settings.load_pipeline()
    s3 = s3_client(stack.env)
    archived = s3.list_objects_v2(Bucket=p.lake.bronze_bucket,
                                  Prefix=report["archive_location"].split("/", 3)[3])
    assert archived.get("KeyCount", 0) >= 1  # the earlier files are kept
    assert report["archived_objects"] >= archived.get("KeyCount", 0)


def test_a_dropped_slot_stops_the_emitter_and_resync_converges(pipeline) -> None:
    stack, dsn = pipeline, pipeline.env[settings.ENV_PG_DSN]
    stack.stop("emitter")
    deleted = delete_some_rows(dsn, 25)
    slot = settings.load_pipeline().source.slot
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("SELECT pg_drop_replication_slot(%s)", (slot,))
    assert_stopped_for_resync(stack, "is gone")
    # the source goes on
    run_workload(dsn, load_pipeline(), transactions=30, rate=60, seed=SEED + 1)
    report = run_resync(stack)
    assert report["whole"] is True
    check_converged(stack, report, deleted)
    code, doc = status(stack)
    assert doc["pipeline"]["ok"], doc["pipeline"]


def test_a_rebuilt_source_is_detected_by_its_system_identifier(pipeline) -> None:
    stack, dsn = pipeline, pipeline.env[settings.ENV_PG_DSN]
    stack.stop("emitter")
    path = emitter_state_path(stack)
    state = json.loads(path.read_text())
    assert state["source_system_id"].isdigit()
    state["source_system_id"] = "1"  # as if the state came from another cluster
    path.write_text(json.dumps(state))
    deleted = delete_some_rows(dsn, 10)
    assert_stopped_for_resync(stack, "rebuilt")
    check_converged(stack, run_resync(stack), deleted)


def test_lost_emitter_state_with_earlier_files_asks_for_a_resync(pipeline) -> None:
    stack, dsn = pipeline, pipeline.env[settings.ENV_PG_DSN]
    stack.stop("emitter")
    emitter_state_path(stack).unlink()
    deleted = delete_some_rows(dsn, 10)
    assert_stopped_for_resync(stack, "state")
    check_converged(stack, run_resync(stack), deleted)


def test_resync_of_one_table_keeps_the_slot(pipeline) -> None:
    stack, dsn = pipeline, pipeline.env[settings.ENV_PG_DSN]
    with psycopg.connect(dsn) as conn:
        before = conn.execute("SELECT restart_lsn FROM pg_replication_slots").fetchall()
    report = run_resync(stack, "public.hosts_demo")
    assert report["whole"] is False
    check_converged(stack, report, [])
    with psycopg.connect(dsn) as conn:
        after = conn.execute("SELECT restart_lsn FROM pg_replication_slots").fetchall()
    assert len(before) == len(after) == 1  # the same slot streams on
