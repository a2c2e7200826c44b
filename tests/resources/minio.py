"""Test resource: a real MinIO server; yields the settings to reach it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from cdclab import credentials
from cdclab.services.base import StackContext
from cdclab.services.minio import MinioService, s3_client
from pipeline_contract import settings
from pipeline_contract.settings import load_pipeline
from tests.resources.launch import launch
from tests.resources.stack_dirs import temp_state_dir


@pytest.fixture(scope="session")
def minio() -> Iterator[dict]:
    with temp_state_dir("minio") as state:
        ctx = StackContext(pipeline=load_pipeline(), state_dir=state, env=credentials.generate())
        running = launch(MinioService(), ctx)
        try:
            yield {
                "endpoint": ctx.env[settings.ENV_S3_ENDPOINT],
                "access_key": ctx.env[settings.ENV_ACCESS_KEY],
                "secret_key": ctx.env[settings.ENV_SECRET_KEY],
                "region": ctx.env[settings.ENV_REGION],
                "env": dict(ctx.env),  # the settings.ENV_* keys, ready for os.environ
                "s3": s3_client(ctx.env),
                "ctx": ctx,
            }
        finally:
            running.stop()


@pytest.fixture
def empty_bronze(minio: dict) -> dict:
    """The shared MinIO with the bronze table prefix emptied: tests that write or list
    DMS files must not see another test's files."""
    p = settings.load_pipeline()
    s3 = minio["s3"]
    for page in s3.get_paginator("list_objects_v2").paginate(
        Bucket=p.lake.bronze_bucket, Prefix=p.bronze_prefix + "/"
    ):
        keys = [{"Key": o["Key"]} for o in page.get("Contents", [])]
        if keys:
            s3.delete_objects(Bucket=p.lake.bronze_bucket, Delete={"Objects": keys})
    return minio
