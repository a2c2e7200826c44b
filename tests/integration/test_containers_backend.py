"""`CDCLAB_BACKEND=containers` with no Docker engine: the run stops at once and says so.

It must never fall back to the embedded stack and never report a pass. The engine is
made unreachable on purpose (DOCKER_HOST to a socket that does not exist), so this test
means the same on a machine that does have Docker.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from pipeline_contract import settings

pytestmark = pytest.mark.integration


def test_containers_backend_without_an_engine_fails_fast_and_runs_nothing(tmp_path) -> None:
    env = {**os.environ, settings.ENV_BACKEND: "containers",
           "DOCKER_HOST": f"unix://{tmp_path}/no-docker.sock",
           settings.ENV_STATE_DIR: str(tmp_path / "state")}
    start = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider",
         "tests/integration/test_end_to_end.py"],
        cwd=settings.REPO_ROOT, env=env, capture_output=True, text=True, timeout=120,
    )
    elapsed = time.monotonic() - start
    out = done.stdout + done.stderr
    assert done.returncode not in (0, 5), out
    assert "no Docker engine answers" in out, out
    assert " passed" not in out and " failed" not in out, out  # nothing ran
    assert not (tmp_path / "state").exists()  # no embedded fallback started anything
    assert elapsed < 60, f"took {elapsed:.0f}s to give up"
