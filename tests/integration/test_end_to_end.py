"""End to end on the real stack: seed, full load, randomized CDC workload, drain,
then silver must equal source row for row. Then the same after crashing the emitter
and the watcher mid-workload (replay, never skip).

The workload seed is random per run and printed; set CDCLAB_TEST_SEED to replay one.
"""

from __future__ import annotations

import os
import random
import threading

import psycopg
import pytest

from cdclab import settings
from cdclab.drain import current_wal_lsn, wait_for_drain
from cdclab.reconcile import reconcile
from cdclab.sample_data import seed
from cdclab.workload import run_workload

pytestmark = [pytest.mark.integration, pytest.mark.slow]

SEED = int(os.environ.get("CDCLAB_TEST_SEED", random.randrange(1_000_000)))


def _drain_and_reconcile(env: dict[str, str]) -> None:
    target = current_wal_lsn(env[settings.ENV_PG_DSN])
    wait_for_drain(env, target, timeout=420)
    result = reconcile(env)
    assert result.equal, f"seed {SEED}: {result.to_json()}"
    assert result.source_rows > 0


@pytest.fixture(scope="module")
def running_pipeline(stack):
    with psycopg.connect(stack.env[settings.ENV_PG_DSN]) as conn:
        seed(conn, 1500, seed=SEED)
    stack.start_pipeline()  # full load reads the snapshot exported with the slot
    return stack


def test_silver_equals_source_after_a_randomized_workload(running_pipeline) -> None:
    print(f"workload seed {SEED}")
    env = running_pipeline.env
    run_workload(env[settings.ENV_PG_DSN], transactions=250, rate=80, seed=SEED)
    _drain_and_reconcile(env)


def test_crashes_mid_workload_replay_and_lose_nothing(running_pipeline) -> None:
    stack = running_pipeline
    env = stack.env
    done = threading.Event()

    def workload() -> None:
        try:
            run_workload(env[settings.ENV_PG_DSN], transactions=200, rate=60, seed=SEED + 1)
        finally:
            done.set()

    thread = threading.Thread(target=workload)
    thread.start()
    try:
        for name in ("emitter", "watcher"):
            done.wait(1.0)
            stack.kill(name)  # a crash: no clean shutdown, no final confirm
        done.wait(1.0)
        stack.start("emitter", "watcher")  # restart from the slot's confirmed LSN
    finally:
        thread.join()
    _drain_and_reconcile(stack.env)
