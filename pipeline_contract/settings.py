"""Every configuration key and pipeline name, in one place.

Services never invent their own keys: they read the environment variables named here.
The embedded supervisor and docker compose both set exactly these variables, so every
program behaves the same in both runtimes.
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pipeline_contract import resources
from pipeline_contract.dms_format.table_mappings import read_document
from pipeline_contract.settings_check import (
    GLUE_NAME,
    KEY_SEGMENTS,
    S3_PREFIX,
    UNSHOWN,
    WHERE,
    Rule,
    Section,
    SettingsError,
    flag,
    no_dot_segments,
    number,
    one_of,
    text,
    whole,
)
from pipeline_contract.table_overrides import TableOverrides

REPO_ROOT = Path(__file__).resolve().parent.parent  # a checkout's root; files: resources

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
ENV_SPARK_MASTER = "CDCLAB_SPARK_MASTER"  # the runner's Spark master (default below)
LOCAL_SPARK_MASTER = "local[2]"
# a cluster master's cores for the runner's tasks: its shuffle partitions and parallelism
# (compose's `spark` worker offers as many); a local[N] master names its own
ENV_SPARK_CORES = "CDCLAB_SPARK_CORES"
CLUSTER_CORES = 2
ENV_GLUE_RUN_LOGS = "CDCLAB_GLUE_RUN_LOGS"  # where Glue run logs are (default <state>/logs/...)
ENV_JARS_DIR = "CDCLAB_JARS_DIR"  # where bootstrap put the resolved jars
ENV_BATCH_INTERVAL = "CDCLAB_BATCH_INTERVAL_SECONDS"  # overrides dms.cdc_max_batch_interval
ENV_BATCH_SIZE_KB = "CDCLAB_BATCH_SIZE_KB"  # overrides dms.cdc_min_file_size_kb
ENV_BATCH_QUIET = "CDCLAB_BATCH_QUIET_SECONDS"  # the lab's quiet cut (0: off)
# "0": the emitter takes whole transactions only (pgoutput protocol 1), never streamed
ENV_STREAM_IN_PROGRESS = "CDCLAB_STREAM_IN_PROGRESS"
ENV_WATCH_INTERVAL = "CDCLAB_WATCH_INTERVAL_SECONDS"  # watcher poll period
# "0": the watcher finds new objects by listing only, without MinIO's notifications
ENV_WATCH_EVENTS = "CDCLAB_WATCH_EVENTS"
ENV_WATCH_CATCH_UP = "CDCLAB_WATCH_CATCH_UP_SECONDS"  # listing period while the stream is open
ENV_DRIVER_JIT = "CDCLAB_DRIVER_JIT"  # the local Spark driver's JIT: tiered (default) | c1
# seconds of work the local Spark driver spends warming its JIT while no run uses it (0: off)
ENV_DRIVER_WARMUP = "CDCLAB_DRIVER_WARMUP_SECONDS"
LAB_DRIVER_WARMUP_S = 60.0
# how the local Glue starts a run's process: fork (from one that imported PySpark and
# awsglue once, the default) | spawn (a new interpreter each)
ENV_GLUE_RUN_START = "CDCLAB_GLUE_RUN_START"
# another pipeline.toml (default pipeline_contract/pipeline.toml)
ENV_PIPELINE_FILE = "CDCLAB_PIPELINE_FILE"
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
LAB_BATCH_SIZE_KB = 32000  # ... at DMS's own CdcMinFileSize: a 100k-row transaction's
# ~18 MB in one file, as DMS writes it, not in five files merged by two runs
# ... and, unlike DMS, a file as soon as no change has come for this long (an idle
# source's change is not held for the whole interval); off once an interval is set
LAB_BATCH_QUIET_S = 0.1
# A full load's files of 32 MB, not DMS's one of up to 1 GB (MaxFileSize): Glue reads a
# multi-line CSV file in one task, so a 1M-row table in several files uses every core.
LAB_LOAD_FILE_KB = 32768
# the watcher's poll period (the stand-in for S3's event notifications, which arrive
# within a second or so); without MinIO's stream each poll is a cheap incremental
# ListObjectsV2 per table folder
LAB_WATCH_INTERVAL_S = 0.25
# ... while MinIO's notification stream is up it announces each new object, and the
# incremental listing only catches up on what a lost record missed: this much apart
LAB_WATCH_CATCH_UP_S = 2.0
PROFILE_LOCAL = "local"
PROFILE_AWS = "aws"


def env_choice(env: Mapping[str, str], name: str, choices: Sequence[str],
               default: str) -> str:
    """A setting from `env` that must be one of `choices`; anything else is refused by name."""
    value = env.get(name, default)
    if value not in choices:
        raise ValueError(f"{name}={value!r}: expected one of {', '.join(choices)}")
    return value


def env_count(env: Mapping[str, str], name: str, default: int) -> int:
    """A whole number >= 1 from `env`; anything else is refused by name."""
    value = env.get(name, str(default))
    if not (value.isascii() and value.isdecimal()) or int(value) < 1:
        raise ValueError(f"{name}={value!r}: expected a whole number of at least 1")
    return int(value)


def env_seconds(env: Mapping[str, str], name: str, default: float) -> float:
    """A number of seconds >= 0 from `env`; anything else is refused by name."""
    value = env.get(name, str(default))
    try:
        seconds = float(value)
    except ValueError:
        seconds = -1.0
    if not 0 <= seconds < float("inf"):
        raise ValueError(f"{name}={value!r}: expected a number of seconds, 0 or more")
    return seconds


def cache_dir() -> Path:
    default = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "cdclab"
    return Path(os.environ.get(ENV_CACHE_DIR, default))


def state_dir() -> Path:
    """$CDCLAB_STATE_DIR, else .cdclab in the checkout, else in the user's project folder
    (installed: never inside site-packages)."""
    if named := os.environ.get(ENV_STATE_DIR):
        return Path(named)
    if resources.from_checkout():
        return REPO_ROOT / ".cdclab"
    mine = resources.user_pipeline_file()
    return (mine.resolve().parent if mine else Path.cwd()) / ".cdclab"


@cache
def versions() -> dict[str, str]:
    """Platform pins from versions.env (the one place that defines them)."""
    pins: dict[str, str] = {}
    for line in resources.resource("versions.env").read_text().splitlines():
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
    v = versions()
    return cache_dir() / "bin" / f"minio-{v['MINIO_VERSION']}-{v['MINIO_FIX']}"


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


# --- the pipeline description (pipeline_contract/pipeline.toml) --------------------------------
# What each key allows (pipeline_contract.settings_check checks it when a section is built). The
# value lists are the contract; the boxes that apply them keep the same lists
# (tests/unit/test_settings.py checks that they agree).
MIGRATION_TYPES = ("full-load-and-cdc", "full-load", "cdc")
DATA_FORMATS = ("csv", "parquet")
COMPRESSION_TYPES = ("NONE", "GZIP")
CHANGE_SEQ_LAYOUTS = ("dms", "lsn")  # dms_emitter/change_seq.py
PK_UPDATE_HANDLINGS = ("update", "delete-insert")
UNCHANGED_TOAST = ("lookup", "null")
BYTEA_FORMATS = ("hex", "base64", "postgres")
INTERVAL_STYLES = ("postgres", "postgres_verbose", "sql_standard", "iso_8601")
PARQUET_VERSIONS = ("parquet-1-0", "parquet-2-0")
ENCODING_TYPES = ("rle-dictionary", "plain-dictionary", "plain")
DATE_PARTITION_SEQUENCES = ("YYYYMMDD", "YYYYMMDDHH", "YYYYMM", "MMYYYYDD", "DDMMYYYY")
DATE_PARTITION_DELIMITERS = ("SLASH", "DASH", "UNDERSCORE", "NONE")
GLUE_VERSIONS = ("5.0", "5.1")  # the job and the lab's Glue are Glue 5 (Spark 3.5)
WORKER_TYPES = ("G.025X", "G.1X", "G.2X", "G.4X", "G.8X", "G.12X", "G.16X", "R.1X", "R.2X")
BOOKMARK_OPTIONS = ("job-bookmark-enable", "job-bookmark-disable", "job-bookmark-pause")
GLUE_MAX_TIMEOUT_MINUTES = 10080  # Glue: a job's Timeout is under 7 days
MIN_ORPHAN_FILE_AGE_HOURS = 24  # a file younger may belong to a write still in progress

_PG_NAME = "a PostgreSQL name: 1 to 63 bytes"  # NAMEDATALEN - 1


def _zone(name: str) -> bool:
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return False
    return True


def _bucket(name: str) -> bool:
    """S3's bucket naming rules (General purpose bucket naming rules)."""
    return (".." not in name and not re.fullmatch(r"[0-9.]+", name)
            and not name.startswith(("xn--", "sthree-"))
            and not name.endswith(("-s3alias", "--ol-s3")))


_BUCKET = text(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]", "an S3 bucket name: 3 to 63 lower-case "
               "letters, digits, '.' or '-', starting and ending with a letter or digit, "
               "no '..', not an IP address", test=_bucket)
_COLUMN = text(r'[^"\x00-\x1f\x7f]+', "a column name without quotes or control characters")
# Glue's Name pattern (single-line string), 1..255 characters
_GLUE_JOB_NAME = text("[\t\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]{1,255}",
                      "1 to 255 characters without line breaks (Glue's job name rule)")
_SCRIPT = text(rf"{KEY_SEGMENTS.pattern}\.py", "a .py path from the repo root, of S3's safe "
               "characters (it is the script's key in the scripts bucket), no '.' or '..' "
               "folder", 512, no_dot_segments)


@dataclass(frozen=True)
class SourceSettings(Section):
    database: str
    schema: str
    table: str
    primary_key: str
    publication: str
    slot: str
    # DMS table-mapping JSON (path from the repo root). Empty: `table` alone, plus the
    # change-sequence column (and the before image, dms.before_image_columns). The
    # emitter and `cdclab deploy` both use it.
    table_mappings: str = ""

    SECTION = "source"
    RULES = {
        "database": text(r"[^\x00]+", _PG_NAME, 63),
        "schema": text(r"[^\x00]+", _PG_NAME, 63),
        "table": text(r"[^\x00]+", _PG_NAME, 63),
        "primary_key": text(r"[^\x00]+", f"a column of [source].table ({_PG_NAME})", 63),
        "publication": text(r"[A-Za-z0-9_]{1,63}", "1 to 63 letters, digits or '_'"),
        # PostgreSQL: "a name, which can contain lower-case letters, numbers, and the
        # underscore character" (Replication Slots)
        "slot": text(r"[a-z0-9_]{1,63}", "1 to 63 lower-case letters, digits or '_' "
                     "(PostgreSQL's replication slot names)"),
        "table_mappings": text(r"[^\x00]*", "the path of a DMS table-mapping JSON file "
                               '(from the repo root), or "" for [source].table alone'),
    }


@dataclass(frozen=True)
class DmsSettings(Section):
    bucket_folder: str
    data_format: str
    add_column_name: bool
    include_op_for_full_load: bool
    timestamp_column_name: str
    csv_delimiter: str
    csv_row_delimiter: str
    csv_null_value: str
    change_seq_column: str
    # Unset: the lab cuts LOAD files at LAB_LOAD_FILE_KB and `cdclab deploy` leaves DMS's
    # default (1 GB); set: both use the value.
    max_file_size_kb: int | None = None
    # Unset: the lab batches small (LAB_BATCH_*) and `cdclab deploy` leaves DMS's own
    # defaults (60 s, 32000 KB). Set: both use the value.
    cdc_max_batch_interval_seconds: int | None = None
    cdc_min_file_size_kb: int | None = None
    # The replication task's MigrationType: full-load-and-cdc | full-load | cdc
    migration_type: str = "full-load-and-cdc"
    # More S3 target settings (CHAP_Target.S3), AWS's defaults
    rfc4180: bool = True
    # true: '' written "" (the lab's deviation, keeps '' apart from NULL); AWS: empty
    quote_empty_strings: bool = False
    change_seq_layout: str = "dms"  # dms | lsn (dms_emitter/change_seq.py)
    # The default table mappings' add-before-image-columns rule (BI_, pk-only): a primary-key
    # UPDATE then carries its old key, which the job deletes. false: DMS's rule-less
    # output, where the old key stays in silver. A table_mappings file decides for itself.
    before_image_columns: bool = True
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
    map_boolean_as_boolean: bool = False
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

    SECTION = "dms"
    RULES = {
        "bucket_folder": S3_PREFIX,
        "data_format": one_of(*DATA_FORMATS),
        "add_column_name": flag(),
        "include_op_for_full_load": flag(),
        "timestamp_column_name": text(r'[^"\x00-\x1f\x7f]*', _COLUMN.allowed + ', or "" '
                                      "(no timestamp column)"),
        "csv_delimiter": text(r'[^"\r\n\x00]', "one character other than a quote, a line "
                              "break or NUL"),
        "csv_row_delimiter": one_of("\n", "\r\n"),
        "csv_null_value": text(r'[^"\r\n\x00]*', "text without quotes, line breaks or NUL"),
        "change_seq_column": _COLUMN,
        "max_file_size_kb": whole(1, 1048576, " (DMS MaxFileSize, KB)", optional=True),
        "cdc_max_batch_interval_seconds": whole(1, optional=True),
        "cdc_min_file_size_kb": whole(1, optional=True),
        "migration_type": one_of(*MIGRATION_TYPES),
        "rfc4180": flag(),
        "quote_empty_strings": flag(),
        "change_seq_layout": one_of(*CHANGE_SEQ_LAYOUTS),
        "before_image_columns": flag(),
        # the DMS API's CompressionTypeValue is lower case, the console's upper
        "compression_type": one_of(*COMPRESSION_TYPES, fold=True),
        "cdc_inserts_only": flag(),
        "cdc_inserts_and_updates": flag(),
        "use_task_start_time_for_full_load_timestamp": flag(),
        "lob_max_size_kb": whole(1, why=" (LobMaxSize, KB; AWS recommends at most 102400)"),
        "trim_space_in_char": flag(),
        "map_unbounded_numeric_as_string": flag(),
        "fail_tasks_on_lob_truncation": flag(),
        "map_boolean_as_boolean": flag(),
        "pk_update_handling": one_of(*PK_UPDATE_HANDLINGS),
        "unchanged_toast": one_of(*UNCHANGED_TOAST),
        "bytea_format": one_of(*BYTEA_FORMATS),
        # what the emitter pins as the sessions' TimeZone (replication.session_options)
        "timestamptz_time_zone": text(r"[A-Za-z0-9_+\-/]+", "a PostgreSQL time zone name "
                                      "(letters, digits, _ + - /), e.g. UTC or "
                                      "Europe/Paris"),
        "interval_style": one_of(*INTERVAL_STYLES),
        "parquet_version": one_of(*PARQUET_VERSIONS),
        "parquet_timestamp_in_millisecond": flag(),
        "enable_statistics": flag(),
        "encoding_type": one_of(*ENCODING_TYPES),
        "data_page_size": whole(1, optional=True),
        "row_group_length": whole(1, optional=True),
        "dict_page_size_limit": whole(1, optional=True),
        "date_partition_enabled": flag(),
        "date_partition_sequence": one_of(*DATE_PARTITION_SEQUENCES),
        "date_partition_delimiter": one_of(*DATE_PARTITION_DELIMITERS),
        "date_partition_timezone": text(r"[^\x00]*", 'an Area/Location time zone (e.g. '
                                        'Asia/Seoul), or "" for UTC',
                                        test=lambda v: not v or _zone(v)),
        "date_partition_full_load": flag(),
    }

    def check_together(self) -> None:
        if self.cdc_inserts_only and self.cdc_inserts_and_updates:
            raise SettingsError(WHERE, self.key("cdc_inserts_and_updates"), True,
                                "false when dms.cdc_inserts_only is true (DMS refuses both)")
        if self.csv_delimiter in self.csv_null_value:
            raise SettingsError(WHERE, self.key("csv_null_value"), self.csv_null_value,
                                f"text without the delimiter {self.csv_delimiter!r} "
                                "(dms.csv_delimiter), quotes or line breaks")


@dataclass(frozen=True)
class LakeSettings(Section):
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

    SECTION = "lake"
    RULES = {
        "bronze_bucket": _BUCKET, "silver_bucket": _BUCKET, "scripts_bucket": _BUCKET,
        "glue_database": GLUE_NAME, "bronze_table": GLUE_NAME, "silver_table": GLUE_NAME,
        "tombstone_table": GLUE_NAME, "quarantine_table": GLUE_NAME,
        # the Spark catalog's name (spark.sql.catalog.<name>), unquoted in the job's SQL
        "catalog_name": text(r"[A-Za-z_][A-Za-z0-9_]{0,254}", "a letter or '_', then "
                             "letters, digits or '_' (up to 255)"),
        "warehouse_prefix": S3_PREFIX, "quarantine_prefix": S3_PREFIX,
        "archive_prefix": S3_PREFIX,
    }


@dataclass(frozen=True)
class GlueJobSettings(Section):
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
    # Buckets of the user's own that the jobs' role may list, read, write and delete in
    # (beyond bronze, scripts and silver), as an IAM role's policy grants them; the lab
    # creates them when MinIO starts. None of the lab's own buckets.
    job_buckets: list[str] = field(default_factory=list)

    SECTION = "glue_job"
    RULES = {
        "name": _GLUE_JOB_NAME,
        "script": _SCRIPT,
        "glue_version": one_of(*GLUE_VERSIONS),
        "worker_type": one_of(*WORKER_TYPES),
        "number_of_workers": whole(2, why=" (Glue Spark jobs need at least 2)"),
        "job_bookmark_option": one_of(*BOOKMARK_OPTIONS),
        "max_concurrent_runs": whole(1),
        "timeout_minutes": whole(1, GLUE_MAX_TIMEOUT_MINUTES, " (Glue: under 7 days)"),
        "bounded_files": whole(0, why=" (0: no cap)"),
        "bounded_size_bytes": whole(0, why=" (0: no cap)"),
        # EventBridge's rate() takes whole minutes, at least 1
        "backlog_sweep_minutes": whole(0, 1440, " minutes (0: no sweep)"),
        "job_buckets": Rule(list, "a list of S3 bucket names, e.g. [\"my-bucket\"]",
                            lambda v: all(isinstance(b, str) for b in v)),
    }

    def check_together(self) -> None:
        for i, bucket in enumerate(self.job_buckets):
            if not _BUCKET.accepts(bucket):
                raise SettingsError(WHERE, f"{self.key('job_buckets')}[{i}]", bucket,
                                    _BUCKET.allowed)


@dataclass(frozen=True)
class MaintenanceSettings(Section):
    """The Glue job's own Iceberg upkeep of its tables ([maintenance], docs/operations.md):
    at most every interval_minutes, expire snapshots (keep time travel for the retention
    window and at least retain_last_snapshots), remove orphan files older than
    orphan_file_age_hours, and prune tombstones older than tombstone_retention_days; in
    any run, expire a table holding more than max_snapshots down to half of them."""

    interval_minutes: float = 30
    snapshot_retention_hours: float = 6
    retain_last_snapshots: int = 10
    orphan_file_age_hours: float = 72
    tombstone_retention_days: float = 30  # 0: never prune
    max_snapshots: int = 200  # 0: no bound

    SECTION = "maintenance"
    RULES = {
        "interval_minutes": number(0),
        "snapshot_retention_hours": number(0),
        "retain_last_snapshots": whole(1),
        "orphan_file_age_hours": number(MIN_ORPHAN_FILE_AGE_HOURS, why=": a younger file "
                                        "may belong to a write still in progress "
                                        "(Iceberg's remove_orphan_files warning)"),
        "tombstone_retention_days": number(0, why=" (0: never prune)"),
        "max_snapshots": whole(0, why=" (0: no bound)"),
    }

    def check_together(self) -> None:
        # the expiry keeps half the bound: at least retain_last_snapshots must fit in it,
        # or every commit would be over the bound again
        if self.max_snapshots and self.max_snapshots < 2 * self.retain_last_snapshots:
            raise SettingsError(WHERE, self.key("max_snapshots"), self.max_snapshots,
                                f"0 or at least twice retain_last_snapshots "
                                f"({2 * self.retain_last_snapshots})")


SECTIONS: dict[str, type[Section]] = {
    "source": SourceSettings, "dms": DmsSettings, "lake": LakeSettings,
    "glue_job": GlueJobSettings, "maintenance": MaintenanceSettings}
TABLES_SECTION = "tables"  # [tables."schema.table"]: pipeline_contract.table_overrides


@dataclass(frozen=True)
class PipelineSettings:
    source: SourceSettings
    dms: DmsSettings
    lake: LakeSettings
    glue_job: GlueJobSettings
    maintenance: MaintenanceSettings = field(default_factory=MaintenanceSettings)
    # [tables."schema.table"]: per-table overrides for the generic job (raw TOML tables,
    # checked here, parsed by pipeline_contract.table_overrides.TableOverrides)
    tables: dict[str, dict] = field(default_factory=dict)

    def check(self, where: str = WHERE) -> None:
        """What spans sections, and [tables] (each section checks its own keys)."""
        try:
            self._check()
        except SettingsError as exc:
            raise exc.at(where) from None

    def _check(self) -> None:
        if not isinstance(self.tables, dict):
            raise SettingsError(WHERE, f"[{TABLES_SECTION}]", self.tables, "tables of "
                                'per-table overrides: [tables."schema.table"]')
        for name, raw in self.tables.items():
            TableOverrides.parse(name, raw)
        own = {"lake.bronze_bucket": self.lake.bronze_bucket,
               "lake.silver_bucket": self.lake.silver_bucket,
               "lake.scripts_bucket": self.lake.scripts_bucket}
        for i, bucket in enumerate(self.glue_job.job_buckets):
            for key, name in own.items():
                if bucket == name:  # its grants there are narrower: never widen them
                    raise SettingsError(WHERE, f"glue_job.job_buckets[{i}]", bucket,
                                        f"a bucket of your own, not the lab's {key}")
        # the bronze bucket holds the DMS folder, the quarantine and the archive: an
        # object moved to one must not land in another (the watcher would read it again)
        folders = {"dms.bucket_folder": self.dms.bucket_folder,
                   "lake.quarantine_prefix": self.lake.quarantine_prefix,
                   "lake.archive_prefix": self.lake.archive_prefix}
        seen: list[tuple[str, str]] = []
        for key, folder in folders.items():
            for other_key, other in seen:
                if _nested(folder, other):
                    raise SettingsError(WHERE, key, folder, f"a folder of the bronze bucket "
                                        f"apart from {other_key} ({other!r}): neither may "
                                        "hold the other")
            seen.append((key, folder))

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
        return resources.project_file(self.glue_job.script)



PIPELINE_FILE = Path(__file__).with_name("pipeline.toml")


BUCKET_OVERRIDES = {
    "bronze_bucket": ENV_BRONZE_BUCKET,
    "silver_bucket": ENV_SILVER_BUCKET,
    "scripts_bucket": ENV_SCRIPTS_BUCKET,
}


def load_pipeline(path: Path | None = None) -> PipelineSettings:
    """The pipeline description: `path`, else $CDCLAB_PIPELINE_FILE, else PIPELINE_FILE
    (every process of a stack inherits the variable, so all read the same file). A bad
    setting is a SettingsError naming the file, the key, the value and what is allowed."""
    return _load_pipeline(Path(path or resources.user_pipeline_file() or PIPELINE_FILE))


@cache
def _load_pipeline(path: Path) -> PipelineSettings:
    where = str(path)
    try:
        raw = tomllib.loads(path.read_text())
    except OSError as exc:
        raise SettingsError(where, "", UNSHOWN, f"cannot read it ({exc.strerror or exc})") \
            from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise SettingsError(where, "", UNSHOWN, f"not valid TOML ({exc})") from None
    p = parse_pipeline(raw, where, os.environ)
    if p.source.table_mappings:  # the file it names is settings too: checked as it loads
        read_document(table_mappings_path(p, path))
    return p


def table_mappings_path(p: PipelineSettings, pipeline_file: Path | None = None) -> Path:
    """The table-mappings file pipeline.toml's [source] names, beside that pipeline.toml
    (the lab's default pipeline: the lab's files)."""
    named = pipeline_file or resources.user_pipeline_file()
    base = (resources.lab_root() if named is None or Path(named) == PIPELINE_FILE
            else Path(named).resolve().parent)
    return resources.in_project(p.source.table_mappings, base, resources.lab_root())


def parse_pipeline(raw: Mapping[str, Any], where: str = WHERE,
                   env: Mapping[str, str] | None = None) -> PipelineSettings:
    """Pure: the settings from pipeline.toml's parsed `raw`, every section and key checked;
    `env` may replace the bucket names (BUCKET_OVERRIDES)."""
    env = env or {}
    for key, value in raw.items():
        if key not in SECTIONS and key != TABLES_SECTION:
            raise SettingsError(where, key, value, "not a section of pipeline.toml (its "
                                f"sections: {', '.join(f'[{s}]' for s in SECTIONS)}, "
                                '[tables."schema.table"])')
    built: dict[str, Any] = {}
    for name, cls in SECTIONS.items():
        body = raw.get(name, {})
        replaced: dict[str, str] = {}
        if name == LakeSettings.SECTION and isinstance(body, dict):
            replaced = {f: env[k] for f, k in BUCKET_OVERRIDES.items() if env.get(k)}
            body = {**body, **replaced}
        try:
            built[name] = cls.build(body, where)
        except SettingsError as exc:
            field_name = exc.key.removeprefix(f"{name}.")
            if field_name in replaced:  # the value came from the environment
                raise exc.at(f"${BUCKET_OVERRIDES[field_name]}") from None
            raise
    p = PipelineSettings(**built, tables=raw.get(TABLES_SECTION, {}))
    p.check(where)
    return p


def _nested(a: str, b: str) -> bool:
    return a == b or a.startswith(b + "/") or b.startswith(a + "/")
