"""Which runtime a job run gets from its GlueVersion: 5.1 or 5.0, each AWS's own.

AWS Glue 5.1 is Spark 3.5.6 with Iceberg 1.10.0, AWS Glue 5.0 Spark 3.5.4 with Iceberg
1.7.1; both Python 3.11, Scala 2.12.18, Java 17 ([AWS Glue versions]
(https://docs.aws.amazon.com/glue/latest/dg/release-notes.html)). The lab's own Python
(.venv, the image's /opt/venv) is 5.1's, and its runs share the runner's warm driver. A
5.0 run's process is the Glue 5.0 venv's Python (AWSGlueDataplanePython 5.0.0, pyspark
3.5.4: requirements-glue50.lock) and starts its own Spark 3.5.4 driver with 5.0's jars,
as every Glue run has a driver of its own. Pins: versions.env (GLUE50_*).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from pipeline_contract import settings

ENV_GLUE50_VENV = "CDCLAB_GLUE50_VENV"  # where the Glue 5.0 venv is (the image sets it)
AWSGLUE_51 = "5.1.0"  # AWSGlueDataplanePython of the lab's own runtime (requirements-runtime.in)
INSTALL_HINT = "run `make setup` (scripts/bootstrap.sh), which installs it"


@dataclass(frozen=True)
class Runtime:
    glue_version: str
    spark: str  # pyspark's version, and the driver's
    iceberg: str
    awsglue: str  # AWSGlueDataplanePython's version
    python: Path  # the run process's interpreter
    jars: tuple[Path, ...]  # Spark jars besides spark/glue-jvm's
    shared_driver: bool  # on the runner's warm driver (5.1), or a driver of its own (5.0)


def pins(glue_version: str, versions: Mapping[str, str]) -> dict[str, str]:
    """Spark, Iceberg and awsglue versions of a Glue version, from versions.env's pins."""
    if glue_version == "5.1":
        return {"spark": versions["SPARK_VERSION"], "iceberg": versions["ICEBERG_VERSION"],
                "awsglue": AWSGLUE_51}
    if glue_version == "5.0":
        return {"spark": versions["GLUE50_SPARK_VERSION"],
                "iceberg": versions["GLUE50_ICEBERG_VERSION"],
                "awsglue": versions["GLUE50_AWSGLUE_VERSION"]}
    raise ValueError(f"GlueVersion {glue_version!r}: the lab has runtimes for 5.0 and 5.1")


def jar_names(iceberg: str, versions: Mapping[str, str]) -> list[str]:
    """The driver's jars: Iceberg's Spark runtime and AWS bundle of this Glue version; the
    S3A ones (hadoop-aws, its SDK) match pyspark's Hadoop 3.3.4 on both."""
    scala = versions["SCALA_BINARY_VERSION"]
    return [f"iceberg-spark-runtime-3.5_{scala}-{iceberg}.jar",
            f"iceberg-aws-bundle-{iceberg}.jar",
            f"hadoop-aws-{versions['HADOOP_AWS_VERSION']}.jar",
            f"aws-java-sdk-bundle-{versions['AWS_JAVA_SDK_BUNDLE_VERSION']}.jar"]


def runtime_of(glue_version: str, versions: Mapping[str, str], jars_dir: Path,
               lab_python: Path, glue50_python: Path) -> Runtime:
    """The runtime of a (checked) Glue version; pure."""
    p = pins(glue_version, versions)
    shared = glue_version == "5.1"
    return Runtime(glue_version, p["spark"], p["iceberg"], p["awsglue"],
                   lab_python if shared else glue50_python,
                   tuple(jars_dir / n for n in jar_names(p["iceberg"], versions)), shared)


def glue50_venv() -> Path:
    return Path(os.environ.get(ENV_GLUE50_VENV, settings.REPO_ROOT / ".venv-glue50"))


def runtime(glue_version: str) -> Runtime:
    return runtime_of(glue_version, settings.versions(), settings.jars_dir(),
                      Path(sys.executable), glue50_venv() / "bin" / "python")


def missing(rt: Runtime, glue_jvm_jar: Path) -> list[str]:
    """What of the runtime is not installed (the lab's own 5.1 is never checked here)."""
    if rt.shared_driver:
        return []
    return [str(p) for p in (rt.python, *rt.jars, glue_jvm_jar) if not p.exists()]


def not_installed(rt: Runtime, what: list[str]) -> str:
    return (f"cdclab: the AWS Glue {rt.glue_version} runtime (Spark {rt.spark}, Iceberg "
            f"{rt.iceberg}, AWSGlueDataplanePython {rt.awsglue}) this job's GlueVersion "
            f"{rt.glue_version} runs on is not installed (missing {', '.join(what)}); "
            f"{INSTALL_HINT}, or set GlueVersion to 5.1")


def child_pythonpath() -> str:
    """Where a Glue 5.0 run process finds cdclab and glue_local: the repo only, never the
    lab venv's site-packages (its pyspark 3.5.6 would shadow the runtime's 3.5.4)."""
    return os.pathsep.join([str(settings.REPO_ROOT), str(Path(__file__).resolve().parents[1])])


# What the lab's process may carry that would point a Glue 5.0 process at the lab's Spark
# or its Python (PySpark reads SPARK_HOME before its own install; a venv's marker).
FOREIGN_ENV = ("SPARK_HOME", "PYSPARK_DRIVER_PYTHON", "PYSPARK_SUBMIT_ARGS",
               "PYSPARK_GATEWAY_PORT", "PYSPARK_GATEWAY_SECRET", "VIRTUAL_ENV", "PYTHONHOME")


def child_env(base: Mapping[str, str], rt: Runtime, pythonpath: str | None = None) -> dict:
    """The environment of a run process of runtime `rt` (one with a driver of its own):
    the lab's, less what names the lab's Spark or Python; its Python workers run `rt`'s
    interpreter."""
    env = {k: v for k, v in base.items() if k not in FOREIGN_ENV}
    env |= {"PYTHONPATH": child_pythonpath() if pythonpath is None else pythonpath,
            "PYTHONUNBUFFERED": "1", "PYSPARK_PYTHON": str(rt.python)}
    return env


def driver_env(env: Mapping[str, str], state_dir: Path, note) -> dict[str, str]:
    """The settings a run's own driver is built from (glue_local.spark_session): the
    runner's, with its state dir (bookmarks); in local mode, since the `spark` profile's
    standalone cluster runs the lab's Spark, not this runtime's."""
    from glue_local.spark_session import local_cores

    own = {k: v for k, v in env.items() if k != settings.ENV_SPARK_MASTER}
    if local_cores(env.get(settings.ENV_SPARK_MASTER, "local")) is None:
        note(f"the Spark cluster at {env[settings.ENV_SPARK_MASTER]} runs the lab's Spark "
             f"{settings.versions()['SPARK_VERSION']}: this run's driver runs in local mode")
    return own | {settings.ENV_STATE_DIR: str(state_dir)}
