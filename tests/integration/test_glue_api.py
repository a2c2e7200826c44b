"""The local Glue API as a real process (GlueApiService), reached by boto3 through
AWS_ENDPOINT_URL_GLUE. Jobs here are Spark-free so no JVM starts."""

from __future__ import annotations

import time
from pathlib import Path

import boto3
import pytest

from cdclab import settings
from cdclab.services.base import StackContext
from cdclab.services.glue_api import GlueApiService, job_definition, job_run_metrics, register_job
from tests.resources.launch import launch

pytestmark = pytest.mark.integration

JOB = """
import sys, time
args = dict(zip(sys.argv[1::2], sys.argv[2::2]))
time.sleep(float(args.get("--sleep", "0")))
print('CDCLAB_METRICS {"files": 1}')
"""


def glue_client(ctx: StackContext):
    return boto3.client("glue", endpoint_url=ctx.env[settings.ENV_GLUE_ENDPOINT],
                        region_name="us-east-1", aws_access_key_id="x",
                        aws_secret_access_key="y")


def wait_state(client, job: str, run_id: str, states: tuple[str, ...], timeout=30.0) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        run = client.get_job_run(JobName=job, RunId=run_id)["JobRun"]
        if run["JobRunState"] in states:
            return run
        time.sleep(0.1)
    raise AssertionError(f"run {run_id} never reached {states}: {run}")


def test_register_run_and_restart_recovery(tmp_path: Path):
    script = tmp_path / "job.py"
    script.write_text(JOB)
    ctx = StackContext(state_dir=tmp_path / "state")
    service = GlueApiService(warm=False)
    running = launch(service, ctx, mounts=(tmp_path,))
    try:
        client = glue_client(ctx)
        p = settings.load_pipeline()
        assert register_job(client, p) == "created"
        assert register_job(client, p) == "updated"  # idempotent
        job = client.get_job(JobName=p.glue_job.name)["Job"]
        assert job["Command"]["ScriptLocation"] == str(p.script_path.resolve())
        assert job["DefaultArguments"] == job_definition(p)["DefaultArguments"]
        assert job["ExecutionProperty"]["MaxConcurrentRuns"] == p.glue_job.max_concurrent_runs

        client.create_job(Name="sleepy", Role="r",
                          Command={"Name": "glueetl", "ScriptLocation": str(script)})
        done = client.start_job_run(JobName="sleepy")["JobRunId"]
        assert wait_state(client, "sleepy", done, ("SUCCEEDED",))
        endpoint = ctx.env[settings.ENV_GLUE_ENDPOINT]
        assert job_run_metrics(endpoint, "sleepy", done) == {"files": 1}

        long = client.start_job_run(JobName="sleepy", Arguments={"--sleep": "30"})["JobRunId"]
        wait_state(client, "sleepy", long, ("RUNNING",))
        running.kill()  # crash mid-run
    finally:
        running.stop()

    running = launch(GlueApiService(warm=False), ctx, mounts=(tmp_path,))
    try:
        client = glue_client(ctx)
        run = client.get_job_run(JobName="sleepy", RunId=long)["JobRun"]
        assert run["JobRunState"] == "FAILED"
        assert "stopped while this run was RUNNING" in run["ErrorMessage"]
        runs = client.get_job_runs(JobName="sleepy")["JobRuns"]
        states = {r["Id"]: r["JobRunState"] for r in runs}
        assert states == {done: "SUCCEEDED", long: "FAILED"}  # runs survived the restart
        again = client.start_job_run(JobName="sleepy")["JobRunId"]  # not blocked by the dead run
        assert wait_state(client, "sleepy", again, ("SUCCEEDED",))
    finally:
        running.stop()
