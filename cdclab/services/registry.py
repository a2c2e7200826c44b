"""Every service of the lab, declared once: its name (the compose service, its log, its
folder in the state dir), its launcher (the Service class both runtimes run), its layer,
its ports and its state file. The supervisor, `cdclab serve`, the compose runtime and
health checks, status, chaos and the tests read this list; what a service
does (its process, health, dependencies, the secrets it may see) is in its launcher.

Adding a service: its launcher module under cdclab/services/, one line here, its compose
service and its case in scripts/container-health.sh (tests hold both to this list).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cdclab.services.base import Service

INFRA = "infra"  # started first: what the pipeline runs on
PIPELINE = "pipeline"  # the boxes that move changes: started once the infrastructure is up
PORT_ENV_PREFIX = "CDCLAB_PORT_"  # e.g. CDCLAB_PORT_POSTGRES=5432 pins a port


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
    name: str
    launcher: str  # "module:Class", imported only when a stack is built
    layer: str
    ports: tuple[Port, ...] = ()  # the first is the one it is reached and probed on
    state_file: str | None = None  # under the state dir: its progress, for status and health

    def launcher_class(self) -> type[Service]:
        module, _, cls = self.launcher.partition(":")
        return getattr(importlib.import_module(module), cls)


SERVICES = (
    ServiceInfo("postgres", "cdclab.services.postgres:PostgresService", INFRA,
                (Port("postgres", 5432),)),
    ServiceInfo("minio", "cdclab.services.minio:MinioService", INFRA,
                (Port("minio", 9000), Port("minio-console", 9001))),
    ServiceInfo("iceberg-rest", "cdclab.services.iceberg_rest:IcebergRestService", INFRA,
                (Port("iceberg-rest", 8181),)),
    ServiceInfo("glue", "cdclab.services.glue_api:GlueApiService", INFRA,
                (Port("glue", 8090),)),
    ServiceInfo("emitter", "cdclab.services.emitter:EmitterService", PIPELINE,
                state_file="emitter/state.json"),
    ServiceInfo("watcher", "cdclab.services.watcher:WatcherService", PIPELINE,
                state_file="watcher/state.json"),
)
BY_NAME = {s.name: s for s in SERVICES}
NAMES = tuple(BY_NAME)  # in start order
INFRA_NAMES = tuple(s.name for s in SERVICES if s.layer == INFRA)
PIPELINE_NAMES = tuple(s.name for s in SERVICES if s.layer == PIPELINE)
PORTS = {p.name: p for s in SERVICES for p in s.ports}
# service -> the port it is reached on (what compose publishes on the host's loopback)
PUBLISHED = {s.name: s.ports[0] for s in SERVICES if s.ports}
STATE_FILES = {s.name: s.state_file for s in SERVICES if s.state_file}


def port_names(service: str) -> tuple[str, ...]:
    return tuple(p.name for p in BY_NAME[service].ports)
