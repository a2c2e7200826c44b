"""What a service of the lab is, for the box that launches it: a program, its environment,
a health check, and its record in the registry (name, layer, ports, state file).

Each box keeps its launcher beside its code (dms_emitter/launcher.py, ...) and implements
`Service` from here; the conductor (cdclab.services) lists the records and supervises the
processes: starting, scrubbing their environment, waiting, restarting, stopping. This
module only describes; it starts nothing.
"""

from __future__ import annotations

import os
import sys
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from pipeline_contract.listen import LOOPBACK
from pipeline_contract.minio_users import ENV_MINIO_USERS
from pipeline_contract.settings import (
    ENV_ACCESS_KEY,
    ENV_CATALOG_TOKEN,
    ENV_SECRET_KEY,
    PipelineSettings,
)

ENV_PG_PASSWORD = "CDCLAB_PG_PASSWORD"  # cdclab.credentials
ENV_JUPYTER_TOKEN = "JUPYTER_TOKEN"  # read by Jupyter Server itself
ENV_GLUE_CLIENTS = "CDCLAB_GLUE_API_CLIENTS"  # glue_local.server: who may call it
# Every variable that carries a secret of the stack: the MinIO root pair (as AWS_*: a
# service's own MinIO user's pair replaces it in process()), the PostgreSQL password (also
# inside CDCLAB_PG_DSN), Jupyter's and the catalog's tokens, the users' and the Glue API
# clients' key lists. A process sees only those its service names in `secrets`.
SECRET_ENV = frozenset({ENV_ACCESS_KEY, ENV_SECRET_KEY, ENV_PG_PASSWORD, ENV_JUPYTER_TOKEN,
                        ENV_MINIO_USERS, ENV_CATALOG_TOKEN, ENV_GLUE_CLIENTS})
ROOT_KEYS = frozenset({ENV_ACCESS_KEY, ENV_SECRET_KEY})  # the MinIO root pair

# As root, PostgreSQL runs as this unprivileged user (it refuses root), which must pass
# through the state dir and its own service dir to reach its data: those two are 0710 with
# its group; everything else is 0700. Another local user reaches nothing.
SERVER_OS_USER = "cdclab"

INFRA = "infra"  # started first: what the pipeline runs on
PIPELINE = "pipeline"  # the boxes that move changes: started once the infrastructure is up
PORT_ENV_PREFIX = "CDCLAB_PORT_"  # e.g. CDCLAB_PORT_POSTGRES=5432 pins a port


class ServiceError(RuntimeError):
    """A service could not be prepared or started; the message says what to do."""


def port_env_key(port_name: str) -> str:
    """The variable that pins a port: CDCLAB_PORT_ICEBERG_REST for iceberg-rest."""
    return PORT_ENV_PREFIX + port_name.upper().replace("-", "_")


@dataclass(frozen=True)
class Port:
    name: str  # its key in StackContext.ports
    container: int  # where it listens in its container, and its default published port

    @property
    def env_key(self) -> str:
        return port_env_key(self.name)


@dataclass(frozen=True)
class ServiceInfo:
    """A service as the registry lists it: its name (the compose service, its log, its
    folder in the state dir), its launcher, its layer, its ports and its state file."""

    name: str
    launcher: str  # "module:Class", the module that declares this record
    layer: str
    ports: tuple[Port, ...] = ()  # the first is the one it is reached and probed on
    state_file: str | None = None  # under the state dir: its progress, for status and health

    def launcher_class(self) -> type[Service]:
        import importlib

        module, _, cls = self.launcher.partition(":")
        return getattr(importlib.import_module(module), cls)


def private_dir(path: Path, *, traversed_by_server: bool = False) -> Path:
    """Create (or tighten) a directory only its owner uses; as root, one the server's OS
    user passes through (search, not list) when `traversed_by_server`."""
    import grp

    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    mode = 0o700
    if traversed_by_server and os.geteuid() == 0:
        try:
            gid = grp.getgrnam(SERVER_OS_USER).gr_gid
        except KeyError:  # not created yet: the PostgreSQL service does, then calls again
            gid = None
        if gid is not None:
            os.chown(path, -1, gid)
            mode = 0o710
    if (path.stat().st_mode & 0o777) != mode:
        path.chmod(mode)
    return path


def pid_alive(pid: int) -> bool:
    try:
        waited, _ = os.waitpid(pid, os.WNOHANG)
        if waited == pid:
            return False
    except ChildProcessError:
        pass
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # a zombie of someone else's still counts as gone
    return not is_zombie(pid)


def is_zombie(pid: int) -> bool:
    """Exited (or gone), as /proc tells, without reaping it. A multi-threaded process
    (a Go server) shows its leader as a zombie while its other threads still exit:
    its parent cannot collect the exit status until they have."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            # the name (field 2) is in parentheses and may hold spaces
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return True


def python_module(module: str, *args: str) -> list[str]:
    """argv running one of our modules with this interpreter (same entry point in compose)."""
    return [sys.executable, "-m", module, *args]


@dataclass
class StackContext:
    """Where a stack lives and how its parts reach each other."""

    state_dir: Path
    ports: dict[str, int] = field(default_factory=dict)
    # The shared environment: every configuration key of pipeline_contract.settings, credentials.
    env: dict[str, str] = field(default_factory=dict)
    # pipeline.toml as the entry point that built the stack read it (once)
    pipeline: PipelineSettings = field(kw_only=True)

    def service_dir(self, name: str) -> Path:
        """The service's own directory: its owner's only (private_dir)."""
        return private_dir(self.state_dir / name, traversed_by_server=name == "postgres")

    def scratch_dir(self, name: str) -> Path:
        """A service's temp dir (TMPDIR), emptied at each start: a killed process never
        removes its temp files (a JVM's native libraries, Spark's copies of its jars:
        ~380 MB a start), so without this every crash left them in /tmp for good."""
        return self.state_dir / "tmp" / name

    def log_path(self, name: str) -> Path:
        return private_dir(self.state_dir / "logs") / f"{name}.log"


@dataclass
class ProcessSpec:
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)  # on top of the stack env
    cwd: Path | None = None
    user: str | None = None  # run as this OS user (PostgreSQL when we are root)


class Service(ABC):
    """One supervised program."""

    # its registry record, declared beside the class; it names the class too
    info: ClassVar[ServiceInfo | None] = None
    name: str = ""
    depends_on: tuple[str, ...] = ()  # services it cannot become healthy without
    # The secrets (SECRET_ENV) its process may see, and those its set-up and health checks
    # use (a container's `cdclab serve` keeps only both); every other one is removed. Its
    # own MinIO user's pair is not among them: process() sets it as AWS_*.
    secrets: frozenset[str] = frozenset()
    setup_secrets: frozenset[str] = frozenset()
    scratch: bool = False  # its temp files go to ctx.scratch_dir, emptied at each start

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        if cls.info is not None and "name" not in cls.__dict__:
            cls.name = cls.info.name

    @classmethod
    def from_environ(cls, environ: Mapping[str, str]) -> Service:
        """The service as `environ` configures it (container_env's keys: a container
        runs the very service a test asked for)."""
        return cls()

    @property
    def port_names(self) -> tuple[str, ...]:
        """The ports it needs allocated in ctx.ports (its `info`)."""
        return tuple(p.name for p in self.info.ports) if self.info else ()

    def prepare(self, ctx: StackContext) -> None:
        """One-time, idempotent set-up before the first start (dirs, initdb...)."""
        self.publish(ctx)

    def publish(self, ctx: StackContext) -> None:  # noqa: B027 - optional hook
        """Put the keys other programs reach this service by into ctx.env (no I/O): run
        by prepare(), and by whoever starts the service elsewhere (a container)."""

    def container_env(self) -> dict[str, str]:
        """The environment that makes `cdclab serve <name>` build this very service
        (its constructor's options), for running it in a container."""
        return {}

    @abstractmethod
    def process(self, ctx: StackContext) -> ProcessSpec:
        """The command line: the same module/program compose runs."""

    @abstractmethod
    def healthy(self, ctx: StackContext) -> bool:
        """True once the service answers requests."""

    def after_start(self, ctx: StackContext) -> None:  # noqa: B027 - optional hook
        """Idempotent set-up that needs the service up (buckets, tables...)."""

    def address(self, ctx: StackContext) -> str:
        """Human-readable address for `cdclab status`."""
        port = ctx.ports.get(self.port_names[0]) if self.port_names else None
        return f"{LOOPBACK}:{port}" if port else "-"

    def startup_timeout(self) -> float:
        """How long a start may go without becoming healthy, or without progress."""
        return 60.0

    def start_progress(self, ctx: StackContext) -> str | None:
        """While a long start goes on (the emitter's full load), what it has done so far:
        a text that changes as it moves. The wait for `healthy` goes on while it does."""
        return None
