"""Test resource: a local in-process Spark driver with cdclab's Glue JVM side (no servers);
yields the SparkSession. S3 stands in as file:// paths, the same Hadoop FileSystem code
path S3A takes; the Glue state (bookmarks) goes to a temp dir."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest


@pytest.fixture(scope="session")
def spark(tmp_path_factory) -> Iterator:
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    from glue_local import glue_jvm

    if SparkContext._active_spark_context is not None:  # another test's, without our jar
        SparkContext._active_spark_context.stop()
    if SparkContext._gateway is not None:
        # The driver JVM's classpath is fixed at launch: a gateway started by another
        # test lacks the Glue jar (py4j then finds no com.amazonaws.services.glue).
        SparkContext._gateway.shutdown()
        SparkContext._gateway = None
        SparkContext._jvm = None
    SparkSession._instantiatedSession = None  # never hand back the stopped one
    SparkSession._activeSession = None
    state = tmp_path_factory.mktemp("glue-state")
    session = (SparkSession.builder.master("local[1]").appName("cdclab-tests")
               .config("spark.jars", str(glue_jvm.build()))
               .config("spark.ui.enabled", "false")
               .config("spark.sql.shuffle.partitions", "1")
               .config("spark.driver.host", "127.0.0.1")
               .config("spark.driver.bindAddress", "127.0.0.1")
               .config("spark.cdclab.stateDir", str(state))
               .config("spark.pyspark.python", sys.executable)
               .getOrCreate())
    try:
        yield session
    finally:
        session.stop()
