"""Backpressure on the real watcher process, real MinIO and the real local Glue API: a run
that left input for later (it read its cap of files) writes its job's backlog marker; the
run's "Glue Job State Change", handed to the Lambda, gets a follow-up run with no new
upload, until a run leaves nothing and deletes the marker."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from cdclab.services.base import StackContext
from glue_local.launcher import GlueApiService
from lambda_shim.launcher import WatcherService
from pipeline_contract import settings
from pipeline_contract.settings import load_pipeline
from tests.integration.test_watcher import (
    glue_with_job,
    read_state,
    runs,
    upload,
    wait_for,
)
from tests.resources.launch import launch

pytestmark = pytest.mark.integration


@pytest.fixture()
def glue_ctx(empty_bronze, tmp_path: Path):
    """The local Glue API (no Spark) beside the test's MinIO (as test_watcher's)."""
    ctx = StackContext(pipeline=load_pipeline(), state_dir=tmp_path / "state",
                       env=dict(empty_bronze["env"]))
    running = launch(GlueApiService(warm=False), ctx, mounts=(tmp_path,))
    try:
        yield ctx
    finally:
        running.stop()

# reads "3 files per run" of a backlog of 10: backlog on runs 1-3, none on run 4; the
# marker as bronze_to_silver.signal_backlog writes it (through boto3 here: no Spark)
CAPPED_JOB = """
import json, os, pathlib, sys
import boto3
from pipeline_contract import settings
counter = pathlib.Path(sys.argv[0]).with_suffix(".runs")
n = int(counter.read_text()) + 1 if counter.exists() else 1
counter.write_text(str(n))
left = max(0, 10 - 3 * n)
print("CDCLAB_METRICS " + json.dumps({"files": min(3, 10 - 3 * (n - 1)),
                                      "backlog": left > 0}))
s3 = boto3.client("s3", endpoint_url=os.environ[settings.ENV_S3_ENDPOINT],
                  region_name="us-east-1")
bucket, key = settings.load_pipeline().backlog_marker().removeprefix("s3://").split("/", 1)
if left:
    s3.put_object(Bucket=bucket, Key=key, Body=json.dumps({"run": n}).encode())
else:
    s3.delete_object(Bucket=bucket, Key=key)
"""


def marker_exists(s3, p: settings.PipelineSettings) -> bool:
    bucket, key = p.backlog_marker().removeprefix("s3://").split("/", 1)
    return bool(s3.list_objects_v2(Bucket=bucket, Prefix=key).get("KeyCount"))


def test_a_backlog_gets_runs_until_none_is_left_without_uploads(empty_bronze, glue_ctx,
                                                                tmp_path: Path) -> None:
    p = settings.load_pipeline()
    s3, ctx = empty_bronze["s3"], glue_ctx
    job = p.glue_job.name
    watcher_running = None
    try:
        glue = glue_with_job(ctx, job, tmp_path / "capped.py", CAPPED_JOB)
        watcher_running = launch(WatcherService(interval=0.2, full_scan_seconds=3), ctx,
                                 mounts=(tmp_path,))
        upload(s3, p.lake.bronze_bucket, f"{p.bronze_prefix}/20261122-130000000.csv")
        wait_for(lambda: sum(r["JobRunState"] == "SUCCEEDED" for r in runs(glue, job)) >= 4,
                 90, "four runs: three with backlog, the last without")
        wait_for(lambda: not read_state(ctx)["in_flight"], 30, "the last run seen ended")
        wait_for(lambda: not read_state(ctx)["ended"], 30, "its state change delivered")
        state = read_state(ctx)
        assert state["backlog"] is False and not state["pending"]
        assert len(runs(glue, job)) == 4  # and no fifth: the last run left nothing
        assert (tmp_path / "capped.runs").read_text() == "4"
        assert not marker_exists(s3, p)
    finally:
        if watcher_running is not None:
            watcher_running.stop()


def test_the_sweep_starts_a_run_for_a_marker_no_run_announced(empty_bronze, glue_ctx,
                                                               tmp_path: Path) -> None:
    """EventBridge delivers Glue's events best effort: a marker whose run's state change
    never came (here: written before the watcher ran) gets its run from the sweep."""
    p = settings.load_pipeline()
    s3, ctx = empty_bronze["s3"], glue_ctx
    job = p.glue_job.name
    bucket, key = p.backlog_marker().removeprefix("s3://").split("/", 1)
    watcher_running = None
    try:
        glue = glue_with_job(ctx, job, tmp_path / "capped.py", CAPPED_JOB)
        (tmp_path / "capped.runs").write_text("3")  # the next run reads the last file
        s3.put_object(Bucket=bucket, Key=key, Body=b"{}")
        watcher_running = launch(WatcherService(interval=0.2, sweep_seconds=2), ctx,
                                 mounts=(tmp_path,))
        wait_for(lambda: any(r["JobRunState"] == "SUCCEEDED" for r in runs(glue, job)), 60,
                 "a run started by the sweep")
        wait_for(lambda: not marker_exists(s3, p), 30, "the run deleted the marker")
        assert (tmp_path / "capped.runs").read_text() == "4"
        time.sleep(5)  # two more sweeps
        assert len(runs(glue, job)) == 1  # later sweeps find no marker: no more runs
    finally:
        if watcher_running is not None:
            watcher_running.stop()
        s3.delete_object(Bucket=bucket, Key=key)
