"""Test resource: the whole pipeline stack, from one fixture, on the backend
`CDCLAB_BACKEND` picks: `embedded` (default; local processes) or `containers`
(docker compose through testcontainers). With `containers` and no Docker engine, the
session stops at once with a message that says so: never a silent fallback, never a pass.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from cdclab.private_stack import (
    CONTAINERS,
    EMBEDDED,
    PrivateStackError,
    chosen_backend,
    docker_problem,
)
from cdclab.services.base import pid_alive
from cdclab.supervisor import INFRA, PIPELINE, Stack
from pipeline_contract import settings
from pipeline_contract.settings import load_pipeline
from tests.resources.stack_dirs import temp_state_dir


def backend() -> str:
    return os.environ.get(settings.ENV_BACKEND, EMBEDDED)


def pytest_sessionstart(session: pytest.Session) -> None:
    try:
        chosen = chosen_backend(None, os.environ)
    except PrivateStackError as error:
        pytest.exit(str(error), 2)
    if chosen == CONTAINERS:
        from tests.resources.launch import IMAGE

        problem = docker_problem(IMAGE)
        if problem:
            pytest.exit(f"{settings.ENV_BACKEND}=containers, but {problem}. Start Docker (and "
                        "build the image), or run with CDCLAB_BACKEND=embedded. Nothing was run.",
                        returncode=3)


# Fixtures whose services start on the chosen backend (tests/resources/launch.py). A test
# that uses none of them, nor is marked `launches` (it starts services in its body), runs
# in-process the same way whatever the backend (e.g. the Glue API over local files, moto):
# `make test` runs it, and the containers run leaves it out instead of repeating it.
SERVICE_FIXTURES = frozenset({"stack", "minio", "postgres", "iceberg_rest"})


# `job_semantics`: the shipped job's merge semantics, each test with a Glue API of its own
# fed hand-made files (out of order, replayed, capped, poisoned, before images). The job
# and the runner are the same files on both backends, so the containers run leaves these
# to `make test` (they cost it ~8 minutes); the image's Glue is covered there by the
# pipeline tests that run the job for every batch, the demo, and test_job_glue50.
def runs_the_same_on_both_backends(item: pytest.Item) -> bool:
    if item.get_closest_marker("job_semantics"):
        return True
    if item.get_closest_marker("launches"):
        return False
    return not SERVICE_FIXTURES & set(getattr(item, "fixturenames", ()))


_SAME_ON_BOTH = pytest.StashKey[int]()  # how many the containers run left out


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if backend() != CONTAINERS:
        return
    same = [item for item in items if runs_the_same_on_both_backends(item)]
    if same:
        config.hook.pytest_deselected(items=same)
        left_out = {id(item) for item in same}
        items[:] = [item for item in items if id(item) not in left_out]
        config.stash[_SAME_ON_BOTH] = len(same)


def pytest_report_collectionfinish(config: pytest.Config) -> str | None:
    same = config.stash.get(_SAME_ON_BOTH, 0)
    if not same:
        return None
    return (f"containers: {same} tests start no service, or check the job's semantics, and "
            "run the same on both backends; "
            "`make test` runs them, this run leaves them out")


@dataclass
class StackHandle:
    """What a test needs to drive the stack, whatever the backend."""

    backend: str
    env: dict[str, str]
    state_dir: Path | None
    _stack: Stack | None = None

    def start_pipeline(self) -> None:
        """Start the emitter (full load happens at its first start) and the watcher."""
        if self._stack is not None:
            self._stack.up(PIPELINE)
            self.env = self._stack.env()

    def stop(self, *names: str) -> None:
        if self._stack is not None:
            self._stack.down(names)

    def start(self, *names: str) -> None:
        if self._stack is not None:
            self._stack.up(names)
            self.env = self._stack.env()

    def pid_of(self, name: str) -> int | None:
        return self._stack.pid_of(name) if self._stack is not None else None

    def identity_of(self, name: str) -> object:
        """Which run of the service this is (a restart changes it): its PID here."""
        return self.pid_of(name)

    @property
    def cli_env(self) -> dict[str, str]:
        """How the CLI reaches this stack."""
        return {**os.environ, settings.ENV_STATE_DIR: str(self.state_dir)}

    def crash(self, name: str) -> int:
        """The service dies (SIGKILL, as an OOM kill would) and is left to the supervisor's
        keeper to restart. Returns the restart count before the crash."""
        before = self.restarts(name)
        self.kill(name)
        return before

    def restarts(self, name: str) -> int:
        assert self._stack is not None
        life = self._stack.lives().get(name)
        return life.restarts if life else 0

    def wait_restarted(self, name: str, before: int, timeout: float = 240) -> float:
        """Seconds until the keeper restarted `name` and it answers its health check."""
        assert self._stack is not None
        service, start = self._stack.services[name], time.monotonic()
        while time.monotonic() - start < timeout:
            if self.restarts(name) > before and self.pid_of(name) is not None:
                try:
                    if service.healthy(self._stack.ctx):
                        return time.monotonic() - start
                except Exception:  # not answering yet
                    pass
            time.sleep(0.2)
        raise AssertionError(f"{name} was not restarted healthy by the supervisor within "
                             f"{timeout}s: {self._stack.lives().get(name)}")

    def kill(self, *names: str) -> None:
        """Crash services: SIGKILL, no clean shutdown (the keeper restarts them)."""
        for name in names:
            pid = self.pid_of(name)
            assert pid is not None, f"{name} is not running"
            os.killpg(pid, signal.SIGKILL)
            deadline = time.monotonic() + 10
            while pid_alive(pid) and time.monotonic() < deadline:
                time.sleep(0.05)


def _embedded() -> Iterator[StackHandle]:
    from cdclab.setup import setup_lake

    with temp_state_dir("stack") as state:
        stack = Stack(state, pipeline=load_pipeline())
        try:
            stack.up(INFRA)
            setup_lake(stack.env(), load_pipeline())
            yield StackHandle(EMBEDDED, stack.env(), state, stack)
        finally:
            stack.down()


def _containers() -> Iterator[StackHandle]:
    from tests.resources.compose_stack import compose_stack

    yield from compose_stack()


@pytest.fixture(scope="session")
def stack() -> Iterator[StackHandle]:
    if backend() == CONTAINERS:
        yield from _containers()
    else:
        yield from _embedded()
