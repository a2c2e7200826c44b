"""Every configuration key and pipeline name, in one place.

Services never invent their own keys: they read the environment variables named here.
The embedded supervisor and docker compose both set exactly these variables, so every
program behaves the same in both runtimes.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent

# --- environment variables (the configuration keys) ---------------------------------
ENV_STATE_DIR = "CDCLAB_STATE_DIR"  # all runtime data: pgdata, minio data, logs, env file
ENV_CACHE_DIR = "CDCLAB_CACHE"  # downloads (jars, minio binary); outside the repo
ENV_PG_DSN = "CDCLAB_PG_DSN"  # postgresql://user:pw@host:port/airbnb_db
ENV_CATALOG_URI = "CDCLAB_CATALOG_URI"  # Iceberg REST catalog base URL
ENV_CATALOG_TOKEN = "CDCLAB_CATALOG_TOKEN"  # its bearer token (generated; catalog `token`)
ENV_GLUE_ENDPOINT = "AWS_ENDPOINT_URL_GLUE"  # boto3 reads it: local Glue API
ENV_S3_ENDPOINT = "AWS_ENDPOINT_URL_S3"  # boto3 reads it: MinIO
ENV_ACCESS_KEY = "AWS_ACCESS_KEY_ID"
ENV_SECRET_KEY = "AWS_SECRET_ACCESS_KEY"
ENV_REGION = "AWS_DEFAULT_REGION"
ENV_PROFILE = "CDCLAB_PROFILE"  # local | aws
ENV_BACKEND = "CDCLAB_BACKEND"  # tests: embedded | containers
ENV_RUNTIME = "CDCLAB_RUNTIME"  # the CLI's stack: embedded (default) | compose
ENV_CREDENTIALS_FILE = "CDCLAB_CREDENTIALS_FILE"  # containers: the generated credentials
# the aws profile's Glue API: the stack's credentials file, read only for who may call it
# (its AWS_* pair must not enter the env: there it would replace the developer's AWS identity)
ENV_GLUE_CLIENTS_FILE = "CDCLAB_GLUE_CLIENTS_FILE"
ENV_COMPOSE_PROJECT = "COMPOSE_PROJECT_NAME"  # which compose stack the CLI talks to
ENV_SPARK_MASTER = "CDCLAB_SPARK_MASTER"  # the runner's Spark master (default local[2])
ENV_GLUE_RUN_LOGS = "CDCLAB_GLUE_RUN_LOGS"  # where Glue run logs are (default <state>/logs/...)
ENV_JARS_DIR = "CDCLAB_JARS_DIR"  # where bootstrap put the resolved jars
ENV_BATCH_INTERVAL = "CDCLAB_BATCH_INTERVAL_SECONDS"  # overrides dms.cdc_max_batch_interval
ENV_BATCH_SIZE_KB = "CDCLAB_BATCH_SIZE_KB"  # overrides dms.cdc_min_file_size_kb
ENV_WATCH_INTERVAL = "CDCLAB_WATCH_INTERVAL_SECONDS"  # watcher listing period
ENV_PIPELINE_FILE = "CDCLAB_PIPELINE_FILE"  # another pipeline.toml (default cdclab/pipeline.toml)
# The watcher rewrites its state file at least every full re-list (30 s): older than
# this, it is not listing (hung, or S3 unreachable). scripts/container-health.sh agrees.
WATCHER_STALE_SECONDS = 90
# Bucket names differ per AWS account (globally unique): these override pipeline.toml.
ENV_BRONZE_BUCKET = "CDCLAB_BRONZE_BUCKET"
ENV_SILVER_BUCKET = "CDCLAB_SILVER_BUCKET"
ENV_SCRIPTS_BUCKET = "CDCLAB_SCRIPTS_BUCKET"
ENV_AWS_REGION = "AWS_REGION"  # what the AWS SDKs for Java read (boto3 reads AWS_DEFAULT_REGION)

# A Glue job tagged so is started with the pipeline's job for every batch of new bronze
# objects (the local watcher finds them with ListJobs; `cdclab job add --trigger` tags)
TRIGGER_TAG, TRIGGER_ON_BRONZE = "cdclab:trigger", "bronze-object"
BACKLOG_SUFFIX = ".backlog"  # <job>.backlog beside the job's script: input waits
INPUT_GUARD_SUFFIX = ".input-guard.json"  # <job>.input-guard.json: what runs failed on
LOCAL_ACCOUNT = "000000000000"  # the account id of the local Glue API's ARNs

DEFAULT_REGION = "us-east-1"
LAB_BATCH_INTERVAL_S = 1  # CDC files in a second, not DMS's 60 s ...
LAB_BATCH_SIZE_KB = 64  # ... or 32000 KB
PROFILE_LOCAL = "local"
PROFILE_AWS = "aws"


def cache_dir() -> Path:
    default = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "cdclab"
    return Path(os.environ.get(ENV_CACHE_DIR, default))


def state_dir() -> Path:
    return Path(os.environ.get(ENV_STATE_DIR, REPO_ROOT / ".cdclab"))


@cache
def versions() -> dict[str, str]:
    """Platform pins from versions.env (the one place that defines them)."""
    pins: dict[str, str] = {}
    for line in (REPO_ROOT / "versions.env").read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#") and "=" in line:
            key, value = line.split("=", 1)
            pins[key.strip()] = value.strip()
    return pins


def glue_run_logs(state: Path | None = None) -> Path:
    """Per-run logs of the local Glue API (the job's CDCLAB_METRICS lines are there)."""
    default = (state or state_dir()) / "logs" / "glue-runs"
    return Path(os.environ.get(ENV_GLUE_RUN_LOGS, default))


def jars_dir() -> Path:
    return Path(os.environ.get(ENV_JARS_DIR, cache_dir() / "jars"))


def minio_binary() -> Path:
    return cache_dir() / "bin" / f"minio-{versions()['MINIO_VERSION']}"


def spark_jars() -> list[Path]:
    """Jars the Spark driver needs: Iceberg runtime + AWS bundle, hadoop-aws for s3://."""
    v = versions()
    names = [
        f"iceberg-spark-runtime-3.5_{v['SCALA_BINARY_VERSION']}-{v['ICEBERG_VERSION']}.jar",
        f"iceberg-aws-bundle-{v['ICEBERG_VERSION']}.jar",
        f"hadoop-aws-{v['HADOOP_AWS_VERSION']}.jar",
        f"aws-java-sdk-bundle-{v['AWS_JAVA_SDK_BUNDLE_VERSION']}.jar",
    ]
    return [jars_dir() / n for n in names]


def iceberg_rest_jar() -> Path:
    return jars_dir() / f"iceberg-open-api-{versions()['ICEBERG_REST_VERSION']}.jar"


# --- the pipeline description (cdclab/pipeline.toml) --------------------------------
@dataclass(frozen=True)
class SourceSettings:
    database: str
    schema: str
    table: str
    primary_key: str
    publication: str
    slot: str
    # DMS table-mapping JSON (path from the repo root). Empty: `table` alone, plus the
    # change-sequence column. The emitter and `cdclab deploy` both use it.
    table_mappings: str = ""


@dataclass(frozen=True)
class DmsSettings:
    bucket_folder: str
    data_format: str
    add_column_name: bool
    include_op_for_full_load: bool
    timestamp_column_name: str
    csv_delimiter: str
    csv_row_delimiter: str
    csv_null_value: str
    change_seq_column: str
    max_file_size_kb: int
    # Unset: the lab batches small (LAB_BATCH_*) and `cdclab deploy` leaves DMS's own
    # defaults (60 s, 32000 KB). Set: both use the value.
    cdc_max_batch_interval_seconds: int | None = None
    cdc_min_file_size_kb: int | None = None
    # The replication task's MigrationType: full-load-and-cdc | full-load | cdc
    migration_type: str = "full-load-and-cdc"
    # More S3 target settings (CHAP_Target.S3), AWS's defaults
    rfc4180: bool = True
    quote_empty_strings: bool = True  # the lab's choice; see docs/dms-fidelity.md
    change_seq_layout: str = "dms"  # dms | lsn (dms_emitter/change_seq.py)
    compression_type: str = "NONE"
    cdc_inserts_only: bool = False
    cdc_inserts_and_updates: bool = False
    use_task_start_time_for_full_load_timestamp: bool = False
    # Task setting (TargetMetadata.LobMaxSize, KB); S3 has limited LOB mode only
    lob_max_size_kb: int = 32
    # PostgreSQL source endpoint settings (CHAP_Source.PostgreSQL), AWS's defaults
    trim_space_in_char: bool = True
    map_unbounded_numeric_as_string: bool = False
    fail_tasks_on_lob_truncation: bool = False
    # What AWS does not document; the lab's choices (docs/dms-fidelity.md)
    pk_update_handling: str = "update"  # update | delete-insert
    unchanged_toast: str = "lookup"  # lookup | null
    bytea_format: str = "hex"  # hex | base64 | postgres
    timestamptz_time_zone: str = "UTC"
    interval_style: str = "postgres"  # PostgreSQL's IntervalStyle for interval values
    # DataFormat parquet (CHAP_Target.S3 "Settings for using .parquet files"); AWS's
    # defaults. The page/group sizes unset: the emitter uses DMS's defaults and
    # `cdclab deploy` sends nothing.
    parquet_version: str = "parquet-1-0"  # parquet-1-0 | parquet-2-0
    parquet_timestamp_in_millisecond: bool = False
    enable_statistics: bool = True
    encoding_type: str = "rle-dictionary"  # rle-dictionary | plain
    data_page_size: int | None = None  # bytes (DMS: 1 MiB)
    row_group_length: int | None = None  # rows (DMS: 10,000)
    dict_page_size_limit: int | None = None  # bytes (DMS: 1 MiB)
    # Date-based folder partitioning (CHAP_Target.S3 "Using date-based folder
    # partitioning"); AWS's defaults: off, YYYYMMDD, SLASH, UTC ("" sends nothing)
    date_partition_enabled: bool = False
    date_partition_sequence: str = "YYYYMMDD"
    date_partition_delimiter: str = "SLASH"
    date_partition_timezone: str = ""
    # Not documented by AWS: LOAD files under the date folder of the load's start too
    date_partition_full_load: bool = True


@dataclass(frozen=True)
class LakeSettings:
    bronze_bucket: str
    silver_bucket: str
    scripts_bucket: str
    glue_database: str
    bronze_table: str
    silver_table: str
    tombstone_table: str
    quarantine_table: str
    catalog_name: str
    warehouse_prefix: str
    # objects the Lambda refused land under s3://<bronze_bucket>/<quarantine_prefix>/
    quarantine_prefix: str = "quarantine"
    # `cdclab resync` moves the files of the earlier full load and its changes to
    # s3://<bronze_bucket>/<archive_prefix>/<UTC time>/<key>: kept, no longer read
    archive_prefix: str = "archive"


@dataclass(frozen=True)
class GlueJobSettings:
    name: str
    script: str
    glue_version: str
    worker_type: str
    number_of_workers: int
    job_bookmark_option: str
    max_concurrent_runs: int
    timeout_minutes: int
    # Glue's bounded execution per table and run (--bounded_files / --bounded_size): the
    # rest waits for the next run; AWS supports one boundary, so a size replaces the count
    bounded_files: int = 500
    bounded_size_bytes: int = 0
    # a run that leaves input for later writes the job's backlog marker; the Lambda starts
    # the next run when the run's "Glue Job State Change" arrives, and every this many
    # minutes (EventBridge delivers Glue's events best effort). 0: no sweep
    backlog_sweep_minutes: int = 10

    def __post_init__(self) -> None:
        if self.bounded_files < 0 or self.bounded_size_bytes < 0:
            raise ValueError("[glue_job] bounded_files / bounded_size_bytes must be >= 0")
        sweep = self.backlog_sweep_minutes
        if type(sweep) is not int or not (sweep == 0 or 1 <= sweep <= 1440):
            # EventBridge's rate() takes whole minutes, at least 1
            raise ValueError("[glue_job] backlog_sweep_minutes must be a whole number of "
                             f"minutes, 0 (off) or 1..1440, not {sweep!r}")


MIN_ORPHAN_FILE_AGE_HOURS = 24  # a file younger may belong to a write still in progress


@dataclass(frozen=True)
class MaintenanceSettings:
    """The Glue job's own Iceberg upkeep of its tables ([maintenance], docs/operations.md):
    at most every interval_minutes, expire snapshots (keep time travel for the retention
    window and at least retain_last_snapshots), remove orphan files older than
    orphan_file_age_hours, and prune tombstones older than tombstone_retention_days."""

    interval_minutes: float = 30
    snapshot_retention_hours: float = 6
    retain_last_snapshots: int = 10
    orphan_file_age_hours: float = 72
    tombstone_retention_days: float = 30  # 0: never prune

    def __post_init__(self) -> None:
        if self.orphan_file_age_hours < MIN_ORPHAN_FILE_AGE_HOURS:
            raise ValueError(f"[maintenance] orphan_file_age_hours must be at least "
                             f"{MIN_ORPHAN_FILE_AGE_HOURS}: a younger file may belong to a "
                             "write still in progress (Iceberg's remove_orphan_files warning)")
        if self.retain_last_snapshots < 1 or self.snapshot_retention_hours < 0 \
                or self.interval_minutes < 0 or self.tombstone_retention_days < 0:
            raise ValueError("[maintenance] retain_last_snapshots must be >= 1 and the "
                             "other settings >= 0")


@dataclass(frozen=True)
class PipelineSettings:
    source: SourceSettings
    dms: DmsSettings
    lake: LakeSettings
    glue_job: GlueJobSettings
    maintenance: MaintenanceSettings = field(default_factory=MaintenanceSettings)
    # [tables."schema.table"]: per-table overrides for the generic job (raw TOML tables,
    # parsed by cdclab.table_specs.TableOverrides)
    tables: dict[str, dict] = field(default_factory=dict)

    @property
    def bronze_prefix(self) -> str:
        """Key prefix of the table's DMS files in the bronze bucket (no trailing slash)."""
        return f"{self.dms.bucket_folder}/{self.source.schema}/{self.source.table}"

    @property
    def watched_prefix(self) -> str:
        """Key prefix the watcher (and the deployed S3 notification) watch: the table's
        folder, or with table mappings the bucket folder every selected table is in."""
        if self.source.table_mappings:
            return self.dms.bucket_folder.strip("/")
        return self.bronze_prefix

    @property
    def bronze_location(self) -> str:
        return f"s3://{self.lake.bronze_bucket}/{self.bronze_prefix}/"

    @property
    def quarantine_location(self) -> str:
        return f"s3://{self.lake.bronze_bucket}/{self.lake.quarantine_prefix.strip('/')}/"

    @property
    def warehouse(self) -> str:
        return f"s3://{self.lake.silver_bucket}/{self.lake.warehouse_prefix}/"

    def qualified(self, table: str) -> str:
        """catalog.database.table as the job's SQL names it."""
        return f"{self.lake.catalog_name}.{self.lake.glue_database}.{table}"

    @property
    def tables_config(self) -> str:
        """Where the generic job's table specs live (its --tables_config argument): beside
        the script, which the job's role may read."""
        return f"{self.job_files_prefix}{self.glue_job.name}.tables.json"

    @property
    def job_files_prefix(self) -> str:
        """s3://<scripts>/<script's folder>/: the job's script, table specs and backlog
        markers (`<job>.backlog`, written by the job, read by the Lambda)."""
        folder = self.glue_job.script.rsplit("/", 1)[0]
        return f"s3://{self.lake.scripts_bucket}/{folder}/"

    def backlog_marker(self, job_name: str | None = None) -> str:
        """The object a run of the job writes when it left input for later (and deletes
        when it left none): `--backlog_marker`."""
        return f"{self.job_files_prefix}{job_name or self.glue_job.name}{BACKLOG_SUFFIX}"

    def input_guard(self, job_name: str | None = None) -> str:
        """The object the job keeps what failed runs were reading in (`--input_guard`), to
        find and skip an object that fails every run."""
        return f"{self.job_files_prefix}{job_name or self.glue_job.name}{INPUT_GUARD_SUFFIX}"

    @property
    def script_path(self) -> Path:
        return REPO_ROOT / self.glue_job.script


PIPELINE_FILE = Path(__file__).with_name("pipeline.toml")


BUCKET_OVERRIDES = {
    "bronze_bucket": ENV_BRONZE_BUCKET,
    "silver_bucket": ENV_SILVER_BUCKET,
    "scripts_bucket": ENV_SCRIPTS_BUCKET,
}


def load_pipeline(path: Path | None = None) -> PipelineSettings:
    """The pipeline description: `path`, else $CDCLAB_PIPELINE_FILE, else PIPELINE_FILE
    (every process of a stack inherits the variable, so all read the same file)."""
    return _load_pipeline(Path(path or os.environ.get(ENV_PIPELINE_FILE) or PIPELINE_FILE))


@cache
def _load_pipeline(path: Path) -> PipelineSettings:
    raw = tomllib.loads(path.read_text())
    for field_name, env_key in BUCKET_OVERRIDES.items():
        if os.environ.get(env_key):
            raw["lake"][field_name] = os.environ[env_key]
    return PipelineSettings(
        source=SourceSettings(**raw["source"]),
        dms=DmsSettings(**raw["dms"]),
        lake=LakeSettings(**raw["lake"]),
        glue_job=GlueJobSettings(**raw["glue_job"]),
        maintenance=MaintenanceSettings(**raw.get("maintenance", {})),
        tables=raw.get("tables", {}),
    )
