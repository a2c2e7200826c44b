"""The Glue job's Spark/Iceberg configuration for each profile.

The job script never configures catalogs itself: on AWS Glue the settings arrive as the
`--conf` job argument; locally the runner builds its warm SparkSession from the very same
key set, differing only in the catalog implementation (REST locally, Glue Data Catalog
on AWS) and in the S3 endpoint.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pipeline_contract.settings import (
    DEFAULT_REGION,
    ENV_CATALOG_TOKEN,
    ENV_CATALOG_URI,
    ENV_REGION,
    ENV_S3_ENDPOINT,
    GlueJobSettings,
    PipelineSettings,
)

ICEBERG_EXTENSIONS = "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions"
S3_FILE_IO = "org.apache.iceberg.aws.s3.S3FileIO"
GLUE_CATALOG = "org.apache.iceberg.aws.glue.GlueCatalog"


def _common_conf(p: PipelineSettings) -> dict[str, str]:
    cat = f"spark.sql.catalog.{p.lake.catalog_name}"
    return {
        "spark.sql.extensions": ICEBERG_EXTENSIONS,
        cat: "org.apache.iceberg.spark.SparkCatalog",
        f"{cat}.warehouse": p.warehouse,
        f"{cat}.io-impl": S3_FILE_IO,
        "spark.sql.iceberg.handle-timestamp-without-timezone": "true",
        "spark.sql.session.timeZone": "UTC",
    }


def aws_spark_conf(p: PipelineSettings) -> dict[str, str]:
    """Catalog settings for AWS Glue 5.1: Glue Data Catalog + S3FileIO."""
    conf = _common_conf(p)
    conf[f"spark.sql.catalog.{p.lake.catalog_name}.catalog-impl"] = GLUE_CATALOG
    return conf


def local_spark_conf(env: Mapping[str, str], p: PipelineSettings) -> dict[str, str]:
    """Catalog settings for the local runner: Iceberg REST catalog + MinIO."""
    cat = f"spark.sql.catalog.{p.lake.catalog_name}"
    s3 = env[ENV_S3_ENDPOINT]
    region = env.get(ENV_REGION, DEFAULT_REGION)
    conf = _common_conf(p)
    conf.update(
        {
            f"{cat}.type": "rest",
            f"{cat}.uri": env[ENV_CATALOG_URI],
            f"{cat}.s3.endpoint": s3,
            f"{cat}.s3.path-style-access": "true",
            # no keys in the conf: PySpark passes it on the JVM's command line (visible
            # in `ps`); S3FileIO and S3A read AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY from
            # the driver's environment instead (spark_session.build_session puts them there)
            f"{cat}.client.region": region,
            # Glue reads s3:// through EMRFS; locally the same URIs go through S3A.
            "spark.hadoop.fs.s3.impl": "org.apache.hadoop.fs.s3a.S3AFileSystem",
            "spark.hadoop.fs.s3a.endpoint": s3,
            "spark.hadoop.fs.s3a.endpoint.region": region,
            "spark.hadoop.fs.s3a.path.style.access": "true",
            "spark.hadoop.fs.s3a.connection.ssl.enabled": str(s3.startswith("https")).lower(),
            "spark.hadoop.fs.s3a.aws.credentials.provider": (
                "com.amazonaws.auth.EnvironmentVariableCredentialsProvider"
            ),
        }
    )
    if env.get(ENV_CATALOG_TOKEN):  # the token itself: catalog_token_conf, on the live JVM
        conf.update({  # a static bearer token: no OAuth2 exchange, refresh or guessing
            f"{cat}.rest.auth.type": "oauth2",
            f"{cat}.oauth2-server-uri": env[ENV_CATALOG_URI].rstrip("/") + "/v1/oauth/tokens",
            f"{cat}.token-refresh-enabled": "false",
        })
    return conf


def catalog_token_conf(env: Mapping[str, str], catalogs: list[str]) -> dict[str, str]:
    """The REST catalog's bearer token for these Spark catalogs (Iceberg's `token` catalog
    property). Set on the running JVM, never in a launch conf: PySpark passes that on the
    driver's command line. Spark redacts `token` keys (spark.redaction.regex) in its logs."""
    token = env.get(ENV_CATALOG_TOKEN)
    if not token:
        return {}
    return {f"spark.sql.catalog.{name}.token": token for name in catalogs}


def conf_argument(conf: Mapping[str, str]) -> str:
    """Glue accepts one `--conf` job argument; further pairs are chained with ' --conf '."""
    return " --conf ".join(f"{k}={v}" for k, v in conf.items())


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


def input_cap_arguments(p: PipelineSettings) -> dict[str, str]:
    """The job's per-run input cap (Glue's boundedFiles / boundedSize): one of them."""
    if p.glue_job.bounded_size_bytes:
        return {"--bounded_size": str(p.glue_job.bounded_size_bytes)}
    return {"--bounded_files": str(p.glue_job.bounded_files)}


def maintenance_arguments(p: PipelineSettings) -> dict[str, str]:
    """[maintenance] as the job's own arguments (jobs/bronze_to_silver.py reads them)."""
    m = p.maintenance
    return {
        "--maintenance_interval_minutes": _number(m.interval_minutes),
        "--snapshot_retention_hours": _number(m.snapshot_retention_hours),
        "--retain_last_snapshots": str(m.retain_last_snapshots),
        "--orphan_file_age_hours": _number(m.orphan_file_age_hours),
        "--tombstone_retention_days": _number(m.tombstone_retention_days),
        "--max_snapshots": str(m.max_snapshots),
    }


def glue_default_arguments(
    p: PipelineSettings, *, temp_dir: str | None = None
) -> dict[str, str]:
    """DefaultArguments of the Glue job, identical in the local Glue API and on AWS."""
    args = {
        "--datalake-formats": "iceberg",
        "--conf": conf_argument(aws_spark_conf(p)),
        "--job-bookmark-option": p.glue_job.job_bookmark_option,
        "--enable-metrics": "true",
        "--enable-continuous-cloudwatch-log": "true",
        # the job's own parameter (read with getResolvedOptions): the tables it merges
        "--tables_config": p.tables_config,
        # written when a run leaves input for later; the Lambda starts the next run
        "--backlog_marker": p.backlog_marker(),
        # what a run is reading, so the next finds an object that fails every run
        "--input_guard": p.input_guard(),
        **input_cap_arguments(p),
        **maintenance_arguments(p),
    }
    if temp_dir:
        args["--TempDir"] = temp_dir
    return args


def job_definition(job: GlueJobSettings, *, role: str, script_location: str,
                   arguments: Mapping[str, str], worker_type: str | None = None,
                   workers: int | None = None, run_limits: bool = True,
                   tags: Mapping[str, str] | None = None) -> dict[str, Any]:
    """A Glue job as CreateJob takes it (UpdateJob's JobUpdate: the same less Tags): the
    one builder behind the local Glue API's pipeline job, user jobs and `cdclab deploy`.
    `run_limits` False leaves MaxConcurrentRuns and Timeout to Glue's defaults (a user's
    job is not bound by the pipeline job's). AWS Glue API, CreateJob."""
    definition: dict[str, Any] = {
        "Role": role,
        "Command": {"Name": "glueetl", "ScriptLocation": script_location,
                    "PythonVersion": "3"},
        "GlueVersion": job.glue_version,
        "WorkerType": worker_type or job.worker_type,
        "NumberOfWorkers": workers or job.number_of_workers,
        "MaxRetries": 0,  # a failed merge waits for the next batch, not a blind retry
        "DefaultArguments": dict(arguments),
    }
    if run_limits:
        definition["ExecutionProperty"] = {"MaxConcurrentRuns": job.max_concurrent_runs}
        definition["Timeout"] = job.timeout_minutes
    if tags:
        definition["Tags"] = dict(tags)
    return definition


def user_job_arguments(p: PipelineSettings, arguments: Mapping[str, str]) -> dict[str, str]:
    """A user's job's DefaultArguments: the lab's Glue 5 settings (Iceberg, the catalog
    `--conf`, TempDir, metrics, bookmarks on), the user's own arguments on top."""
    lab = glue_default_arguments(p, temp_dir=f"s3://{p.lake.scripts_bucket}/temp/")
    defaults = {k: lab[k] for k in ("--datalake-formats", "--conf", "--TempDir",
                                    "--enable-metrics")}
    defaults["--job-bookmark-option"] = "job-bookmark-enable"
    return {**defaults, **arguments}
