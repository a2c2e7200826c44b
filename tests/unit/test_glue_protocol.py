"""The local Glue API spoken to by real boto3 over real HTTP on 127.0.0.1 (no Spark)."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from pathlib import Path

import boto3
import pytest

from glue_local import jobs_api
from glue_local.runner import needs_spark, parse_metrics, script_argv
from glue_local.server import dispatch, running_server

SLEEP_JOB = """
import sys, time
args = dict(zip(sys.argv[1::2], sys.argv[2::2]))
print("args", sorted(args), "mode", args.get("--mode"))
time.sleep(float(args.get("--sleep", "0")))
if args.get("--fail"):
    raise ValueError("boom: " + args["--fail"])
print('CDCLAB_METRICS {"rows": 3, "job": "%s"}' % args["--JOB_NAME"])
"""


@pytest.fixture()
def glue(tmp_path: Path):
    script = tmp_path / "job.py"
    script.write_text(SLEEP_JOB)
    with running_server(tmp_path / "state", env={}, quiet=True) as server:
        client = boto3.client(
            "glue", endpoint_url=server.endpoint, region_name="us-east-1",
            aws_access_key_id="x", aws_secret_access_key="y",
        )
        client.create_job(
            Name="sleepy", Role="local", Command={"Name": "glueetl", "ScriptLocation": str(script)},
            DefaultArguments={"--sleep": "0", "--mode": "default"},
            ExecutionProperty={"MaxConcurrentRuns": 1}, GlueVersion="5.1",
        )
        yield client, server


def wait_final(client, run_id: str, job: str = "sleepy", timeout: float = 20) -> dict:
    deadline = time.monotonic() + timeout
    run = None
    while time.monotonic() < deadline:
        try:
            run = client.get_job_run(JobName=job, RunId=run_id)["JobRun"]
        except client.exceptions.EntityNotFoundException:  # a retry not created yet
            time.sleep(0.05)
            continue
        if run["JobRunState"] in jobs_api.FINAL_STATES:
            return run
        time.sleep(0.05)
    raise AssertionError(f"run {run_id} did not finish: {run}")


def test_create_get_and_list_jobs(glue):
    client, _ = glue
    job = client.get_job(JobName="sleepy")["Job"]
    assert job["Command"]["Name"] == "glueetl"
    assert job["ExecutionProperty"]["MaxConcurrentRuns"] == 1
    assert [j["Name"] for j in client.get_jobs()["Jobs"]] == ["sleepy"]
    with pytest.raises(client.exceptions.AlreadyExistsException):
        client.create_job(Name="sleepy", Role="r", Command={"ScriptLocation": "/x.py"})
    with pytest.raises(client.exceptions.EntityNotFoundException):
        client.get_job(JobName="nope")


def test_run_succeeds_with_overlaid_arguments_and_metrics(glue, tmp_path):
    client, server = glue
    run_id = client.start_job_run(JobName="sleepy", Arguments={"--mode": "run"})["JobRunId"]
    assert run_id.startswith("jr_")
    run = wait_final(client, run_id)
    assert run["JobRunState"] == "SUCCEEDED"
    assert run["Arguments"] == {"--mode": "run"}  # as sent; the script got the overlay
    assert run["CompletedOn"] >= run["StartedOn"]
    assert "ExecutionTime" in run
    log = (tmp_path / "state" / "logs" / "glue-runs" / f"{run_id}.log").read_text()
    assert "--JOB_RUN_ID" in log and "CDCLAB_METRICS" in log and "mode run" in log
    assert run["Timeout"] == 480  # Glue 5: 480 minutes when blank
    # boto3 drops the non-standard field; the raw protocol carries it
    raw = raw_call(server.endpoint, "GetJobRun", {"JobName": "sleepy", "RunId": run_id})
    assert raw["JobRun"]["Metrics"] == {"rows": 3, "job": "sleepy"}
    assert [r["Id"] for r in client.get_job_runs(JobName="sleepy")["JobRuns"]] == [run_id]


def test_second_start_while_running_is_refused(glue):
    client, _ = glue
    first = client.start_job_run(JobName="sleepy", Arguments={"--sleep": "1.0"})["JobRunId"]
    with pytest.raises(client.exceptions.ConcurrentRunsExceededException) as err:
        client.start_job_run(JobName="sleepy")
    assert "Concurrent runs exceeded for sleepy" in str(err.value)
    assert wait_final(client, first)["JobRunState"] == "SUCCEEDED"
    second = client.start_job_run(JobName="sleepy")["JobRunId"]  # accepted once it ended
    assert wait_final(client, second)["JobRunState"] == "SUCCEEDED"


def run_log(tmp_path: Path, run_id: str) -> str:
    return (tmp_path / "state" / "logs" / "glue-runs" / f"{run_id}.log").read_text()


def test_non_overridable_arguments_win_and_the_default_timeout_is_glue_5s(glue, tmp_path):
    client, _ = glue
    script = str(tmp_path / "job.py")
    client.create_job(Name="locked", Role="r", GlueVersion="5.0",
                      Command={"Name": "glueetl", "ScriptLocation": script},
                      DefaultArguments={"--mode": "default"},
                      NonOverridableArguments={"--mode": "locked"})
    run_id = client.start_job_run(JobName="locked", Arguments={"--mode": "mine"})["JobRunId"]
    run = wait_final(client, run_id, "locked")
    assert run["Arguments"] == {"--mode": "mine"} and "mode locked" in run_log(tmp_path, run_id)
    assert run["Timeout"] == 480 and run["GlueVersion"] == "5.0"  # Glue 5.0 and later
    with pytest.raises(client.exceptions.InvalidInputException, match="10080"):
        client.start_job_run(JobName="locked", Timeout=10081)
    with pytest.raises(client.exceptions.InvalidInputException, match="10080"):
        client.create_job(Name="too-long", Role="r", Timeout=20000,
                          Command={"Name": "glueetl", "ScriptLocation": script})


def test_glue_versions_other_than_5_0_and_5_1_are_refused_by_name(glue, tmp_path):
    client, server = glue
    command = {"Name": "glueetl", "ScriptLocation": str(tmp_path / "job.py")}
    for version, why in [("4.0", "Spark 3.3.0 and Python 3.10"), ("2.0", "Spark 2.4.3"),
                         ("0.9", "Python 2.7"), ("auto", "newest"), ("6.0", "not a Glue version")]:
        with pytest.raises(client.exceptions.InvalidInputException) as err:
            client.create_job(Name=f"v{version}", Role="r", GlueVersion=version, Command=command)
        message = str(err.value)
        assert f"cdclab: GlueVersion {version} is not supported locally" in message, message
        assert why in message and "AWS Glue 5.0 (Spark 3.5.4)" in message
        assert "Set GlueVersion to 5.0 or 5.1" in message
    assert "v4.0" not in client.list_jobs()["JobNames"]
    # no GlueVersion: the lab's 5.1; UpdateJob without one keeps the job's (Glue API model)
    client.create_job(Name="plain", Role="r", Command=command)
    assert wait_final(client, client.start_job_run(JobName="plain")["JobRunId"],
                      "plain")["GlueVersion"] == "5.1"
    client.create_job(Name="five", Role="r", GlueVersion="5.0", Command=command)
    client.update_job(JobName="five", JobUpdate={"Role": "r2", "Command": command})
    assert client.get_job(JobName="five")["Job"]["GlueVersion"] == "5.0"
    with pytest.raises(client.exceptions.InvalidInputException, match="GlueVersion 3.0"):
        client.update_job(JobName="five", JobUpdate={"Role": "r", "Command": command,
                                                     "GlueVersion": "3.0"})
    # a job stored before the rule (or edited on disk) is refused when it is started
    path = server.ctx.jobs.job_path("five")
    path.write_text(json.dumps({**json.loads(path.read_text()), "GlueVersion": "4.0"}))
    with pytest.raises(client.exceptions.InvalidInputException,
                       match="Job five: cdclab: GlueVersion 4.0 is not supported locally"):
        client.start_job_run(JobName="five")
    assert client.get_job_runs(JobName="five")["JobRuns"] == []


def test_queued_runs_wait_then_run_in_order(glue, tmp_path):
    client, _ = glue
    client.create_job(Name="queued", Role="r", JobRunQueuingEnabled=True, GlueVersion="5.1",
                      Command={"Name": "glueetl", "ScriptLocation": str(tmp_path / "job.py")})
    first = client.start_job_run(JobName="queued", Arguments={"--sleep": "1.0"})["JobRunId"]
    second = client.start_job_run(JobName="queued")["JobRunId"]
    third = client.start_job_run(JobName="queued")["JobRunId"]
    assert client.get_job_run(JobName="queued", RunId=second)["JobRun"]["JobRunState"] == (
        "WAITING")
    # the run's flag wins over the job's
    with pytest.raises(client.exceptions.ConcurrentRunsExceededException):
        client.start_job_run(JobName="queued", JobRunQueuingEnabled=False)
    client.batch_stop_job_run(JobName="queued", JobRunIds=[third])
    assert wait_final(client, third, "queued")["JobRunState"] == "STOPPED"
    done = [wait_final(client, r, "queued") for r in (first, second)]
    assert [r["JobRunState"] for r in done] == ["SUCCEEDED", "SUCCEEDED"]
    assert done[1]["StartedOn"] < done[0]["CompletedOn"] <= done[1]["CompletedOn"]


def test_failed_runs_are_retried_up_to_max_retries(glue, tmp_path):
    client, _ = glue
    client.create_job(Name="flaky", Role="r", MaxRetries=2,
                      Command={"Name": "glueetl", "ScriptLocation": str(tmp_path / "job.py")})
    first = client.start_job_run(JobName="flaky", Arguments={"--fail": "x"})["JobRunId"]
    last = wait_final(client, f"{first}_attempt_2", "flaky", timeout=30)
    runs = sorted(client.get_job_runs(JobName="flaky")["JobRuns"], key=lambda r: r["Attempt"])
    assert [(r["Attempt"], r["JobRunState"]) for r in runs] == [
        (0, "FAILED"), (1, "FAILED"), (2, "FAILED")]
    assert [r.get("PreviousRunId") for r in runs] == [None, first, first]
    assert all(r["Arguments"] == {"--fail": "x"} for r in runs)
    assert last["ErrorMessage"] == "ValueError: boom: x"


def test_failure_carries_the_exception_text(glue):
    client, _ = glue
    run_id = client.start_job_run(JobName="sleepy", Arguments={"--fail": "bad row"})["JobRunId"]
    run = wait_final(client, run_id)
    assert run["JobRunState"] == "FAILED"
    assert run["ErrorMessage"] == "ValueError: boom: bad row"


def test_stop_a_running_run(glue):
    client, _ = glue
    run_id = client.start_job_run(JobName="sleepy", Arguments={"--sleep": "0.5"})["JobRunId"]
    while client.get_job_run(JobName="sleepy", RunId=run_id)["JobRun"]["JobRunState"] != "RUNNING":
        time.sleep(0.02)
    resp = client.batch_stop_job_run(JobName="sleepy", JobRunIds=[run_id, "jr_missing"])
    assert resp["SuccessfulSubmissions"] == [{"JobName": "sleepy", "JobRunId": run_id}]
    assert resp["Errors"][0]["ErrorDetail"]["ErrorCode"] == "EntityNotFoundException"
    assert wait_final(client, run_id)["JobRunState"] == "STOPPED"


def test_update_and_delete_job(glue):
    client, _ = glue
    client.update_job(JobName="sleepy", JobUpdate={
        "Role": "r2", "Command": {"Name": "glueetl", "ScriptLocation": "/elsewhere.py"},
        "ExecutionProperty": {"MaxConcurrentRuns": 3}})
    job = client.get_job(JobName="sleepy")["Job"]
    assert job["Role"] == "r2" and job["ExecutionProperty"]["MaxConcurrentRuns"] == 3
    assert "DefaultArguments" not in job  # UpdateJob replaces the definition, as in Glue
    client.delete_job(JobName="sleepy")
    client.delete_job(JobName="sleepy")  # idempotent
    assert client.get_jobs()["Jobs"] == []


def test_unknown_operation_is_a_clear_invalid_input(glue):
    _, server = glue
    status, body = dispatch(server.ops, server.ctx, "AWSGlue.StartCrawler", b"{}")
    assert status == 400 and body["__type"] == "InvalidInputException"
    assert "StartCrawler is not supported" in body["message"]


def test_runs_survive_restart_and_interrupted_runs_fail(tmp_path):
    store = jobs_api.JobStore(tmp_path)
    job = {"Name": "j", "Command": {"ScriptLocation": "/x.py"}}
    store.put_job(job)
    running = {**jobs_api.new_run(job, {}, 100.0), "JobRunState": "RUNNING"}
    queued = jobs_api.new_run(job, {}, 101.0)
    store.put_run(running)
    store.put_run(queued)
    restarted = jobs_api.JobStore(tmp_path)  # a new process
    requeue = restarted.recover(now=200.0)
    assert [r["Id"] for r in requeue] == [queued["Id"]]
    failed = jobs_api.JobStore(tmp_path).get_run("j", running["Id"])  # persisted
    assert failed["JobRunState"] == "FAILED" and "stopped while this run was RUNNING" in (
        failed["ErrorMessage"])
    assert failed["CompletedOn"] == 200.0
    assert restarted.job_names_with_runs() == ["j"]  # known without a disk scan


def test_pure_helpers():
    assert script_argv("/s.py", "J", "jr_1", {"--a": "1", "b": "2", "--JOB_NAME": "x"}) == [
        "/s.py", "--JOB_NAME", "J", "--JOB_ID", jobs_api.job_id("J"), "--JOB_RUN_ID", "jr_1",
        "--a", "1", "--b", "2"]
    assert needs_spark("import os\nfrom awsglue.context import GlueContext\n")
    assert needs_spark("from pyspark.sql import SparkSession")
    assert not needs_spark("import time  # no pyspark here\ntime.sleep(1)")
    text = 'x\nCDCLAB_METRICS {"a": 1}\nCDCLAB_METRICS {"a": 2}\n'
    assert parse_metrics(text) == {"a": 2}
    assert parse_metrics("nothing") is None
    assert jobs_api.merged_arguments({"DefaultArguments": {"--a": "1", "--b": "1"}},
                                     {"--b": "2"}) == {"--a": "1", "--b": "2"}
    job = {"Name": "j", "ExecutionProperty": {"MaxConcurrentRuns": 1},
           "JobRunQueuingEnabled": True}
    assert jobs_api.queuing_enabled(job, {}) and not jobs_api.queuing_enabled(
        {**job, "MaxRetries": 1}, {})  # runs of retrying jobs are not queued
    busy = {**jobs_api.new_run(job, {}, 0.0), "JobRunState": "RUNNING"}
    waiting = jobs_api.new_run(job, {}, 1.0, jobs_api.WAITING)
    assert jobs_api.promote_waiting(job, [busy, waiting], 2.0) == []
    [expired] = jobs_api.promote_waiting(job, [busy, waiting],
                                         1.0 + jobs_api.MAX_WAITING_SECONDS)
    assert expired["JobRunState"] == "FAILED" and "waited 15 minutes" in expired["ErrorMessage"]
    [started] = jobs_api.promote_waiting(job, [waiting], 2.0)
    assert started["JobRunState"] == "STARTING"


def raw_call(endpoint: str, op: str, body: dict) -> dict:
    req = urllib.request.Request(endpoint, data=json.dumps(body).encode(), headers={
        "X-Amz-Target": f"AWSGlue.{op}", "Content-Type": "application/x-amz-json-1.1"})
    with urllib.request.urlopen(req, timeout=5) as resp:
        return json.loads(resp.read())


SPARK_JOB = """
import sys
from pyspark import SparkContext
from pyspark.sql import SparkSession
sc = SparkContext.getOrCreate()
spark = SparkSession.builder.getOrCreate()
n = spark.range(10).count()
print('CDCLAB_METRICS {"app": "%s", "n": %d}' % (sc.applicationId, n))
"""


def local_session(env):
    from pyspark.sql import SparkSession

    return (SparkSession.builder.master("local[1]").appName("glue-local-test")
            .config("spark.ui.enabled", "false")
            .config("spark.sql.shuffle.partitions", "2").getOrCreate())


@pytest.mark.slow
def test_spark_runs_share_one_warm_session(tmp_path):
    script = tmp_path / "spark_job.py"
    script.write_text(SPARK_JOB)
    with running_server(tmp_path / "state", env={}, quiet=True,
                        session_factory=local_session) as server:
        client = boto3.client("glue", endpoint_url=server.endpoint, region_name="us-east-1",
                              aws_access_key_id="x", aws_secret_access_key="y")
        client.create_job(Name="sparky", Role="r",
                          Command={"Name": "glueetl", "ScriptLocation": str(script)})
        metrics = []
        for _ in range(2):
            run_id = client.start_job_run(JobName="sparky")["JobRunId"]
            run = wait_final(client, run_id, job="sparky", timeout=120)
            assert run["JobRunState"] == "SUCCEEDED", run.get("ErrorMessage")
            raw = raw_call(server.endpoint, "GetJobRun", {"JobName": "sparky", "RunId": run_id})
            metrics.append(raw["JobRun"]["Metrics"])
        assert metrics[0]["n"] == 10
        assert metrics[0]["app"] == metrics[1]["app"]  # same SparkContext: no second JVM start
        server.ctx.runner.session().stop()


def test_job_run_id_names_a_run_to_retry_never_the_new_runs_id(glue):
    """StartJobRun's JobRunId is "the ID of a previous JobRun to retry": a new run with
    PreviousRunId; an id that is not a run of the job (say, a path) is refused."""
    client, server = glue
    first = client.start_job_run(JobName="sleepy")["JobRunId"]
    wait_final(client, first)
    again = client.start_job_run(JobName="sleepy", JobRunId=first)["JobRunId"]
    assert again != first
    assert wait_final(client, again)["PreviousRunId"] == first
    assert client.get_job_run(JobName="sleepy", RunId=first)["JobRun"]["JobRunState"] == \
        "SUCCEEDED"  # the old run is untouched
    with pytest.raises(client.exceptions.EntityNotFoundException):
        client.start_job_run(JobName="sleepy", JobRunId="../../../tmp/evil")
    assert not list(Path(server.ctx.state_dir).rglob("*evil*"))


def test_an_oversized_body_is_refused_unread(glue):
    _, server = glue
    req = urllib.request.Request(server.endpoint, data=b"{}", method="POST", headers={
        "X-Amz-Target": "AWSGlue.GetJobs", "Content-Type": "application/x-amz-json-1.1",
        "Content-Length": str(50 * 1024 * 1024)})
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(req, timeout=5)
    assert e.value.code == 413
    assert "request body must be" in json.loads(e.value.read())["message"]
