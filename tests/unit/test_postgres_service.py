"""The PostgreSQL service's set-up as root: the order a machine's first run needs."""

from __future__ import annotations

from pathlib import Path

import pytest

from cdclab.services import postgres as pg
from pipeline_contract import settings
from pipeline_contract.service_kit import StackContext


class Checked(Exception):
    """The reachability check ran: the set-up goes on from there as before."""


def test_a_machines_first_run_creates_the_server_user_before_letting_its_group_in(
        monkeypatch, tmp_path) -> None:
    """As root the server runs as its own OS user, which a machine's first run creates.
    The state dir lets that user's group through only once the group exists, so the user
    must be made before that, and the check that it reaches its socket dir comes after
    (it failed on every bare machine's first `cdclab up` as root)."""
    calls: list[str] = []
    users: set[str] = set()

    def ensure_server_user() -> str:
        users.add(pg.PG_OS_USER)
        calls.append("user")
        return pg.PG_OS_USER

    def private_dir(path: Path, *, traversed_by_server: bool = False) -> Path:
        path.mkdir(parents=True, exist_ok=True)
        if path == tmp_path:
            calls.append("state dir " + ("lets it in" if users else "shut"))
        return path

    def server_os_user(*paths: Path) -> str:
        calls.append("check")
        raise Checked

    monkeypatch.setattr(pg, "credentials", lambda ctx: ("u", "p"))
    monkeypatch.setattr(pg, "ensure_server_user", ensure_server_user)
    monkeypatch.setattr(pg, "private_dir", private_dir)
    monkeypatch.setattr(pg, "server_os_user", server_os_user)
    ctx = StackContext(state_dir=tmp_path, pipeline=settings.load_pipeline())
    with pytest.raises(Checked):
        pg.PostgresService().prepare(ctx)
    assert calls == ["user", "state dir lets it in", "check"]
