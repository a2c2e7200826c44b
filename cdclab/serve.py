"""`cdclab serve <service>`: run one service in the foreground.

This is the entry point of every docker compose service: the container runs the very
Service class the embedded supervisor runs (same program, same arguments, same
configuration keys), only listening on CDCLAB_BIND_HOST instead of 127.0.0.1.
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

from cdclab.services import registry
from cdclab.services.base import StackContext, start_service
from cdclab.supervisor import all_services, pinned_port
from pipeline_contract import settings

# Well-known ports inside containers (the embedded runtime picks free ones instead).
CONTAINER_PORTS = {name: port.container for name, port in registry.PORTS.items()}


def ready_marker(name: str) -> Path:
    """Written once this start of the service is healthy and set up: a container's cheap
    health check reads it (with a port probe) instead of importing every client."""
    return settings.state_dir() / f".ready-{name}"


def port_for(port_name: str) -> int:
    return pinned_port(port_name) or CONTAINER_PORTS[port_name]


def serve(name: str) -> int:
    """The container's entry point: pipeline.toml is read here, once."""
    pipeline = settings.load_pipeline()
    services = {s.name: s for s in all_services()}
    if name not in services:
        print(f"cdclab serve: unknown service {name!r}; one of {', '.join(services)}",
              file=sys.stderr)
        return 2
    service = services[name]
    marker = ready_marker(name)
    marker.unlink(missing_ok=True)  # a marker from the previous start says nothing now
    ctx = StackContext(
        state_dir=settings.state_dir(),
        ports={p: port_for(p) for p in service.port_names},
        env={k: v for k, v in os.environ.items() if k.startswith(("CDCLAB_", "AWS_", "GLUE_"))},
        pipeline=pipeline,
    )
    # what a long start has done so far (the emitter's full load) in the container's log
    running = start_service(service, ctx,
                            say=lambda msg: print(f"cdclab serve: {msg}", flush=True))
    print(f"cdclab serve: {name} ready at {service.address(ctx)}", flush=True)
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.write_text(str(running.proc.pid))

    def forward(signum: int, _frame: object) -> None:
        running.proc.send_signal(signum)

    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGINT, forward)
    return running.proc.wait()
