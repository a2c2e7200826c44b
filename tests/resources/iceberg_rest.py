"""Test resource: Apache Iceberg's REST catalog server over MinIO; yields how to reach it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from cdclab import settings
from cdclab.services.base import StackContext
from cdclab.services.iceberg_rest import IcebergRestService
from tests.resources.launch import launch
from tests.resources.stack_dirs import temp_state_dir


@pytest.fixture(scope="session")
def iceberg_rest(minio: dict) -> Iterator[dict]:
    with temp_state_dir("iceberg-rest") as state:
        ctx = StackContext(state_dir=state, env=dict(minio["env"]))
        current = [launch(IcebergRestService(), ctx)]

        def restart() -> None:
            """Stop and start the server on the same state dir and port."""
            current[0].stop()
            current[0] = launch(IcebergRestService(), ctx)

        try:
            # env holds every key cdclab.job_config.local_spark_conf needs
            yield {
                "uri": ctx.env[settings.ENV_CATALOG_URI],
                "env": dict(ctx.env),
                "ctx": ctx,
                "restart": restart,
            }
        finally:
            current[0].stop()
