"""AWS Lambda handler: objects landed in the bronze prefix -> check them -> start the Glue job;
a run left input for later -> start the next run.

Each new object is checked first (object_gate): one the job could not read (a `.gz` that
is not gzip, a truncated file, a name Hadoop globs, a record with the wrong number of
fields or past the gate's limits) would fail every later run, so it is moved to the
quarantine prefix with a `.reason.json` beside it, and the job starts for the rest.
Nothing is lost: the object is copied before it is deleted, and the reason names the key
and the record. An object gone by the time it is read (quarantined by an earlier
invocation, deleted) is forgotten. An object that cannot be handled (S3 refuses to copy
it, say) fails the invocation with ObjectHandlingError naming it, so Lambda retries and,
after its retries, hands the event to the function's on-failure destination; S3 sends
one object per event, so no other object waits on it (the local watcher takes it out of
its batch the same way).

A run that leaves input for later (bounded execution) writes its job's backlog marker
(BACKLOG_MARKER_PREFIX + job + BACKLOG_MARKER_SUFFIX). EventBridge invokes this handler
when a run ends ("Glue Job State Change") and on the sweep's schedule ("Scheduled
Event"); either way a job whose marker exists gets its next run, with no new upload.

Deployable as is: the zip holds this file, object_gate.py (with the gate_*.py it imports)
and eventbridge_events.py (no cdclab import).
Locally, AWS_ENDPOINT_URL_GLUE / _S3 point boto3 at the local Glue API and MinIO and the
watcher calls `lambda_handler` with the same S3 event S3 sends.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections import OrderedDict
from datetime import datetime, timedelta
from urllib.parse import unquote_plus

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError, HTTPClientError
from botocore.exceptions import ConnectionError as BotoConnectionError

try:  # in the repository
    from lambda_shim import eventbridge_events, object_gate
except ImportError:  # deployed: the files at the zip's root
    import eventbridge_events
    import object_gate

DEFAULT_JOB_NAME = "Bronze_to_Silver"
DEFAULT_QUARANTINE_PREFIX = "quarantine"
READ_CHUNK = 1024 * 1024
MARKER_CLOCK_MARGIN_S = 2.0  # S3's clock vs Glue's (the job's own margin)
# Objects this execution environment found good, by version (ETag) and the checks' settings:
# an invocation retried while a Glue run is going reads none of them again. A warm Lambda
# keeps module state between invocations; a cold one checks again.
PASSED_KEPT = 4096
_passed: OrderedDict[tuple, None] = OrderedDict()

logger = logging.getLogger()
logger.setLevel(logging.INFO)


class ObjectHandlingError(RuntimeError):
    """Objects this invocation could not handle, each with its error (`failures`); the
    others were. Retryable, like any function error."""

    def __init__(self, failures: dict[str, str]) -> None:
        self.failures = failures
        shown = "; ".join(f"{k}: {v}" for k, v in list(failures.items())[:3])
        super().__init__(f"{len(failures)} object(s) could not be handled: {shown}")


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
    try:
        return object_gate.CsvLayout(
            header=env.get("DMS_ADD_COLUMN_NAME", "true") == "true",
            delimiter=env.get("DMS_CSV_DELIMITER", ","),
            quoting=env.get("DMS_RFC4180", "true") == "true")
    except ValueError as e:
        raise ValueError(f"DMS_CSV_DELIMITER: {e}") from e


GATE_LIMITS = {  # environment variable -> object_gate.Limits field (function_env.py)
    "GATE_MAX_FIELD_CHARS": "max_field_chars",
    "GATE_MAX_RECORD_CHARS": "max_record_chars",
    "GATE_MAX_COLUMNS": "max_columns",
    "GATE_MAX_OBJECT_BYTES": "max_object_bytes",
    "GATE_MAX_PARQUET_FOOTER_BYTES": "max_parquet_footer_bytes",
    "GATE_MAX_ROW_GROUP_ROWS": "max_row_group_rows",
    "GATE_MAX_PARQUET_READ_BYTES": "max_parquet_read_bytes",
}


def gate_limits() -> object_gate.Limits:
    """The gate's limits from the function's environment (unset: the defaults, which are
    DMS's own defaults worked out)."""
    values = {}
    for name, field in GATE_LIMITS.items():
        raw = os.environ.get(name)
        if raw is None or raw == "":
            continue
        try:
            values[field] = int(raw)
        except ValueError:
            values[field] = 0
        if values[field] <= 0:
            raise ValueError(f"{name}={raw!r}: the object gate's limit must be a whole "
                             "number above 0")
    return object_gate.Limits(**values)


def missing(e: Exception) -> bool:
    """HeadObject answers a missing key with a bare 404, GetObject with NoSuchKey."""
    return isinstance(e, ClientError) and e.response.get("Error", {}).get("Code") in (
        "404", "NoSuchKey", "NotFound")


TRANSIENT_CODES = frozenset({"SlowDown", "Throttling", "ThrottlingException", "RequestTimeout",
                             "InternalError", "ServiceUnavailable", "PreconditionFailed"})


def transient(e: Exception) -> bool:
    """S3 unreachable, slow or busy, or the object changed while it was read: nothing to
    hold against the object, the whole invocation is retried."""
    if isinstance(e, (BotoConnectionError, HTTPClientError)):
        return True
    if isinstance(e, ClientError):
        status = e.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0
        return status >= 500 or e.response.get("Error", {}).get("Code") in TRANSIENT_CODES
    return isinstance(e, BotoCoreError) and "Incomplete" in type(e).__name__


def s3_client():
    # path-style addressing works on S3 and MinIO alike
    return boto3.client("s3", config=Config(s3={"addressing_style": "path"}))


class S3Source(object_gate.Source):
    """One version of an object (its ETag), read by ranges: a CSV in one GET, a Parquet
    file's footer, pages and row groups each in their own (never spooled to /tmp)."""

    def __init__(self, s3, bucket: str, key: str, size: int, etag: str) -> None:
        self.s3, self.bucket, self.key, self.size, self.etag = s3, bucket, key, size, etag

    def read(self, start: int, end: int):
        end = min(end, self.size)
        if end <= start:
            return
        body = self.s3.get_object(Bucket=self.bucket, Key=self.key, IfMatch=self.etag,
                                  Range=f"bytes={start}-{end - 1}")["Body"]
        with body:
            yield from body.iter_chunks(READ_CHUNK)


def check_object(s3, bucket: str, key: str, layout: object_gate.CsvLayout,
                 limits: object_gate.Limits | None = None
                 ) -> tuple[str, object_gate.Defect | None]:
    """("gone" | "hidden" | "good" | "bad", defect) for one object, read as a stream. Gone:
    quarantined by an earlier invocation, or removed, before or while it was read. A
    version this environment found good before is only headed."""
    if object_gate.is_hidden(key):
        return "hidden", None
    defect = object_gate.key_defect(key)
    if defect is None:
        try:
            head = s3.head_object(Bucket=bucket, Key=key)
            limits = limits or object_gate.Limits()
            checked = (bucket, key, head["ETag"], layout, limits)
            if checked in _passed:
                _passed.move_to_end(checked)  # the least recently checked go first
                return "good", None
            source = S3Source(s3, bucket, key, int(head["ContentLength"]), head["ETag"])
            defect = object_gate.content_defect(key, source, layout, limits)
            if defect is None:
                _passed[checked] = None
                while len(_passed) > PASSED_KEPT:
                    _passed.popitem(last=False)
        except ClientError as e:
            if missing(e):
                return "gone", None
            raise
    return ("bad", defect) if defect else ("good", None)


def quarantine(s3, bucket: str, key: str, defect: object_gate.Defect, prefix: str,
               request_id: str) -> str | None:
    """Copy, write the reason, then delete: the object is never only half moved. Returns
    where it went; None when it is gone already (a key-defect object is never read
    before, so this is where a removed one shows). The target name stays under S3's
    key limit, whatever the key (object_gate.quarantine_key)."""
    target = object_gate.quarantine_key(prefix, key)
    try:
        head = s3.head_object(Bucket=bucket, Key=key)
        s3.copy({"Bucket": bucket, "Key": key}, bucket, target,  # multipart above 5 GB
                ExtraArgs={"CopySourceIfMatch": head["ETag"]})
    except ClientError as e:
        if missing(e):
            return None
        raise
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
    s3, layout, limits = s3_client(), csv_layout(), gate_limits()
    good, quarantined, gone, failed = [], [], [], {}
    for bucket, key in refs:
        try:
            verdict, defect = check_object(s3, bucket, key, layout, limits)
            if verdict == "bad":
                target = quarantine(s3, bucket, key, defect, prefix, request_id)
                if target is None:
                    verdict = "gone"
                else:
                    logger.warning("QUARANTINED s3://%s/%s -> %s: %s", bucket, key, target,
                                   defect.describe())
                    quarantined.append({"key": key, "reason": defect.describe()})
        except Exception as e:
            if transient(e):
                raise  # S3's trouble, not the object's: the whole invocation is retried
            logger.error("could not handle s3://%s/%s: %s: %s", bucket, key,
                         type(e).__name__, e)
            failed[key] = f"{type(e).__name__}: {e}"[:500]
            continue
        if verdict == "gone":
            logger.info("s3://%s/%s is gone (quarantined or removed): nothing to do", bucket,
                        key)
            gone.append(key)
        elif verdict == "good":
            good.append(key)
    if failed:  # no run: it would read what could not be checked or moved
        raise ObjectHandlingError(failed)
    if not good:
        logger.info("no readable new object: no Glue run started")
        return {"JobName": job_name, "JobRunId": None, "Keys": keys,
                "Quarantined": quarantined, "Gone": gone, "JobRuns": {}}
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
            "Quarantined": quarantined, "Gone": gone, "JobRuns": runs}
