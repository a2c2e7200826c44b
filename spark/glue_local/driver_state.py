"""The warm Spark driver's state in a file, for health checks that start no Spark.

The runner writes <state>/glue/driver.json whenever the driver comes up, dies or
restarts; `Service.healthy()`, compose_probe and scripts/container-health.sh read it, so
a service whose JVM died is unhealthy at once, not when a run fails.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from pathlib import Path

from pipeline_contract.atomic import write_json

DRIVER_STATE_FILE = "driver.json"
UNHEALTHY_STATES = ("dead", "restarting")


def driver_state_path(state_dir: Path) -> Path:
    return Path(state_dir) / "glue" / DRIVER_STATE_FILE


def write_driver_state(state_dir: Path, driver) -> None:
    """The driver's state for health checks (`cdclab status`, container-health.sh):
    a dead or restarting driver makes the service unhealthy at once."""
    with contextlib.suppress(OSError):
        write_json(driver_state_path(state_dir), {
            "state": driver.state, "deaths": driver.deaths, "last_death": driver.last_death,
            "at": time.time(), "pid": os.getpid()})


def driver_healthy(state_dir: Path) -> bool:
    """No driver started yet (lazy, or warming) or one up: healthy; dead or restarting:
    not. The service writes it at each start, so an earlier process's word never lasts."""
    try:
        state = json.loads(driver_state_path(state_dir).read_text())
    except (OSError, ValueError):
        return True
    return state.get("state") not in UNHEALTHY_STATES
