"""A job runs on the runtime of its GlueVersion (spark/glue_local/glue_runtimes.py): the
same script as GlueVersion 5.0 reports Spark 3.5.4, Iceberg 1.7.1 and awsglue 5.0.0, as
5.1 Spark 3.5.6, Iceberg 1.10.0 and awsglue 5.1.0 (AWS Glue versions:
https://docs.aws.amazon.com/glue/latest/dg/release-notes.html); both write the same rows
through AWS's awsglue over cdclab's JVM side, and an Iceberg table whose snapshot names
the runtime's Iceberg and Spark."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import boto3
import pytest

from glue_local import glue_runtimes
from glue_local.server import running_server
from pipeline_contract import settings
from tests.integration.test_glue_corpus import orders_csv, run
from tests.resources.spark import glue_session

pytestmark = [pytest.mark.integration, pytest.mark.slow]

SCRIPT = '''
import json
import sys
from importlib.metadata import version

import pyspark
from awsglue.context import GlueContext
from awsglue.job import Job
from awsglue.utils import getResolvedOptions
from pyspark.context import SparkContext

args = getResolvedOptions(sys.argv, ["JOB_NAME", "source", "target", "report"])
glue_context = GlueContext(SparkContext.getOrCreate())
job = Job(glue_context)
job.init(args["JOB_NAME"], args)
spark = glue_context.spark_session
jvm = spark.sparkContext._jvm
iceberg = jvm.org.apache.iceberg.IcebergBuild.version()
frame = glue_context.create_dynamic_frame.from_options(
    "s3", {"paths": [args["source"]]}, format="csv", format_options={"withHeader": True})
frame = frame.filter(lambda r: r["country"] == "DE")
glue_context.write_dynamic_frame.from_options(
    frame, "s3", {"path": args["target"]}, format="csv")
spark.sql("CREATE TABLE lake.db.orders (order_id string, customer string) USING iceberg")
frame.toDF().select("order_id", "customer").writeTo("lake.db.orders").append()
summary = spark.sql("SELECT summary FROM lake.db.orders.snapshots").collect()[0][0]
with open(args["report"], "w") as f:
    json.dump({"pyspark": pyspark.__version__, "spark": spark.version,
               "iceberg": iceberg, "awsglue": version("AWSGlueDataplanePython"),
               "python": sys.executable, "snapshot": dict(summary),
               "rows": spark.table("lake.db.orders").count()}, f)
job.commit()
'''


def lab_driver(env=None, extra_conf=None):
    """The test driver with the lab's Spark jars (Iceberg 1.10.0, S3A) on its JVM's
    classpath, as the runner's own driver has them: a JVM started without them (by
    another test) is shut down first, since a classpath is fixed at launch."""
    from py4j.java_gateway import JavaClass
    from pyspark import SparkContext

    from glue_local import glue_jvm

    if SparkContext._gateway is not None and not isinstance(
            SparkContext._jvm.org.apache.iceberg.IcebergBuild, JavaClass):
        if SparkContext._active_spark_context is not None:
            SparkContext._active_spark_context.stop()
        SparkContext._gateway.shutdown()
        SparkContext._gateway = SparkContext._jvm = None
    jars = ",".join(str(j) for j in [*settings.spark_jars(), glue_jvm.build()])
    return glue_session(env, {"spark.jars": jars, **(extra_conf or {})})


@pytest.fixture()
def glue(tmp_path):
    """The local Glue API; a 5.0 run's own driver gets the lab's local catalog settings
    (nothing listens there: the script reads and writes files only)."""
    lab_driver()
    env = {settings.ENV_S3_ENDPOINT: "http://127.0.0.1:9",
           settings.ENV_CATALOG_URI: "http://127.0.0.1:9"}
    with running_server(tmp_path / "state", env=env, quiet=True,
                        session_factory=lab_driver) as server:
        yield boto3.client("glue", endpoint_url=server.endpoint, region_name="us-east-1",
                           aws_access_key_id="x", aws_secret_access_key="y")


# A file-system Iceberg catalog of the run's own (runtime settings: no driver restart)
LAKE = ("spark.sql.catalog.lake=org.apache.iceberg.spark.SparkCatalog "
        "--conf spark.sql.catalog.lake.type=hadoop "
        "--conf spark.sql.catalog.lake.warehouse=file://{}/warehouse")


def rows(folder: Path) -> list[dict]:
    found = []
    for part in sorted(folder.glob("run-*-part-r-*")):
        found += list(csv.DictReader(part.open()))
    return sorted(found, key=lambda r: r["order_id"])


@pytest.mark.parametrize("glue_version", ["5.0", "5.1"])
def test_a_job_runs_on_the_runtime_of_its_glue_version(glue, tmp_path, glue_version):
    expected = glue_runtimes.runtime(glue_version)
    if glue_runtimes.missing(expected, Path("/")):
        pytest.fail(glue_runtimes.not_installed(expected, glue_runtimes.missing(
            expected, Path("/"))))
    script, src, out = tmp_path / "versions.py", tmp_path / "orders", tmp_path / "out"
    report = tmp_path / "report.json"
    script.write_text(SCRIPT)
    orders_csv(src / "a.csv", [(1, "Ann", "5.0", "DE"), (2, "Bob", "25.5", "FR"),
                               (3, "Cy", "99", "DE")])
    name = f"versions_{glue_version.replace('.', '')}"
    glue.create_job(Name=name, Role="r", GlueVersion=glue_version,
                    Command={"Name": "glueetl", "ScriptLocation": str(script)},
                    DefaultArguments={"--source": f"file://{src}", "--target": f"file://{out}",
                                      "--report": str(report), "--conf": LAKE.format(tmp_path)})
    run(glue, name, timeout=300)
    got = json.loads(report.read_text())
    versions = settings.versions()
    want = {"5.0": ("GLUE50_SPARK_VERSION", "GLUE50_ICEBERG_VERSION", "5.0.0"),
            "5.1": ("SPARK_VERSION", "ICEBERG_VERSION", "5.1.0")}[glue_version]
    assert (got["pyspark"], got["spark"]) == (versions[want[0]],) * 2
    assert got["iceberg"].startswith(versions[want[1]])  # e.g. "1.7.1 (commit ...)"
    assert got["awsglue"] == want[2]
    assert Path(got["python"]) == expected.python
    # the table was written by this runtime's Iceberg and Spark (Iceberg's snapshot summary)
    assert got["snapshot"]["iceberg-version"].startswith(f"Apache Iceberg {expected.iceberg}")
    assert got["snapshot"]["engine-version"] == expected.spark and got["rows"] == 2
    assert [(r["order_id"], r["customer"]) for r in rows(out)] == [("1", "Ann"), ("3", "Cy")]
