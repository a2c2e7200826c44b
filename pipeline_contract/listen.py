"""Where the lab's servers listen: loopback, unless a container runtime says otherwise."""

from __future__ import annotations

import os

LOOPBACK = "127.0.0.1"
ENV_BIND_HOST = "CDCLAB_BIND_HOST"  # containers set 0.0.0.0 and publish on the host's loopback


def bind_host() -> str:
    """The address servers listen on: loopback, unless a container runtime says otherwise."""
    return os.environ.get(ENV_BIND_HOST, LOOPBACK)
