"""Idempotent lake set-up against the (local) Glue API: database, bronze table, job.

These are the same boto3 calls the AWS deployer makes, pointed at the local Glue API by
AWS_ENDPOINT_URL_GLUE.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from cdclab.services.glue_api import glue_client, register_job
from cdclab.tables_sync import sync
from pipeline_contract import settings


def setup_lake(env: Mapping[str, str], p: settings.PipelineSettings,
               progress: Callable[[str], None] = lambda _m: None) -> None:
    """The Glue database, each selected table's bronze catalog table and the job's table
    specs (cdclab.tables_sync), then the job itself."""
    report = sync(env, p, progress)
    register_job(glue_client(env), p)
    progress(f"Glue catalog: {p.lake.glue_database}, {len(report.specs)} table(s) -> "
             f"{p.tables_config}; job {p.glue_job.name} registered")
