"""Two short trials of the chaos suite (bench/chaos.py; `make chaos` runs 100): services
killed with SIGKILL under a randomized workload, restarted by the keeper alone, then
silver equals source with no duplicate keys. On a stack of its own (embedded only: the
runner signals the PIDs of the stack it started).

The base seed is random per run and printed; set CDCLAB_TEST_SEED to replay one.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys

import pytest

from pipeline_contract import settings
from tests.resources.stack import EMBEDDED, backend

pytestmark = [pytest.mark.integration, pytest.mark.slow]

SEED = int(os.environ.get("CDCLAB_TEST_SEED", random.randrange(1_000_000)))


@pytest.mark.skipif(backend() != EMBEDDED, reason="the chaos runner drives the embedded stack")
def test_two_chaos_trials_lose_nothing() -> None:
    print(f"chaos seed {SEED}")
    env = {k: v for k, v in os.environ.items() if k != settings.ENV_STATE_DIR}
    done = subprocess.run(
        [sys.executable, str(settings.REPO_ROOT / "bench" / "chaos.py"), "--trials", "2",
         "--seed", str(SEED), "--duration", "4", "7", "--rows", "2000",
         "--trial-seconds", "240"],
        cwd=settings.REPO_ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert done.stdout, done.stderr[-4000:]
    result = json.loads(done.stdout)
    totals = result["totals"]
    assert result["ok"], (f"seed {SEED}: {json.dumps(result['failures'])}\n"
                          + done.stderr[-4000:])
    assert totals["trials"] == totals["passed"] == 2
    assert totals["lost"] == totals["phantom"] == totals["duplicates"] == 0
    assert totals["faults_injected"] >= 2
    for trial in result["trials"]:
        for fault in trial["faults"]:
            assert fault["recovery_seconds"] is not None, fault
            assert fault["restarted_by"] == "keeper", fault
