"""The runner's warm SparkSession: local mode with the Glue job's Spark/Iceberg conf."""

from __future__ import annotations

import os
import re
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from pipeline_contract import settings
from pipeline_contract.job_config import aws_spark_conf, catalog_token_conf, local_spark_conf

# The driver's JIT. "tiered", the JVM's own, by default: with 1M rows in silver, C1 alone
# ("c1") made the full load 2x slower (203 s against 101 s), a 100k-row transaction 1.5x
# slower and idle commit -> visible slower too (14.0 against 11.4 s p50), though on a
# fresh driver with one-row batches it spends less CPU compiling. docs/performance.md
JIT_OPTIONS = {"c1": " -XX:TieredStopAtLevel=1", "tiered": ""}
DEFAULT_JIT = "tiered"

# the Spark application's name: a cluster's master lists the runner's drivers by it
APP_NAME = "cdclab-glue"

# glibc gives each thread that allocates its own 64 MB arena; the driver has ~70 threads
MALLOC_ARENAS = "2"


def jit_options(env: Mapping[str, str]) -> str:
    return JIT_OPTIONS[settings.env_choice(env, settings.ENV_DRIVER_JIT, tuple(JIT_OPTIONS),
                                           DEFAULT_JIT)]


def local_cores(master: str) -> int | None:
    """The cores a local master runs tasks on (`local`, `local[N]`, `local[*]`,
    `local[N, F]`); None for a cluster's master, whose workers offer their own."""
    found = re.fullmatch(r"local(?:\[\s*(\*|\d+)\s*(?:,\s*\d+\s*)?\])?", master.strip())
    if found is None:
        return None
    if found.group(1) is None:
        return 1
    return usable_cpus() if found.group(1) == "*" else int(found.group(1))


def usable_cpus() -> int:
    """The CPUs this process may run on (a container's cpuset; not a CPU quota, which
    the JVM also counts); all of them where the OS does not say (macOS)."""
    affinity = getattr(os, "sched_getaffinity", None)
    return len(affinity(0)) if affinity else (os.cpu_count() or 1)


def catalog_conf(env: Mapping[str, str], p: settings.PipelineSettings) -> dict[str, str]:
    """The lake catalog's Spark settings for `env`'s profile: Glue's catalog and real S3 on
    aws, the local REST catalog otherwise (plain strings: they travel to a run's process)."""
    if env.get(settings.ENV_PROFILE, settings.PROFILE_LOCAL) == settings.PROFILE_AWS:
        return aws_spark_conf(p) | {  # real S3 through S3A, default AWS credentials, no endpoint
            "spark.hadoop.fs.s3.impl": "org.apache.hadoop.fs.s3a.S3AFileSystem",
            "spark.hadoop.fs.s3a.aws.credentials.provider":
                "com.amazonaws.auth.DefaultAWSCredentialsProviderChain",
        }
    return local_spark_conf(env, p)


def session_conf(
    env: Mapping[str, str], catalog: Mapping[str, str], app_name: str = APP_NAME,
    master: str = settings.LOCAL_SPARK_MASTER, extra_conf: Mapping[str, str] | None = None,
    spark_jars: Sequence[Path] | None = None,
) -> dict[str, str]:
    """All Spark settings for the session (pure: unit-testable without a JVM).
    `catalog`: catalog_conf's; `spark_jars`: the Iceberg/S3A jars of the run's Glue
    version (default: the lab's)."""
    state = Path(env.get(settings.ENV_STATE_DIR, settings.state_dir())) / "spark"
    from glue_local import class_archive, glue_jvm

    jars = [*(settings.spark_jars() if spark_jars is None else spark_jars),
            glue_jvm.jar_path()]
    missing = [str(j) for j in jars if not j.exists()]
    if missing:
        raise FileNotFoundError(
            f"Spark jars missing: {', '.join(missing)} — run scripts/bootstrap.sh")
    # a standalone cluster (compose `spark` profile) when CDCLAB_SPARK_MASTER says so
    master = env.get(settings.ENV_SPARK_MASTER, master)
    cores = local_cores(master)
    # one shuffle partition and one RDD partition per core: Spark's 200 are 200 tasks
    # for a one-row batch (on the 2-core worker small runs classified in 8.8-29.6 s
    # against 3.4-10.9 s with 2: docs/performance.md, tenth run)
    parallelism = str(cores or settings.env_count(env, settings.ENV_SPARK_CORES,
                                                  settings.CLUSTER_CORES))
    conf = {
        "spark.master": master,
        "spark.app.name": app_name,
        "spark.jars": ",".join(str(j) for j in jars),
        "spark.sql.shuffle.partitions": parallelism,
        "spark.default.parallelism": parallelism,
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        # The status store lives even without the UI and keeps 1000 SQL executions (plan
        # text and metrics), 1000 jobs and stages, 100000 tasks: a warm driver running a
        # job every few seconds would carry hundreds of MB of it. Glue's drivers live for
        # one run; ours serves them all.
        "spark.sql.ui.retainedExecutions": "50",
        "spark.ui.retainedJobs": "100",
        "spark.ui.retainedStages": "100",
        "spark.ui.retainedTasks": "5000",
        "spark.ui.dagGraph.retainedRootRDDs": "100",
        "spark.sql.warehouse.dir": str(state / "warehouse"),
        # job bookmarks (spark/glue-jvm) live under the state dir, next to the Glue API's
        "spark.cdclab.stateDir": str(state.parent),
        # the JVM's temp files where this process keeps its own (a supervised service's
        # TMPDIR is emptied at each start: a killed JVM's never are); an OutOfMemoryError
        # in any thread ends the JVM (the runner sees it die and starts a new one) instead
        # of leaving a driver that answers but cannot run anything
        "spark.driver.extraJavaOptions": f"-Dderby.system.home={state / 'derby'} "
                                         f"-Djava.io.tmpdir={tempfile.gettempdir()} "
                                         "-XX:+ExitOnOutOfMemoryError" + jit_options(env)
                                         + class_archive.java_options(jars),
        "spark.pyspark.python": sys.executable,
        "spark.pyspark.driver.python": sys.executable,
        **catalog,
    }
    if cores is not None:
        # local mode: the driver's RPC and block manager listen on loopback only
        conf |= {"spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1",
                 # block manager files and the jars' copies (a cluster's workers keep
                 # their own local dirs)
                 "spark.local.dir": tempfile.gettempdir()}
    conf.update(extra_conf or {})
    return conf


def build_session(
    env: Mapping[str, str], catalog: Mapping[str, str], catalog_name: str,
    app_name: str = APP_NAME, master: str = settings.LOCAL_SPARK_MASTER,
    extra_conf: Mapping[str, str] | None = None, spark_jars: Sequence[Path] | None = None,
):
    """A local SparkSession configured like the Glue job (one JVM per process: if a
    session already exists, Spark returns it and static settings cannot change).
    `catalog`: catalog_conf's settings; `catalog_name`: the lake's catalog."""
    from pyspark.sql import SparkSession

    # The JVM inherits this process's environment: the S3 keys reach S3A and S3FileIO
    # there, never through the conf (which PySpark puts on the JVM's command line).
    for key in (settings.ENV_ACCESS_KEY, settings.ENV_SECRET_KEY):
        if env.get(key):
            os.environ[key] = env[key]
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # Python workers: this venv
    os.environ.setdefault("MALLOC_ARENA_MAX", MALLOC_ARENAS)  # the driver JVM inherits it
    from glue_local import glue_jvm

    glue_jvm.build()  # the JVM side of awsglue, once per source version
    builder = SparkSession.builder
    for key, value in session_conf(env, catalog, app_name, master, extra_conf,
                                   spark_jars).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    if env.get(settings.ENV_PROFILE, settings.PROFILE_LOCAL) != settings.PROFILE_AWS:
        # the catalog's token on the running JVM: in the context's conf, so every session
        # a run opens (newSession) inherits it, and in this one
        jconf = spark.sparkContext._jsc.sc().conf()
        for key, value in catalog_token_conf(env, [catalog_name]).items():
            jconf.set(key, value)
            spark.conf.set(key, value)
    return spark


def warm_up(spark, catalog: str) -> None:
    """Load what the first run would otherwise pay for: the SQL engine and the Iceberg
    catalog (`catalog`) classes (a cold first MERGE costs tens of seconds). Not Python
    workers: the pipeline's job starts none, and an idle daemon with its workers holds
    ~100 MiB; a job with a Python UDF starts the daemon at its first use, once per
    driver."""
    spark.range(100).selectExpr("sum(id)").collect()
    spark.sql(f"SHOW NAMESPACES IN {catalog}").collect()
