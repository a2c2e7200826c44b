"""Invariant 5, no stranded files: real MinIO + the real local Glue API + the watcher
process. Files land while a (sleeping) run holds the only concurrency slot; every file
must get a run that started after it landed, with no further upload."""

from __future__ import annotations

import gzip
import json
from datetime import UTC, datetime
from functools import partial
from pathlib import Path

import boto3
import pytest

from cdclab.services.base import StackContext
from glue_local.launcher import GlueApiService
from lambda_shim.launcher import WATCHER_STATE, WatcherService
from pipeline_contract import settings
from pipeline_contract.settings import load_pipeline
from tests.resources.launch import launch
from tests.resources.waiting import wait_for as _wait_for

wait_for = partial(_wait_for, every=0.1)  # this module's polling period

pytestmark = pytest.mark.integration

JOB = """
import sys, time
args = dict(zip(sys.argv[1::2], sys.argv[2::2]))
time.sleep(float(args.get("--sleep", "2")))
"""


def upload(s3, bucket: str, key: str) -> datetime:
    s3.put_object(Bucket=bucket, Key=key, Body=b"Op,id\nI,1\n")
    # our clock once the PUT returned (the object has landed); Last-Modified is whole
    # seconds, too coarse to tell a run started in the same second
    return datetime.now(UTC)


def read_state(ctx: StackContext) -> dict:
    return json.loads(ctx.state_dir.joinpath(*WATCHER_STATE).read_text())


def runs(glue, job: str) -> list[dict]:
    return glue.get_job_runs(JobName=job)["JobRuns"]


def covered(glue, job: str, landed: dict[str, datetime]) -> bool:
    """Every file has a run that started after it landed and did not fail."""
    all_runs = runs(glue, job)
    return all(
        any(r["StartedOn"] >= at and r["JobRunState"] in ("STARTING", "RUNNING", "SUCCEEDED")
            for r in all_runs)
        for at in landed.values()
    )


def glue_with_job(ctx: StackContext, job: str, script: Path, source: str):
    """A boto3 client of the local Glue API, with `job` running `source` (one slot)."""
    glue = boto3.client("glue", endpoint_url=ctx.env[settings.ENV_GLUE_ENDPOINT],
                        region_name="us-east-1",  # the API checks SigV4: the stack's keys
                        aws_access_key_id=ctx.env[settings.ENV_ACCESS_KEY],
                        aws_secret_access_key=ctx.env[settings.ENV_SECRET_KEY])
    script.write_text(source)
    glue.create_job(Name=job, Role="r", ExecutionProperty={"MaxConcurrentRuns": 1},
                    Command={"Name": "glueetl", "ScriptLocation": str(script)})
    return glue


@pytest.fixture()
def glue_api(empty_bronze, tmp_path: Path):
    """The local Glue API (no Spark) beside the test's MinIO: the context to reach both.
    Stopped after the test (which stops its watcher first)."""
    ctx = StackContext(pipeline=load_pipeline(), state_dir=tmp_path / "state",
                       env=dict(empty_bronze["env"]))
    running = launch(GlueApiService(warm=False), ctx, mounts=(tmp_path,))
    try:
        yield ctx
    finally:
        running.stop()


def test_files_landing_during_a_run_are_not_stranded(empty_bronze, glue_api, tmp_path: Path):
    p = settings.load_pipeline()
    bucket, prefix, job = p.lake.bronze_bucket, p.bronze_prefix, p.glue_job.name
    s3, ctx = empty_bronze["s3"], glue_api
    # the cursor must pass the files landing during the first run (2 s) before it ends:
    # a listing each poll, not only MinIO's notifications (which move no cursor)
    watcher = WatcherService(interval=0.2, full_scan_seconds=3, catch_up_seconds=0.2)
    watcher_running = None
    try:
        glue = glue_with_job(ctx, job, tmp_path / "job.py", JOB)
        watcher_running = launch(watcher, ctx, mounts=(tmp_path,))

        landed = {}
        key = f"{prefix}/LOAD00000001.csv"
        landed[key] = upload(s3, bucket, key)
        first = wait_for(lambda: [r for r in runs(glue, job) if r["JobRunState"] == "RUNNING"],
                         20, "the first run to start")[0]
        for name in ("20261122-101500123.csv", "20261122-101500456.csv"):
            key = f"{prefix}/{name}"
            landed[key] = upload(s3, bucket, key)  # lands while the first run is going
        # ...and, once the cursor passed them, a name that sorts BEFORE it (out of order):
        # only the periodic full re-list can find it
        wait_for(lambda: read_state(ctx)["cursors"].get(prefix) == key, 30,
                 "the cursor to advance")
        key = f"{prefix}/20261122-101400000.csv"
        landed[key] = upload(s3, bucket, key)
        assert runs(glue, job)[0]["Id"] == first["Id"]  # still the only run

        wait_for(lambda: covered(glue, job, landed), 45, "every file to be covered by a run")
        later = [r for r in runs(glue, job) if r["StartedOn"] > first["StartedOn"]]
        assert len(later) >= 1
        # the watcher itself found every file, the out-of-order one by a full re-list
        # (the bucket is shared with other tests: their files may be there too)
        wait_for(lambda: set(landed) <= set(read_state(ctx)["seen"]), 30, "all files seen")
        wait_for(lambda: not read_state(ctx)["pending"], 30, "no pending")

        # a crash while a file is pending: the restarted watcher replays it
        wait_for(lambda: all(r["JobRunState"] == "SUCCEEDED" for r in runs(glue, job)),
                 20, "the runs to finish")
        glue.start_job_run(JobName=job, Arguments={"--sleep": "6"})  # holds the only slot
        key = f"{prefix}/20261122-101600000.csv"
        landed[key] = upload(s3, bucket, key)
        wait_for(lambda: read_state(ctx)["pending"], 10, "pending file")
        watcher_running.kill()
        watcher_running = launch(WatcherService(interval=0.2, full_scan_seconds=3), ctx,
                                 mounts=(tmp_path,))
        wait_for(lambda: covered(glue, job, landed), 45, "the replayed file to get a run")
    finally:
        if watcher_running is not None:
            watcher_running.stop()


FAILS_ONCE = """
import pathlib, sys
marker = pathlib.Path(sys.argv[0]).with_suffix(".failed-once")
if not marker.exists():
    marker.write_text("x")
    raise RuntimeError("simulated job failure")
"""


def test_a_failed_run_gets_its_files_a_later_run_without_a_new_upload(empty_bronze, glue_api,
                                                                    tmp_path: Path):
    p = settings.load_pipeline()
    bucket, job = p.lake.bronze_bucket, p.glue_job.name
    s3, ctx = empty_bronze["s3"], glue_api
    watcher_running = None
    try:
        glue = glue_with_job(ctx, job, tmp_path / "fails_once.py", FAILS_ONCE)
        watcher_running = launch(WatcherService(interval=0.2, full_scan_seconds=3), ctx,
                                 mounts=(tmp_path,))
        key = f"{p.bronze_prefix}/20261122-120000000.csv"
        upload(s3, bucket, key)
        wait_for(lambda: any(r["JobRunState"] == "FAILED" for r in runs(glue, job)), 60,
                 "the first run to fail")
        wait_for(lambda: any(r["JobRunState"] == "SUCCEEDED" for r in runs(glue, job)), 60,
                 "a later run to succeed with no new upload")
        wait_for(lambda: not read_state(ctx)["pending"] and not read_state(ctx)["in_flight"],
                 30, "nothing pending or in flight")
    finally:
        if watcher_running:
            watcher_running.stop()


def test_bad_objects_are_quarantined_and_the_good_ones_still_get_a_run(
        empty_bronze, glue_api, tmp_path: Path):
    """The Lambda's gate on real MinIO: an object the job could not read is moved to the
    quarantine prefix with its reason (nothing lost), and the run starts for the rest."""
    p = settings.load_pipeline()
    bucket, prefix, job = p.lake.bronze_bucket, p.bronze_prefix, p.glue_job.name
    s3, ctx = empty_bronze["s3"], glue_api
    watcher_running = None
    header = b"Op,id\n"
    poison = {  # name -> (body, words of the reason)
        "20261122-999999999 [1] {a,b}.csv.gz": (b"not gzip", "glob"),
        "20261122-130000000.csv.gz": (gzip.compress(header + b"I,1\n" * 1000)[:-20],
                                      "truncated gzip"),
        "20261122-130000001.csv": (header + b"I,1\nU,2,extra\n", "3 fields"),
        "notes.txt": (b"hello\n", "not a DMS file"),
        "20261122-130000002.csv": (header + b"I,\xff\n", "not UTF-8"),
    }
    good = {"20261122-130000003.csv": header + b"I,1\n", "LOAD00000001.csv": b"",
            "with space, comma.csv.gz": gzip.compress(header + b"I,2\n"),
            "_SUCCESS": b""}
    try:
        glue = glue_with_job(ctx, job, tmp_path / "job.py", JOB)
        for name, (body, _) in poison.items():
            s3.put_object(Bucket=bucket, Key=f"{prefix}/{name}", Body=body)
        for name, body in good.items():
            s3.put_object(Bucket=bucket, Key=f"{prefix}/{name}", Body=body)
        watcher_running = launch(WatcherService(interval=0.2, full_scan_seconds=3), ctx,
                                 mounts=(tmp_path,))
        left = lambda: {o["Key"].removeprefix(prefix + "/") for o in s3.list_objects_v2(  # noqa: E731
            Bucket=bucket, Prefix=prefix + "/").get("Contents", [])}
        wait_for(lambda: left() == set(good), 30, "the bad objects to move")
        wait_for(lambda: runs(glue, job), 30, "a run for the good objects")
        qp = p.lake.quarantine_prefix
        for name, (body, words) in poison.items():
            moved = f"{qp}/{prefix}/{name}"
            assert s3.get_object(Bucket=bucket, Key=moved)["Body"].read() == body
            reason = json.loads(s3.get_object(Bucket=bucket, Key=moved + ".reason.json")
                                ["Body"].read())
            assert words in reason["reason"], reason
            assert reason["key"] == f"{prefix}/{name}" and reason["size"] == len(body)
        mismatch = json.loads(s3.get_object(
            Bucket=bucket, Key=f"{qp}/{prefix}/20261122-130000001.csv.reason.json")
            ["Body"].read())
        assert (mismatch["record"], mismatch["line"]) == (3, 3)
        wait_for(lambda: not read_state(ctx)["pending"], 30, "nothing pending")
    finally:
        if watcher_running is not None:
            watcher_running.stop()
