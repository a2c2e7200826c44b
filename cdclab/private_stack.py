"""A private lab for a test session: started, handed out, and removed with everything in it.

Two backends, as `CDCLAB_BACKEND` names them: `embedded` (the supervisor's local
processes, in a fresh state directory) and `containers` (docker-compose.yml through
testcontainers, as a compose project of its own on free 127.0.0.1 ports, never the
user's own stack). Both give the same environment keys (cdclab.env), so whatever drives
the lab (the CLI, `cdclab.lab.Lab`, boto3) cannot tell them apart. Used by the pytest
plugin (cdclab.pytest_plugin) and by cdclab's own test resources.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from cdclab.containers import COMPOSE_FILE, ENV_PIPELINE_DIR, pipeline_dir
from pipeline_contract import settings
from pipeline_contract.resources import lab_root
from pipeline_contract.settings import PipelineSettings

EMBEDDED, CONTAINERS = "embedded", "containers"
BACKENDS = (EMBEDDED, CONTAINERS)
IMAGE = "cdclab/runtime:0.1.0"  # docker-compose.yml's x-image
INFRA_SERVICES = ("postgres", "minio", "iceberg-rest", "glue")
EXTRA_PORTS = ("CDCLAB_PORT_MINIO_CONSOLE", "CDCLAB_PORT_JUPYTER")
KEEP_STATE = "CDCLAB_KEEP_TEST_STATE"  # 1: a temporary state dir is kept for a post-mortem


class PrivateStackError(RuntimeError):
    """The lab cannot start on the chosen backend: says why and what to do."""


def chosen_backend(option: str | None, environ: Mapping[str, str]) -> str:
    """Pure: the command-line choice, else $CDCLAB_BACKEND, else embedded; refused by name."""
    chosen = option or environ.get(settings.ENV_BACKEND) or EMBEDDED
    if chosen not in BACKENDS:
        raise PrivateStackError(f"backend {chosen!r} (from "
                                f"{'the option' if option else settings.ENV_BACKEND}): "
                                f"use one of {', '.join(BACKENDS)}")
    return chosen


def docker_problem(image: str = IMAGE) -> str | None:
    """None when a Docker engine answers and the cdclab `image` is there, else why not."""
    try:
        import docker
    except ImportError:
        return "the Python package `docker` is missing: pip install 'cdclab[pytest]'"
    try:
        client = docker.from_env(timeout=5)
        client.ping()
    except Exception as exc:  # any failure means: no usable engine
        return f"no Docker engine answers ({type(exc).__name__}: {exc})"
    try:
        client.images.get(image)
    except Exception:
        return (f"the image {image} is not built: run `cdclab image build` (or `make "
                "docker-build` in a cdclab checkout)")
    return None


@contextmanager
def temp_state_dir(prefix: str) -> Iterator[Path]:
    """A fresh state directory, removed afterwards (unless CDCLAB_KEEP_TEST_STATE=1)."""
    # 0755 so an unprivileged server user (PostgreSQL when we are root) can traverse it
    path = Path(tempfile.mkdtemp(prefix=f"cdclab-{prefix}-"))
    path.chmod(0o755)
    try:
        yield path
    finally:
        if not os.environ.get(KEEP_STATE):
            shutil.rmtree(path, ignore_errors=True)


@contextmanager
def embedded_stack(state: Path, pipeline: PipelineSettings,
                   names: tuple[str, ...] | None = None,
                   stop: bool = True) -> Iterator[dict[str, str]]:
    """The supervisor's stack in `state` (all services, or `names`), the Glue catalog and
    the pipeline's job set up; yields its environment. `stop`: down at the end."""
    from cdclab.setup import setup_lake
    from cdclab.supervisor import Stack

    stack = Stack(state, pipeline=pipeline)
    try:
        stack.up(names)
        setup_lake(stack.env(), pipeline)
        yield stack.env()
    finally:
        if stop:
            stack.down()


def base_images() -> dict[str, str]:
    """The base images scripts/docker-setup.sh chose (stand-ins where no registry answers)."""
    chosen = settings.cache_dir() / "docker-bases.env"
    if not chosen.exists():
        return {}
    return dict(line.split("=", 1) for line in chosen.read_text().splitlines() if "=" in line)


@dataclass(frozen=True)
class ComposeProject:
    """A running private compose project: how to reach it and how to drive it."""

    env: dict[str, str]  # the stack's environment (cdclab.env keys)
    command: tuple[str, ...]  # `docker compose` with this project's file, name and env file
    compose_env: dict[str, str]  # the process environment its commands run with
    folder: Path  # the folder holding docker-compose.yml


@contextmanager
def compose_stack(pipeline: PipelineSettings, services: tuple[str, ...] = INFRA_SERVICES
                  ) -> Iterator[ComposeProject]:
    """docker-compose.yml's `services` (the one-shot `init` too) as a project of its own."""
    from testcontainers.compose import DockerCompose

    from cdclab.runtime import PUBLISHED, ComposeRuntime
    from cdclab.services.base import free_port

    project = f"cdclab-test-{uuid.uuid4().hex[:8]}"  # never the user's own stack
    ports = {var: free_port() for var, _ in PUBLISHED.values()}
    ports |= {var: free_port() for var in EXTRA_PORTS}
    overrides = {settings.ENV_COMPOSE_PROJECT: project, "CDCLAB_SEED_ROWS": "0",
                 ENV_PIPELINE_DIR: str(pipeline_dir()),  # your pipeline.toml, read-only
                 **{var: str(port) for var, port in ports.items()}, **base_images()}
    folder = lab_root()
    with tempfile.TemporaryDirectory(prefix="cdclab-compose-") as tmp:
        env_file = Path(tmp) / "test.env"
        env_file.write_text("".join(f"{k}={v}\n" for k, v in overrides.items()))
        compose = DockerCompose(
            context=folder, compose_file_name=COMPOSE_FILE, env_file=str(env_file),
            services=[*services, "init"], build=False, wait=True, keep_volumes=False,
        )
        compose.start()
        command = tuple(compose.compose_command_property)
        try:
            compose_env = {**os.environ, **overrides}
            yield ComposeProject(ComposeRuntime(pipeline, environ=compose_env).env(), command,
                                 compose_env, folder)
        finally:
            # every service of the project, profiles included, and its volumes
            subprocess.run([*command, "--profile", "cli", "--profile", "spark", "down",
                            "--volumes", "--remove-orphans", "--timeout", "20"],
                           cwd=folder, capture_output=True, timeout=300)
