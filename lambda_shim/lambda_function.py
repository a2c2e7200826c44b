"""AWS Lambda handler: objects landed in the bronze prefix -> check them -> start the Glue job;
a run left input for later -> start the next run.

Each new object is checked first (object_gate): one the job could not read (a `.gz` that
is not gzip, a truncated file, a name Hadoop globs, a record with the wrong number of
fields) would fail every later run, so it is moved to the quarantine prefix with a
`.reason.json` beside it, and the job starts for the rest. Nothing is lost: the object
is copied before it is deleted, and the reason names the key and the record.

A run that leaves input for later (bounded execution) writes its job's backlog marker
(BACKLOG_MARKER_PREFIX + job + BACKLOG_MARKER_SUFFIX). EventBridge invokes this handler
when a run ends ("Glue Job State Change") and on the sweep's schedule ("Scheduled
Event"); either way a job whose marker exists gets its next run, with no new upload.

Deployable as is: the zip holds this file, object_gate.py and eventbridge_events.py (no
cdclab import).
Locally, AWS_ENDPOINT_URL_GLUE / _S3 point boto3 at the local Glue API and MinIO and the
watcher calls `lambda_handler` with the same S3 event S3 sends.
"""

from __future__ import annotations

import json
import logging
import os
import time
from datetime import datetime, timedelta
from urllib.parse import unquote_plus

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError

try:  # in the repository
    from lambda_shim import eventbridge_events, object_gate
except ImportError:  # deployed: the files at the zip's root
    import eventbridge_events
    import object_gate

DEFAULT_JOB_NAME = "Bronze_to_Silver"
DEFAULT_QUARANTINE_PREFIX = "quarantine"
READ_CHUNK = 1024 * 1024
MARKER_CLOCK_MARGIN_S = 2.0  # S3's clock vs Glue's (the job's own margin)

logger = logging.getLogger()
logger.setLevel(logging.INFO)


class GlueJobAlreadyRunning(RuntimeError):
    """Retryable: the job is at MaxConcurrentRuns. The new file is not lost: the bookmark
    picks it up in a later run, so the invocation must be retried (async Lambda retries;
    the local watcher keeps the event pending and backs off)."""


def object_refs(event: dict) -> list[tuple[str, str]]:
    """(bucket, key) of each record. S3 URL-encodes keys in notifications (space -> '+');
    unquote_plus undoes exactly that."""
    return [(r["s3"]["bucket"]["name"], unquote_plus(r["s3"]["object"]["key"]))
            for r in event.get("Records", [])]


def object_keys(event: dict) -> list[str]:
    return [key for _, key in object_refs(event)]


def csv_layout() -> object_gate.CsvLayout:
    """The DMS endpoint's CSV settings, from the function's environment (cdclab deploy
    and the local watcher set them from pipeline.toml)."""
    env = os.environ
    return object_gate.CsvLayout(
        header=env.get("DMS_ADD_COLUMN_NAME", "true") == "true",
        delimiter=env.get("DMS_CSV_DELIMITER", ","),
        quoting=env.get("DMS_RFC4180", "true") == "true")


def s3_client():
    # path-style addressing works on S3 and MinIO alike
    return boto3.client("s3", config=Config(s3={"addressing_style": "path"}))


def check_object(s3, bucket: str, key: str,
                 layout: object_gate.CsvLayout) -> tuple[str, object_gate.Defect | None]:
    """("gone" | "hidden" | "good" | "bad", defect) for one object, read as a stream."""
    if object_gate.is_hidden(key):
        return "hidden", None
    defect = object_gate.key_defect(key)
    if defect is None:
        try:
            body = s3.get_object(Bucket=bucket, Key=key)["Body"]
        except s3.exceptions.NoSuchKey:
            return "gone", None  # quarantined (or removed) by an earlier invocation
        with body:
            defect = object_gate.content_defect(key, body.iter_chunks(READ_CHUNK), layout)
    return ("bad", defect) if defect else ("good", None)


def quarantine(s3, bucket: str, key: str, defect: object_gate.Defect, prefix: str,
               request_id: str) -> str:
    """Copy, write the reason, then delete: the object is never only half moved."""
    target = object_gate.quarantine_key(prefix, key)
    head = s3.head_object(Bucket=bucket, Key=key)
    s3.copy({"Bucket": bucket, "Key": key}, bucket, target)  # multipart above 5 GB
    reason = {"bucket": bucket, "key": key, "quarantined_key": target,
              "size": head["ContentLength"], "etag": head["ETag"].strip('"'),
              "reason": defect.reason, "record": defect.record, "line": defect.line,
              "quarantined_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
              "request_id": request_id}
    s3.put_object(Bucket=bucket, Key=target + object_gate.REASON_SUFFIX,
                  Body=json.dumps(reason, indent=2).encode(), ContentType="application/json")
    s3.delete_object(Bucket=bucket, Key=key)
    return target


def job_names() -> list[str]:
    """The Glue jobs each batch of new objects starts: GLUE_JOB_NAMES (comma-separated:
    the pipeline's job first, then jobs brought along), else GLUE_JOB_NAME."""
    names = os.environ.get("GLUE_JOB_NAMES") or os.environ.get("GLUE_JOB_NAME",
                                                                DEFAULT_JOB_NAME)
    return list(dict.fromkeys(n.strip() for n in names.split(",") if n.strip()))


def backlog_marker(job: str) -> tuple[str, str] | None:
    """(bucket, key) of the job's backlog marker; None when the function has none set."""
    prefix = os.environ.get("BACKLOG_MARKER_PREFIX")
    if not prefix:
        return None
    bucket, _, key_prefix = prefix.removeprefix("s3://").partition("/")
    return bucket, key_prefix + job + os.environ.get("BACKLOG_MARKER_SUFFIX", ".backlog")


def marker_written(s3, job: str) -> datetime | None:
    """When the job's marker was written; None without one (HeadObject: 404, given
    ListBucket)."""
    ref = backlog_marker(job)
    if ref is None:
        return None
    try:
        return s3.head_object(Bucket=ref[0], Key=ref[1])["LastModified"]
    except ClientError as e:
        if e.response.get("Error", {}).get("Code") in ("404", "NoSuchKey", "NotFound"):
            return None
        raise  # S3 unreachable or denied: fail, so the invocation is retried


def stale_marker(glue, job: str, written: datetime, run_id: str | None) -> str | None:
    """Why the marker must not be followed: it is older than the start of the job's
    newest SUCCEEDED run of every table (the ended run, or the newest such run for the
    sweep), which read everything it announced and should have deleted it; following it
    would start run after run. None: follow it."""
    def every_table(run: dict) -> bool:  # a --tables run reads (and clears) no other
        return "--tables" not in (run.get("Arguments") or {})

    if run_id:
        run = glue.get_job_run(JobName=job, RunId=run_id)["JobRun"]
    else:
        runs = glue.get_job_runs(JobName=job, MaxResults=10)["JobRuns"]
        run = next((r for r in runs if every_table(r)), None)
    if (not run or not every_table(run)
            or run.get("JobRunState") != eventbridge_events.SUCCEEDED):
        return None
    if written >= run["StartedOn"] - timedelta(seconds=MARKER_CLOCK_MARGIN_S):
        return None
    return (f"written {written.isoformat()}, before run {run['Id']} started "
            f"({run['StartedOn'].isoformat()}), which should have deleted it")


def mark_backlog(s3, job: str, keys: list[str], request_id: str) -> None:
    """A file landed while a run of the job was going (too late for its listing): say so
    in the job's marker, which that run then keeps, so its end starts the next run even
    when this invocation's retries run out (docs/aws.md)."""
    ref = backlog_marker(job)
    if ref is None:
        return
    body = {"source": "lambda", "keys": keys[:10], "objects": len(keys),
            "written_at": int(time.time() * 1000), "request_id": request_id}
    s3.put_object(Bucket=ref[0], Key=ref[1], Body=json.dumps(body).encode(),
                  ContentType="application/json")


def follow_up(event: dict) -> dict:
    """EventBridge: a run of the pipeline's job SUCCEEDED, or the sweep's schedule fired.
    Start its next run while its marker says input was left for later; a run already
    going takes the backlog itself (it lists everything) and signals again. Only the
    pipeline's job has a marker (--backlog_marker); jobs brought along have none."""
    job = job_names()[0]
    detail = event.get("detail") or {}
    run_id = None
    nothing = {"JobName": job, "JobRunId": None, "JobRuns": {}, "Backlog": {}}
    if event.get("detail-type") == eventbridge_events.GLUE_JOB_STATE_CHANGE:
        if detail.get("state") != eventbridge_events.SUCCEEDED or detail.get("jobName") != job:
            logger.info("Glue job %s run %s ended %s: nothing to follow up",
                        detail.get("jobName"), detail.get("jobRunId"), detail.get("state"))
            return nothing
        run_id = detail.get("jobRunId")
    s3, glue = s3_client(), boto3.client("glue")
    written = marker_written(s3, job)
    if written is None:
        return {**nothing, "Backlog": {job: False}}
    if why := stale_marker(glue, job, written, run_id):
        logger.error("Glue job %s: not following its backlog marker: %s (see that run's "
                     "log for why it could not)", job, why)
        return {**nothing, "Backlog": {job: False}}
    try:
        started = glue.start_job_run(JobName=job)["JobRunId"]
    except glue.exceptions.ConcurrentRunsExceededException:
        logger.info("Glue job %s left input for later; its run going takes it", job)
        return {**nothing, "Backlog": {job: True}}
    logger.info("Glue job %s left input for later: started run %s", job, started)
    return {"JobName": job, "JobRunId": started, "JobRuns": {job: started},
            "Backlog": {job: True}}


def lambda_handler(event, context):
    if eventbridge_events.is_eventbridge(event):
        return follow_up(event)
    names = job_names()
    job_name = names[0]
    prefix = os.environ.get("QUARANTINE_PREFIX", DEFAULT_QUARANTINE_PREFIX)
    request_id = getattr(context, "aws_request_id", "")
    refs = object_refs(event)
    keys = [key for _, key in refs]
    logger.info("%d new object(s) for Glue job(s) %s: %s", len(keys), names, keys)
    s3, layout = s3_client(), csv_layout()
    good, quarantined = [], []
    for bucket, key in refs:
        verdict, defect = check_object(s3, bucket, key, layout)
        if verdict == "bad":
            target = quarantine(s3, bucket, key, defect, prefix, request_id)
            logger.warning("QUARANTINED s3://%s/%s -> %s: %s", bucket, key, target,
                           defect.describe())
            quarantined.append({"key": key, "reason": defect.describe()})
        elif verdict == "good":
            good.append(key)
    if not good:
        logger.info("no readable new object: no Glue run started")
        return {"JobName": job_name, "JobRunId": None, "Keys": keys,
                "Quarantined": quarantined, "JobRuns": {}}
    glue = boto3.client("glue")
    runs: dict[str, str] = {}
    busy: list[str] = []
    for name in names:  # each job reads what is new to it (its own bookmark)
        try:
            runs[name] = glue.start_job_run(JobName=name)["JobRunId"]
            logger.info("started Glue job %s run %s", name, runs[name])
        except glue.exceptions.ConcurrentRunsExceededException as e:
            logger.info("Glue job %s already has a run going: %s", name, e)
            busy.append(name)
            if name == job_name:
                break  # the retry starts them all together, not the others once per try
    if busy:  # retried: the jobs that started already read these objects (bookmarks)
        if job_name in busy:  # the pipeline's job: its run going keeps the marker
            mark_backlog(s3, job_name, good, request_id)
        raise GlueJobAlreadyRunning(
            f"Glue job(s) {busy} already have a run going; retry so a later run picks up "
            f"{len(good)} object(s)")
    return {"JobName": job_name, "JobRunId": runs[job_name], "Keys": keys,
            "Quarantined": quarantined, "JobRuns": runs}
