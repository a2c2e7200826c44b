"""No other local user reads the stack's state: credentials, MinIO's data (each user's
secret is in it), the catalog, logs. Tried for real: as another OS user (`nobody`), and
as the unprivileged user PostgreSQL runs as when the stack runs as root (it may reach only
its own data). Needs root to switch users (CI and containers run as root)."""

from __future__ import annotations

import os
import subprocess

import pytest

from cdclab.services.base import SERVER_OS_USER
from tests.resources.stack import CONTAINERS

pytestmark = [pytest.mark.integration]


def readable_as(user: str, root) -> list[str]:
    """Every path under `root` that `user` can list or read."""
    import grp
    import pwd

    gid = pwd.getpwnam(user).pw_gid  # the user's own groups only, none of root's
    done = subprocess.run(["find", str(root), "-readable"], user=user, group=gid,
                          extra_groups=[g.gr_gid for g in grp.getgrall() if user in g.gr_mem],
                          capture_output=True, text=True)
    return [line for line in done.stdout.splitlines() if line]


def test_other_local_users_reach_nothing_of_the_state(stack):
    if stack.backend == CONTAINERS:
        pytest.skip("the containers' state lives in Docker volumes (root's)")
    if os.geteuid() != 0:
        pytest.skip("switching to another OS user needs root")
    stack.start_pipeline()
    state = stack.state_dir
    assert (state / "minio" / "data" / ".minio.sys").is_dir()  # the users' secrets are there
    assert readable_as("nobody", state) == []
    # PostgreSQL's user passes through the state dir (search, not list) to its own data,
    # and reads nothing of the other services' (nor the credentials, nor the logs)
    assert readable_as(SERVER_OS_USER, state) == []
    assert any(p.endswith("PG_VERSION") for p in readable_as(SERVER_OS_USER,
                                                               state / "postgres" / "data"))
    for other in sorted(state.iterdir()):
        if other.name != "postgres":
            assert readable_as(SERVER_OS_USER, other) == [], other
    assert readable_as(SERVER_OS_USER, state / "postgres" / "credentials.json") == []
