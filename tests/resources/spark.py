"""Test resource: a local in-process Spark driver with cdclab's Glue JVM side (no servers);
`spark` yields a live SparkSession. S3 stands in as file:// paths, the same Hadoop
FileSystem code path S3A takes; the Glue state (bookmarks) goes to a temp dir.

`glue_session` is also the session factory of the local Glue runner in tests: the runner
may restart the driver (a run's driver-level `--conf`), so `spark` looks the live session
up on each use instead of keeping the first.
"""

from __future__ import annotations

import atexit
import functools
import os
import shutil
import sys
import tempfile
from collections.abc import Mapping

import pytest


@functools.cache
def _state() -> str:
    """The test driver's Glue state dir, made when a driver first needs it: a process that
    only imports this plugin (Spark's Python workers unpickling a test's function end with
    os._exit, so no atexit runs) leaves no empty folder behind."""
    folder = tempfile.mkdtemp(prefix="cdclab-glue-state-")
    atexit.register(shutil.rmtree, folder, ignore_errors=True)  # tests clean up after themselves
    return folder


def glue_session(env: Mapping[str, str] | None = None,
                 extra_conf: Mapping[str, str] | None = None):
    """The test driver (started, or restarted with extra_conf when that is given)."""
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    from glue_local import glue_jvm
    from glue_local.driver import session_alive

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # workers import awsglue too
    current = SparkSession._instantiatedSession
    if not extra_conf and current is not None and session_alive(current) and \
            current.conf.get("spark.cdclab.stateDir", None) == _state():
        return _made_current(current)
    if SparkContext._active_spark_context is not None:
        SparkContext._active_spark_context.stop()
    if SparkContext._gateway is not None and not _has_glue_jar():
        # The driver JVM's classpath is fixed at launch: a gateway started by another
        # test lacks the Glue jar (py4j then finds no com.amazonaws.services.glue).
        SparkContext._gateway.shutdown()
        SparkContext._gateway = None
        SparkContext._jvm = None
    SparkSession._instantiatedSession = None  # never hand back the stopped one
    SparkSession._activeSession = None
    builder = (SparkSession.builder.master("local[1]").appName("cdclab-tests")
               .config("spark.jars", str(glue_jvm.build()))
               .config("spark.ui.enabled", "false")
               .config("spark.sql.shuffle.partitions", "1")
               .config("spark.driver.host", "127.0.0.1")
               .config("spark.driver.bindAddress", "127.0.0.1")
               .config("spark.cdclab.stateDir", _state())
               # its block manager's files too, removed with it at exit (in /tmp, a driver
               # that did not stop cleanly would leave them)
               .config("spark.local.dir", _state())
               .config("spark.pyspark.python", sys.executable))
    for key, value in (extra_conf or {}).items():
        builder = builder.config(key, value)
    return _made_current(builder.getOrCreate())


def _made_current(session):
    """The JVM's active and default session are this one: a Glue runner's driver (run in
    this process by some tests) leaves its own, stopped at its end, behind as the JVM
    thread's active session, which `F.expr` and other JVM-side lookups would then use."""
    jvm_session = session._jvm.org.apache.spark.sql.SparkSession
    jvm_session.setActiveSession(session._jsparkSession)
    jvm_session.setDefaultSession(session._jsparkSession)
    return session


def _has_glue_jar() -> bool:
    from py4j.java_gateway import JavaClass
    from pyspark import SparkContext

    try:  # py4j answers a JavaPackage for a class it cannot load
        return isinstance(SparkContext._jvm.com.amazonaws.services.glue.GlueContext, JavaClass)
    except Exception:
        return False


class LiveSession:
    """The live test driver's SparkSession, looked up on each use (a Glue runner test may
    have restarted the driver since the fixture was made)."""

    def __getattr__(self, name: str):
        return getattr(glue_session(), name)


@pytest.fixture(scope="session")
def spark():
    glue_session()
    return LiveSession()
