"""The embedded stack: real servers as local processes, supervised by cdclab.

State lives under one directory (settings.state_dir()): credentials, each service's data,
logs/<service>.log, stack.json (ports and the PIDs we started) and cdclab.env (every
configuration key, for scripts, notebooks and `source`). Ports are chosen free on first
start and kept, so addresses stay stable across `down`/`up`.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import subprocess
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from cdclab import credentials
from cdclab.restart_policy import ServiceLife, describe
from cdclab.services import registry
from cdclab.services.base import (
    ProcessSpec,
    Service,
    ServiceError,
    StackContext,
    free_port,
    is_zombie,
    pid_alive,
    port_is_free,
    private_dir,
    python_module,
    start_process,
    stop_pid,
    wait_until,
)
from pipeline_contract import settings
from pipeline_contract.atomic import write_json
from pipeline_contract.settings import PipelineSettings

STACK_FILE = "stack.json"
LOCK_FILE = "stack.lock"  # held by whoever starts or stops services: CLI, tests, keeper
# there while a command waits for that lock: a start past its usual time gives way
LOCK_WANTED_FILE = "stack.lock.wanted"
KEEPER = "keeper"  # the process that restarts services that die (cdclab.keeper)
KEEPER_FILE = "keeper.json"  # what it saw and did, per service (restart_policy.ServiceLife)
ENV_FILE = "cdclab.env"
CHILD_EXIT_WAIT_SECONDS = 5.0  # a killed child's threads take a moment to exit

Progress = Callable[[str], None]


port_env_key = registry.port_env_key


def pinned_port(port_name: str) -> int | None:
    value = os.environ.get(port_env_key(port_name))
    return int(value) if value else None


def all_services() -> list[Service]:
    """Every service in start order (infrastructure first, then the pipeline), each as
    this process's environment configures it."""
    return [info.launcher_class().from_environ(os.environ) for info in registry.SERVICES]


INFRA = registry.INFRA_NAMES
PIPELINE = registry.PIPELINE_NAMES


@dataclass
class ServiceStatus:
    name: str
    running: bool
    healthy: bool
    pid: int | None
    address: str
    restarts: int = 0  # by the supervisor (embedded) or the restart policy (compose)
    note: str = ""  # what the supervisor saw: died when, restart when, why


class KeeperService(Service):
    """The supervisor's own process: restarts services that die, with back-off."""

    name = KEEPER

    def process(self, ctx: StackContext) -> ProcessSpec:
        return ProcessSpec(python_module("cdclab.keeper"))

    def healthy(self, ctx: StackContext) -> bool:
        return True


def _proc_start_time(pid: int) -> str | None:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


class Stack:
    def __init__(self, state_dir: Path | None = None, progress: Progress | None = None, *,
                 pipeline: PipelineSettings):
        self.state_dir = (state_dir or settings.state_dir()).resolve()
        # credentials and data: the owner's only (as root, PostgreSQL's user passes through)
        private_dir(self.state_dir, traversed_by_server=True)
        self.progress = progress or (lambda msg: None)
        self.services = {s.name: s for s in all_services()}
        self._record = self._load_record()
        self.ctx = StackContext(state_dir=self.state_dir, ports=dict(self._record["ports"]),
                                pipeline=pipeline)
        self.ctx.env.update(credentials.load_or_create(self.state_dir))
        self.ctx.env[settings.ENV_STATE_DIR] = str(self.state_dir)
        self.ctx.env[settings.ENV_CACHE_DIR] = str(settings.cache_dir())
        self.ctx.env.update(read_env_file(self.state_dir / ENV_FILE))
        self._lock_fd: int | None = None
        self._lock_depth = 0
        self._children: dict[str, subprocess.Popen] = {}  # what this process started

    @property
    def pipeline(self) -> PipelineSettings:
        """pipeline.toml as the entry point that built this stack read it."""
        return self.ctx.pipeline

    # --- persistent record --------------------------------------------------------
    def _load_record(self) -> dict:
        path = self.state_dir / STACK_FILE
        record = json.loads(path.read_text()) if path.exists() else {}
        record.setdefault("ports", {})
        record.setdefault("pids", {})
        # services `up` asked for and `down` did not stop: what the keeper keeps running
        record.setdefault("wanted", [n for n in record["pids"] if n != KEEPER])
        return record

    def _reload(self) -> None:
        """Re-read stack.json: the keeper or another CLI may have changed it."""
        self._record = self._load_record()
        self.ctx.ports.update(self._record["ports"])

    def _refresh(self) -> None:
        """Reload, unless this process holds the lock (then the record is its own)."""
        if self._lock_depth == 0:
            self._reload()

    @contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the stack lock (re-entrant in this process): one starter/stopper at a
        time, so `down` never races the keeper's restart of what it is stopping."""
        if self._lock_depth == 0:
            fd = os.open(self.state_dir / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                self.progress("waiting for the stack lock (the supervisor may be "
                              "restarting a service)")
                wanted = self.state_dir / LOCK_WANTED_FILE
                wanted.touch()
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX)
                finally:
                    wanted.unlink(missing_ok=True)
            self._lock_fd = fd
            self._reload()
        self._lock_depth += 1
        try:
            yield
        finally:
            self._lock_depth -= 1
            if self._lock_depth == 0 and self._lock_fd is not None:
                os.close(self._lock_fd)  # releases the flock
                self._lock_fd = None

    def wanted(self) -> list[str]:
        self._refresh()
        return [n for n in self.services if n in self._record["wanted"]]

    def _save_record(self) -> None:
        self._record["ports"] = self.ctx.ports
        write_json(self.state_dir / STACK_FILE, self._record)

    def _write_env_file(self) -> None:
        path = self.state_dir / ENV_FILE
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write("# Generated by cdclab: every configuration key of the running stack.\n")
            for key in sorted(self.ctx.env):
                f.write(f"{key}={self.ctx.env[key]}\n")

    # --- ports ----------------------------------------------------------------------
    def _allocate_ports(self, service: Service) -> None:
        for port_name in service.port_names:
            pinned = pinned_port(port_name)
            if pinned:
                self.ctx.ports[port_name] = pinned
            elif port_name not in self.ctx.ports:
                self.ctx.ports[port_name] = free_port()

    def _check_ports_free(self, service: Service) -> None:
        for port_name in service.port_names:
            port = self.ctx.ports[port_name]
            if not port_is_free(port):
                raise ServiceError(
                    f"port {port} ({port_name}) on 127.0.0.1 is busy, so {service.name} cannot "
                    f"start. Stop what uses it, or pin another port with "
                    f"{port_env_key(port_name)}=<port>."
                )

    # --- processes ------------------------------------------------------------------
    def pid_of(self, name: str) -> int | None:
        self._refresh()
        entry = self._record["pids"].get(name)
        if not entry:
            return None
        pid, started = entry["pid"], entry.get("start_time")
        child = self._children.get(name)
        if child is not None and child.pid == pid:
            return None if self._child_ended(child) else pid
        # A PID is ours only if its start time matches: never signal a reused PID.
        if pid_alive(pid) and _proc_start_time(pid) == started:
            return pid
        return None

    @staticmethod
    def _child_ended(child: subprocess.Popen) -> bool:
        """Whether a process this one started has ended, reaped only through its Popen so
        its exit status is kept (an unreaped child's PID cannot be reused)."""
        if child.poll() is not None:
            return True
        if not is_zombie(child.pid):
            return False
        # killed, its threads still exiting: the status comes once they are gone
        with contextlib.suppress(subprocess.TimeoutExpired):
            child.wait(timeout=CHILD_EXIT_WAIT_SECONDS)
        return True

    def exit_code(self, name: str) -> int | None:
        """How a service this process started ended (negative: the signal); None if it
        was not ours or still runs."""
        child = self._children.get(name)
        return child.poll() if child is not None else None

    def _start(self, service: Service) -> subprocess.Popen:
        proc = start_process(service, self.ctx)
        self._children[service.name] = proc
        self._record["pids"][service.name] = {
            "pid": proc.pid, "start_time": _proc_start_time(proc.pid),
        }
        self._save_record()
        return proc

    def dependencies_down(self, name: str, among: Iterable[str] | None = None) -> list[str]:
        """The services `name` depends on (those of this stack, or of `among`) that are
        not running."""
        pool = self.services if among is None else set(among)
        return [d for d in self.services[name].depends_on
                if d in pool and self.pid_of(d) is None]

    def _needs(self, service: Service) -> Callable[[], str | None]:
        """While `service` starts: which of the services it depends on are not running, or
        died meanwhile. Either way waiting on would only time out while holding the stack
        lock, so the keeper could not restart them: the start gives up at once."""
        down = self.dependencies_down(service.name)
        usual_end = time.monotonic() + service.startup_timeout()

        def dead() -> str | None:
            if down:
                return f"{', '.join(down)} not running"
            gone = self.dependencies_down(service.name)
            if gone:
                return f"{', '.join(gone)} died while it was starting"
            # a start that goes on as long as it makes progress (a big full load) holds
            # the lock: past its usual time it gives way to a command waiting for it
            if time.monotonic() > usual_end and (self.state_dir / LOCK_WANTED_FILE).exists():
                return "another command (cdclab down?) is waiting for the stack lock"
            return None
        return dead

    def up(self, names: Iterable[str] | None = None, *, keep: bool = True) -> None:
        """Start services (in start order) and wait until each is healthy; with `keep`,
        also the keeper, which restarts any of them that dies."""
        asked = list(names or self.services)
        with self.locked():
            for name in self.services:  # keep start order
                if name not in asked:
                    continue
                service = self.services[name]
                self._allocate_ports(service)
                service.prepare(self.ctx)
                if name not in self._record["wanted"]:
                    self._record["wanted"].append(name)
                started = self.pid_of(name) is None
                if started:
                    self._check_ports_free(service)
                    self.progress(f"starting {name}")
                    proc = self._start(service)
                try:
                    if started:
                        wait_until(
                            lambda s=service: s.healthy(self.ctx), service.startup_timeout(),
                            name, proc, self.ctx.log_path(name), self._needs(service),
                            progress=lambda s=service: s.start_progress(self.ctx),
                            say=self.progress,
                        )
                    service.after_start(self.ctx)
                except BaseException:
                    # Not healthy in time, a service it needs died meanwhile, or healthy but
                    # not set up (buckets, users...): what this call started is stopped, not
                    # left running as if ready (the keeper would take it for up, never
                    # restart it, and never set it up); the keeper's next attempt is whole.
                    if started:
                        self._stop(name)
                    raise
                self.progress(f"{name} ready at {service.address(self.ctx)}")
                self._save_record()
                self._write_env_file()
            if keep and self.pid_of(KEEPER) is None:
                proc = self._start(KeeperService())
                self.progress(f"supervisor started (pid {proc.pid}): services that die "
                              "are restarted with back-off")

    def down(self, names: Iterable[str] | None = None) -> None:
        stopping = set(names or self.services)
        with self.locked():
            self._record["wanted"] = [n for n in self._record["wanted"] if n not in stopping]
            if not self._record["wanted"]:
                self._stop(KEEPER)  # first: nothing may restart what is being stopped
            for name in reversed(list(self.services)):
                if name in stopping:
                    self._stop(name)
            self._save_record()

    def _stop(self, name: str) -> None:
        pid = self.pid_of(name)
        if pid is not None:
            self.progress(f"stopping {name} (pid {pid})")
            stop_pid(pid)
        self._record["pids"].pop(name, None)
        self._save_record()

    def lives(self) -> dict[str, ServiceLife]:
        """What the keeper saw of each service (keeper.json)."""
        try:
            data = json.loads((self.state_dir / KEEPER_FILE).read_text())
        except (OSError, ValueError):
            return {}
        services = data.get("services", {}) if isinstance(data, dict) else {}
        return {n: ServiceLife.from_json(v) for n, v in services.items() if isinstance(v, dict)}

    def save_lives(self, lives: dict[str, ServiceLife]) -> None:
        write_json(self.state_dir / KEEPER_FILE,
                   {"services": {n: life.to_json() for n, life in lives.items()}})

    def status(self) -> list[ServiceStatus]:
        result = []
        lives, now = self.lives(), time.time()
        for name, service in self.services.items():
            pid = self.pid_of(name)
            healthy = False
            if pid is not None:
                try:
                    healthy = bool(service.healthy(self.ctx))
                except Exception:
                    healthy = False
            address = service.address(self.ctx) if all(
                p in self.ctx.ports for p in service.port_names
            ) else "-"
            life = lives.get(name, ServiceLife())
            result.append(ServiceStatus(name, pid is not None, healthy, pid, address,
                                        life.restarts, describe(life, now)))
        wanted = self.wanted()
        if wanted:  # the keeper matters while anything is meant to run
            pid = self.pid_of(KEEPER)
            result.append(ServiceStatus(
                KEEPER, pid is not None, pid is not None, pid, "-",
                note="" if pid else "not running: a service that dies stays down; "
                "`cdclab up` starts it again"))
        return result

    def env(self) -> dict[str, str]:
        """Every configuration key of the stack (as written to cdclab.env)."""
        return dict(self.ctx.env)


def read_env_file(path: Path) -> dict[str, str]:
    env: dict[str, str] = {}
    if path.exists():
        for line in path.read_text().splitlines():
            if line and not line.startswith("#") and "=" in line:
                key, value = line.split("=", 1)
                env[key] = value
    return env

