"""Catalog updates from a job (enableUpdateCatalog, setCatalogInfo) and a script's own
SparkConf, run as jobs through the local Glue API (tests/corpus/: AWS's blueprint
Conversion.py unmodified, scripts in Glue Studio's and AWS's documented styles); each
result is checked against what is computed here in plain Python, without Glue. S3 stands
in as file:// paths; the catalog is the local Glue API, which the JVM side reaches through
AWS's Java SDK and the scripts' boto3 through AWS_ENDPOINT_URL_GLUE."""

from __future__ import annotations

import csv
import io
import json
import socket
import time
from pathlib import Path

import boto3
import pytest

from glue_local import jobs_api
from glue_local.server import running_server
from tests.integration.test_glue_corpus import create, orders_csv

pytestmark = [pytest.mark.integration, pytest.mark.slow]


@pytest.fixture(scope="module")
def driver():
    """The test driver with the lab driver's jars (AWS's Java SDK, Iceberg) and Iceberg's
    SQL extensions, as spark_session.py starts it."""
    from pyspark import SparkContext

    from glue_local import glue_jvm
    from pipeline_contract import settings
    from pipeline_contract.job_config import ICEBERG_EXTENSIONS
    from tests.resources.spark import glue_session

    spark = glue_session()
    if "aws-java-sdk-bundle" not in spark.conf.get("spark.jars", "") or \
            spark.conf.get("spark.sql.extensions", "") != ICEBERG_EXTENSIONS:
        spark.stop()
        SparkContext._gateway.shutdown()
        SparkContext._gateway = SparkContext._jvm = None
        jars = ",".join(str(j) for j in [*settings.spark_jars(), glue_jvm.build()])
        spark = glue_session(extra_conf={"spark.jars": jars,
                                         "spark.sql.extensions": ICEBERG_EXTENSIONS})
    return spark


@pytest.fixture()
def glue(driver, tmp_path, monkeypatch):
    from tests.resources.spark import glue_session

    system = driver.sparkContext._jvm.java.lang.System
    with socket.socket() as s:  # the port first: run processes inherit the environment
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    # the run processes call the same API with boto3
    monkeypatch.setenv("AWS_ENDPOINT_URL_GLUE", f"http://127.0.0.1:{port}")
    for key, value in [("AWS_ACCESS_KEY_ID", "x"), ("AWS_SECRET_ACCESS_KEY", "y"),
                       ("AWS_DEFAULT_REGION", "us-east-1")]:
        monkeypatch.setenv(key, value)
    with running_server(tmp_path / "state", port=port, env={}, quiet=True,
                        session_factory=glue_session) as server:
        system.setProperty("cdclab.glue.endpoint", server.endpoint)
        try:
            yield boto3.client("glue", endpoint_url=server.endpoint, region_name="us-east-1")
        finally:
            system.clearProperty("cdclab.glue.endpoint")


def finish(client, name: str, timeout: float = 180) -> tuple[dict, str]:
    run_id = client.start_job_run(JobName=name)["JobRunId"]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = client.get_job_run(JobName=name, RunId=run_id)["JobRun"]
        if got["JobRunState"] in jobs_api.FINAL_STATES:
            return got, Path(got["LogGroupName"], f"{run_id}.log").read_text()
        time.sleep(0.2)
    raise AssertionError(f"{name} {run_id} did not finish")


def succeeded(client, name: str) -> str:
    got, log = finish(client, name)
    assert got["JobRunState"] == "SUCCEEDED", (got.get("ErrorMessage"), log)
    return log


def inline_job(client, tmp_path: Path, name: str, source: str, **args: str) -> None:
    script = tmp_path / f"{name}.py"
    script.write_text(source)
    client.create_job(Name=name, Role="r", GlueVersion="5.1",
                      Command={"Name": "glueetl", "ScriptLocation": str(script)},
                      DefaultArguments={f"--{k}": v for k, v in args.items()})


def table(client, database: str, name: str) -> dict:
    return client.get_table(DatabaseName=database, Name=name)["Table"]


def columns(t: dict) -> list[tuple[str, str]]:
    return [(c["Name"], c["Type"]) for c in t["StorageDescriptor"]["Columns"]]


def partitions(client, database: str, name: str) -> dict[tuple, str]:
    got = client.get_partitions(DatabaseName=database, TableName=name)["Partitions"]
    return {tuple(p["Values"]): p["StorageDescriptor"]["Location"] for p in got}


def json_rows(folder: Path) -> list[dict]:
    """Every record of the JSON objects under folder, with Hive folder values added."""
    rows = []
    for f in folder.rglob("run-*"):
        keys = dict(p.split("=", 1) for p in f.relative_to(folder).parts[:-1])
        rows += [{**json.loads(line), **keys} for line in f.read_text().splitlines()]
    return rows


# --- AWS's blueprint Conversion.py (developing-blueprints-sample), unmodified ---------

RAW = {"2023": [{"id": 1, "name": "Ann", "score": 1.5}, {"id": 2, "name": "Bob", "score": 2.0}],
       "2024": [{"id": 3, "name": "Cy", "score": 3.25}]}


def test_blueprint_conversion_creates_the_parquet_table_with_its_partitions(
        glue, tmp_path, driver):
    raw, out = tmp_path / "raw", tmp_path / "out"
    for year, records in RAW.items():
        (raw / f"year={year}").mkdir(parents=True)
        (raw / f"year={year}" / "part.json").write_text(
            "\n".join(json.dumps(r) for r in records) + "\n")
    glue.create_database(DatabaseInput={"Name": "blueprints"})
    cols = [{"Name": "id", "Type": "bigint"}, {"Name": "name", "Type": "string"},
            {"Name": "score", "Type": "double"}]
    sd = {"Location": f"file://{raw}", "Columns": cols,
          "SerdeInfo": {"SerializationLibrary": "org.openx.data.jsonserde.JsonSerDe"}}
    glue.create_table(DatabaseName="blueprints", TableInput={
        "Name": "raw_orders", "StorageDescriptor": sd,
        "PartitionKeys": [{"Name": "year", "Type": "string"}]})
    glue.batch_create_partition(DatabaseName="blueprints", TableName="raw_orders",
                                PartitionInputList=[
                                    {"Values": [y], "StorageDescriptor": {
                                        **sd, "Location": f"file://{raw}/year={y}"}}
                                    for y in RAW])
    create(glue, "conversion", "blueprint_conversion.py", region_name="us-east-1",
           database_name="blueprints", table_prefix="raw_", output_path=f"file://{out}")
    succeeded(glue, "conversion")

    made = table(glue, "blueprints", "orders")  # tableName[len(tablePrefix):]
    assert made["StorageDescriptor"]["Location"] == f"file://{out}"
    assert made["Parameters"]["classification"] == "parquet"
    assert made["StorageDescriptor"]["SerdeInfo"]["SerializationLibrary"].endswith(
        "ParquetHiveSerDe")
    assert columns(made) == [(c["Name"], c["Type"]) for c in cols]
    assert made["PartitionKeys"] == [{"Name": "year", "Type": "string"}]
    assert partitions(glue, "blueprints", "orders") == {
        (y,): f"file://{out}/year={y}/" for y in RAW}

    # the new table reads back through the catalog as the source's rows
    from awsglue.context import GlueContext

    back = GlueContext(driver.sparkContext).create_dynamic_frame.from_catalog(
        database="blueprints", table_name="orders").toDF()
    want = sorted((r["id"], r["name"], r["score"], y) for y, rs in RAW.items() for r in rs)
    assert sorted(tuple(r) for r in back.select("id", "name", "score", "year").collect()) == want


# --- Glue Studio's "update the Data Catalog" S3 target ---------------------------------

def test_glue_studio_target_creates_then_updates_or_keeps_the_schema(glue, tmp_path):
    src, out = tmp_path / "orders", tmp_path / "out"
    first = [(1, "Ann", "5.0", "DE"), (2, "Bob", "7.5", "FR")]
    orders_csv(src / "a.csv", first)
    glue.create_database(DatabaseInput={"Name": "studio"})

    def job(behavior: str) -> str:
        name = f"studio-{behavior}"
        if name not in glue.list_jobs()["JobNames"]:
            create(glue, name, "glue_studio_update_catalog.py", source=f"file://{src}",
                   target=f"file://{out}", database="studio", table="orders",
                   update_behavior=behavior)
        return succeeded(glue, name)

    def set_columns(names: list[tuple[str, str]]) -> None:
        t = table(glue, "studio", "orders")
        keep = ("Name", "StorageDescriptor", "PartitionKeys", "TableType", "Parameters")
        t["StorageDescriptor"]["Columns"] = [{"Name": n, "Type": ty} for n, ty in names]
        glue.update_table(DatabaseName="studio",
                          TableInput={k: v for k, v in t.items() if k in keep})

    frame_columns = [("order_id", "bigint"), ("customer", "string"), ("amount", "double")]
    job("UPDATE_IN_DATABASE")  # no table yet: created
    t = table(glue, "studio", "orders")
    assert columns(t) == frame_columns
    assert t["PartitionKeys"] == [{"Name": "country", "Type": "string"}]
    assert t["Parameters"]["classification"] == "json"
    assert t["StorageDescriptor"]["Location"] == f"file://{out}"
    assert partitions(glue, "studio", "orders") == {
        ("DE",): f"file://{out}/country=DE/", ("FR",): f"file://{out}/country=FR/"}

    # LOG keeps the table's schema; the frame's columns are no subset of it: no partition
    orders_csv(src / "b.csv", [(3, "Cy", "1", "US")])
    set_columns([("order_id", "bigint"), ("customer", "string")])
    job("LOG")
    assert columns(table(glue, "studio", "orders")) == [("order_id", "bigint"),
                                                        ("customer", "string")]
    assert set(partitions(glue, "studio", "orders")) == {("DE",), ("FR",)}
    # LOG with the frame's columns a subset of the table's: partitions added, schema kept
    wide = [*frame_columns, ("note", "string")]
    set_columns(wide)
    job("LOG")
    assert columns(table(glue, "studio", "orders")) == wide
    assert set(partitions(glue, "studio", "orders")) == {("DE",), ("FR",), ("US",)}
    # UPDATE_IN_DATABASE puts the frame's schema back and adds the new partition
    orders_csv(src / "c.csv", [(4, "Di", "2.5", "JP")])
    job("UPDATE_IN_DATABASE")
    assert columns(table(glue, "studio", "orders")) == frame_columns
    assert set(partitions(glue, "studio", "orders")) == {("DE",), ("FR",), ("US",), ("JP",)}

    # the data: every run appended every source row (no bookmarks), as plain Python reads it
    runs = [first, first + [(3, "Cy", "1", "US")], first + [(3, "Cy", "1", "US")],
            first + [(3, "Cy", "1", "US"), (4, "Di", "2.5", "JP")]]
    want = sorted((int(i), c, float(a), k) for rows in runs for i, c, a, k in rows)
    got = sorted((r["order_id"], r["customer"], r["amount"], r["country"])
                 for r in json_rows(out))
    assert got == want


# --- write_dynamic_frame_from_catalog with enableUpdateCatalog (AWS's docs) -----------

PEOPLE = [{"id": 1, "name": "Ann", "city": "Oslo"}, {"id": 2, "name": "Bob", "city": "Rome"},
          {"id": 3, "name": "Cy", "city": "Oslo"}]


def test_catalog_sink_updates_an_unpartitioned_and_a_partitioned_table(
        glue, tmp_path, driver):
    src = tmp_path / "people"
    src.mkdir()
    (src / "p.json").write_text("\n".join(json.dumps(p) for p in PEOPLE) + "\n")
    glue.create_database(DatabaseInput={"Name": "sinkdb"})
    lazy = {"SerializationLibrary": "org.apache.hadoop.hive.serde2.lazy.LazySimpleSerDe",
            "Parameters": {"field.delim": ","}}
    old = [{"Name": "id", "Type": "bigint"}, {"Name": "name", "Type": "string"}]
    glue.create_table(DatabaseName="sinkdb", TableInput={
        "Name": "people", "Parameters": {"classification": "csv"}, "StorageDescriptor": {
            "Location": f"file://{tmp_path / 'people_csv'}", "Columns": old,
            "SerdeInfo": lazy}})
    glue.create_table(DatabaseName="sinkdb", TableInput={
        "Name": "visits", "Parameters": {"classification": "json"},
        "PartitionKeys": [{"Name": "city", "Type": "string"}], "StorageDescriptor": {
            "Location": f"file://{tmp_path / 'visits'}", "Columns": old,
            "SerdeInfo": {"SerializationLibrary": "org.openx.data.jsonserde.JsonSerDe"}}})
    for target in ("people", "visits"):
        create(glue, f"sink-{target}", "update_catalog_from_catalog_sink.py",
               source=f"file://{src}", database="sinkdb", table=target)
        succeeded(glue, f"sink-{target}")

    # UPDATE_IN_DATABASE: the frame's columns, in its order (Spark's JSON reader sorts them)
    wide = {("id", "bigint"), ("name", "string"), ("city", "string")}
    people = columns(table(glue, "sinkdb", "people"))
    assert set(people) == wide
    lines = []
    for f in (tmp_path / "people_csv").glob("run-*"):
        lines += list(csv.reader(io.StringIO(f.read_text())))
    assert sorted(lines) == sorted([str(p[n]) for n, _ in people] for p in PEOPLE)

    assert set(columns(table(glue, "sinkdb", "visits"))) == wide - {("city", "string")}
    assert partitions(glue, "sinkdb", "visits") == {
        (c,): f"file://{tmp_path / 'visits'}/city={c}/" for c in {p["city"] for p in PEOPLE}}
    from awsglue.context import GlueContext

    context = GlueContext(driver.sparkContext)
    for name in ("people", "visits"):
        back = context.create_dynamic_frame.from_catalog(database="sinkdb",
                                                         table_name=name).toDF()
        assert sorted(tuple(r) for r in back.select("id", "name", "city").collect()) == \
            sorted((p["id"], p["name"], p["city"]) for p in PEOPLE)


REFUSED = """
import sys
from awsglue.context import GlueContext
from awsglue.utils import getResolvedOptions
from pyspark.context import SparkContext

args = getResolvedOptions(sys.argv, ["target", "format"])
glue = GlueContext(SparkContext.getOrCreate())
frame = glue.create_dynamic_frame.from_options(
    "s3", {"paths": [args["target"] + "-in"]}, format="json")
sink = glue.getSink(connection_type="s3", path=args["target"], enableUpdateCatalog=True)
sink.setFormat(args["format"])
sink.setCatalogInfo(catalogDatabase="nope", catalogTableName="t")
sink.writeFrame(frame)
"""


@pytest.mark.parametrize(("fmt", "named"), [
    ("orc", "enableUpdateCatalog with format orc"),
    ("parquet", "enableUpdateCatalog with Spark's parquet writer")])
def test_formats_aws_does_not_update_fail_by_name_before_writing(glue, tmp_path, fmt, named):
    out = tmp_path / "out"
    (tmp_path / "out-in").mkdir()
    (tmp_path / "out-in" / "a.json").write_text('{"a": 1}\n')
    inline_job(glue, tmp_path, f"refused-{fmt}", REFUSED, target=f"file://{out}", format=fmt)
    got, log = finish(glue, f"refused-{fmt}")
    assert got["JobRunState"] == "FAILED"
    assert named in got["ErrorMessage"] and "not supported locally" in got["ErrorMessage"]
    assert not out.exists()  # refused before anything was written


# --- a script's own SparkConf ----------------------------------------------------------

def test_script_sparkconf_defines_its_catalog_and_sql_settings(glue, tmp_path, driver):
    out = tmp_path / "out"
    create(glue, "iceberg-conf", "iceberg_sparkconf.py",
           warehouse=f"file://{tmp_path / 'warehouse'}", target=f"file://{out}")
    log = succeeded(glue, "iceberg-conf")
    rows = [json.loads(line) for f in out.glob("part-*") for line in f.read_text().splitlines()]
    assert rows == [{"id": 1, "at": "2024-01-02 03:04:05", "tz": "Asia/Tokyo"}]
    assert (tmp_path / "warehouse" / "db" / "events" / "metadata").is_dir()
    assert "SparkConf spark.app.name is a driver-process setting" in log
    # the settings were the run's session's, not the shared driver's
    assert driver.conf.get("spark.sql.session.timeZone") != "Asia/Tokyo"
    assert driver.conf.get("spark.sql.catalog.my_catalog", None) is None


BUILDER = """
from pyspark.sql import SparkSession
spark = (SparkSession.builder.config("spark.sql.shuffle.partitions", "7")
         .enableHiveSupport().getOrCreate())
print("partitions", spark.conf.get("spark.sql.shuffle.partitions"))
from pyspark import SparkConf, SparkContext
SparkContext.getOrCreate(SparkConf().set("spark.serializer",
                                         "org.apache.spark.serializer.KryoSerializer"))
"""


def test_builder_settings_apply_and_a_driver_setting_fails_by_name(glue, tmp_path):
    inline_job(glue, tmp_path, "builder", BUILDER)
    got, log = finish(glue, "builder")
    assert "partitions 7" in log
    # a builder's driver-level setting is noted, as Spark's builder warns over a session
    assert "SparkSession.builder spark.sql.catalogImplementation" in log
    assert got["JobRunState"] == "FAILED"
    assert "spark.serializer" in got["ErrorMessage"] and "--conf" in got["ErrorMessage"]


# --- the user's buckets ([glue_job] job_buckets) on the real MinIO --------------------

def test_the_jobs_role_reaches_declared_buckets_and_no_other(minio):
    import dataclasses

    from botocore.exceptions import ClientError

    from cdclab.services.minio import MinioService, s3_client
    from pipeline_contract import minio_users, settings

    shipped = settings.load_pipeline()
    mine = dataclasses.replace(shipped, glue_job=dataclasses.replace(
        shipped.glue_job, job_buckets=["cdclab-users-own"]))
    minio["s3"].create_bucket(Bucket="cdclab-undeclared")
    try:
        # creates it, grants the jobs' user
        MinioService().after_start(dataclasses.replace(minio["ctx"], pipeline=mine))
        s3 = s3_client({**minio["env"], **minio_users.service_keys(minio["env"], "glue")})
        s3.put_object(Bucket="cdclab-users-own", Key="out/a.json", Body=b"{}\n")
        assert s3.get_object(Bucket="cdclab-users-own", Key="out/a.json")["Body"].read() \
            == b"{}\n"
        listed = s3.list_objects_v2(Bucket="cdclab-users-own", Prefix="out/")
        assert [o["Key"] for o in listed["Contents"]] == ["out/a.json"]
        s3.delete_object(Bucket="cdclab-users-own", Key="out/a.json")
        for call, kwargs in [(s3.put_object, {"Key": "x", "Body": b"x"}),
                             (s3.list_objects_v2, {})]:
            with pytest.raises(ClientError) as err:
                call(Bucket="cdclab-undeclared", **kwargs)
            assert err.value.response["Error"]["Code"] == "AccessDenied"
        watcher = s3_client({**minio["env"],
                             **minio_users.service_keys(minio["env"], "watcher")})
        with pytest.raises(ClientError):  # only the jobs' role
            watcher.put_object(Bucket="cdclab-users-own", Key="x", Body=b"x")
    finally:
        minio_users.ensure_users(minio["env"], shipped)
