"""GlueContext: the Spark session plus create_dynamic_frame.from_catalog with bookmarks."""

from __future__ import annotations

import logging

from awsglue import catalog_source
from awsglue.dynamicframe import DynamicFrame


class GlueContext:
    def __init__(self, sparkContext, **_options) -> None:  # noqa: N803 - Glue's name
        from pyspark.sql import SparkSession

        self._sc = sparkContext
        self.spark_session = SparkSession.builder.getOrCreate()
        self.create_dynamic_frame = DynamicFrameReader(self)
        # Set by Job.init: the bookmark session of the current run.
        self.bookmarks = None

    def get_logger(self) -> logging.Logger:
        return logging.getLogger("awsglue")


class DynamicFrameReader:
    def __init__(self, glue_context: GlueContext) -> None:
        self._glue = glue_context

    def from_catalog(
        self, database: str | None = None, table_name: str | None = None,
        redshift_tmp_dir: str = "", transformation_ctx: str = "", push_down_predicate: str = "",
        additional_options: dict | None = None, catalog_id: str | None = None, **kwargs,
    ) -> DynamicFrame:
        import boto3

        database = database or kwargs.get("name_space")
        if not database or not table_name:
            raise ValueError("from_catalog needs database and table_name")
        glue = boto3.client("glue")
        get = {"DatabaseName": database, "Name": table_name}
        if catalog_id:
            get["CatalogId"] = catalog_id
        table = glue.get_table(**get)["Table"]
        location = table.get("StorageDescriptor", {}).get("Location")
        if not location:
            raise catalog_source.CatalogReadError(f"{database}.{table_name} has no Location")
        files = catalog_source.list_files(location)
        session = self._glue.bookmarks
        if session is not None and transformation_ctx:
            files = session.select(transformation_ctx, files)
        df = self._read(table, files)
        return DynamicFrame(df, self._glue, transformation_ctx or table_name)

    def _read(self, table: dict, files: list[catalog_source.SourceFile]):
        from pyspark.sql.types import StringType, StructField, StructType

        spark = self._glue.spark_session
        names = catalog_source.columns(table)
        schema = StructType([StructField(n, StringType()) for n in names])
        if not files:
            return spark.createDataFrame([], schema)
        reader = spark.read.options(**catalog_source.csv_options(table)).schema(schema)
        return reader.csv([f.path for f in files])
