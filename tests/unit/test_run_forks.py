"""The fork server hands out run processes that behave as spawned ones: ready on stdout,
their own session, an exit status, ended by a signal; a run process that is never given
a run exits when its stdin ends. Real processes (the server imports PySpark once)."""

from __future__ import annotations

import json
import os
import signal
import sys
from collections.abc import Iterator

import pytest

from glue_local import runner
from glue_local.run_forks import ForkServer
from pipeline_contract import settings


@pytest.fixture(scope="module")
def forks() -> Iterator[ForkServer]:
    server = ForkServer(sys.executable, runner._child_env())
    yield server
    server.close()


def test_a_forked_process_is_ready_leads_its_own_session_and_exits_on_empty_stdin(
        forks: ForkServer) -> None:
    proc = forks.fork()
    assert proc.stdout.readline().strip() == "ready"
    assert os.getpgid(proc.pid) == proc.pid and os.getsid(proc.pid) == proc.pid
    proc.stdin.write("\n")
    proc.stdin.close()
    assert proc.wait(60) == 0 and proc.poll() == 0
    assert proc.stdout.read() == ""


def test_a_killed_process_reports_the_signal_and_the_next_one_is_separate(
        forks: ForkServer, tmp_path) -> None:
    first, second = forks.fork(), forks.fork()
    assert first.pid != second.pid
    assert first.stdout.readline().strip() == "ready"
    os.killpg(first.pid, signal.SIGKILL)
    assert first.wait(60) == -signal.SIGKILL
    # the second still runs a run: a script that fails says why on its stdout
    script = tmp_path / "fail.py"
    script.write_text("import sys\nprint('hello from', sys.argv[1])\nraise SystemExit(3)\n")
    assert second.stdout.readline().strip() == "ready"
    result = tmp_path / "result.json"
    second.stdin.write(json.dumps({"script": str(script), "argv": ["fail.py", "x"],
                                   "cwd": str(tmp_path), "result": str(result),
                                   "run_id": "jr_1"}) + "\n")
    second.stdin.close()
    output = second.stdout.read()
    code = second.wait(60)
    assert "hello from x" in output, output
    assert code == 1 and json.loads(result.read_text())["state"] == "FAILED"


def test_run_start_is_fork_or_spawn() -> None:
    assert runner.run_start({}) == "fork"
    assert runner.run_start({settings.ENV_GLUE_RUN_START: "spawn"}) == "spawn"
    with pytest.raises(ValueError, match=settings.ENV_GLUE_RUN_START):
        runner.run_start({settings.ENV_GLUE_RUN_START: "vfork"})
