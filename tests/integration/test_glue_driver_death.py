"""A warm Spark driver that dies (an OutOfMemoryError, a kill) takes only its runs along:
they fail with the reason, the service says so at once, and the next run gets a new
driver. Before, every later run failed with ConnectionRefusedError until a manual restart.

Real boto3 against the in-process Glue API on the tests' real Spark driver.
"""

from __future__ import annotations

import os
import signal
import time

import pytest

from glue_local.driver import jvm_process
from glue_local.driver_state import driver_healthy
from tests.integration.test_glue_runs import finish, job, succeeded
from tests.integration.test_glue_runs import glue as glue  # noqa: F401 - the fixture
from tests.resources.spark import glue_session

pytestmark = [pytest.mark.integration, pytest.mark.slow]

SLOW_SPARK_JOB = """
    import time
    from pyspark.sql import SparkSession
    spark = SparkSession.builder.getOrCreate()
    print("submitting the slow Spark job", flush=True)
    spark.sparkContext.parallelize(range(2), 2).map(lambda x: time.sleep(600)).count()
"""
QUICK_SPARK_JOB = """
    from pyspark.sql import SparkSession
    assert SparkSession.builder.getOrCreate().range(10).count() == 10
"""


def wait_for(check, timeout: float = 60, what: str = "") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def test_a_dead_driver_fails_its_runs_with_the_reason_and_the_next_run_gets_a_new_one(
        glue):  # noqa: F811 - the fixture
    client, server, tmp_path = glue
    state_dir = server.ctx.state_dir
    job(client, tmp_path, "slow", SLOW_SPARK_JOB)
    job(client, tmp_path, "quick", QUICK_SPARK_JOB)
    run_id = client.start_job_run(JobName="slow")["JobRunId"]
    wait_for(lambda: client.get_job_run(JobName="slow", RunId=run_id)["JobRun"]
             ["JobRunState"] == "RUNNING", what="the slow run to start")
    log = server.ctx.runner.log_dir / f"{run_id}.log"
    wait_for(lambda: log.exists() and "submitting the slow" in log.read_text(), timeout=120,
             what="the run's Spark job")
    time.sleep(1)  # its tasks are sleeping
    jvm = jvm_process(server.ctx.runner.driver.session())
    assert jvm is not None and driver_healthy(state_dir)
    os.kill(jvm.pid, signal.SIGKILL)  # as an OutOfMemoryError ends it: all at once

    # bounds for a loaded 2-core machine; the death is usually seen within a second
    wait_for(lambda: not driver_healthy(state_dir) or server.ctx.runner.driver.deaths,
             timeout=30, what="the death to be seen")
    run = finish(client, "slow", run_id, timeout=180)
    assert run["JobRunState"] == "FAILED"
    assert "The Spark driver (JVM) died during this run: killed by signal 9" in \
        run["ErrorMessage"]
    # the service's next runs get a new driver, with no restart by hand
    succeeded(client, "quick")
    assert driver_healthy(state_dir)
    assert server.ctx.runner.driver.deaths == 1
    glue_session()  # the tests' shared driver is the new one
