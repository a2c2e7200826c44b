"""Job runs through the local Glue API on a real Spark driver: each run in its own process
and SparkSession, runs at the same time, and Glue's special parameters honoured.

Real boto3 against the in-process Glue API; the driver is tests/resources/spark.py's
(no S3 or catalog servers: these scripts touch neither).
"""

from __future__ import annotations

import gc
import subprocess
import textwrap
import time
import zipfile
from pathlib import Path

import boto3
import pytest

from glue_local import jobs_api
from glue_local.server import running_server
from tests.resources.spark import glue_session

pytestmark = [pytest.mark.integration, pytest.mark.slow]


@pytest.fixture()
def glue(tmp_path):
    glue_session()  # the driver other tests share, started before the server uses it
    with running_server(tmp_path / "state", env={}, quiet=True,
                        session_factory=glue_session) as server:
        client = boto3.client("glue", endpoint_url=server.endpoint, region_name="us-east-1",
                              aws_access_key_id="x", aws_secret_access_key="y")
        yield client, server, tmp_path


def job(client, tmp_path: Path, name: str, source: str, **kw) -> None:
    script = tmp_path / f"{name}.py"
    script.write_text(textwrap.dedent(source))
    client.create_job(Name=name, Role="r", GlueVersion="5.1",
                      Command={"Name": "glueetl", "ScriptLocation": str(script)}, **kw)


def finish(client, name: str, run_id: str, timeout: float = 180) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        run = client.get_job_run(JobName=name, RunId=run_id)["JobRun"]
        if run["JobRunState"] in jobs_api.FINAL_STATES:
            return run
        time.sleep(0.1)
    raise AssertionError(f"{name} {run_id} did not finish")


def succeeded(client, name: str, **kw) -> dict:
    run_id = client.start_job_run(JobName=name, **kw)["JobRunId"]
    run = finish(client, name, run_id)
    assert run["JobRunState"] == "SUCCEEDED", run.get("ErrorMessage")
    return run


def metrics(server, run: dict) -> dict:
    return server.ctx.jobs.get_run(run["JobName"], run["Id"])["Metrics"]


LEAVES_STATE = """
    from pyspark import SparkContext
    from pyspark.sql import SparkSession
    sc = SparkContext()  # Glue Studio's first line: the run's context, not an error
    spark = SparkSession.builder.getOrCreate()
    spark.range(3).createOrReplaceTempView("leaky")
    spark.conf.set("spark.sql.shuffle.partitions", "7")
    spark.udf.register("leaky_udf", lambda x: x, "long")
    df = spark.range(5)
    df.cache()
    df.count()
    sc.parallelize(range(3)).cache().count()
    sc.stop()  # ends Glue's cluster; must not end the shared local driver
"""

SEES_STATE = """
    import json
    from pyspark.sql import SparkSession
    spark = SparkSession.builder.getOrCreate()
    seen = {
        "view": spark.catalog.tableExists("leaky"),
        "partitions": spark.conf.get("spark.sql.shuffle.partitions"),
        "udf": spark.catalog.functionExists("leaky_udf"),
        "cached": not spark._jsparkSession.sharedState().cacheManager().isEmpty(),
        "persisted": spark.sparkContext._jsc.getPersistentRDDs().size(),
    }
    print("CDCLAB_METRICS " + json.dumps(seen))
"""


def test_nothing_leaks_from_one_run_into_the_next(glue):
    client, server, tmp = glue
    job(client, tmp, "leaves", LEAVES_STATE)
    job(client, tmp, "sees", SEES_STATE)
    succeeded(client, "leaves")
    seen = metrics(server, succeeded(client, "sees"))
    assert seen == {"view": False, "partitions": "1", "udf": False, "cached": False,
                    "persisted": 0}


RENDEZVOUS = """
    import sys, time
    from pathlib import Path
    from awsglue.utils import getResolvedOptions
    from pyspark.sql import SparkSession
    args = getResolvedOptions(sys.argv, ["me", "other", "dir"])
    spark = SparkSession.builder.getOrCreate()
    spark.range(10).createOrReplaceTempView("mine")
    Path(args["dir"], args["me"]).write_text(str(spark.table("mine").count()))
    deadline = time.time() + 60  # each waits for the other: only concurrent runs finish
    while not Path(args["dir"], args["other"]).exists():
        if time.time() > deadline:
            raise SystemExit("the other run never ran alongside")
        time.sleep(0.1)
"""


def test_runs_of_two_jobs_and_of_one_job_run_at_the_same_time(glue):
    client, _, tmp = glue
    job(client, tmp, "left", RENDEZVOUS)
    job(client, tmp, "right", RENDEZVOUS, ExecutionProperty={"MaxConcurrentRuns": 2})
    for pair in (("left", "right"), ("right", "right")):
        marks = tmp / "-".join(pair)
        marks.mkdir()
        ids = [(name, client.start_job_run(JobName=name, Arguments={
            "--me": str(i), "--other": str(1 - i), "--dir": str(marks)})["JobRunId"])
            for i, name in enumerate(pair)]
        for name, run_id in ids:
            run = finish(client, name, run_id)
            assert run["JobRunState"] == "SUCCEEDED", run.get("ErrorMessage")


def _wheel(path: Path) -> Path:
    """A minimal wheel (what --additional-python-modules installs), built without network."""
    whl = path / "cdclab_probe-1.0-py3-none-any.whl"
    info = "cdclab_probe-1.0.dist-info"
    with zipfile.ZipFile(whl, "w") as z:
        z.writestr("cdclab_probe.py", "ANSWER = 42\n")
        z.writestr(f"{info}/METADATA", "Metadata-Version: 2.1\nName: cdclab-probe\nVersion: 1.0\n")
        z.writestr(f"{info}/WHEEL", "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n"
                                    "Tag: py3-none-any\n")
        z.writestr(f"{info}/RECORD", "")
    return whl


USES_EXTRAS = """
    import json
    from pathlib import Path
    from pyspark.sql import SparkSession
    from pyspark.sql.functions import udf
    import helper          # --extra-py-files
    import cdclab_probe    # --additional-python-modules
    spark = SparkSession.builder.getOrCreate()
    twice = udf(lambda x: __import__("helper").twice(x), "long")  # imported on the worker
    got = {
        "udf": [r[0] for r in spark.range(3).select(twice("id")).collect()],
        "probe": cdclab_probe.ANSWER,
        "file": Path("settings.txt").read_text().strip(),   # --extra-files, working dir
        "partitions": spark.conf.get("spark.sql.shuffle.partitions"),   # --conf
        "mine": spark.conf.get("spark.cdclab.test.flag"),
    }
    print("CDCLAB_METRICS " + json.dumps(got))
"""


def test_special_parameters_reach_the_script_and_its_workers(glue):
    client, server, tmp = glue
    (tmp / "lib").mkdir()
    (tmp / "lib" / "helper.py").write_text("def twice(x):\n    return 2 * x\n")
    (tmp / "settings.txt").write_text("from extra-files\n")
    job(client, tmp, "extras", USES_EXTRAS, DefaultArguments={
        "--extra-py-files": str(tmp / "lib" / "helper.py"),
        "--extra-files": str(tmp / "settings.txt"),
        "--additional-python-modules": str(_wheel(tmp)),
        "--conf": "spark.sql.shuffle.partitions=5 --conf spark.cdclab.test.flag=on",
    })
    got = metrics(server, succeeded(client, "extras"))
    assert got == {"udf": [0, 2, 4], "probe": 42, "file": "from extra-files",
                   "partitions": "5", "mine": "on"}
    # the same module request is installed once and reused
    again = succeeded(client, "extras")
    log = Path(again["LogGroupName"], f"{again['Id']}.log").read_text()
    assert "--additional-python-modules: reusing" in log


SHOWS_DRIVER = """
    import json
    from pyspark.sql import SparkSession
    spark = SparkSession.builder.getOrCreate()
    conf = spark.sparkContext.getConf()
    print("CDCLAB_METRICS " + json.dumps({"serializer": conf.get("spark.serializer", None)}))
"""


def test_a_driver_level_conf_gets_a_driver_started_with_it(glue):
    client, server, tmp = glue
    job(client, tmp, "kryo", SHOWS_DRIVER, DefaultArguments={
        "--conf": "spark.serializer=org.apache.spark.serializer.KryoSerializer "
                  "--conf spark.driver.memory=8g"})
    job(client, tmp, "plain", SHOWS_DRIVER)
    kryo = succeeded(client, "kryo")
    assert metrics(server, kryo) == {"serializer": "org.apache.spark.serializer.KryoSerializer"}
    log = Path(kryo["LogGroupName"], f"{kryo['Id']}.log").read_text()
    assert "spark.driver.memory is a driver-process setting" in log
    assert metrics(server, succeeded(client, "plain")) == {"serializer": None}


def test_unsupported_lake_format_and_a_stopped_spark_run(glue):
    client, _, tmp = glue
    job(client, tmp, "delta", SHOWS_DRIVER, DefaultArguments={"--datalake-formats": "delta"})
    run_id = client.start_job_run(JobName="delta")["JobRunId"]
    run = finish(client, "delta", run_id)
    assert run["JobRunState"] == "FAILED"
    assert "cdclab: --datalake-formats delta is not supported locally" in run["ErrorMessage"]

    job(client, tmp, "busy", """
        from pyspark.sql import SparkSession
        spark = SparkSession.builder.getOrCreate()
        spark.range(10**12).selectExpr("sum(id)").collect()  # hours: stopped long before
    """)
    run_id = client.start_job_run(JobName="busy")["JobRunId"]
    while client.get_job_run(JobName="busy", RunId=run_id)["JobRun"]["JobRunState"] != "RUNNING":
        time.sleep(0.1)
    time.sleep(3)  # into the Spark job
    client.batch_stop_job_run(JobName="busy", JobRunIds=[run_id])
    assert finish(client, "busy", run_id, timeout=60)["JobRunState"] == "STOPPED"
    succeeded(client, "delta", Arguments={"--datalake-formats": "iceberg"})  # driver still up


LEAVES_A_CHILD = """
    import subprocess, sys, time
    # a helper that outlives the script and holds its output open (a duration no other
    # process on the machine is likely to sleep, so pgrep finds only this test's)
    subprocess.Popen(["sleep", "600.0917"])
    if "--wait" in sys.argv:
        time.sleep(600)
"""


def test_what_a_run_started_ends_with_it(glue):
    client, _, tmp = glue
    job(client, tmp, "orphans", LEAVES_A_CHILD)
    started = time.monotonic()
    succeeded(client, "orphans")  # finishes although the helper still held the pipe
    run_id = client.start_job_run(JobName="orphans", Arguments={"--wait": "1"})["JobRunId"]
    while client.get_job_run(JobName="orphans", RunId=run_id)["JobRun"]["JobRunState"] != "RUNNING":
        time.sleep(0.1)
    time.sleep(1)
    client.batch_stop_job_run(JobName="orphans", JobRunIds=[run_id])
    assert finish(client, "orphans", run_id, timeout=30)["JobRunState"] == "STOPPED"
    assert time.monotonic() - started < 60
    left = subprocess.run(["pgrep", "-f", r"^sleep 600\.0917$"], capture_output=True,
                          text=True)
    assert left.stdout.strip() == ""  # neither run's helper is left behind


HOLDS_OBJECTS = """
    from pyspark.sql import SparkSession
    spark = SparkSession.builder.getOrCreate()
    frames = [spark.range(i + 1) for i in range(20)]  # held to the end of the script
    assert sum(f.count() for f in frames) == 210
"""


def test_a_finished_run_leaves_nothing_bound_in_the_shared_jvm(glue) -> None:
    """A run process ends with os._exit, which frees no py4j proxy: unless it releases
    them, its session, DataFrames and their plans stay in the shared driver for good (a
    warm driver under a run every few seconds filled its heap in ten minutes)."""
    client, _server, tmp_path = glue
    job(client, tmp_path, "holder", HOLDS_OBJECTS)
    gateway = glue_session().sparkContext._gateway.java_gateway_server.getGateway()
    bindings = gateway.getBindings()

    def bound() -> int:
        """This process's own proxies (the server's calls) are freed in the background
        too: let them go first, so only what the runs left is counted."""
        gc.collect()
        time.sleep(2)
        return bindings.size()

    succeeded(client, "holder")  # first-run work (imports, caches) out of the count
    before, runs = bound(), 4
    for _ in range(runs):
        succeeded(client, "holder")
    per_run = (bound() - before) / runs
    assert per_run < 10, f"each run left {per_run:.0f} JVM objects bound (~90 before the fix)"


STARTS_A_THREAD = """
    import uuid
    from pyspark.sql import SparkSession
    spark = SparkSession.builder.getOrCreate()
    jvm = spark._jvm
    # a JVM thread started during the run, as a pool's new worker would be: it inherits
    # the run's session; kept running past the run (the test ends it)
    timer = jvm.java.util.Timer("cdclab-test-run-thread", True)
    jvm.java.lang.System.getProperties().put("cdclab.test.timer." + str(uuid.uuid4()), timer)
    # and one started under a clone of it (Spark's cache manager clones the session)
    clone = spark._jsparkSession.cloneSession()
    jvm.org.apache.spark.sql.SparkSession.setActiveSession(clone)
    timer = jvm.java.util.Timer("cdclab-test-run-thread", True)
    jvm.java.lang.System.getProperties().put("cdclab.test.timer." + str(uuid.uuid4()), timer)
    jvm.org.apache.spark.sql.SparkSession.setActiveSession(spark._jsparkSession)
    assert spark.range(3).count() == 3
"""


def live_sessions(jvm) -> int:
    """SparkSession objects alive in the driver (jcmd's histogram runs a full GC first)."""
    pid = str(jvm.java.lang.ProcessHandle.current().pid())
    out = subprocess.run(["jcmd", pid, "GC.class_histogram"], capture_output=True,
                         text=True, timeout=120, check=True).stdout
    return sum(int(line.split()[1]) for line in out.splitlines()
               if line.split()[-1:] == ["org.apache.spark.sql.SparkSession"])


def test_threads_a_run_started_do_not_keep_its_session(glue) -> None:
    """Spark's active session is an inheritable thread local: a pool thread created during
    a run kept that run's session (catalogs, tables, file listings) alive for as long as
    the thread lived; the warm driver gathered hundreds and filled its heap."""
    client, _server, tmp_path = glue
    job(client, tmp_path, "threads", STARTS_A_THREAD)
    jvm = glue_session()._jvm
    props = jvm.java.lang.System.getProperties()
    try:
        succeeded(client, "threads")
        before, runs = live_sessions(jvm), 3
        for _ in range(runs):
            succeeded(client, "threads")
        assert live_sessions(jvm) - before < runs, "threads keep the runs' sessions"
    finally:
        for key in [k for k in props.stringPropertyNames() if k.startswith("cdclab.test.timer.")]:
            props.get(key).cancel()
            props.remove(key)
