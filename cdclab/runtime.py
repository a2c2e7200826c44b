"""Which stack the CLI talks to, chosen by configuration: CDCLAB_RUNTIME.

- `embedded` (default): the processes `cdclab up` supervises (state dir, stack.json).
- `compose`: the docker compose stack. Inside its containers the endpoints and the
  credentials file come from the compose environment; from the host, the endpoints are
  the published 127.0.0.1 ports (CDCLAB_PORT_* or the defaults) and the credentials are
  read from the stack through `docker compose exec`.

Every command that reads the stack (status, seed, workload, reconcile, env, logs, demo)
goes through a Runtime, so the same commands work on either.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import urllib.request
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from pathlib import Path

from cdclab import credentials
from cdclab.services import registry
from cdclab.services.base import LOOPBACK, ServiceError
from cdclab.supervisor import ServiceStatus
from pipeline_contract import resources, settings
from pipeline_contract.settings import PipelineSettings

EMBEDDED = "embedded"
COMPOSE = "compose"
SERVICES = registry.NAMES
# compose service -> (port variable, container port), as docker-compose.yml publishes them
PUBLISHED = {name: (p.env_key, p.container) for name, p in registry.PUBLISHED.items()}
CONTAINER_CREDENTIALS = "/run/cdclab/credentials.json"

Progress = Callable[[str], None]
# each service's state file under its state dir, in both runtimes
STATE_FILES = registry.STATE_FILES


def read_json_object(path: Path) -> dict:
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return {}
    return data if isinstance(data, dict) else {}


class Runtime(ABC):
    name: str = ""
    pipeline: PipelineSettings  # as the entry point read it

    @abstractmethod
    def env(self) -> dict[str, str]:
        """Every configuration key needed to reach the stack (with credentials)."""

    @abstractmethod
    def status(self) -> list[ServiceStatus]: ...

    @abstractmethod
    def log_command(self, service: str | None, follow: bool, lines: int) -> list[str]: ...

    @abstractmethod
    def glue_run_logs(self) -> Path | None:
        """Where the Glue runs' logs can be read from here, if anywhere."""

    @abstractmethod
    def service_state(self, service: str) -> dict:
        """A service's state file (STATE_FILES); {} if it cannot be read from here."""

    def emitter_state(self) -> dict:
        """The emitter's state (phase, tables, last file, schema changes)."""
        return self.service_state("emitter")

    @property
    @abstractmethod
    def where(self) -> str:
        """Where the stack lives, for messages."""

    def require(self, *names: str) -> dict[str, str]:
        """The stack's env, or a ServiceError naming what is not running."""
        down = [s.name for s in self.status() if s.name in names and not s.running]
        if down:
            raise ServiceError(f"not running: {', '.join(down)}. {self.start_hint}")
        return self.env()

    start_hint = ""


def current(pipeline: PipelineSettings, progress: Progress | None = None) -> Runtime:
    """The runtime $CDCLAB_RUNTIME names, for the pipeline its caller read."""
    chosen = os.environ.get(settings.ENV_RUNTIME, EMBEDDED)
    if chosen == EMBEDDED:
        return EmbeddedRuntime(pipeline, progress)
    if chosen == COMPOSE:
        return ComposeRuntime(pipeline)
    raise ServiceError(f"{settings.ENV_RUNTIME}={chosen!r}: use '{EMBEDDED}' or '{COMPOSE}'")


# --- embedded -------------------------------------------------------------------------------
class EmbeddedRuntime(Runtime):
    name = EMBEDDED
    start_hint = "Start the stack with `cdclab up`."

    def __init__(self, pipeline: PipelineSettings, progress: Progress | None = None):
        from cdclab.supervisor import Stack

        self.pipeline = pipeline
        self.stack = Stack(progress=progress, pipeline=pipeline)

    @property
    def where(self) -> str:
        return str(self.stack.state_dir)

    def env(self) -> dict[str, str]:
        return self.stack.env()

    def status(self) -> list[ServiceStatus]:
        return self.stack.status()

    def require(self, *names: str) -> dict[str, str]:
        missing = [n for n in names if self.stack.pid_of(n) is None]
        if missing:
            raise ServiceError(f"not running: {', '.join(missing)}. {self.start_hint}")
        return self.stack.env()

    def log_command(self, service: str | None, follow: bool, lines: int) -> list[str]:
        logs = self.stack.state_dir / "logs"
        names = [service] if service else sorted(p.stem for p in logs.glob("*.log"))
        if not names:
            raise ServiceError(f"no logs yet in {logs}")
        files = [str(logs / f"{n}.log") for n in names]
        return ["tail", "-n", str(lines), *(["-F"] if follow else []), *files]

    def glue_run_logs(self) -> Path | None:
        return settings.glue_run_logs(self.stack.state_dir)

    def service_state(self, service: str) -> dict:
        return read_json_object(self.stack.state_dir / STATE_FILES[service])


# --- compose ----------------------------------------------------------------------------------
def host_endpoints(ports: Mapping[str, int], database: str) -> dict[str, str]:
    """Pure: the configuration keys as seen from the host (published loopback ports)."""
    return {
        settings.ENV_PG_DSN: f"postgresql://{LOOPBACK}:{ports['postgres']}/{database}",
        settings.ENV_S3_ENDPOINT: f"http://{LOOPBACK}:{ports['minio']}",
        settings.ENV_CATALOG_URI: f"http://{LOOPBACK}:{ports['iceberg-rest']}",
        settings.ENV_GLUE_ENDPOINT: f"http://{LOOPBACK}:{ports['glue']}",
        settings.ENV_PROFILE: settings.PROFILE_LOCAL,
        settings.ENV_RUNTIME: COMPOSE,
    }


def published_ports(environ: Mapping[str, str]) -> dict[str, int]:
    return {svc: int(environ.get(var) or port) for svc, (var, port) in PUBLISHED.items()}


def compose_command(environ: Mapping[str, str] | None = None) -> list[str]:
    project = (os.environ if environ is None else environ).get(
        settings.ENV_COMPOSE_PROJECT, "cdclab")
    return ["docker", "compose", "--project-directory", str(resources.lab_root()),
            "--project-name", project]


def probe(name: str, env: Mapping[str, str]) -> bool | None:
    """Does the service answer on its endpoint? None when it has none to ask."""
    try:
        if name == "postgres":
            import psycopg

            with psycopg.connect(env[settings.ENV_PG_DSN], connect_timeout=2) as conn:
                return conn.execute("SELECT 1").fetchone()[0] == 1
        if name == "minio":
            url = f"{env[settings.ENV_S3_ENDPOINT]}/minio/health/live"
        elif name == "iceberg-rest":
            from cdclab.services.iceberg_rest import config_request

            with urllib.request.urlopen(config_request(env), timeout=2) as resp:
                return resp.status == 200
        elif name == "glue":
            from cdclab.services.glue_api import glue_call

            return "Jobs" in glue_call(env[settings.ENV_GLUE_ENDPOINT], "GetJobs", {}, 2.0,
                                       env=env)
        else:
            return None
        with urllib.request.urlopen(url, timeout=2) as resp:
            return resp.status == 200
    except Exception:
        return False


class ComposeRuntime(Runtime):
    name = COMPOSE
    start_hint = "Start the stack with `docker compose up -d --wait`."

    def __init__(self, pipeline: PipelineSettings, environ: Mapping[str, str] | None = None):
        self.pipeline = pipeline
        self.environ = dict(os.environ if environ is None else environ)
        # compose sets the in-network keys; on the host they are derived from the ports
        self.inside = settings.ENV_PG_DSN in self.environ
        self._env: dict[str, str] | None = None

    @property
    def where(self) -> str:
        return "docker compose" + ("" if self.inside else " (from the host)")

    def _docker(self) -> bool:
        return not self.inside and shutil.which("docker") is not None

    def _host_credentials(self) -> dict[str, str]:
        if not self._docker():
            raise ServiceError("the compose stack's credentials are read with `docker compose "
                               "exec`, and no docker CLI is on PATH")
        # the administrator's file: no service's container holds it (each has its own
        # part), so a one-off `cli` container reads it (no volume, no dependency started)
        done = subprocess.run(
            [*compose_command(self.environ), "run", "--rm", "--no-deps", "-T",
             "--entrypoint", "cat", "cli", CONTAINER_CREDENTIALS],
            capture_output=True, text=True, timeout=120,
        )
        if done.returncode != 0:
            raise ServiceError(f"cannot read the compose stack's credentials (is it up? "
                               f"{self.start_hint}): {done.stderr.strip()[-300:]}")
        return json.loads(done.stdout)

    def env(self) -> dict[str, str]:
        if self._env is None:
            keys = ("CDCLAB_", "AWS_", "GLUE_", "JUPYTER_")
            env = {k: v for k, v in self.environ.items() if k.startswith(keys)}
            if not self.inside:
                db = self.pipeline.source.database
                env.update(host_endpoints(published_ports(self.environ), db))
                credentials.complete_env(env, self._host_credentials())
            else:
                credentials.apply_file(env)
            self._env = env
        return self._env

    def service_state(self, service: str) -> dict:
        if self.inside:  # the cli container: its own /data only
            return read_json_object(Path(self.environ.get(settings.ENV_STATE_DIR, "/data"))
                                    / STATE_FILES[service])
        if not self._docker():
            return {}
        done = subprocess.run(
            [*compose_command(self.environ), "exec", "-T", service, "cat",
             f"/data/{STATE_FILES[service]}"], capture_output=True, text=True, timeout=60)
        try:
            state = json.loads(done.stdout) if done.returncode == 0 else {}
        except json.JSONDecodeError:
            return {}
        return state if isinstance(state, dict) else {}

    def _ps(self) -> dict[str, dict]:
        """`docker compose ps` by service (state, health), when docker is at hand."""
        if not self._docker():
            return {}
        done = subprocess.run(
            [*compose_command(self.environ), "ps", "--all", "--format", "json"],
            capture_output=True, text=True, timeout=60)
        if done.returncode != 0:
            return {}
        rows = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
        return {r["Service"]: r for r in rows}

    def _restart_counts(self, ps: dict[str, dict]) -> dict[str, int]:
        """How often each container's restart policy restarted it (`docker inspect`)."""
        ids = {row["ID"]: name for name, row in ps.items() if row.get("ID")}
        if not ids:
            return {}
        done = subprocess.run(
            ["docker", "inspect", "--format", "{{.Id}} {{.RestartCount}}", *ids],
            capture_output=True, text=True, timeout=60)
        counts = {}
        for line in done.stdout.splitlines():
            cid, _, count = line.partition(" ")
            name = next((n for i, n in ids.items() if cid.startswith(i)), None)
            if name and count.isdigit():
                counts[name] = int(count)
        return counts

    def status(self) -> list[ServiceStatus]:
        ps = self._ps()
        restarts = self._restart_counts(ps)
        try:
            env = self.env()
        except ServiceError:
            env = {}
        result = []
        for name in SERVICES:
            row = ps.get(name)
            answered = probe(name, env) if env else False
            if row is not None:
                running = row.get("State") == "running"
                healthy = running and row.get("Health") in ("healthy", "") and answered is not False
            else:  # inside a container: the endpoint is all there is to ask
                running = bool(answered) if answered is not None else False
                healthy = running
            address = self._address(name)
            count = restarts.get(name, 0)
            note = (f"restarted {count}x by its restart policy (unless-stopped)"
                    if count else "")
            result.append(ServiceStatus(name, running, healthy, None, address, count, note))
        if not ps and self.inside:
            # emitter/watcher have no endpoint; their containers' health checks cover them
            result = [s for s in result if s.name in PUBLISHED]
        return result

    def _address(self, name: str) -> str:
        if name not in PUBLISHED:
            return "-"
        if self.inside:
            return f"{name}:{PUBLISHED[name][1]}"
        return f"{LOOPBACK}:{published_ports(self.environ)[name]}"

    def log_command(self, service: str | None, follow: bool, lines: int) -> list[str]:
        if self.inside:
            raise ServiceError("logs are read from the host: docker compose logs [service]")
        return [*compose_command(self.environ), "logs", "--tail", str(lines),
                *(["-f"] if follow else []),
                *([service] if service else [])]

    def glue_run_logs(self) -> Path | None:
        given = self.environ.get(settings.ENV_GLUE_RUN_LOGS)
        return Path(given) if given and Path(given).is_dir() else None
