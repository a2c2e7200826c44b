"""The embedded supervisor's keeper: a service that dies is restarted with back-off, status
says so, and `down` stops the keeper before anything else. Real PostgreSQL and MinIO
processes; the containers' equivalent (restart policies) is test_container_faults.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from cdclab.restart_policy import RestartPolicy
from cdclab.services.base import pid_alive
from cdclab.supervisor import KEEPER, Stack
from pipeline_contract import settings
from pipeline_contract.settings import load_pipeline
from tests.resources.stack import EMBEDDED, backend
from tests.resources.stack_dirs import temp_state_dir
from tests.resources.waiting import wait_for

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(backend() != EMBEDDED, reason="the embedded supervisor's keeper"),
]


@pytest.fixture(scope="module")
def stack() -> Iterator[Stack]:
    with temp_state_dir("keeper") as state:
        stack = Stack(state, pipeline=load_pipeline())
        try:
            stack.up(["postgres", "minio"])
            yield stack
        finally:
            stack.down()


def healthy(stack: Stack, name: str) -> bool:
    try:
        return bool(stack.services[name].healthy(stack.ctx))
    except Exception:  # not answering yet
        return False


def crash(stack: Stack, name: str) -> int:
    pid = stack.pid_of(name)
    assert pid is not None, f"{name} is not running"
    os.killpg(pid, signal.SIGKILL)
    wait_for(lambda: not pid_alive(pid), 10, f"{name} (pid {pid}) to die")
    return pid


def status_json(stack: Stack) -> tuple[int, dict]:
    env = {**os.environ, settings.ENV_STATE_DIR: str(stack.state_dir)}
    done = subprocess.run([sys.executable, "-m", "cdclab.cli", "status", "--json"], env=env,
                          capture_output=True, text=True, timeout=60)
    return done.returncode, {s["name"]: s for s in json.loads(done.stdout)["services"]}


def fresh(stack: Stack, name: str) -> None:
    """Stop and start `name` with a keeper pass in between: the keeper forgets services
    that are not wanted, so its restart count and back-off start again from zero."""
    stack.down([name])
    wait_for(lambda: name not in stack.lives(), 10, f"the keeper to forget {name}")
    stack.up([name])


@contextmanager
def squat(stack: Stack, name: str) -> Iterator[object]:
    """Crash `name` and take its last port before the keeper restarts it (if the keeper
    was quicker, crash it again). Its last port: MinIO's console, which no client used,
    so no half-closed connection of the killed server holds it."""
    port = stack.ctx.ports[stack.services[name].port_names[-1]]
    for _ in range(10):
        crash(stack, name)
        squatter = socket.socket()
        squatter.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            squatter.bind(("127.0.0.1", port))
        except OSError:  # restarted already
            squatter.close()
            wait_for(lambda: healthy(stack, name), 30, f"{name} healthy")
            continue
        with squatter:
            squatter.listen()
            yield stack.lives().get(name) or True
        return
    raise AssertionError(f"could not take {name}'s port between its crash and restart")


def test_a_service_that_cannot_start_is_retried_with_growing_waits(stack: Stack) -> None:
    policy = RestartPolicy()
    fresh(stack, "minio")
    with squat(stack, "minio"):  # its port taken: every start fails, with a reason
        first = wait_for(lambda: (x := stack.lives().get("minio")) and x.is_down and x,
                         10, "the keeper to see minio dead").consecutive
        life = wait_for(lambda: (x := stack.lives().get("minio")) and
                        x.consecutive >= first + 2 and x, 60, "two failed attempts")
        assert life.is_down and "is busy" in life.last_error
        waited = sum(policy.delay(n) for n in range(first, life.consecutive + 1))
        assert life.next_attempt_at - life.down_since >= waited - 1  # the waits doubled
        code, services = status_json(stack)
        assert code == 3 and not services["minio"]["running"]
        assert "restart attempt" in services["minio"]["note"]
        assert "is busy" in services["minio"]["note"]
    # the port is free again: started by hand, the keeper takes it as running again
    stack.up(["minio"])
    wait_for(lambda: not stack.lives()["minio"].is_down, 10, "the keeper to see minio up")


def test_a_killed_service_comes_back_and_status_says_so(stack: Stack) -> None:
    fresh(stack, "minio")
    for round_ in (1, 2):
        old = crash(stack, "minio")
        new = wait_for(lambda o=old: (p := stack.pid_of("minio")) not in (None, o) and p,
                       15, "the keeper to restart minio")
        wait_for(lambda: healthy(stack, "minio"), 30, "minio healthy")
        assert new != old
        # the keeper records the restart once its pass is over (set-up included)
        services = wait_for(lambda r=round_: (s := status_json(stack)[1])["minio"]["restarts"]
                            == r and s, 30, "status to count the restart")
        minio = services["minio"]
        assert minio["running"] and minio["restarts"] == round_
        assert f"restarted {round_}x by the supervisor" in minio["note"]
        assert services[KEEPER]["running"]
    # the second run was the keeper's own child: it knows how it ended
    assert stack.lives()["minio"].last_exit == -signal.SIGKILL
    log = (stack.state_dir / "logs" / "keeper.log").read_text()
    assert "minio died (exit -9)" in log and "minio is back (restart 2)" in log


def test_down_of_one_service_is_respected_and_full_down_stops_the_keeper(stack: Stack) -> None:
    stack.down(["minio"])
    time.sleep(3)  # three keeper passes
    assert stack.pid_of("minio") is None and stack.pid_of(KEEPER) is not None
    assert "minio" not in stack.wanted()
    stack.up(["minio"])
    keeper = stack.pid_of(KEEPER)
    postgres = stack.pid_of("postgres")
    stack.down()
    assert not pid_alive(keeper) and not pid_alive(postgres)
    time.sleep(2)
    assert stack.pid_of("postgres") is None and stack.pid_of("minio") is None
    stack.up(["postgres", "minio"])  # for any test after this one


def test_a_start_whose_set_up_fails_is_stopped_then_started_again_whole(
        stack: Stack, monkeypatch) -> None:
    """A service that answers but whose set-up (MinIO's buckets and users) failed must not
    stay up as if it were ready: it is stopped, and the keeper starts it again, set-up
    included."""
    stack.down(["minio"])
    wait_for(lambda: "minio" not in stack.lives(), 10, "the keeper to forget minio")
    service = stack.services["minio"]
    started: list[int] = []

    def failing_set_up(ctx) -> None:
        started.append(stack.pid_of("minio"))
        raise RuntimeError("cdclab test: set-up failed")

    monkeypatch.setattr(service, "after_start", failing_set_up)
    with pytest.raises(RuntimeError, match="set-up failed"):
        stack.up(["minio"])
    assert started and started[0] is not None
    assert not pid_alive(started[0])  # stopped, not left half set up
    monkeypatch.undo()
    wait_for(lambda: stack.pid_of("minio") not in (None, started[0]) and
             healthy(stack, "minio"), 60, "the keeper to start minio again")


def test_a_start_that_never_turns_healthy_is_stopped_then_started_again(
        stack: Stack, monkeypatch) -> None:
    """A start that fails its wait (not healthy in time, or a service it needs died
    meanwhile) must not leave its process behind: the keeper would take it for running,
    never restart it, and never run its set-up."""
    stack.down(["minio"])
    wait_for(lambda: "minio" not in stack.lives(), 10, "the keeper to forget minio")
    service = stack.services["minio"]
    started: list[int] = []

    def never_healthy(ctx) -> bool:
        pid = stack.pid_of("minio")
        if pid is not None and pid not in started:
            started.append(pid)
        return False

    monkeypatch.setattr(service, "healthy", never_healthy)
    monkeypatch.setattr(service, "startup_timeout", lambda: 3.0)
    with pytest.raises(Exception, match="did not become healthy"):
        stack.up(["minio"])
    assert started and not pid_alive(started[0])  # stopped, not left running unready
    assert stack.pid_of("minio") is None
    monkeypatch.undo()
    wait_for(lambda: stack.pid_of("minio") not in (None, started[0]) and
             healthy(stack, "minio"), 60, "the keeper to start minio again")
    # counted as the keeper's restart once its set-up is done too
    wait_for(lambda: stack.lives()["minio"].restarts >= 1, 60, "the keeper's restart count")


def test_a_start_whose_dependency_is_not_running_fails_at_once(stack: Stack) -> None:
    """Waiting out a start-up timeout on a dependency that is down holds the stack lock
    all along (the keeper cannot restart the dependency): the start names it at once."""
    stack.down(["minio"])
    try:
        started = time.monotonic()
        with pytest.raises(Exception, match="minio not running"):
            stack.up(["iceberg-rest"])
        assert time.monotonic() - started < 20
        assert stack.pid_of("iceberg-rest") is None  # what it started is stopped
    finally:
        stack.down(["iceberg-rest"])
        stack.up(["minio"])
