"""Containers backend of the `stack` fixture: docker-compose.yml through testcontainers.

Starts the infrastructure services of docker-compose.yml (the one-shot `credentials`
first, by its depends_on) as a private compose project on free 127.0.0.1 ports, and
hands out a StackHandle whose env reaches them under the same keys as the embedded
stack: cdclab.runtime.ComposeRuntime, the CLI's own view of a compose stack, builds it
(published ports, credentials read through `docker compose exec`). The images must be
built first (`make docker-build`); the session hook in tests/resources/stack.py stops
everything when no Docker engine answers.
"""

from __future__ import annotations

import json
import re
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime

from cdclab import private_stack
from pipeline_contract import settings
from pipeline_contract.settings import load_pipeline
from tests.resources.stack import CONTAINERS, StackHandle

PIPELINE_SERVICES = ["emitter", "watcher"]


@dataclass
class ComposeStackHandle(StackHandle):
    """StackHandle whose start/stop/kill act on compose services."""

    compose_cmd: tuple[str, ...] = ()
    compose_env: dict | None = None

    def compose(self, *args: str, timeout: float = 600) -> str:
        done = subprocess.run([*self.compose_cmd, *args], cwd=settings.REPO_ROOT,
                              capture_output=True, text=True, timeout=timeout,
                              env=self.compose_env)
        if done.returncode != 0:
            raise RuntimeError(f"docker compose {' '.join(args)} failed:\n{done.stderr}")
        return done.stdout

    def start_pipeline(self) -> None:
        self.start(*PIPELINE_SERVICES)

    def start(self, *names: str) -> None:
        self.compose("up", "--detach", "--wait", "--no-deps", *names)

    def stop(self, *names: str) -> None:
        self.compose("stop", *names)

    def kill(self, *names: str) -> None:
        """A crash: SIGKILL, no clean shutdown (what os.killpg does on the embedded stack)."""
        self.compose("kill", "--signal", "SIGKILL", *names)

    def crash(self, name: str) -> int:
        """The service's processes die (SIGKILL to all but the container's init), as an
        OOM kill or a segfault would: unlike `docker kill`, which Docker counts as a
        manual stop, this is what restart policies are for. Returns the restart count."""
        before = self.restarts(name)
        subprocess.run([*self.compose_cmd, "exec", "-T", name, "kill", "-KILL", "-1"],
                       cwd=settings.REPO_ROOT, capture_output=True, timeout=60,
                       env=self.compose_env)
        return before

    def restarts(self, name: str) -> int:
        cid = self.compose("ps", "--all", "--quiet", name).strip()
        out = subprocess.run(["docker", "inspect", "--format", "{{.RestartCount}}", cid],
                             capture_output=True, text=True, check=True).stdout
        return int(out.strip())

    def wait_restarted(self, name: str, before: int, timeout: float = 240) -> float:
        """Seconds until the restart policy brought `name` back, healthy by a probe of
        this start."""
        start = time.monotonic()
        while time.monotonic() - start < timeout:
            state = self.container_state(name)
            if self.restarts(name) > before and state.get("Running") and fresh_healthy(state):
                return time.monotonic() - start
            time.sleep(1)
        raise AssertionError(f"{name} was not restarted healthy by its restart policy "
                             f"within {timeout}s: {self.container_state(name)}")

    def container_state(self, name: str) -> dict:
        """`docker inspect` State of a service's container."""
        cid = self.compose("ps", "--all", "--quiet", name).strip()
        out = subprocess.run(["docker", "inspect", "--format", "{{json .State}}", cid],
                             capture_output=True, text=True, check=True).stdout
        return json.loads(out)

    def pid_of(self, name: str) -> int | None:
        return None

    def identity_of(self, name: str) -> str | None:
        """Which run of the service this is: its container's start time."""
        state = self.container_state(name)
        return state["StartedAt"] if state.get("Running") else None

    @property
    def cli_env(self) -> dict[str, str]:
        """How the host-side CLI reaches this stack (CDCLAB_RUNTIME=compose)."""
        return {**(self.compose_env or {}), settings.ENV_RUNTIME: "compose"}


def compose_stack() -> Iterator[StackHandle]:
    with private_stack.compose_stack(load_pipeline()) as project:
        yield ComposeStackHandle(CONTAINERS, project.env, None, compose_cmd=project.command,
                                 compose_env=project.compose_env)


def docker_time(text: str) -> datetime:
    """Docker's RFC 3339 times carry up to 9 fraction digits (trailing zeros trimmed)."""
    m = re.fullmatch(r"(.{19})(?:\.(\d+))?(Z|[+-]\d\d:\d\d)", text)
    zone = "+00:00" if m[3] == "Z" else m[3]
    return datetime.fromisoformat(f"{m[1]}.{(m[2] or '0')[:6].ljust(6, '0')}{zone}")


def fresh_healthy(state: dict) -> bool:
    """Healthy by a probe of this start: right after a restart Docker still shows the
    previous run's "healthy" before any new probe (seen: the Glue API reported healthy
    0.7 s after its crash, before it listened)."""
    health = state.get("Health") or {}
    started = docker_time(state["StartedAt"])
    probes = [p for p in health.get("Log") or [] if docker_time(p["Start"]) > started]
    return health.get("Status") == "healthy" and bool(probes) and probes[-1]["ExitCode"] == 0
