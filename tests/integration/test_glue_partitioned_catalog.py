"""from_catalog on a Hive-style partitioned catalog table: AWS's awsglue over cdclab's JVM
side on a real local Spark, the catalog being the local Glue API (real HTTP, AWS's Java
SDK). S3 stands in as file:// paths."""

from __future__ import annotations

import boto3
import pytest

from glue_local.server import running_server

pytestmark = pytest.mark.integration

PARQUET = {"SerializationLibrary":
           "org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe"}


@pytest.fixture(scope="module")
def sdk_driver():
    """The test driver with the jars the Glue runner's driver has (spark_session.py): the
    JVM side reads the catalog through AWS's Java SDK. A driver JVM's classpath is fixed
    at launch, so one without them is replaced."""
    from pyspark import SparkContext

    from glue_local import glue_jvm
    from pipeline_contract import settings
    from tests.resources.spark import glue_session

    jars = ",".join(str(j) for j in [*settings.spark_jars(), glue_jvm.build()])
    spark = glue_session()
    if "aws-java-sdk-bundle" not in spark.conf.get("spark.jars", ""):
        spark.stop()
        SparkContext._gateway.shutdown()
        SparkContext._gateway = SparkContext._jvm = None
        spark = glue_session(extra_conf={"spark.jars": jars})
    return spark


@pytest.fixture()
def catalog(sdk_driver, tmp_path):
    """A boto3 Glue client; the test driver's JVM reads the same local Glue API."""
    system = sdk_driver.sparkContext._jvm.java.lang.System
    with running_server(tmp_path / "state", env={}, quiet=True) as server:
        system.setProperty("cdclab.glue.endpoint", server.endpoint)
        try:
            yield boto3.client("glue", endpoint_url=server.endpoint, region_name="us-east-1",
                               aws_access_key_id="x", aws_secret_access_key="y")
        finally:
            system.clearProperty("cdclab.glue.endpoint")


def test_push_down_and_catalog_predicates_read_only_matching_partitions(
        catalog, sdk_driver, tmp_path) -> None:
    from awsglue.context import GlueContext
    from awsglue.dynamicframe import DynamicFrame

    spark = sdk_driver
    glue = GlueContext(spark.sparkContext)
    root = tmp_path / "events"
    rows = [(1, "a", 2023, "eu"), (2, "b", 2024, "eu"), (3, "c", 2024, "us"),
            (4, "d", 2025, "us")]
    frame = DynamicFrame.fromDF(
        spark.createDataFrame(rows, "id int, v string, year int, region string"), glue, "e")
    glue.write_dynamic_frame.from_options(
        frame, "s3", {"path": f"file://{root}", "partitionKeys": ["year", "region"]},
        format="parquet")
    assert (root / "year=2024" / "region=us").is_dir()  # Hive-style folders
    # from_options reads the files, not the partition folders' values (Glue: partition
    # columns come from the Data Catalog, through from_catalog)
    back = glue.create_dynamic_frame.from_options(
        "s3", {"paths": [f"file://{root}"], "recurse": True}, format="parquet").toDF()
    assert sorted(r.id for r in back.collect()) == [1, 2, 3, 4]
    assert back.columns == ["id", "v"]

    catalog.create_database(DatabaseInput={"Name": "lake"})
    columns = [{"Name": "id", "Type": "int"}, {"Name": "v", "Type": "string"}]
    catalog.create_table(DatabaseName="lake", TableInput={
        "Name": "events", "PartitionKeys": [{"Name": "year", "Type": "int"},
                                            {"Name": "region", "Type": "string"}],
        "StorageDescriptor": {"Location": f"file://{root}", "Columns": columns,
                              "SerdeInfo": PARQUET}})
    # 2025/us is on disk but not registered: never read. 2023/eu is registered at a
    # location outside the Hive layout: read from there.
    moved = tmp_path / "elsewhere"
    (root / "year=2023" / "region=eu").rename(moved)
    catalog.batch_create_partition(DatabaseName="lake", TableName="events", PartitionInputList=[
        {"Values": [y, r], "StorageDescriptor": {"Location": loc, "Columns": columns,
                                                 "SerdeInfo": PARQUET}}
        for y, r, loc in [("2023", "eu", f"file://{moved}"),
                          ("2024", "eu", f"file://{root}/year=2024/region=eu"),
                          ("2024", "us", f"file://{root}/year=2024/region=us")]])

    def read(**kw) -> list[tuple]:
        df = glue.create_dynamic_frame.from_catalog(database="lake", table_name="events",
                                                    **kw).toDF()
        assert df.columns == ["id", "v", "year", "region"]
        assert df.schema["year"].dataType.simpleString() == "int"  # the key's catalog type
        return sorted(tuple(r) for r in df.collect())

    assert read() == [(1, "a", 2023, "eu"), (2, "b", 2024, "eu"), (3, "c", 2024, "us")]
    assert read(push_down_predicate="year > 2023 and region == 'us'") == [(3, "c", 2024, "us")]
    assert read(push_down_predicate="year = 1999") == []
    assert read(additional_options={"catalogPartitionPredicate": "region = 'eu'"}) == [
        (1, "a", 2023, "eu"), (2, "b", 2024, "eu")]
    assert read(push_down_predicate="year >= 2024",
                additional_options={"catalogPartitionPredicate": "region = 'eu'"}) == [
        (2, "b", 2024, "eu")]
    with pytest.raises(Exception, match="not a partition key"):
        read(additional_options={"catalogPartitionPredicate": "v = 'a'"})
    with pytest.raises(Exception, match="partitioned table lake.events is not supported"):
        glue.write_dynamic_frame.from_catalog(frame=frame, database="lake",
                                              table_name="events")
