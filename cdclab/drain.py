"""Knowing when the pipeline has drained, from standard signals only.

1. The emitter has confirmed the replication slot up to a target LSN. The slot advances
   only after the file holding those changes is in S3, so every change is in bronze.
2. A Glue run that started after the newest bronze object landed has SUCCEEDED and none
   is running: that run listed every file (bookmarks skip only processed files), and the
   newest such run left no input for later (its metrics' "backlog", bounded execution).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime

from pipeline_contract import settings


@dataclass(frozen=True)
class JobRun:
    run_id: str
    state: str
    started_on: datetime
    completed_on: datetime | None
    backlog: bool = False  # the run read its cap of files: input may be waiting


ACTIVE_STATES = ("STARTING", "RUNNING", "STOPPING", "WAITING")


def bronze_processed(newest_object: datetime | None, runs: list[JobRun]) -> bool:
    """Pure: has a successful run started after the newest object, with none active?"""
    if any(r.state in ACTIVE_STATES for r in runs):
        return False
    if newest_object is None:
        return True
    after = [r for r in runs if r.state == "SUCCEEDED" and r.started_on >= newest_object]
    return bool(after) and not max(after, key=lambda r: r.started_on).backlog


def lsn_to_int(lsn: str) -> int:
    hi, lo = lsn.split("/")
    return (int(hi, 16) << 32) | int(lo, 16)


# --- I/O --------------------------------------------------------------------------------
def current_wal_lsn(dsn: str) -> int:
    import psycopg

    with psycopg.connect(dsn) as conn:
        return lsn_to_int(conn.execute("SELECT pg_current_wal_lsn()::text").fetchone()[0])


def slot_confirmed_lsn(dsn: str, slot: str) -> int | None:
    import psycopg

    with psycopg.connect(dsn) as conn:
        row = conn.execute(
            "SELECT confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = %s",
            (slot,),
        ).fetchone()
    return lsn_to_int(row[0]) if row and row[0] else None


def bronze_objects(env: Mapping[str, str], p: settings.PipelineSettings) -> list[dict]:
    """Every object under the watched prefix, as ListObjectsV2 gives them."""
    from cdclab.services.minio import s3_client

    s3 = s3_client(dict(env))
    return [obj for page in s3.get_paginator("list_objects_v2").paginate(
        Bucket=p.lake.bronze_bucket, Prefix=p.watched_prefix + "/")
        for obj in page.get("Contents", [])]


def newest_bronze_object(env: Mapping[str, str],
                         p: settings.PipelineSettings) -> datetime | None:
    return max((obj["LastModified"] for obj in bronze_objects(env, p)), default=None)


def job_runs(env: Mapping[str, str], name: str) -> list[JobRun]:
    from cdclab.services.glue_api import glue_client

    glue = glue_client(env)
    runs: list[JobRun] = []
    for page in glue.get_paginator("get_job_runs").paginate(JobName=name):
        for r in page["JobRuns"]:
            runs.append(JobRun(r["Id"], r["JobRunState"], r["StartedOn"], r.get("CompletedOn")))
    done = [r for r in runs if r.state == "SUCCEEDED"]
    endpoint = env.get(settings.ENV_GLUE_ENDPOINT)
    if done and endpoint:  # the local API's Metrics (boto3 drops them): the newest run's
        from dataclasses import replace

        from cdclab.services.glue_api import job_run_metrics

        newest = max(done, key=lambda r: r.started_on)
        metrics = job_run_metrics(endpoint, name, newest.run_id, env=env) or {}
        runs = [replace(r, backlog=bool(metrics.get("backlog"))) if r is newest else r
                for r in runs]
    return runs


def _transient(e: Exception) -> bool:
    """Connection failures that a restarting service causes (not wrong answers)."""
    import botocore.exceptions as bx
    import psycopg

    return isinstance(e, (bx.ConnectionError, bx.HTTPClientError, psycopg.OperationalError,
                          ConnectionError))


def wait_for_drain(
    env: Mapping[str, str],
    p: settings.PipelineSettings,
    target_lsn: int,
    *,
    timeout: float = 600,
    progress: Callable[[str], None] = lambda _msg: None,
) -> float:
    """Block until both drain conditions hold; returns seconds waited."""
    dsn = env[settings.ENV_PG_DSN]
    start = time.monotonic()
    last_report = 0.0
    unreachable = ""
    while True:
        emitted = processed = False
        try:
            confirmed = slot_confirmed_lsn(dsn, p.source.slot) or 0
            emitted = confirmed >= target_lsn
            processed = emitted and bronze_processed(newest_bronze_object(env, p),
                                                        job_runs(env, p.glue_job.name))
            unreachable = ""
        except Exception as e:  # a service restarting (its restart policy): ask again
            if not _transient(e):
                raise
            unreachable = f"{type(e).__name__}: {e}"
        if emitted and processed:
            return time.monotonic() - start
        waited = time.monotonic() - start
        if waited > timeout:
            raise TimeoutError(
                f"pipeline did not drain within {timeout:.0f}s "
                f"(slot confirmed {'up to target' if emitted else 'behind target'}, "
                f"bronze {'processed' if processed else 'not yet processed'}"
                f"{'; last error ' + unreachable if unreachable else ''}); "
                "see `cdclab logs emitter|watcher|glue`"
            )
        if waited - last_report >= 5:
            last_report = waited
            stage = ("a service is unreachable: " + unreachable[:120] if unreachable
                     else "Glue job merging bronze files" if emitted
                     else "emitter writing CDC files")
            progress(f"draining: {stage} ({waited:.0f}s)")
        time.sleep(0.5)
