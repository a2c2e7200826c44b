"""`make setup` twice at once on one cache (two clones, two CI jobs): the second waits for
the first instead of building into the same temporary names (it once failed with
`mv: cannot stat …docker-compose-….tmp`)."""

from __future__ import annotations

import fcntl
import os
import subprocess
import time

import pytest

from pipeline_contract import settings

pytestmark = pytest.mark.integration

BOOTSTRAP = settings.REPO_ROOT / "scripts" / "bootstrap.sh"


def bootstrap() -> subprocess.Popen:
    env = {**os.environ, settings.ENV_CACHE_DIR: str(settings.cache_dir())}
    return subprocess.Popen(["bash", str(BOOTSTRAP)], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)


def test_a_second_setup_waits_for_the_first_then_succeeds() -> None:
    lock = settings.cache_dir() / ".bootstrap.lock"
    with open(lock, "a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # a first setup, mid-way
        waiting = bootstrap()
        time.sleep(2.0)
        assert waiting.poll() is None, waiting.communicate()[0]  # it waits...
        fcntl.flock(held, fcntl.LOCK_UN)
    out, _ = waiting.communicate(timeout=600)
    assert waiting.returncode == 0, out  # ...then finds everything in place


def test_two_setups_at_once_both_succeed() -> None:
    runs = [bootstrap(), bootstrap()]
    outs = [r.communicate(timeout=900)[0] for r in runs]
    assert [r.returncode for r in runs] == [0, 0], outs
