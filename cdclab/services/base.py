"""What a supervised service is: a program, its environment, and a health check.

Each box of the diagram is one `Service`. The embedded supervisor starts them as local
processes; docker compose runs the same `entrypoint()` inside containers. Test resources
start single services with the same code and return the settings to reach them.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from cdclab.services import registry
from pipeline_contract.listen import ENV_BIND_HOST, LOOPBACK, bind_host  # noqa: F401
from pipeline_contract.minio_users import ENV_MINIO_USERS
from pipeline_contract.settings import (
    ENV_ACCESS_KEY,
    ENV_CATALOG_TOKEN,
    ENV_PG_DSN,
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


def without_userinfo(dsn: str) -> str:
    """postgresql://user:pw@host/db -> postgresql://host/db."""
    parts = urlsplit(dsn)
    return urlunsplit(parts._replace(netloc=parts.netloc.rsplit("@", 1)[-1]))


def scrub(env: dict[str, str], allowed: frozenset[str]) -> dict[str, str]:
    """`env` less every secret not in `allowed` (SECRET_ENV names); the DSN keeps its
    password only where the PostgreSQL password is allowed."""
    out = {k: v for k, v in env.items() if k not in SECRET_ENV or k in allowed}
    if ENV_PG_PASSWORD not in allowed and ENV_PG_DSN in out:
        out[ENV_PG_DSN] = without_userinfo(out[ENV_PG_DSN])
    return out


# What services create is their OS user's only: data, state, logs (MinIO's data held each
# user's secret in a world-readable file).
SERVICE_UMASK = 0o077
# As root, PostgreSQL runs as this unprivileged user (it refuses root), which must pass
# through the state dir and its own service dir to reach its data: those two are 0710 with
# its group; everything else is 0700. Another local user reaches nothing.
SERVER_OS_USER = "cdclab"


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


class ServiceError(RuntimeError):
    """A service could not be prepared or started; the message says what to do."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind((LOOPBACK, 0))
        return s.getsockname()[1]


def port_is_free(port: int) -> bool:
    with socket.socket() as s:
        # as servers bind: TIME_WAIT leftovers of a crashed server do not make it busy
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((LOOPBACK, port))
        except OSError:
            return False
        return True


def port_answers(port: int, host: str = LOOPBACK, timeout: float = 0.5) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


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

    name: str = ""
    depends_on: tuple[str, ...] = ()  # services it cannot become healthy without
    # The secrets (SECRET_ENV) its process may see, and those its set-up and health checks
    # use (a container's `cdclab serve` keeps only both); every other one is removed. Its
    # own MinIO user's pair is not among them: process() sets it as AWS_*.
    secrets: frozenset[str] = frozenset()
    setup_secrets: frozenset[str] = frozenset()
    scratch: bool = False  # its temp files go to ctx.scratch_dir, emptied at each start

    @classmethod
    def from_environ(cls, environ: Mapping[str, str]) -> Service:
        """The service as `environ` configures it (container_env's keys: a container
        runs the very service a test asked for)."""
        return cls()

    @property
    def port_names(self) -> tuple[str, ...]:
        """The ports it needs allocated in ctx.ports (cdclab.services.registry)."""
        info = registry.BY_NAME.get(self.name)
        return tuple(p.name for p in info.ports) if info else ()

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
        return 60.0


def python_module(module: str, *args: str) -> list[str]:
    """argv running one of our modules with this interpreter (same entry point in compose)."""
    return [sys.executable, "-m", module, *args]


def wait_until(
    check: Callable[[], bool], timeout: float, what: str, proc: subprocess.Popen | None = None,
    log: Path | None = None, abort: Callable[[], str | None] | None = None,
) -> None:
    """Poll `check` until it holds; fail when `proc` exits, when `abort` gives a reason
    (a service this one needs died meanwhile: waiting on would only time out), or at
    `timeout`."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            tail = _tail(log) if log else ""
            raise ServiceError(f"{what} exited with code {proc.returncode} while starting.{tail}")
        why = abort() if abort is not None else None
        if why:
            raise ServiceError(f"{what} did not become healthy: {why}")
        try:
            if check():
                return
        except Exception:  # a health probe failing is the normal not-yet state
            pass
        time.sleep(0.2)
    tail = _tail(log) if log else ""
    raise ServiceError(f"{what} did not become healthy within {timeout:.0f}s.{tail}")


def tail_lines(path: Path, n: int) -> list[str]:
    """The last `n` lines of a file, read from its end (logs grow to many MB)."""
    with open(path, "rb") as f:
        end = f.seek(0, os.SEEK_END)
        window = 4096
        while True:
            start = max(0, end - window)
            f.seek(start)
            data = f.read(end - start)
            if start == 0 or data.count(b"\n") > n:
                break
            window *= 4
    return data.decode(errors="replace").splitlines()[-n:]


def _tail(log: Path, lines: int = 15) -> str:
    try:
        text = tail_lines(log, lines)
    except OSError:
        return ""
    return f"\n--- last lines of {log} ---\n" + "\n".join(text)


def start_process(
    service: Service, ctx: StackContext, *, detached: bool = False
) -> subprocess.Popen:
    """Start a service's process with its log file; returns the Popen."""
    spec = service.process(ctx)
    # the secrets the service's process uses, and what its process() set itself
    env = {**scrub({**os.environ, **ctx.env}, service.secrets), **spec.env}
    if service.scratch:  # no process of this service runs now: what is there is stale
        tmp = ctx.scratch_dir(service.name)
        shutil.rmtree(tmp, ignore_errors=True)
        private_dir(tmp.parent)
        tmp.mkdir(mode=0o700)
        env["TMPDIR"] = str(tmp)
    log = ctx.log_path(service.name)
    with open(log, "ab") as out:
        kwargs: dict = {}
        if spec.user:
            kwargs["user"] = spec.user
            kwargs["group"] = spec.user
            kwargs["extra_groups"] = []
        return subprocess.Popen(
            spec.argv,
            env=env,
            cwd=spec.cwd,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            umask=SERVICE_UMASK,
            # Own process group: `down` and test teardown signal exactly what we started.
            start_new_session=True,
            **kwargs,
        )


def stop_pid(pid: int, timeout: float = 20.0) -> None:
    """SIGTERM a process group we started, SIGKILL it if it lingers."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(pid, sig)
        except ProcessLookupError:
            return
        except PermissionError:
            os.kill(pid, sig)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not pid_alive(pid):
                return
            time.sleep(0.1)


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
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split()[2] != "Z"
    except OSError:
        return False


@dataclass
class RunningService:
    """A started service, as test resources hand it out."""

    service: Service
    ctx: StackContext
    proc: subprocess.Popen

    def stop(self) -> None:
        stop_pid(self.proc.pid)

    def kill(self) -> None:
        """A crash: SIGKILL the process group, no clean shutdown."""
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            return
        self.proc.wait(10)


def start_service(service: Service, ctx: StackContext) -> RunningService:
    """prepare → start → wait healthy → after_start. Used by tests and the supervisor."""
    for port_name in service.port_names:
        ctx.ports.setdefault(port_name, free_port())
    service.prepare(ctx)
    proc = start_process(service, ctx)
    try:
        wait_until(
            lambda: service.healthy(ctx), service.startup_timeout(), service.name, proc,
            ctx.log_path(service.name),
        )
        service.after_start(ctx)
    except BaseException:
        stop_pid(proc.pid)
        raise
    return RunningService(service, ctx, proc)
