"""Test resource: Apache Iceberg's REST catalog server over MinIO; yields how to reach it."""

from __future__ import annotations

import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest

from cdclab.services.base import StackContext
from cdclab.services.iceberg_rest import IcebergRestService
from pipeline_contract import settings
from pipeline_contract.settings import load_pipeline
from tests.resources.launch import launch
from tests.resources.specs import hosts_spec
from tests.resources.stack_dirs import temp_state_dir


@pytest.fixture(scope="session")
def iceberg_rest(minio: dict) -> Iterator[dict]:
    with temp_state_dir("iceberg-rest") as state:
        ctx = StackContext(pipeline=load_pipeline(), state_dir=state, env=dict(minio["env"]))
        current = [launch(IcebergRestService(), ctx)]

        def restart() -> None:
            """Stop and start the server on the same state dir and port."""
            current[0].stop()
            current[0] = launch(IcebergRestService(), ctx)

        try:
            # env holds every key pipeline_contract.job_config.local_spark_conf needs
            yield {
                "uri": ctx.env[settings.ENV_CATALOG_URI],
                "env": dict(ctx.env),
                "ctx": ctx,
                "restart": restart,
            }
        finally:
            current[0].stop()


@pytest.fixture
def fresh_lake(iceberg_rest: dict, empty_bronze: dict) -> dict:
    """The shared catalog and MinIO as a first run of the pipeline's job finds them: no
    bronze files, no silver/tombstone/quarantine tables, no input guard or backlog marker
    (tests that run the shipped job must not see another test's tables)."""
    p = settings.load_pipeline()
    token = iceberg_rest["env"][settings.ENV_CATALOG_TOKEN]
    spec = hosts_spec(p)
    for key in ("silver_table", "tombstone_table", "quarantine_table"):
        _catalog, namespace, table = spec[key].split(".")
        url = (f"{iceberg_rest['uri']}/v1/namespaces/{namespace}/tables/{table}"
               "?purgeRequested=true")
        request = urllib.request.Request(url, method="DELETE",
                                         headers={"Authorization": f"Bearer {token}"})
        try:
            urllib.request.urlopen(request, timeout=30).close()
        except urllib.error.HTTPError as error:
            if error.code != 404:  # absent: nothing to drop
                raise
    s3 = empty_bronze["s3"]
    for uri in (p.input_guard(), p.backlog_marker()):
        bucket, key = uri.removeprefix("s3://").split("/", 1)
        s3.delete_object(Bucket=bucket, Key=key)
    return empty_bronze
