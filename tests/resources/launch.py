"""Starting one service for a test, on the backend CDCLAB_BACKEND picks.

- `embedded`: the Service as a local process (cdclab.services.base.start_service).
- `containers`: the same Service as a container of the cdclab/runtime image, started by
  testcontainers: `cdclab serve <name>` with the test's configuration, on the host's
  network (so the 127.0.0.1 addresses every test uses are the same), its state directory
  bind-mounted at the same path (tests read logs and state files as they do embedded).

Either way the test gets a handle with `.stop()`, `.kill()` (a crash), `.service`, `.ctx`.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote, urlsplit, urlunsplit

from cdclab import credentials
from cdclab.services.base import (
    RunningService,
    Service,
    ServiceError,
    StackContext,
    free_port,
    start_service,
)
from cdclab.supervisor import port_env_key
from pipeline_contract import settings
from tests.resources.stack import CONTAINERS, backend

IMAGE = os.environ.get("CDCLAB_TEST_IMAGE", "cdclab/runtime:0.1.0")
CONTAINER_UID = 1000  # the image's cdclab user
LABEL = "org.cdclab.test"


def launch(service: Service, ctx: StackContext, *, mounts: tuple[Path, ...] = ()):
    """Start `service` and wait until healthy. `mounts`: host paths the service works in
    (e.g. a job script in tmp_path that writes beside itself), mounted at the same path."""
    if backend() != CONTAINERS:
        return start_service(service, ctx)
    return start_container(service, ctx, mounts)


@dataclass
class ContainerService:
    """A service running in a container (the RunningService of the containers backend)."""

    service: Service
    ctx: StackContext
    container: object
    stopped: bool = field(default=False)

    def kill(self) -> None:
        """A crash: SIGKILL, no clean shutdown."""
        wrapped = self.container.get_wrapped_container()
        wrapped.kill(signal="SIGKILL")
        wrapped.wait(timeout=30)
        self.stopped = True
        self.container.stop()  # the crashed container is removed: a restart is a new one

    def stop(self) -> None:
        """A clean stop (SIGTERM, as `cdclab down` sends), then the container is removed."""
        if not self.stopped:
            self.stopped = True
            try:
                self.container.get_wrapped_container().stop(timeout=30)
            finally:
                self.container.stop()  # remove, with its anonymous volume

    def logs(self) -> str:
        out, err = self.container.get_logs()
        return (out + err).decode(errors="replace")


def without_userinfo(dsn: str) -> str:
    parts = urlsplit(dsn)
    return urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))


def _share_dir(path: Path) -> None:
    """The container's user must write the directory the test also reads."""
    path.mkdir(parents=True, exist_ok=True)
    if os.geteuid() == 0:
        for root, dirs, files in os.walk(path):
            for name in (root, *(os.path.join(root, n) for n in dirs + files)):
                os.lchown(name, CONTAINER_UID, CONTAINER_UID)
    else:
        path.chmod(0o777)


def start_container(service: Service, ctx: StackContext, mounts: tuple[Path, ...] = ()):
    from testcontainers.core.container import DockerContainer

    for port_name in service.port_names:
        ctx.ports.setdefault(port_name, free_port())
    service.publish(ctx)
    _share_dir(ctx.state_dir)
    # the service's own secrets go in a 0600 file the container's user reads, as in the
    # compose stack (compose_probe.service_credentials: what it uses, nothing more)
    from cdclab.compose_probe import service_credentials

    secret_keys = (settings.ENV_ACCESS_KEY, credentials.PG_USER, *credentials.SECRET_KEYS)
    given = {k: ctx.env[k] for k in secret_keys if k in ctx.env}
    dsn_user = urlsplit(ctx.env.get(settings.ENV_PG_DSN, ""))
    if dsn_user.username and dsn_user.password:  # the DSN's login is the one to use
        given[credentials.PG_USER] = unquote(dsn_user.username)
        given[credentials.PG_PASSWORD] = unquote(dsn_user.password)
    secrets = service_credentials(service, given)
    secrets_file = ctx.state_dir / f".credentials-{service.name}.json"
    secrets_file.unlink(missing_ok=True)
    credentials.write_new(secrets_file, secrets)
    if os.geteuid() == 0:
        os.chown(secrets_file, CONTAINER_UID, CONTAINER_UID)
    else:
        secrets_file.chmod(0o644)  # the container's uid differs from ours
    plain = {k: v for k, v in ctx.env.items() if k not in secret_keys}
    if settings.ENV_PG_DSN in plain:
        plain[settings.ENV_PG_DSN] = without_userinfo(plain[settings.ENV_PG_DSN])
    env = {
        **plain,
        settings.ENV_CREDENTIALS_FILE: str(secrets_file),
        **service.container_env(),
        settings.ENV_STATE_DIR: str(ctx.state_dir),
        "CDCLAB_BIND_HOST": "127.0.0.1",  # host network: loopback only, as embedded
        **{port_env_key(p): str(port) for p, port in ctx.ports.items()},
    }
    container = (
        DockerContainer(IMAGE)
        .with_command(["cdclab", "serve", service.name])
        .with_volume_mapping(str(ctx.state_dir), str(ctx.state_dir), "rw")
        .with_volume_mapping(str(settings.REPO_ROOT), str(settings.REPO_ROOT), "ro")
        .with_kwargs(network_mode="host", init=True, labels={LABEL: service.name},
                     user=f"{CONTAINER_UID}:{CONTAINER_UID}")
    )
    container.tmpfs["/tmp"] = "size=1g,exec"  # Spark extracts native libraries there
    for path in mounts:
        _share_dir(path)  # pytest makes tmp_path 0700, root's: the container's user works there
        container = container.with_volume_mapping(str(path), str(path), "rw")
    for key, value in env.items():
        container = container.with_env(key, value)
    container.start()
    handle = ContainerService(service, ctx, container)
    deadline = time.monotonic() + service.startup_timeout()
    while time.monotonic() < deadline:
        state = container.get_wrapped_container()
        state.reload()
        if state.status == "exited":
            logs = handle.logs()[-3000:]
            handle.stop()
            raise ServiceError(f"{service.name} container exited while starting:\n{logs}")
        # `cdclab serve` says "ready" once healthy and set up (buckets, database...)
        if f"cdclab serve: {service.name} ready" in handle.logs():
            return handle
        time.sleep(0.3)
    logs = handle.logs()[-3000:]
    handle.stop()
    raise ServiceError(f"{service.name} container not healthy within "
                       f"{service.startup_timeout():.0f}s:\n{logs}")


__all__ = ["launch", "ContainerService", "RunningService"]
