"""The local Glue API as a real process (GlueApiService), reached by boto3 through
AWS_ENDPOINT_URL_GLUE. Jobs here are Spark-free so no JVM starts."""

from __future__ import annotations

import time
from pathlib import Path

import boto3
import pytest

from cdclab import credentials
from cdclab.services.base import StackContext
from cdclab.services.glue_api import job_run_metrics, pipeline_job_definition, register_job
from glue_local.launcher import GlueApiService
from pipeline_contract import settings
from pipeline_contract.settings import load_pipeline
from tests.resources.launch import launch

pytestmark = [pytest.mark.integration, pytest.mark.launches]  # Glue API services, per backend

JOB = """
import sys, time
args = dict(zip(sys.argv[1::2], sys.argv[2::2]))
time.sleep(float(args.get("--sleep", "0")))
print('CDCLAB_METRICS {"files": 1}')
"""


def glue_client(ctx: StackContext):
    """The administrator's client: the stack's keys (the Glue API checks SigV4)."""
    return boto3.client("glue", endpoint_url=ctx.env[settings.ENV_GLUE_ENDPOINT],
                        region_name="us-east-1",
                        aws_access_key_id=ctx.env[settings.ENV_ACCESS_KEY],
                        aws_secret_access_key=ctx.env[settings.ENV_SECRET_KEY])


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
    ctx = StackContext(pipeline=load_pipeline(), state_dir=tmp_path / "state",
                       env=credentials.generate())
    service = GlueApiService(warm=False)
    running = launch(service, ctx, mounts=(tmp_path,))
    try:
        client = glue_client(ctx)
        p = settings.load_pipeline()
        assert register_job(client, p) == "created"
        assert register_job(client, p) == "updated"  # idempotent
        job = client.get_job(JobName=p.glue_job.name)["Job"]
        assert job["Command"]["ScriptLocation"] == str(p.script_path.resolve())
        assert job["DefaultArguments"] == pipeline_job_definition(p)["DefaultArguments"]
        assert job["ExecutionProperty"]["MaxConcurrentRuns"] == p.glue_job.max_concurrent_runs

        client.create_job(Name="sleepy", Role="r",
                          Command={"Name": "glueetl", "ScriptLocation": str(script)})
        done = client.start_job_run(JobName="sleepy")["JobRunId"]
        assert wait_state(client, "sleepy", done, ("SUCCEEDED",))
        endpoint = ctx.env[settings.ENV_GLUE_ENDPOINT]
        assert job_run_metrics(endpoint, "sleepy", done, ctx.env) == {"files": 1}

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


def test_the_aws_profile_answers_only_the_stack_keys_and_keeps_the_aws_identity(
        tmp_path: Path) -> None:
    """The aws profile runs jobs as the developer's AWS identity: its Glue API checks
    SigV4 against the stack's administrator keys (read from the credentials file, which
    never enters the environment), whatever AWS keys the service itself holds."""
    from cdclab import credentials

    stack = credentials.generate()
    creds = tmp_path / "credentials.json"
    credentials.write_new(creds, stack)
    aws_identity = {settings.ENV_ACCESS_KEY: "AKIACDCLABNOTREAL00", settings.ENV_SECRET_KEY: "s"}
    ctx = StackContext(pipeline=load_pipeline(), state_dir=tmp_path / "state", env={
        settings.ENV_PROFILE: settings.PROFILE_AWS, **aws_identity,
        settings.ENV_GLUE_CLIENTS_FILE: str(creds)})
    running = launch(GlueApiService(warm=False), ctx, mounts=(tmp_path,))
    try:
        endpoint = ctx.env[settings.ENV_GLUE_ENDPOINT]

        def client(access: str, secret: str):
            return boto3.client("glue", endpoint_url=endpoint, region_name="us-east-1",
                                aws_access_key_id=access, aws_secret_access_key=secret)

        admin = client(stack[settings.ENV_ACCESS_KEY], stack[settings.ENV_SECRET_KEY])
        assert admin.get_jobs()["Jobs"] == []
        for access, secret in (("x", "y"), tuple(aws_identity.values()),
                               (stack[settings.ENV_ACCESS_KEY], "wrong")):
            with pytest.raises(Exception, match="UnrecognizedClient|InvalidSignature"):
                client(access, secret).get_jobs()
    finally:
        running.stop()


def test_the_aws_profile_refuses_to_start_without_the_stack_keys(tmp_path: Path) -> None:
    from cdclab.services.base import ServiceError
    from glue_local.launcher import checked_clients

    with pytest.raises(ServiceError, match=settings.ENV_GLUE_CLIENTS_FILE):
        checked_clients({settings.ENV_PROFILE: settings.PROFILE_AWS,
                         settings.ENV_GLUE_CLIENTS_FILE: str(tmp_path / "absent.json")})


def test_each_client_may_call_what_its_aws_role_may(tmp_path: Path) -> None:
    """A generated stack's Glue API process: the watcher's keys start runs and read them,
    never create a job; the jobs' keys read the catalog, never list jobs; the
    administrator's do everything, a local script path included."""
    from pipeline_contract import minio_users
    from pipeline_contract.minio_users import ENV_MINIO_USERS

    script = tmp_path / "job.py"
    script.write_text(JOB)
    users = minio_users.generate()
    admin = {settings.ENV_ACCESS_KEY: "AKIDCDCLABADMIN", settings.ENV_SECRET_KEY: "admin-s3cret"}
    ctx = StackContext(state_dir=tmp_path / "state", env={**admin, ENV_MINIO_USERS: users},
                       pipeline=load_pipeline())
    running = launch(GlueApiService(warm=False), ctx, mounts=(tmp_path,))
    try:
        def client(keys: dict[str, str]):
            return boto3.client("glue", endpoint_url=ctx.env[settings.ENV_GLUE_ENDPOINT],
                                region_name="us-east-1",
                                aws_access_key_id=keys[settings.ENV_ACCESS_KEY],
                                aws_secret_access_key=keys[settings.ENV_SECRET_KEY])

        root = client(admin)
        watcher = client(minio_users.service_keys(ctx.env, "watcher"))
        jobs = client(minio_users.service_keys(ctx.env, "glue"))
        with pytest.raises(watcher.exceptions.AccessDeniedException,
                           match="not authorized to perform: glue:CreateJob"):
            watcher.create_job(Name="evil", Role="r", Command={"ScriptLocation": "/tmp/x.py"})
        root.create_job(Name="sleepy", Role="r",
                        Command={"Name": "glueetl", "ScriptLocation": str(script)})
        with pytest.raises(watcher.exceptions.InvalidInputException, match="--extra-py-files"):
            watcher.start_job_run(JobName="sleepy", Arguments={"--extra-py-files": "/tmp/x.py"})
        run = watcher.start_job_run(JobName="sleepy")["JobRunId"]
        assert wait_state(watcher, "sleepy", run, ("SUCCEEDED",))
        assert [r["Id"] for r in jobs.get_job_runs(JobName="sleepy")["JobRuns"]] == [run]
        with pytest.raises(jobs.exceptions.AccessDeniedException):
            jobs.list_jobs()
        with pytest.raises(jobs.exceptions.EntityNotFoundException):
            jobs.get_table(DatabaseName="nodb", Name="t")
        with pytest.raises(watcher.exceptions.AccessDeniedException):
            watcher.delete_job(JobName="sleepy")
        assert root.get_job(JobName="sleepy")["Job"]["Name"] == "sleepy"
    finally:
        running.stop()
