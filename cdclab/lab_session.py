"""The lab as a test sees it (cdclab.pytest_plugin's `cdclab_lab`): run a Glue script by
path, write DMS files by hand, read bronze and silver, reconcile.

Everything goes through what a user has on AWS too: the script is uploaded and run with
CreateJob/StartJobRun (`cdclab job add`/`run`), files are put into the bronze bucket as
DMS names and writes them, silver is read through the Iceberg REST catalog.
"""

from __future__ import annotations

import gzip
import itertools
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cdclab.lab import Lab
from pipeline_contract.settings import PipelineSettings


class JobRunFailed(AssertionError):
    """A Glue job run did not succeed: its state and Glue's error message."""


class DmsFileError(ValueError):
    """Rows that cannot be written as a DMS file: says which and why."""


OP_COLUMN = "Op"


# --- pure -------------------------------------------------------------------------------
def file_columns(spec: Mapping[str, Any], fmt: Any) -> list[tuple[str, str]]:
    """Pure: (header name, role) of each column a DMS file of the table holds, in the
    order the job's spec reads them (its bronze columns, virtual ones left out)."""
    from pipeline_contract.table_specs import ROLE_OP, ROLE_TIMESTAMP

    names = {ROLE_OP: OP_COLUMN, ROLE_TIMESTAMP: fmt.timestamp_column}
    return [(names.get(c["role"], c["name"]), c["role"])
            for c in spec["bronze_columns"] if not c.get("virtual")]


def dms_file_text(rows: Sequence[Mapping[str, str | None]], columns: Sequence[tuple[str, str]],
                  fmt: Any, *, load: bool, moment: datetime, first_number: int) -> str:
    """Pure: a DMS CSV file of `rows` (column -> text value, None = NULL). A column a row
    leaves out is NULL; `Op` is I unless given; the timestamp and change sequence are
    filled in unless given: CDC rows get DMS-layout change sequences ($AR_H_CHANGE_SEQ)
    from `moment`, counting up from `first_number`, full-load rows an empty one."""
    from dms_emitter.change_seq import dms_change_seq
    from dms_emitter.dms_csv import encode_line, format_ts
    from dms_emitter.pgoutput import PG_EPOCH
    from pipeline_contract.table_specs import ROLE_CHANGE_SEQ, ROLE_OP, ROLE_TIMESTAMP

    if not rows:
        raise DmsFileError("no rows: DMS writes no empty file")
    known = {name for name, _ in columns}
    for n, row in enumerate(rows):
        unknown = sorted(set(row) - known)
        if unknown:
            raise DmsFileError(f"row {n}: {unknown} are not columns of the table's DMS "
                               f"files ({[name for name, _ in columns]})")
        op = row.get(OP_COLUMN) or "I"
        allowed = ("I",) if load else fmt.cdc_ops
        if op not in allowed:
            raise DmsFileError(f"row {n}: Op {op!r} is not one this file may hold "
                               f"({', '.join(allowed)})")
    with_op = fmt.op_for_full_load if load else fmt.cdc_op_column
    kept = [(name, role) for name, role in columns if role != ROLE_OP or with_op]
    micros = int((moment - PG_EPOCH).total_seconds() * 1_000_000)
    filled = {ROLE_OP: lambda row, n: row.get(OP_COLUMN) or "I",
              ROLE_TIMESTAMP: lambda row, n: format_ts(moment),
              ROLE_CHANGE_SEQ: lambda row, n: "" if load else dms_change_seq(
                  micros, first_number + n)}
    lines = [encode_line([name for name, _ in kept], fmt)] if fmt.add_header else []
    for n, row in enumerate(rows):
        lines.append(encode_line(
            [row[name] if name in row else filled[role](row, n) if role in filled else None
             for name, role in kept], fmt))
    return "".join(lines)


# --- the lab ----------------------------------------------------------------------------
class LabSession:
    """A running lab for tests: its environment, its settings, and what tests do with it."""

    def __init__(self, backend: str, env: Mapping[str, str], pipeline: PipelineSettings,
                 compose: Any = None):
        self.backend, self.env, self.pipeline = backend, dict(env), pipeline
        self.compose = compose  # cdclab.private_stack.ComposeProject on containers
        self.lab = Lab(self.env, pipeline)
        self._numbers = itertools.count(1)
        self._pipeline_started = False

    # what the notebook handle reads, under the same names
    def source(self):
        """A new psycopg connection to the source database (autocommit; use `with`)."""
        return self.lab.pg(autocommit=True)

    def silver(self, table: str | None = None):
        return self.lab.silver(table)

    def bronze_files(self):
        return self.lab.bronze_files()

    def reconcile(self, table: str | None = None):
        return self.lab.reconcile(table)

    def wait_for_silver(self, timeout: float = 300) -> float:
        return self.lab.wait_for_silver(timeout)

    def start_pipeline(self) -> None:
        """Start the emitter (its full load first) and the watcher, as `cdclab up` does;
        once per session (later calls return at once)."""
        if self._pipeline_started:
            return
        if self.compose is not None:
            import subprocess

            subprocess.run([*self.compose.command, "up", "--detach", "--wait", "--no-deps",
                            "emitter", "watcher"], cwd=self.compose.folder, check=True,
                           capture_output=True, env=self.compose.compose_env, timeout=600)
        else:
            from cdclab.supervisor import PIPELINE, Stack

            Stack(self.lab.state_dir, pipeline=self.pipeline).up(PIPELINE)
        self._pipeline_started = True

    def wait_until(self, check: Callable[[], bool], what: str, timeout: float = 120,
                   every: float = 0.5) -> float:
        """Polls `check` until it holds; seconds waited. TimeoutError names `what`."""
        start = time.monotonic()
        while not check():
            if time.monotonic() - start > timeout:
                raise TimeoutError(f"{what}: not so after {timeout:.0f}s")
            time.sleep(every)
        return time.monotonic() - start

    def run_job(self, script: str | Path, arguments: Mapping[str, str] | None = None, *,
                name: str | None = None, timeout: float = 900) -> dict:
        """Your Glue script, by path and unchanged, as a job run (CreateJob or UpdateJob,
        then StartJobRun with `arguments`, keys with or without `--`); waits for the end.
        Returns the JobRun; JobRunFailed names the state and Glue's error message."""
        from cdclab.user_jobs import add_job, run_job

        args = {k if k.startswith("--") else f"--{k}": v for k, v in (arguments or {}).items()}
        job = add_job(self.env, self.pipeline, Path(script), name, {},
                      progress=lambda _m: None)
        run = run_job(self.env, job, args, progress=lambda _m: None, timeout=timeout)
        if run["JobRunState"] != "SUCCEEDED":
            raise JobRunFailed(f"job {job} run {run['Id']}: {run['JobRunState']}: "
                               f"{run.get('ErrorMessage', '(no message)')}")
        return run

    def write_dms_file(self, rows: Sequence[Mapping[str, str | None]], *,
                       table: str | None = None, load: bool = False,
                       moment: datetime | None = None) -> str:
        """Rows as one DMS CSV file in bronze, where DMS would put it for `table`
        ("schema.table"; default the pipeline's [source] table), named as DMS names it
        (LOAD<n>.csv for a full load, else <time>.csv). Returns its s3:// URI."""
        from dms_emitter.dms_csv import CsvFormat, cdc_file_name, load_file_name

        dms = self.pipeline.dms
        fmt = CsvFormat.from_settings(dms)
        if fmt.parquet is not None:
            raise DmsFileError("[dms] data_format is parquet: write_dms_file writes CSV only")
        if dms.date_partition_enabled:
            raise DmsFileError("[dms] date_partition_enabled: write_dms_file writes "
                               "unpartitioned folders only")
        spec = self.lab.spec(table)
        bucket, _, prefix = spec["bronze_location"].removeprefix("s3://").partition("/")
        when = moment or datetime.now(UTC)
        number = next(self._numbers)
        text = dms_file_text(rows, file_columns(spec, fmt), fmt, load=load, moment=when,
                             first_number=number * 100_000)
        suffix = ".csv.gz" if dms.compression_type.upper() == "GZIP" else ".csv"
        if load:  # after the LOAD files there (a full load's own are never replaced)
            there = self.lab.s3.list_objects_v2(Bucket=bucket, Prefix=prefix + "LOAD")
            file = load_file_name(len(there.get("Contents", [])) + 1, suffix)
        else:
            file = cdc_file_name(when, suffix=suffix)
        body = text.encode()
        key = prefix + file
        self.lab.s3.put_object(Bucket=bucket, Key=key,
                               Body=gzip.compress(body) if suffix.endswith(".gz") else body)
        return f"s3://{bucket}/{key}"

    def read_parquet(self, uri: str):
        """Every Parquet object under an s3:// prefix (a job's output) as one pandas frame."""
        import io

        import pyarrow as pa
        import pyarrow.parquet as pq

        bucket, _, prefix = uri.removeprefix("s3://").partition("/")
        tables = []
        for page in self.lab.s3.get_paginator("list_objects_v2").paginate(Bucket=bucket,
                                                                           Prefix=prefix):
            for obj in page.get("Contents", []):
                if obj["Key"].endswith(".parquet"):
                    body = self.lab.s3.get_object(Bucket=bucket, Key=obj["Key"])["Body"]
                    tables.append(pq.read_table(io.BytesIO(body.read())))
        if not tables:
            raise FileNotFoundError(f"{uri}: no Parquet object there")
        return pa.concat_tables(tables).to_pandas()

    def close(self) -> None:
        self.lab.stop()

