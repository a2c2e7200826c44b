"""Test resource: a real PostgreSQL source (logical replication on) in a fresh state dir.

tests/conftest.py loads this module as a plugin, so the `postgres` fixture is global.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from cdclab.services.base import StackContext
from cdclab.services.postgres import PostgresService
from pipeline_contract import settings
from pipeline_contract.settings import load_pipeline
from tests.resources.launch import launch
from tests.resources.stack_dirs import temp_state_dir


@dataclass
class PostgresResource:
    dsn: str  # postgresql://user:pw@127.0.0.1:port/airbnb_db
    ctx: StackContext
    service: PostgresService


def start_postgres(state_dir: Path) -> tuple[PostgresResource, object]:
    ctx = StackContext(pipeline=load_pipeline(), state_dir=state_dir)
    running = launch(PostgresService(), ctx)
    return PostgresResource(ctx.env[settings.ENV_PG_DSN], ctx, running.service), running


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresResource]:
    with temp_state_dir("postgres") as state:
        resource, running = start_postgres(state)
        try:
            yield resource
        finally:
            running.stop()
