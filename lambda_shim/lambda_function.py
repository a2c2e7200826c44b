"""AWS Lambda handler: an S3 object landed in the bronze prefix -> start the Glue job.

Deployable as is (no cdclab import). Locally, AWS_ENDPOINT_URL_GLUE points boto3 at the
local Glue API and the watcher calls `lambda_handler` with the same S3 event S3 sends.
"""

from __future__ import annotations

import logging
import os
from urllib.parse import unquote_plus

import boto3

DEFAULT_JOB_NAME = "Bronze_to_Silver"

logger = logging.getLogger()
logger.setLevel(logging.INFO)


class GlueJobAlreadyRunning(RuntimeError):
    """Retryable: the job is at MaxConcurrentRuns. The new file is not lost: the bookmark
    picks it up in a later run, so the invocation must be retried (async Lambda retries;
    the local watcher keeps the event pending and backs off)."""


def object_keys(event: dict) -> list[str]:
    # S3 URL-encodes keys in notifications (space -> '+'); unquote_plus undoes exactly that.
    return [unquote_plus(r["s3"]["object"]["key"]) for r in event.get("Records", [])]


def lambda_handler(event, context):
    job_name = os.environ.get("GLUE_JOB_NAME", DEFAULT_JOB_NAME)
    keys = object_keys(event)
    logger.info("%d new object(s) for Glue job %s: %s", len(keys), job_name, keys)
    glue = boto3.client("glue")
    try:
        run = glue.start_job_run(JobName=job_name)
    except glue.exceptions.ConcurrentRunsExceededException as e:
        raise GlueJobAlreadyRunning(
            f"Glue job {job_name} already has a run going; retry so a later run picks up "
            f"{len(keys)} object(s): {e}"
        ) from e
    run_id = run["JobRunId"]
    logger.info("started Glue job %s run %s", job_name, run_id)
    return {"JobName": job_name, "JobRunId": run_id, "Keys": keys}
