"""A notebook's handle on the running stack: `lab = connect()`.

Addresses and credentials come from the stack's own configuration: the embedded stack's
`<state>/cdclab.env`, or (compose `jupyter` service, no env file) the process environment,
so a notebook never hard-codes either. Clients are built lazily; the Spark session is the
notebook's own small local one (the Glue runner's session lives in another process).
"""

from __future__ import annotations

import gzip
import os
from collections.abc import Iterable, Mapping
from functools import cached_property
from pathlib import Path
from typing import Any

from pipeline_contract import settings

ENV_FILE = "cdclab.env"  # written by cdclab.supervisor.Stack
REQUIRED_KEYS = (
    settings.ENV_PG_DSN, settings.ENV_S3_ENDPOINT, settings.ENV_CATALOG_URI,
    settings.ENV_ACCESS_KEY, settings.ENV_SECRET_KEY,
)
OPTIONAL_KEYS = (
    settings.ENV_GLUE_ENDPOINT, settings.ENV_REGION, settings.ENV_PROFILE,
    settings.ENV_CACHE_DIR, settings.ENV_JARS_DIR, settings.ENV_CATALOG_TOKEN,
)
# A notebook shares 2 cores with the stack: one task slot, one shuffle partition.
NOTEBOOK_SPARK_CONF = {
    "spark.sql.shuffle.partitions": "1",
    "spark.default.parallelism": "1",
    "spark.driver.memory": "1g",
}
CDC_KIND, LOAD_KIND = "cdc", "full load"
METRIC_COLUMNS = [
    "run_id", "started_on", "files", "rows_read", "inserted", "updated", "deleted",
    "quarantined", "latency_p50", "latency_max", "latency_samples",
]


class LabError(RuntimeError):
    """The notebook cannot reach the stack; the message says where it looked."""


# --- pure logic -------------------------------------------------------------------------
def stack_env(
    state_dir: Path, file_env: Mapping[str, str], process_env: Mapping[str, str]
) -> dict[str, str]:
    """The stack's configuration: its env file when there is one (it names exactly the
    running embedded stack), else the keys of the process environment (compose)."""
    if file_env:
        env = dict(file_env)
    else:
        env = {k: process_env[k] for k in (*REQUIRED_KEYS, *OPTIONAL_KEYS) if k in process_env}
    missing = [k for k in REQUIRED_KEYS if not env.get(k)]
    if missing:
        raise LabError(
            f"no running cdclab stack found: {state_dir / ENV_FILE} "
            f"{'lacks' if file_env else 'does not exist and the environment lacks'} "
            f"{', '.join(missing)}. Start the stack with `cdclab up` (or `cdclab demo`), "
            f"or set {settings.ENV_STATE_DIR} to its state directory."
        )
    env[settings.ENV_STATE_DIR] = str(state_dir)
    return env


def bronze_kind(key: str) -> str:
    """DMS names full-load files LOAD<8 digits>.csv and CDC files by their time."""
    return LOAD_KIND if key.rsplit("/", 1)[-1].startswith("LOAD") else CDC_KIND


def change_rows(key: str, rows: Iterable[Mapping[str, Any]], ts_column: str, seq_column: str,
                key_column: str) -> list[dict[str, Any]]:
    """Parsed DMS rows of one bronze file -> op/time/key records for plotting."""
    from dms_emitter.dms_csv import parse_ts

    kind = bronze_kind(key)
    return [
        {"file": key.rsplit("/", 1)[-1], "kind": kind, "op": r["Op"],
         "ts": parse_ts(r[ts_column]), "id": int(r[key_column]), "change_seq": r[seq_column]}
        for r in rows
    ]


def op_counts(changes, freq: str = "1s"):
    """Changes (a DataFrame with ts and op) -> counts per time bucket, one column per op."""
    import pandas as pd

    if changes.empty:
        return pd.DataFrame(columns=["I", "U", "D"])
    counts = changes.groupby([pd.Grouper(key="ts", freq=freq), "op"]).size().unstack(fill_value=0)
    return counts.reindex(columns=["I", "U", "D"], fill_value=0)


def metrics_rows(metrics: Iterable[Mapping[str, Any]],
                 started: Mapping[str, Any]) -> list[dict[str, Any]]:
    """CDCLAB_METRICS of each Glue run -> one flat row per run (with its start time)."""
    rows = []
    for m in metrics:
        lat = m.get("latency_seconds", {})
        counts = [m.get(c, 0) for c in METRIC_COLUMNS[2:8]]
        rows.append(dict(zip(METRIC_COLUMNS, [
            m.get("run_id"), started.get(m.get("run_id")), *counts,
            lat.get("p50"), lat.get("max"), list(lat.get("samples", [])),
        ], strict=True)))
    return sorted(rows, key=lambda r: (r["started_on"] is None, r["started_on"] or 0))


# --- the handle ---------------------------------------------------------------------------
class Lab:
    """Clients for the running stack. Stop the Spark session with `lab.stop()`."""

    def __init__(self, env: Mapping[str, str], pipeline: settings.PipelineSettings):
        self.env = dict(env)
        self.pipeline = pipeline
        self._spark = None

    @property
    def state_dir(self) -> Path:
        return Path(self.env[settings.ENV_STATE_DIR])

    @property
    def silver_name(self) -> str:
        """The silver table as Spark SQL names it (catalog.database.table)."""
        return self.pipeline.qualified(self.pipeline.lake.silver_table)

    @property
    def source_name(self) -> str:
        """The source table as PostgreSQL SQL names it ("schema"."table")."""
        return f'"{self.pipeline.source.schema}"."{self.pipeline.source.table}"'

    def pg(self, autocommit: bool = True):
        """A new psycopg connection to the source database (close it, or use `with`)."""
        import psycopg

        return psycopg.connect(self.env[settings.ENV_PG_DSN], autocommit=autocommit)

    @cached_property
    def s3(self):
        from cdclab.services.minio import s3_client

        return s3_client(self.env)

    @cached_property
    def catalog(self):
        from cdclab.reconcile import silver_catalog

        return silver_catalog(self.env)

    def tables(self) -> list[dict]:
        """The specs of every table the Glue job merges (`cdclab tables`)."""
        from cdclab.tables_sync import published_specs

        return published_specs(self.env, self.pipeline)

    def spec(self, table: str | None = None) -> dict:
        """One table's spec, by source name (schema.table); default: the demo table."""
        name = table or f"{self.pipeline.source.schema}.{self.pipeline.source.table}"
        for spec in self.tables():
            if spec["name"] == name:
                return spec
        raise LabError(f"{name}: not a table the job merges ({[s['name'] for s in self.tables()]})")

    def silver_table(self, table: str | None = None):
        """The pyiceberg silver table of a source table (default: the demo table), loaded
        now (so at its current snapshot)."""
        if table is None:
            lake = self.pipeline.lake
            return self.catalog.load_table(f"{lake.glue_database}.{lake.silver_table}")
        _catalog, namespace, name = self.spec(table)["silver_table"].split(".", 2)
        return self.catalog.load_table(f"{namespace}.{name}")

    def spark(self):
        """The notebook's own local Spark session with the job's Iceberg catalog (built once)."""
        if self._spark is None:
            from glue_local.spark_session import build_session, catalog_conf

            # No catalog cache: the Glue job commits from another process, and a notebook
            # must see (and time-travel to) snapshots made after its first query.
            no_cache = {f"spark.sql.catalog.{self.pipeline.lake.catalog_name}.cache-enabled":
                        "false"}
            self._spark = build_session(self.env, catalog_conf(self.env, self.pipeline),
                                        self.pipeline.lake.catalog_name,
                                        app_name="cdclab-notebook", master="local[1]",
                                        extra_conf=NOTEBOOK_SPARK_CONF | no_cache)
            self._spark.sparkContext.setLogLevel("ERROR")
        return self._spark

    def stop(self) -> None:
        if self._spark is not None:
            self._spark.stop()
            self._spark = None

    def source(self):
        """The source table as pandas, by id."""
        import pandas as pd

        from cdclab.reconcile import SOURCE_COLUMNS, read_source

        rows = read_source(self.env[settings.ENV_PG_DSN], self.pipeline.source)
        return pd.DataFrame(rows, columns=list(SOURCE_COLUMNS)).sort_values("id",
                                                                            ignore_index=True)

    def silver(self, table: str | None = None):
        """A silver table (current snapshot) as pandas, by key (default: the demo table)."""
        keys = self.spec(table)["keys"] if table else ["id"]
        return self.silver_table(table).scan().to_pandas().sort_values(keys,
                                                                       ignore_index=True)

    def in_silver(self, text: str | None) -> str | None:
        """A source text value as silver holds it (with CSV bronze, '' reads as NULL)."""
        from cdclab.reconcile import source_text_in_silver

        return source_text_in_silver(text, self.pipeline.dms)

    def reconcile(self, table: str | None = None):
        """`cdclab reconcile`: every table, or one (schema.table)."""
        from cdclab.reconcile import reconcile

        return reconcile(self.env, self.pipeline, table)

    def wait_for_silver(self, timeout: float = 300) -> float:
        """Block until every source change committed so far is in silver; seconds waited."""
        from cdclab.drain import current_wal_lsn, wait_for_drain

        dsn = self.env[settings.ENV_PG_DSN]
        return wait_for_drain(self.env, self.pipeline, current_wal_lsn(dsn), timeout=timeout)

    def bronze_files(self):
        """Every DMS file in the bronze bucket: key, kind, size, last_modified."""
        import pandas as pd

        rows = []
        for page in self.s3.get_paginator("list_objects_v2").paginate(
            Bucket=self.pipeline.lake.bronze_bucket, Prefix=self.pipeline.bronze_prefix + "/"
        ):
            for obj in page.get("Contents", []):
                rows.append({"key": obj["Key"], "kind": bronze_kind(obj["Key"]),
                             "size": obj["Size"], "last_modified": obj["LastModified"]})
        columns = ["key", "kind", "size", "last_modified"]
        return pd.DataFrame(rows, columns=columns).sort_values("key", ignore_index=True)

    def bronze_changes(self):
        """Every row of every bronze file: file, kind, op, ts (commit time), id, change_seq."""
        import pandas as pd

        from dms_emitter.dms_csv import CsvFormat, DmsCsvError, parse_dms_csv

        fmt = CsvFormat.from_settings(self.pipeline.dms)
        bucket = self.pipeline.lake.bronze_bucket
        rows: list[dict[str, Any]] = []
        for key in self.bronze_files()["key"]:
            body = self.s3.get_object(Bucket=bucket, Key=key)["Body"].read()
            try:
                text = (gzip.decompress(body) if key.endswith(".gz") else body).decode()
                parsed = parse_dms_csv(text, f"s3://{bucket}/{key}", fmt)
            except (DmsCsvError, UnicodeDecodeError, EOFError, OSError) as error:
                # a file the job cannot read either: named, its rows left out
                print(f"skipped s3://{bucket}/{key}: {error}")
                continue
            rows += change_rows(key, parsed, fmt.timestamp_column, fmt.change_seq_column,
                                self.pipeline.source.primary_key)
        columns = ["file", "kind", "op", "ts", "id", "change_seq"]
        return pd.DataFrame(rows, columns=columns)

    def run_metrics(self):
        """One row per Glue run that logged metrics, oldest first, with latency samples."""
        import pandas as pd

        from cdclab.demo import run_metrics

        started: dict[str, Any] = {}
        if self.env.get(settings.ENV_GLUE_ENDPOINT):
            from cdclab.drain import job_runs

            runs = job_runs(self.env, self.pipeline.glue_job.name)
            started = {r.run_id: r.started_on for r in runs}
        rows = metrics_rows(run_metrics(settings.glue_run_logs(self.state_dir)), started)
        return pd.DataFrame(rows, columns=METRIC_COLUMNS)


def connect(state_dir: Path | str | None = None) -> Lab:
    """A Lab for the stack whose state is in `state_dir` (default: CDCLAB_STATE_DIR): a
    notebook's entry point, where pipeline.toml is read."""
    from cdclab.supervisor import read_env_file

    state = Path(state_dir) if state_dir is not None else settings.state_dir()
    return Lab(stack_env(state.resolve(), read_env_file(state / ENV_FILE), os.environ),
               settings.load_pipeline())
