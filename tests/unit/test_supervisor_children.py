"""A service the supervisor started is judged by its own Popen, so how it ended is kept
even when a killed multi-threaded server's leader is a zombie before its threads exit."""

from __future__ import annotations

import subprocess
import sys
import time

from cdclab.supervisor import Stack
from pipeline_contract.service_kit import is_zombie, pid_alive

# The main thread leaves (its thread a zombie, as a killed Go server's leader is for a
# moment); another thread exits the process a second later with status 7.
LEADER_GONE_FIRST = """
import ctypes, os, threading, time
threading.Thread(target=lambda: (time.sleep(1.0), os._exit(7))).start()
ctypes.CDLL(None).pthread_exit(None)
"""


def test_a_zombie_leader_is_waited_for_and_its_exit_status_kept():
    child = subprocess.Popen([sys.executable, "-c", LEADER_GONE_FIRST])
    try:
        deadline = time.monotonic() + 10
        while not is_zombie(child.pid):
            assert time.monotonic() < deadline, "the child's main thread did not exit"
            time.sleep(0.01)
        assert child.poll() is None  # not yet collectable: a thread still runs
        assert not pid_alive(child.pid)  # what an outsider's check concludes
        assert Stack._child_ended(child)
        assert child.returncode == 7
    finally:
        child.kill()
        child.wait()


def test_a_running_child_is_not_ended():
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        assert not Stack._child_ended(child)
        child.kill()
        child.wait()
        assert Stack._child_ended(child) and child.returncode == -9
    finally:
        child.kill()
        child.wait()


def test_a_process_that_is_gone_counts_as_a_zombie():
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    assert is_zombie(child.pid)  # reaped: no /proc entry left
