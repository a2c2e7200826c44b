"""Containers backend of the `stack` fixture: docker-compose.yml through testcontainers.

Starts the infrastructure services (built from their Dockerfiles, waited on by their
compose health checks) as a private compose project on free host ports, sets up the lake
with the same init the compose stack runs, and hands out a StackHandle whose env reaches
the published 127.0.0.1 ports under the same keys as the embedded stack. The session
hook in tests/resources/stack.py stops everything first when no Docker engine answers.
"""

from __future__ import annotations

import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from cdclab import compose_env, credentials, settings
from cdclab.services.base import LOOPBACK, free_port
from tests.resources.stack import CONTAINERS, StackHandle

COMPOSE_FILE = "docker-compose.yml"
INFRA_SERVICES = ["postgres", "minio", "iceberg-rest", "glue"]
PIPELINE_SERVICES = ["emitter", "watcher"]
# host-port variable of docker-compose.yml -> (compose service, container port)
PUBLISHED = {
    "CDCLAB_PORT_POSTGRES": ("postgres", 5432),
    "CDCLAB_PORT_MINIO": ("minio", 9000),
    "CDCLAB_PORT_MINIO_CONSOLE": ("minio", 9001),
    "CDCLAB_PORT_ICEBERG_REST": ("iceberg-rest", 8181),
    "CDCLAB_PORT_GLUE": ("glue", 8090),
}


def host_env(creds: dict[str, str], ports: dict[str, int]) -> dict[str, str]:
    """Pure: the stack's configuration keys as seen from the host (published ports)."""
    db = settings.load_pipeline().source.database
    user, password = creds[credentials.PG_USER], creds[credentials.PG_PASSWORD]
    return {
        **creds,
        settings.ENV_PG_DSN: f"postgresql://{quote(user)}:{quote(password, safe='')}@"
                             f"{LOOPBACK}:{ports['CDCLAB_PORT_POSTGRES']}/{db}",
        settings.ENV_S3_ENDPOINT: f"http://{LOOPBACK}:{ports['CDCLAB_PORT_MINIO']}",
        settings.ENV_CATALOG_URI: f"http://{LOOPBACK}:{ports['CDCLAB_PORT_ICEBERG_REST']}",
        settings.ENV_GLUE_ENDPOINT: f"http://{LOOPBACK}:{ports['CDCLAB_PORT_GLUE']}",
        settings.ENV_PROFILE: settings.PROFILE_LOCAL,
    }


@dataclass
class ComposeStackHandle(StackHandle):
    """StackHandle whose start/stop act on compose services (containers have no host PID)."""

    compose_cmd: tuple[str, ...] = ()

    def _compose(self, *args: str) -> None:
        done = subprocess.run([*self.compose_cmd, *args], cwd=settings.REPO_ROOT,
                              capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"docker compose {' '.join(args)} failed:\n{done.stderr}")

    def start_pipeline(self) -> None:
        self.start(*PIPELINE_SERVICES)

    def start(self, *names: str) -> None:
        self._compose("up", "--detach", "--wait", "--no-deps", *names)

    def stop(self, *names: str) -> None:
        self._compose("stop", *names)

    def kill(self, *names: str) -> None:
        """A crash: SIGKILL, no clean shutdown (what os.killpg does on the embedded stack)."""
        self._compose("kill", "--signal", "SIGKILL", *names)

    def pid_of(self, name: str) -> int | None:
        return None


def require_compose_plugin() -> None:
    """testcontainers drives `docker compose`: say what is missing instead of a trace."""
    done = subprocess.run(["docker", "compose", "version"], capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(
            "`docker compose` (the Compose CLI plugin) is not installed: run "
            "scripts/bootstrap.sh, or install it into ~/.docker/cli-plugins/docker-compose")


def compose_stack() -> Iterator[StackHandle]:
    from testcontainers.compose import DockerCompose

    require_compose_plugin()
    with tempfile.TemporaryDirectory(prefix="cdclab-compose-") as tmp:
        ports = {var: free_port() for var in PUBLISHED}
        creds = credentials.generate()
        env = compose_env.merge_env({}, settings.versions(), creds, extra={
            # a private project: never touches the user's `docker compose up` stack
            "COMPOSE_PROJECT_NAME": f"cdclab-test-{uuid.uuid4().hex[:8]}",
            **{var: str(port) for var, port in ports.items()},
        })
        env_file = Path(tmp) / "test.env"
        env_file.write_text(compose_env.render(env))
        compose = DockerCompose(
            context=settings.REPO_ROOT, compose_file_name=COMPOSE_FILE, env_file=str(env_file),
            services=INFRA_SERVICES, build=True, wait=True, keep_volumes=False,
        )
        compose.start()
        try:
            published = {var: int(compose.get_service_port(service, port))
                         for var, (service, port) in PUBLISHED.items()}
            _, err, code = compose.exec_in_container(
                ["python", "-m", "cdclab.compose_probe", "init", "--rows", "0"], "glue")
            if code != 0:
                raise RuntimeError(f"lake set-up in the glue container failed:\n{err}")
            yield ComposeStackHandle(
                CONTAINERS, host_env(creds, published), None,
                compose_cmd=tuple(compose.compose_command_property),
            )
        finally:
            compose.stop(down=True)
