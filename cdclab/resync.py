"""`cdclab resync [table]`: re-snapshot the source so silver equals it again.

After a lost or invalidated slot, a rebuilt source database or lost emitter state, the
changes in between are gone; streaming on would leave rows deleted meanwhile in silver.
This is DMS's "reload table" with TargetTablePrepMode DROP_AND_CREATE, done across the
lab's pipeline:

1. stop the emitter and the watcher; wait for Glue runs in flight to end;
2. move the table folders' files to s3://<bronze>/<archive_prefix>/<UTC time>/<key>
   (kept for audit, out of the watched prefix);
3. empty the silver and tombstone tables (their Iceberg history keeps the old rows) and
   reset the job's bookmark;
4. set the emitter's state aside (whole resync: also drop the slot) and start the
   emitter and watcher again: a new full load, then streaming.

One table: only its folder and state; the slot and other tables stream on. A whole
resync is required when the slot or the source itself is what was lost.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cdclab.services.base import ServiceError
from pipeline_contract import settings
from pipeline_contract.atomic import write_json

Progress = Callable[[str], None]
RUNS_END_TIMEOUT = 900.0


@dataclass
class ResyncPlan:
    """What a resync touches (pure: from the emitter's state and the request)."""

    tables: list[str]  # schema.table re-snapshotted
    folders: list[str]  # bronze key prefixes moved to the archive
    whole: bool  # drop the slot and every table's state
    empty_silver: bool  # the job's silver table is among them
    notes: list[str] = field(default_factory=list)


def plan(table: str | None, emitter_state: Mapping[str, Any],
         p: settings.PipelineSettings) -> ResyncPlan:
    """Which folders and tables a resync of `table` (None: all) covers; refuses a table
    resync when the slot or the source is what was lost."""
    root = p.dms.bucket_folder.strip("/")
    known: dict[str, Any] = dict(emitter_state.get("tables") or {})
    job_table = f"{p.source.schema}.{p.source.table}"
    waiting = emitter_state.get("resync_needed")
    if table is None:
        return ResyncPlan(sorted(known) or [job_table], [f"{root}/"], True, True,
                          [f"emitter waited for a resync: {waiting['reason']}"]
                          if waiting else [])
    if waiting:
        raise ServiceError(f"the emitter stopped because {waiting['reason']}: that concerns "
                           "every table, so run `cdclab resync` without a table")
    if table not in known:
        raise ServiceError(f"{table} is not a table the emitter streams "
                           f"(it streams: {', '.join(sorted(known)) or 'none yet'})")
    folder = known[table].get("folder") or table.replace(".", "/")
    return ResyncPlan([table], [f"{root}/{folder.strip('/')}/"], False, table == job_table)


def archive_key(prefix: str, stamp: str, key: str) -> str:
    return f"{prefix.strip('/')}/{stamp}/{key}"


def stamp_now() -> str:
    return datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")


# --- the steps (I/O) ---------------------------------------------------------------------
def wait_for_runs_to_end(env: Mapping[str, str], job: str, progress: Progress,
                         timeout: float = RUNS_END_TIMEOUT) -> None:
    from cdclab.drain import ACTIVE_STATES, job_runs

    deadline, said = time.monotonic() + timeout, 0.0
    while True:
        active = [r.run_id for r in job_runs(env, job) if r.state in ACTIVE_STATES]
        if not active:
            return
        if time.monotonic() > deadline:
            raise ServiceError(f"Glue runs {active} of {job} did not end within "
                               f"{timeout:.0f}s; stop them (BatchStopJobRun) and retry")
        if time.monotonic() - said > 10:
            progress(f"waiting for {len(active)} Glue run(s) of {job} to end")
            said = time.monotonic()
        time.sleep(1)


def archive(env: Mapping[str, str], p: settings.PipelineSettings, folders: list[str], stamp: str,
            progress: Progress) -> int:
    """Move every object under `folders` to the archive prefix; returns how many."""
    from cdclab.services.minio import s3_client

    bucket, s3 = p.lake.bronze_bucket, s3_client(dict(env))
    moved = 0
    for folder in folders:
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket,
                                                                 Prefix=folder):
            for obj in page.get("Contents", []):
                target = archive_key(p.lake.archive_prefix, stamp, obj["Key"])
                s3.copy({"Bucket": bucket, "Key": obj["Key"]}, bucket, target)
                s3.delete_object(Bucket=bucket, Key=obj["Key"])
                moved += 1
                if moved % 500 == 0:
                    progress(f"archived {moved} objects")
    return moved


def empty_silver(env: Mapping[str, str], lake: settings.LakeSettings,
                 progress: Progress) -> list[str]:
    """Delete every row of the silver and tombstone tables (a new snapshot: the
    Iceberg history keeps the old rows for time travel until they are expired)."""
    from pyiceberg.exceptions import NoSuchTableError
    from pyiceberg.expressions import AlwaysTrue

    from cdclab.reconcile import silver_catalog

    catalog, emptied = silver_catalog(env), []
    for name in (lake.silver_table, lake.tombstone_table):
        try:
            table = catalog.load_table(f"{lake.glue_database}.{name}")
        except NoSuchTableError:
            continue
        table.delete(AlwaysTrue())
        emptied.append(name)
        progress(f"emptied {lake.glue_database}.{name}")
    return emptied


def reset_bookmark(env: Mapping[str, str], job: str) -> None:
    from cdclab.services.glue_api import glue_call

    glue_call(env[settings.ENV_GLUE_ENDPOINT], "ResetJobBookmark", {"JobName": job}, env=env)


def drop_slot(env: Mapping[str, str], slot: str, progress: Progress) -> None:
    import psycopg

    from dms_emitter import replication as repl

    with psycopg.connect(env[settings.ENV_PG_DSN], autocommit=True) as conn:
        if repl.slot_confirmed_lsn(conn, slot) is not None:
            repl.wait_slot_released(conn, slot)
            repl.drop_slot(conn, slot)
            progress(f"dropped replication slot {slot}")


def set_state_aside(path: Path, stamp: str, tables: list[str] | None) -> None:
    """Whole: the state file moves to state.<stamp>.json. Tables: they leave it, and the
    emitter gives each a full load of its own at start."""
    if not path.exists():
        return
    if tables is None:
        path.rename(path.with_name(f"{path.stem}.{stamp}{path.suffix}"))
        return
    state = json.loads(path.read_text())
    write_json(path.with_name(f"{path.stem}.{stamp}{path.suffix}"), state)
    for table in tables:
        (state.get("tables") or {}).pop(table, None)
    write_json(path, state)


@dataclass
class ResyncReport:
    tables: list[str]
    archived_objects: int
    archive_location: str
    emptied: list[str]
    whole: bool
    notes: list[str]
    reconcile: dict | None = None

    def to_json(self) -> dict:
        return dict(self.__dict__)


def resync(stack, table: str | None, progress: Progress, wait: bool = True,
           drain_timeout: float = 1800) -> ResyncReport:
    """Run the steps on the embedded stack (`stack`: a supervisor.Stack)."""
    from cdclab.runtime import STATE_FILES

    p = stack.pipeline
    missing = [n for n in ("postgres", "minio", "iceberg-rest", "glue")
               if stack.pid_of(n) is None]
    if missing:
        raise ServiceError(f"resync needs {', '.join(missing)} running: `cdclab up`")
    env = stack.env()
    emitter_state_path = stack.state_dir / STATE_FILES["emitter"]
    emitter_state = (json.loads(emitter_state_path.read_text())
                     if emitter_state_path.exists() else {})
    chosen = plan(table, emitter_state, p)
    for note in chosen.notes:
        progress(note)
    stamp = stamp_now()
    progress(f"resync of {', '.join(chosen.tables)}: stopping the emitter and the watcher")
    stack.down(["watcher", "emitter"])
    wait_for_runs_to_end(env, p.glue_job.name, progress)
    if chosen.whole:
        drop_slot(env, p.source.slot, progress)
    archived = archive(env, p, chosen.folders, stamp, progress)
    where = f"s3://{p.lake.bronze_bucket}/{p.lake.archive_prefix.strip('/')}/{stamp}/"
    progress(f"moved {archived} objects to {where}")
    emptied = empty_silver(env, p.lake, progress) if chosen.empty_silver else []
    reset_bookmark(env, p.glue_job.name)
    progress(f"reset the bookmark of {p.glue_job.name}")
    set_state_aside(emitter_state_path, stamp, None if chosen.whole else chosen.tables)
    watcher_state = stack.state_dir / STATE_FILES["watcher"]
    if watcher_state.exists():  # its pending objects were archived
        watcher_state.rename(watcher_state.with_name(f"state.{stamp}.json"))
    progress("starting the emitter (full load) and the watcher")
    stack.up(["emitter", "watcher"])
    report = ResyncReport(chosen.tables, archived, where, emptied, chosen.whole, chosen.notes)
    if wait and chosen.empty_silver:
        from cdclab.drain import current_wal_lsn, wait_for_drain
        from cdclab.reconcile import reconcile

        env = stack.env()
        progress("waiting for the full load to reach silver")
        wait_for_drain(env, p, current_wal_lsn(env[settings.ENV_PG_DSN]),
                       timeout=drain_timeout, progress=progress)
        report.reconcile = reconcile(env, p).to_json()
    return report
