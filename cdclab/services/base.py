"""Running a service: start its process with a scrubbed environment and its log, wait
until it is healthy, stop it.

What a service is (Service, ProcessSpec, StackContext, the registry's records) is
pipeline_contract.service_kit, below the boxes that launch themselves; it is re-exported
here for the conductor's modules. The embedded supervisor starts services as local
processes; docker compose runs the same service inside containers (`cdclab serve`). Test
resources start single services with the same code and return the settings to reach them.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from pipeline_contract.listen import ENV_BIND_HOST, LOOPBACK, bind_host  # noqa: F401
from pipeline_contract.minio_users import ENV_MINIO_USERS  # noqa: F401
from pipeline_contract.service_kit import (  # noqa: F401 - the interface, for the conductor
    ENV_GLUE_CLIENTS,
    ENV_JUPYTER_TOKEN,
    ENV_PG_PASSWORD,
    ROOT_KEYS,
    SECRET_ENV,
    SERVER_OS_USER,
    ProcessSpec,
    Service,
    ServiceError,
    StackContext,
    is_zombie,
    pid_alive,
    private_dir,
    python_module,
)
from pipeline_contract.settings import ENV_PG_DSN


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


def wait_until(
    check: Callable[[], bool], timeout: float, what: str, proc: subprocess.Popen | None = None,
    log: Path | None = None, abort: Callable[[], str | None] | None = None,
    progress: Callable[[], str | None] | None = None, say: Callable[[str], None] | None = None,
) -> None:
    """Poll `check` until it holds; fail when `proc` exits, when `abort` gives a reason
    (a service this one needs died meanwhile: waiting on would only time out), or after
    `timeout` s without `progress` changing (a full load takes as long as the table's
    size needs, but one that stalls fails); each new progress is `say`'d."""
    deadline = time.monotonic() + timeout
    seen: str | None = None
    while time.monotonic() < deadline:
        moved = _progress(progress)
        if moved is not None and moved != seen:
            seen, deadline = moved, time.monotonic() + timeout
            if say is not None:
                say(f"{what}: {moved}")
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
    since = " of its last progress" if seen is not None else ""
    raise ServiceError(f"{what} did not become healthy within {timeout:.0f}s{since}.{tail}")


def _progress(progress: Callable[[], str | None] | None) -> str | None:
    try:
        return progress() if progress is not None else None
    except Exception:  # an unreadable state file mid-write is no progress, not an error
        return None


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


def start_service(service: Service, ctx: StackContext,
                  say: Callable[[str], None] | None = None) -> RunningService:
    """prepare → start → wait healthy (`say`ing its progress) → after_start. Used by
    tests and `cdclab serve`."""
    for port_name in service.port_names:
        ctx.ports.setdefault(port_name, free_port())
    service.prepare(ctx)
    proc = start_process(service, ctx)
    try:
        wait_until(
            lambda: service.healthy(ctx), service.startup_timeout(), service.name, proc,
            ctx.log_path(service.name), progress=lambda: service.start_progress(ctx),
            say=say,
        )
        service.after_start(ctx)
    except BaseException:
        stop_pid(proc.pid)
        raise
    return RunningService(service, ctx, proc)
