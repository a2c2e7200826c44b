"""Every service of the lab, in start order: one record each (pipeline_contract.service_kit
.ServiceInfo: name, launcher, layer, ports, state file), declared by the box that launches
it, beside its launcher. The supervisor, `cdclab serve`, the compose runtime and health
checks, status, chaos and the tests read this list; what a service does (its process,
health, dependencies, the secrets it may see) is in its launcher.

Adding a service: its launcher module with its SERVICE record in its box, one line here,
its compose service, its case in scripts/container-health.sh and, if it publishes a port,
its line in .env.example (tests hold them to this list). Importing this module imports the
launchers, so they import no client library at module level (containers' health checks
read this list every few seconds).
"""

from __future__ import annotations

from cdclab.services import iceberg_rest, minio, postgres
from dms_emitter import launcher as emitter
from glue_local import launcher as glue
from lambda_shim import launcher as watcher
from pipeline_contract.service_kit import (  # noqa: F401 - the records' vocabulary
    INFRA,
    PIPELINE,
    PORT_ENV_PREFIX,
    Port,
    ServiceInfo,
    port_env_key,
)

SERVICES: tuple[ServiceInfo, ...] = (
    postgres.SERVICE,
    minio.SERVICE,
    iceberg_rest.SERVICE,
    glue.SERVICE,
    # the watcher before the emitter: a full load's LOAD files are merged as they land,
    # as S3 events start runs while DMS still loads (the emitter is ready only once its
    # full load is written: docs/performance.md, nineteenth run)
    watcher.SERVICE,
    emitter.SERVICE,
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
