"""`python -m lambda_shim`: watch the bronze prefix and invoke the Lambda handler."""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import signal
import threading
import time
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import boto3
from botocore.config import Config

from lambda_shim import lambda_function, watch_logic
from lambda_shim.bucket_events import BucketEventFeed
from lambda_shim.function_env import function_environment
from lambda_shim.watcher import Watcher, state_path
from pipeline_contract import settings


class TriggeredJobs:
    """The jobs a batch of new objects starts: the pipeline's, then those tagged
    TRIGGER_TAG=TRIGGER_ON_BRONZE (found with ListJobs, at most every REFRESH_S)."""

    REFRESH_S = 10.0

    def __init__(self, glue, pipeline_job: str) -> None:
        self.glue, self.pipeline_job = glue, pipeline_job
        self.tagged: list[str] = []
        self.at = -self.REFRESH_S

    def names(self) -> list[str]:
        now = time.monotonic()
        if now - self.at >= self.REFRESH_S:
            try:
                found, token = [], None
                while True:
                    page = self.glue.list_jobs(
                        Tags={settings.TRIGGER_TAG: settings.TRIGGER_ON_BRONZE},
                        **({"NextToken": token} if token else {}))
                    found += page.get("JobNames", [])
                    token = page.get("NextToken")
                    if not token:
                        break
                self.tagged, self.at = sorted(found), now
            except Exception as exc:  # API restarting: the last answer stands
                logging.getLogger(__name__).warning("ListJobs failed: %s", exc)
        return [self.pipeline_job, *(n for n in self.tagged if n != self.pipeline_job)]


def name_clock_margin(p: settings.PipelineSettings) -> timedelta:
    """How far a CDC file's name may run ahead of its Last-Modified: the clocks' margin,
    plus the zone's offset east of UTC when DatePartitionTimezone names the files (and
    an hour for a daylight-saving change)."""
    zone = p.dms.date_partition_timezone
    if not (p.dms.date_partition_enabled and zone):
        return watch_logic.NAME_CLOCK_MARGIN
    try:
        offset = datetime.now(UTC).astimezone(ZoneInfo(zone)).utcoffset() or timedelta()
    except (KeyError, ValueError):  # the emitter refuses such a zone itself
        offset = timedelta(hours=14)  # the easternmost offset there is
    return watch_logic.NAME_CLOCK_MARGIN + max(offset, timedelta()) + timedelta(hours=1)


def bucket_events(session, region: str, bucket: str, prefix: str) -> BucketEventFeed | None:
    """MinIO's notifications of new objects, with the watcher's own keys; none without
    an S3 endpoint, or with CDCLAB_WATCH_EVENTS=0 (listing only)."""
    endpoint = os.environ.get(settings.ENV_S3_ENDPOINT)
    if not endpoint or os.environ.get(settings.ENV_WATCH_EVENTS) == "0":
        return None
    keys = session.get_credentials().get_frozen_credentials()
    return BucketEventFeed(endpoint, keys.access_key, keys.secret_key, region, bucket,
                           prefix).start()


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m lambda_shim", description=__doc__)
    ap.add_argument("--interval", type=float,
                    default=float(os.environ.get(settings.ENV_WATCH_INTERVAL,
                                                 settings.LAB_WATCH_INTERVAL_S)),
                    help=f"poll period in seconds (env {settings.ENV_WATCH_INTERVAL}); each "
                         "poll lists bronze unless MinIO's notification stream is open")
    ap.add_argument("--catch-up-seconds", type=float,
                    default=float(os.environ.get(settings.ENV_WATCH_CATCH_UP,
                                                 settings.LAB_WATCH_CATCH_UP_S)),
                    help="listing period while MinIO's notification stream is open "
                         f"(env {settings.ENV_WATCH_CATCH_UP})")
    ap.add_argument("--full-scan-seconds", type=float, default=watch_logic.FULL_SCAN_SECONDS,
                    help="period of a full re-list that catches out-of-order names")
    ap.add_argument("--deep-scan-seconds", type=float, default=watch_logic.DEEP_SCAN_SECONDS,
                    help="period of a listing of the whole prefix, below the forgotten keys")
    ap.add_argument("--sweep-seconds", type=float, default=None,
                    help="backlog sweep period (default: [glue_job] backlog_sweep_minutes)")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")

    p = settings.load_pipeline()
    if args.sweep_seconds is None:
        args.sweep_seconds = p.glue_job.backlog_sweep_minutes * 60
    for name, value in function_environment(p).items():  # as deployed
        os.environ.setdefault(name, value)
    region = os.environ.get(settings.ENV_REGION, settings.DEFAULT_REGION)
    # endpoint from AWS_ENDPOINT_URL_S3 (boto3 reads it); path-style as MinIO wants
    session = boto3.Session(region_name=region)
    s3 = session.client("s3", config=Config(s3={"addressing_style": "path"}))
    events = bucket_events(session, region, p.lake.bronze_bucket, p.watched_prefix + "/")
    glue = boto3.client("glue", region_name=region)  # AWS_ENDPOINT_URL_GLUE: local API

    def run_state(run_id: str) -> str | None:
        try:
            return glue.get_job_run(JobName=os.environ["GLUE_JOB_NAME"],
                                    RunId=run_id)["JobRun"]["JobRunState"]
        except glue.exceptions.EntityNotFoundException:
            return "UNKNOWN"  # the run is gone (state reset): cover its files again
        except Exception:
            return None  # API unreachable: ask again on the next poll

    def start_run() -> str:
        return glue.start_job_run(JobName=os.environ["GLUE_JOB_NAME"])["JobRunId"]

    triggered = TriggeredJobs(glue, p.glue_job.name)

    def handler(event, context):
        # the pipeline's job and every job tagged to run with it (cdclab job add --trigger)
        os.environ["GLUE_JOB_NAMES"] = ",".join(triggered.names())
        return lambda_function.lambda_handler(event, context)

    watcher = Watcher(
        s3, p.lake.bronze_bucket, p.watched_prefix + "/", state_path(settings.state_dir()),
        handler, region=region, interval=args.interval,
        full_scan_seconds=args.full_scan_seconds, run_state=run_state,
        start_run=start_run, job_name=os.environ["GLUE_JOB_NAME"],
        sweep_seconds=args.sweep_seconds, deep_scan_seconds=args.deep_scan_seconds,
        name_margin=name_clock_margin(p), events=events,
        catch_up_seconds=args.catch_up_seconds,
    )
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    with contextlib.suppress(KeyboardInterrupt):
        watcher.run(stop)


if __name__ == "__main__":
    main()
