"""The local Glue driver's JIT warm-up on a real driver built as the Glue service builds
it (spark_session.build_session, with its Iceberg jars, which the shared test driver
lacks), in a process of its own: its batches MERGE into its own Iceberg catalog, it
pauses while busy, stops when told and leaves nothing behind; the Glue service starts it
and runs a job beside it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from pipeline_contract import settings

pytestmark = [pytest.mark.integration, pytest.mark.slow]

QUICK = """
    import sys
    from awsglue.context import GlueContext
    from awsglue.job import Job
    from awsglue.utils import getResolvedOptions
    from pyspark.context import SparkContext
    args = getResolvedOptions(sys.argv, ["JOB_NAME"])
    glue = GlueContext(SparkContext.getOrCreate())
    job = Job(glue)
    job.init(args["JOB_NAME"], args)
    assert glue.spark_session.range(1000).selectExpr("sum(id)").first()[0] == 499500
    job.commit()
"""

DRIVER = """
import json, logging, sys, threading, time
from pathlib import Path

import boto3

from glue_local import jit_warmup
from glue_local.server import running_server
from glue_local.spark_session import build_session
from pipeline_contract import settings

logging.basicConfig(level=logging.INFO)
spark = build_session({}, {}, "none", app_name="jit-warmup-test", master="local[2]")
folder, script = Path(sys.argv[1]), sys.argv[2]
out = {}
out["free"] = jit_warmup.exercise(spark, folder / "free", 8.0, busy=lambda: False)
out["free_left"] = folder.joinpath("free").exists()
conf = spark.conf.get(f"spark.sql.catalog.{jit_warmup.CATALOG}", None)
out["leaked"] = ([conf] if conf else []) + [
    t.name for t in spark.catalog.listTables() if t.name.startswith("warm_")]

stop = threading.Event()
threading.Timer(1.0, stop.set).start()
started = time.monotonic()
out["busy"] = jit_warmup.exercise(spark, folder / "busy", 60.0, lambda: True, stop, poll=0.05)
out["busy_seconds"] = time.monotonic() - started

calls = []
def interrupted():  # free for a batch's first statements, then a run holds the driver
    calls.append(1)
    return len(calls) > 3
stop = threading.Event()
threading.Timer(3.0, stop.set).start()
out["interrupted"] = jit_warmup.exercise(spark, folder / "cut", 60.0, interrupted, stop,
                                         poll=0.05)
out["looks"] = len(calls)
out["left"] = [p.name for p in folder.iterdir()]

state = folder.parent / "service"
with running_server(state, env={settings.ENV_DRIVER_WARMUP: "30"}, quiet=True,
                    session_factory=lambda *args, **kw: spark) as server:
    server.ctx.runner._start_jit_warmup()  # as a warm start does, after its warm_up
    warehouse = state / "spark" / "jit-warmup" / "warehouse"
    deadline = time.monotonic() + 60
    while not warehouse.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    out["service_warming"] = warehouse.exists()
    client = boto3.client("glue", endpoint_url=server.endpoint, region_name="us-east-1",
                          aws_access_key_id="x", aws_secret_access_key="y")
    client.create_job(Name="quick", Role="r", GlueVersion="5.1",
                      Command={"Name": "glueetl", "ScriptLocation": script})
    run_id = client.start_job_run(JobName="quick")["JobRunId"]
    while (run := client.get_job_run(JobName="quick", RunId=run_id)["JobRun"])[
            "JobRunState"] not in ("SUCCEEDED", "FAILED", "ERROR", "TIMEOUT", "STOPPED"):
        time.sleep(0.1)
    out["run"], out["run_error"] = run["JobRunState"], run.get("ErrorMessage")
deadline = time.monotonic() + 60
while (state / "spark" / "jit-warmup").exists() and time.monotonic() < deadline:
    time.sleep(0.1)
out["service_left"] = (state / "spark" / "jit-warmup").exists()
print("RESULT " + json.dumps(out))
"""


@pytest.fixture(scope="module")
def warmed(tmp_path_factory):
    folder = tmp_path_factory.mktemp("warm")
    script = folder / "quick.py"
    script.write_text(textwrap.dedent(QUICK))
    env = {**os.environ, settings.ENV_STATE_DIR: str(folder / "state")}
    done = subprocess.run([sys.executable, "-c", DRIVER, str(folder / "work"), str(script)],
                          env=env, capture_output=True, text=True, timeout=600,
                          cwd=settings.REPO_ROOT)
    line = next((x for x in done.stdout.splitlines() if x.startswith("RESULT ")), None)
    assert line, done.stdout[-2000:] + done.stderr[-3000:]
    return json.loads(line[len("RESULT "):]), done.stderr


def test_warm_up_batches_merge_and_leave_nothing_behind(warmed):
    out, log = warmed
    assert out["free"] >= 1  # every statement ran: MERGE into its own Iceberg table
    assert f"JIT warm-up: {out['free']} batches" in log
    assert out["free_left"] is False and out["leaked"] == []  # its session's, not the runs'
    assert out["left"] == []


def test_warm_up_waits_while_busy_and_stops_when_told(warmed):
    out, _ = warmed
    assert out["busy"] == 0 and out["busy_seconds"] < 20


def test_a_run_coming_drops_the_batch_it_interrupts(warmed):
    out, _ = warmed
    assert out["interrupted"] == 0
    assert out["looks"] > 4  # paused, it kept looking whether the driver was free


def test_the_glue_service_warms_its_idle_driver_and_runs_jobs_beside_it(warmed):
    out, _ = warmed
    assert out["service_warming"] is True  # it began once the service's driver was up
    assert out["run"] == "SUCCEEDED", out.get("run_error")
    assert out["service_left"] is False  # the server's shutdown stopped it; it cleaned up
