"""Idempotent lake set-up against the (local) Glue API: database, bronze table, job.

These are the same boto3 calls the AWS deployer makes, pointed at the local Glue API by
AWS_ENDPOINT_URL_GLUE.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping

import boto3

from cdclab import settings


def glue_client(env: Mapping[str, str]):
    return boto3.client(
        "glue",
        endpoint_url=env[settings.ENV_GLUE_ENDPOINT],
        region_name=env.get(settings.ENV_REGION, settings.DEFAULT_REGION),
        aws_access_key_id=env[settings.ENV_ACCESS_KEY],
        aws_secret_access_key=env[settings.ENV_SECRET_KEY],
    )


def setup_lake(env: Mapping[str, str], progress: Callable[[str], None] = lambda _m: None) -> None:
    from cdclab.catalog_tables import bronze_table_input, database_input
    from cdclab.services.glue_api import register_job

    p = settings.load_pipeline()
    glue = glue_client(env)
    with contextlib.suppress(glue.exceptions.AlreadyExistsException):
        glue.create_database(DatabaseInput=database_input(p))
    table = bronze_table_input(p)
    try:
        glue.create_table(DatabaseName=p.lake.glue_database, TableInput=table)
    except glue.exceptions.AlreadyExistsException:
        glue.update_table(DatabaseName=p.lake.glue_database, TableInput=table)
    register_job(glue, p)
    progress(
        f"Glue catalog: {p.lake.glue_database}.{p.lake.bronze_table} -> {p.bronze_location}; "
        f"job {p.glue_job.name} registered"
    )
