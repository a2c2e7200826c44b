"""Faults in containers: a service's processes die mid-workload (SIGKILL, as an OOM kill
would), Docker's restart policy brings the container back by itself, its health check
reports it healthy again, and silver still equals source with no duplicate ids.

Containers backend only: the embedded runtime's keeper is tested in test_supervisor and
by the crash tests of test_end_to_end.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import threading

import psycopg
import pytest

from cdclab.drain import current_wal_lsn, wait_for_drain
from cdclab.reconcile import reconcile, silver_catalog
from cdclab.sample_data import seed
from cdclab.services import registry
from cdclab.workload import run_workload
from pipeline_contract import settings
from pipeline_contract.settings import load_pipeline
from tests.resources.stack import CONTAINERS, backend

pytestmark = [
    pytest.mark.integration, pytest.mark.slow, pytest.mark.containers,
    pytest.mark.skipif(backend() != CONTAINERS, reason="restart policies are Docker's"),
]

SEED = int(os.environ.get("CDCLAB_TEST_SEED", random.randrange(1_000_000)))
SERVICES = list(registry.NAMES)


def test_every_service_dies_and_its_restart_policy_brings_it_back(stack) -> None:
    print(f"seed {SEED}")
    dsn = stack.env[settings.ENV_PG_DSN]
    with psycopg.connect(dsn) as conn:
        if not conn.execute("SELECT count(*) FROM public.hosts_demo").fetchone()[0]:
            seed(conn, load_pipeline(), 500, seed=SEED)
    stack.start_pipeline()
    rng = random.Random(SEED)
    order = rng.sample(SERVICES, len(SERVICES))
    recovered = {}
    for name in order:
        done = threading.Event()

        def workload(done: threading.Event = done, offset: int = len(recovered)) -> None:
            try:
                run_workload(dsn, load_pipeline(), transactions=40, rate=20, seed=SEED + offset)
            except psycopg.OperationalError:
                pass  # postgres itself died under the workload: the rest is still checked
            finally:
                done.set()

        thread = threading.Thread(target=workload)
        thread.start()
        done.wait(rng.uniform(0.3, 1.5))
        before = stack.crash(name)
        recovered[name] = round(stack.wait_restarted(name, before), 1)
        thread.join()
    print(f"restarted by Docker (seconds to healthy): {recovered}")
    status = subprocess.run([sys.executable, "-m", "cdclab.cli", "status", "--json"],
                            env=stack.cli_env, capture_output=True, text=True, timeout=120)
    shown = {s["name"]: s for s in json.loads(status.stdout)["services"]}
    for name in SERVICES:  # status says so
        assert shown[name]["restarts"] >= 1, shown[name]
        assert "restart policy" in shown[name]["note"]
    wait_for_drain(stack.env, load_pipeline(), current_wal_lsn(dsn), timeout=600)
    result = reconcile(stack.env, load_pipeline())
    assert result.equal, f"seed {SEED}: {result.to_json()}"
    assert result.source_rows > 0
    ids = silver_ids(stack.env)  # reconcile keys silver by id: duplicates need their own look
    assert len(ids) == len(set(ids)) == result.silver_rows, "duplicate ids in silver"


def silver_ids(env: dict[str, str]) -> list[int]:
    lake = settings.load_pipeline().lake
    table = silver_catalog(env).load_table(f"{lake.glue_database}.{lake.silver_table}")
    return table.scan(selected_fields=("id",)).to_arrow().column("id").to_pylist()
