"""The emitter loop: full load from the slot's snapshot, then CDC batches as DMS files.

INVARIANT: the slot's confirmed flush LSN advances only after the file holding those
changes is stored (put returned). A crash replays from the slot, never skips.
"""

from __future__ import annotations

import ctypes
import gzip
import io
import json
import os
import signal
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import BinaryIO

import psycopg
from botocore.exceptions import BotoCoreError, ClientError

from dms_emitter import pgoutput as pg
from dms_emitter import replication as repl
from dms_emitter.batching import Batch, Batcher, Segment
from dms_emitter.change_seq import LAYOUT_DMS, LAYOUT_LSN, full_load_seq
from dms_emitter.changes import ChangeBuilder, TableSpec, lob_truncated
from dms_emitter.date_partition import DatePartitioning, PartitionError, join
from dms_emitter.dms_csv import (
    OP_INSERT,
    CsvFormat,
    WritingClock,
    cdc_file_name,
    encode_file,
    encode_line,
    format_ts,
    load_file_name,
)
from dms_emitter.schema_change import SchemaChange, Shape, shape_of
from dms_emitter.sink import Sink
from pipeline_contract import settings
from pipeline_contract.atomic import write_json
from pipeline_contract.dms_format.parquet_types import STRING_COLUMN, column_type
from pipeline_contract.dms_format.source_types import SourceColumn
from pipeline_contract.dms_format.table_mappings import (
    MappingError,
    TableMappings,
    TablePlan,
    default_mappings,
    folder_conflicts,
)
from pipeline_contract.dms_format.values import RenderOptions, RowRenderer
from pipeline_contract.settings import DmsSettings

PHASE_FULL_LOAD = "full_load"
PHASE_STREAMING = "streaming"
PHASE_LOADED = "loaded"  # a full-load task has finished: nothing more to do
RESELECT = "reselect"  # the stream ended because the selected tables changed
SELECTION_CHECK_S = 15.0  # how often streaming looks for tables added or dropped
HEALTHY_PHASES = (PHASE_STREAMING, PHASE_LOADED)
MIGRATION_TYPES = ("full-load-and-cdc", "full-load", "cdc")
STATUS_INTERVAL_S = 10.0  # standby status even when idle (wal_sender_timeout is 60s)
STATUS_SAVE_S = 1.0  # the confirmed position goes to the state file at most this often
SCHEMA_CHANGES_KEPT = 20  # newest schema changes kept in the state file (cdclab status)
RELEASE_AFTER_BYTES = 8 * 2**20  # a batch this big leaves freed heap behind it


def release_freed_heap() -> None:
    """glibc keeps the heap a big batch's lines and file body freed, and the next big
    value would add to it; malloc_trim hands it back. Elsewhere (no glibc) a no-op."""
    with suppress(OSError, AttributeError):
        ctypes.CDLL(None).malloc_trim(0)


def batch_size_kb(p: settings.PipelineSettings, env: Mapping[str, str]) -> float:
    """The CDC file size (CdcMinFileSize): the env's override, pipeline.toml's, or the lab's."""
    return float(env.get(settings.ENV_BATCH_SIZE_KB,
                         p.dms.cdc_min_file_size_kb or settings.LAB_BATCH_SIZE_KB))


def quiet_cut_seconds(p: settings.PipelineSettings, env: Mapping[str, str]) -> float:
    """The lab's quiet cut (batching.Batcher): only with the lab's own interval; a DMS
    interval set in pipeline.toml (or the env) is DMS's rule, exactly."""
    lab_interval = (settings.ENV_BATCH_INTERVAL not in env
                    and not p.dms.cdc_max_batch_interval_seconds)
    return float(env.get(settings.ENV_BATCH_QUIET,
                         settings.LAB_BATCH_QUIET_S if lab_interval else 0))


@dataclass(frozen=True)
class EmitterConfig:
    dsn: str
    schema: str  # [source].schema/table/primary_key: the configured key is checked
    table: str
    key: str
    slot: str
    publication: str
    state_path: Path
    fmt: CsvFormat
    interval_s: float
    size_bytes: int
    max_file_bytes: int
    quiet_s: float = 0.0  # the lab's quiet cut (batching.Batcher); 0: DMS's rule alone
    render: RenderOptions = RenderOptions()
    pk_update: str = "update"
    unchanged_toast: str = "lookup"
    task_start_time_for_full_load: bool = False
    mappings: TableMappings | None = None  # None: the configured table + change_seq
    fail_on_lob_truncation: bool = False
    migration_type: str = "full-load-and-cdc"
    selection_check_s: float = SELECTION_CHECK_S
    seq_layout: str = LAYOUT_DMS
    partitions: DatePartitioning = DatePartitioning()
    # without mappings: the default ones add the key's before image ([dms]
    # before_image_columns)
    before_image: bool = True
    # large transactions are read while in progress, when the server can stream them
    stream_in_progress: bool = True
    # The whole checked [dms] section: a new setting is read from here (cfg.dms.<key>);
    # the fields above are the parts tests vary one at a time.
    dms: DmsSettings | None = None

    def __post_init__(self) -> None:
        if self.seq_layout not in (LAYOUT_DMS, LAYOUT_LSN):
            raise SystemExit(f"dms_emitter: pipeline.toml [dms] change_seq_layout="
                             f"{self.seq_layout!r}: expected {LAYOUT_DMS!r} or {LAYOUT_LSN!r}")
        try:
            self.session  # noqa: B018 - validates the time zone and interval style
        except repl.ReplicationError as exc:
            raise SystemExit(f"dms_emitter: pipeline.toml [dms]: {exc}") from None
        if self.migration_type not in MIGRATION_TYPES:
            raise SystemExit(f"dms_emitter: pipeline.toml [dms] migration_type="
                             f"{self.migration_type!r}: expected one of {MIGRATION_TYPES}")

    @classmethod
    def from_env(cls, p: settings.PipelineSettings,
                 env: dict[str, str] | None = None) -> EmitterConfig:
        """The emitter's configuration: pipeline.toml's `p` (as main read it) and `env`'s
        DSN, state dir and batch overrides."""
        env = dict(os.environ if env is None else env)
        dsn = env.get(settings.ENV_PG_DSN)
        if not dsn:
            raise SystemExit(f"dms_emitter: set {settings.ENV_PG_DSN} to the source DSN")
        state = Path(env.get(settings.ENV_STATE_DIR, settings.state_dir()))
        interval = float(env.get(settings.ENV_BATCH_INTERVAL,
                                 p.dms.cdc_max_batch_interval_seconds
                                 or settings.LAB_BATCH_INTERVAL_S))
        size_kb = batch_size_kb(p, env)
        quiet = quiet_cut_seconds(p, env)
        d = p.dms
        render = RenderOptions.from_settings(d)
        try:
            partitions = DatePartitioning(d.date_partition_enabled, d.date_partition_sequence,
                                          d.date_partition_delimiter,
                                          d.date_partition_timezone,
                                          d.date_partition_full_load)
            fmt = CsvFormat.from_settings(d)
        except (PartitionError, ValueError) as exc:
            raise SystemExit(f"dms_emitter: pipeline.toml [dms] {exc}") from None
        mappings = None
        if p.source.table_mappings:
            path = settings.table_mappings_path(p)
            try:
                mappings = TableMappings.parse(path.read_text(), str(path))
            except (OSError, MappingError) as exc:
                raise SystemExit(f"dms_emitter: pipeline.toml [source] table_mappings: "
                                 f"{exc}") from None
        return cls(dsn=dsn, schema=p.source.schema, table=p.source.table,
                   key=p.source.primary_key, slot=p.source.slot,
                   publication=p.source.publication,
                   state_path=state / "emitter" / "state.json", fmt=fmt, interval_s=interval,
                   quiet_s=quiet,
                   size_bytes=int(size_kb * 1024),
                   max_file_bytes=(d.max_file_size_kb or settings.LAB_LOAD_FILE_KB) * 1024,
                   render=render, pk_update=d.pk_update_handling,
                   unchanged_toast=d.unchanged_toast,
                   task_start_time_for_full_load=d.use_task_start_time_for_full_load_timestamp,
                   mappings=mappings, fail_on_lob_truncation=d.fail_tasks_on_lob_truncation,
                   migration_type=d.migration_type, seq_layout=d.change_seq_layout,
                   partitions=partitions, before_image=d.before_image_columns, dms=d,
                   stream_in_progress=env.get(settings.ENV_STREAM_IN_PROGRESS, "1") != "0")

    @property
    def qualified(self) -> str:
        return f"{self.schema}.{self.table}"

    @property
    def session(self) -> str:
        """The source sessions' pinned output settings (replication.session_options)."""
        return repl.session_options(self.render.time_zone, self.render.interval_style)

    def table_mappings(self) -> TableMappings:
        return self.mappings or TableMappings.parse(
            default_mappings(self.schema, self.table, self.fmt.change_seq_column,
                             self.before_image))


@dataclass(frozen=True)
class SelectedTable:
    plan: TablePlan
    columns: list[SourceColumn]
    key: tuple[str, ...]


def read_state(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        return {}


def write_state(path: Path, state: dict) -> None:
    write_json(path, state)


class Emitter:
    def __init__(self, cfg: EmitterConfig, sink: Sink,
                 log: Callable[[str], None] = lambda m: print(m, flush=True)) -> None:
        self.cfg, self.sink, self.log = cfg, sink, log
        self.stopping = False
        self.started_at = datetime.now(UTC)  # the "task start time"
        self.state = read_state(cfg.state_path)
        self.files = 0
        self.changes = 0
        self.selected: list[SelectedTable] = []
        self.published_now: list[str] = []  # tables this start had to add to a publication
        self.folders: dict[str, str] = {}  # table folder -> schema.table

    def stop(self, *_args: object) -> None:
        self.stopping = True

    def save(self, **changes: object) -> None:
        self.state.update(changes)
        write_state(self.cfg.state_path, self.state)

    def save_table(self, qualified: str, **changes: object) -> None:
        tables = self.state.setdefault("tables", {})
        tables[qualified] = {**tables.get(qualified, {}), **changes}
        self.save()

    # --- start-up and full load ------------------------------------------------------
    def run(self) -> None:
        if self.cfg.migration_type == "full-load":
            self.run_full_load_only()
            return
        self.adopt_old_state()
        while self.run_once() == RESELECT and not self.stopping:
            self.log("the selected tables changed: picking the change up")

    def adopt_old_state(self) -> None:
        """A state file of the one-table emitter (no "tables") describes [source].table."""
        if "tables" not in self.state and self.state.get("phase") == PHASE_STREAMING:
            cfg = self.cfg
            shape = self.state.pop("shape", None)
            self.state.pop("table", None)
            self.save_table(cfg.qualified, folder=f"{cfg.schema}/{cfg.table}",
                            **({"shape": shape} if shape else {}))

    def run_once(self) -> str | None:
        cfg = self.cfg
        waiting = self.state.get("resync_needed")
        if waiting:  # said once; stays said until `cdclab resync` moves this state aside
            raise SystemExit(f"dms_emitter: {waiting.get('reason')} (since "
                             f"{waiting.get('at')}). Run `cdclab resync`.")
        with psycopg.connect(cfg.dsn, autocommit=True) as admin:
            self.selected = self.select_tables(admin)
            names = [t.plan.qualified for t in self.selected]
            repl.wait_slot_released(admin, cfg.slot)
            slot_lsn = repl.slot_confirmed_lsn(admin, cfg.slot)
            streaming = self.state.get("phase") == PHASE_STREAMING
            if streaming and slot_lsn is None:
                self.needs_resync(f"replication slot {cfg.slot} is gone: the changes since "
                                  "it was dropped are lost")
            if streaming and repl.slot_wal_status(admin, cfg.slot) == "lost":
                self.needs_resync(f"replication slot {cfg.slot} is invalidated (wal_status "
                                  "lost, max_slot_wal_keep_size): changes were lost")
            if not streaming and slot_lsn is not None:
                if not self.state and self.earlier_files():
                    self.needs_resync(
                        f"the emitter's state {cfg.state_path} is gone while slot {cfg.slot} "
                        "and the files of an earlier full load remain: a new full load "
                        "would leave rows deleted meanwhile in silver")
                self.log(f"slot {cfg.slot} exists but no full load of {names} finished "
                         "with it: dropping it and starting over")
                repl.drop_slot(admin, cfg.slot)
            if streaming:
                self.follow_selection(admin)
        conn = repl.ReplicationConnection(cfg.dsn, cfg.session)
        try:
            system_id = conn.identify_system()
            known_id = self.state.get("source_system_id")
            if streaming and known_id and known_id != system_id:
                self.needs_resync(f"the source database was rebuilt (system identifier "
                                  f"{known_id} -> {system_id}): its LSNs restart, so the "
                                  "old position means nothing")
            if streaming and not known_id:  # a state file from before this check
                self.save(source_system_id=system_id)
            # checks passed: this process is the one at work (a load cut short is not)
            self.save(pid=os.getpid(), loading=None)
            if not streaming:
                self.save(phase=PHASE_FULL_LOAD, last_file=None, tables={},
                          source_system_id=system_id)
                consistent_lsn, snapshot = conn.create_slot(cfg.slot)
                if cfg.migration_type == "cdc":
                    self.start_tables_without_load(self.selected)
                    self.log("migration type cdc: no full load, changes from "
                             f"{pg.format_lsn(consistent_lsn)} on")
                else:
                    for table in self.selected:
                        self.full_load(table, snapshot, consistent_lsn)
                self.save(phase=PHASE_STREAMING)
            return self.stream(conn)
        finally:
            conn.close()

    def needs_resync(self, reason: str) -> None:
        """Stop rather than stream into a silent divergence: the reason goes to the state
        file (`cdclab status` shows it) and `cdclab resync` is the way on."""
        self.save(resync_needed={"reason": reason, "at": format_ts(datetime.now(UTC))})
        raise SystemExit(f"dms_emitter: {reason}. Nothing more is written until "
                         "`cdclab resync` re-snapshots the tables (old files are kept "
                         "under the archive prefix)")

    def earlier_files(self) -> bool:
        """Does any selected table's folder hold files (of an earlier full load)?"""
        return any(self.sink.child(t.plan.folder).names("") for t in self.selected)

    def follow_selection(self, admin: psycopg.Connection) -> None:
        """While streaming: tables newly selected (or found missing from the publication)
        get a full load of their own, and the slot stays. The load's change sequence
        sits just below the LSN read before its snapshot: every change committed after
        the snapshot orders above it, one committed before it is in the load as well.
        Tables no longer selected end: their files stay."""
        cfg = self.cfg
        known = self.state.setdefault("tables", {})
        names = {t.plan.qualified for t in self.selected}
        reloaded = [q for q in self.published_now if q in known]
        if reloaded and cfg.seq_layout == LAYOUT_DMS:
            self.log(f"WARNING: {reloaded} had left the publication and are loaded again. "
                     "Their full-load rows carry no change sequence (as with DMS), so the "
                     "job orders them before every change it already holds: rows changed "
                     "while unpublished keep their old values in silver until changed "
                     "again. change_seq_layout = \"lsn\" orders the reload after them.")
        for gone in sorted(set(known) - names):
            self.log(f"{gone} is no longer selected: its files stay, no new ones are written")
            del known[gone]
        added = [t for t in self.selected
                 if t.plan.qualified not in known or t.plan.qualified in self.published_now]
        if not added:
            self.save()
            return
        if cfg.migration_type == "cdc":
            self.start_tables_without_load(added)
            self.log(f"picked up {[t.plan.qualified for t in added]}: changes from now on "
                     "(migration type cdc: no full load)")
            return
        row = admin.execute("SELECT pg_current_wal_lsn()::text").fetchone()
        assert row is not None
        below = pg.parse_lsn(row[0])
        admin.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        snapshot = admin.execute("SELECT pg_export_snapshot()").fetchone()
        assert snapshot is not None
        try:
            for table in added:
                self.log(f"picked up {table.plan.qualified}: full load, then its changes")
                self.full_load(table, snapshot[0], below)
        finally:
            admin.execute("COMMIT")

    def start_tables_without_load(self, tables: list[SelectedTable]) -> None:
        for table in tables:
            self.save_table(table.plan.qualified, folder=table.plan.folder,
                            shape=[list(c) for c in shape_of(table.columns)])

    def run_full_load_only(self) -> None:
        """MigrationType full-load: the tables as of one snapshot, no slot, no CDC; then
        nothing more to do until stopped."""
        cfg = self.cfg
        self.save(pid=os.getpid(), loading=None)
        if self.state.get("phase") == PHASE_LOADED:
            self.log("full load already done (migration type full-load): idle")
        else:
            with psycopg.connect(cfg.dsn, autocommit=True) as admin:
                self.selected = self.select_tables(admin, publish=False)
                if repl.slot_confirmed_lsn(admin, cfg.slot) is not None:
                    # left by an earlier CDC task: it would hold WAL forever
                    repl.wait_slot_released(admin, cfg.slot)
                    repl.drop_slot(admin, cfg.slot)
                    self.log(f"dropped slot {cfg.slot}: a full-load task reads no changes")
                admin.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
                row = admin.execute("SELECT pg_export_snapshot(), "
                                    "pg_current_wal_lsn()::text").fetchone()
                assert row is not None
                self.save(phase=PHASE_FULL_LOAD, last_file=None, tables={})
                for table in self.selected:
                    self.full_load(table, row[0], pg.parse_lsn(row[1]))
                admin.execute("COMMIT")
            self.save(phase=PHASE_LOADED)
            self.log("full load done (migration type full-load): no CDC, idle")
        while not self.stopping:
            time.sleep(0.5)

    def select_tables(self, admin: psycopg.Connection,
                      publish: bool = True) -> list[SelectedTable]:
        """The tables the mappings select, each checked and in the right publication;
        tables no longer selected leave the publications."""
        cfg = self.cfg
        plans = cfg.table_mappings().select(repl.list_tables(admin))
        if not plans:
            raise SystemExit("dms_emitter: the table mappings select no table of the source "
                             "database (check the selection rules' schema and table names)")
        selected: list[SelectedTable] = []
        self.published_now = []
        for plan in plans:
            columns = repl.table_columns(admin, plan.schema, plan.table)
            key, has_pk = self.check_key(admin, plan, columns)
            if publish and repl.ensure_publication(
                    admin, cfg.publication, plan.schema, plan.table, inserts_only=not has_pk,
                    log=self.log):
                self.published_now.append(plan.qualified)
            selected.append(SelectedTable(plan, columns, key))
        conflicts = folder_conflicts(t.plan for t in selected)
        if conflicts:
            raise SystemExit("dms_emitter: the table mappings select tables DMS would mix: "
                             + "; ".join(conflicts))
        if publish:
            repl.prune_publications(admin, cfg.publication,
                                    {(t.plan.schema, t.plan.table) for t in selected},
                                    self.log)
        self.log(f"tables: {', '.join(t.plan.qualified for t in selected)}")
        return selected

    def check_key(self, admin: psycopg.Connection, plan: TablePlan,
                  columns: list[SourceColumn]) -> tuple[tuple[str, ...], bool]:
        """(key, has a primary key). The configured key of [source].table must be its
        primary key, or a unique key of a table without one: anything else is refused,
        naming the table. Other tables are keyed by their primary key."""
        cfg = self.cfg
        pk = tuple(c.name for c in columns if c.in_key)
        configured = plan.qualified == cfg.qualified
        if pk:
            if configured and {cfg.key} != set(pk):
                raise SystemExit(f"dms_emitter: [source].primary_key {[cfg.key]} is not the "
                                 f"primary key {list(pk)} of {plan.qualified}")
            return pk, True
        uniques = repl.unique_keys(admin, plan.schema, plan.table)
        if configured and not any({cfg.key} == set(u) for u in uniques):
            raise SystemExit(f"dms_emitter: [source].primary_key {[cfg.key]} is neither a "
                             f"primary key nor a unique key of {plan.qualified}")
        self.log(f"WARNING: {plan.qualified} has no primary key: only its inserts are "
                 "replicated (like DMS, which ignores UPDATE and DELETE for such tables); "
                 "the source's own updates and deletes keep working")
        key = (cfg.key,) if configured else (uniques[0] if uniques else ())
        return key, False

    def full_load(self, table: SelectedTable, snapshot: str, consistent_lsn: int) -> None:
        cfg, plan = self.cfg, table.plan
        # DatePartitionEnabled: the load's files in its start's date folder (the lab's
        # choice, date_partition_full_load; AWS documents commit dates for CDC only)
        sink = self.sink.child(join(plan.folder,
                                    cfg.partitions.load_folder(datetime.now(UTC))))
        for stale in sink.names("LOAD"):
            sink.delete(stale)  # from an interrupted earlier attempt
        names = [c.name for c in table.columns]
        before = plan.before(table.columns, table.key)
        kept, header = plan.kept(names), plan.header(names, before)
        no_before = (None,) * len(before)  # a LOAD row has no before image
        renderer = RowRenderer(table.columns, cfg.render, lob_truncated(
            plan.qualified, cfg.render.lob_max_size_kb, {}, self.log,
            cfg.fail_on_lob_truncation))
        rows = repl.snapshot_rows(cfg.dsn, snapshot, plan.schema, plan.table, names,
                                  table.key, cfg.session)
        # UseTaskStartTimeForFullLoadTimestamp: the task's start for every row; else "the
        # full load timestamp ... increments with the time data arrives at the target"
        started = self.started_at if cfg.task_start_time_for_full_load else None
        fixed, clock = (format_ts(started) if started else None), WritingClock()

        def load_seq(n: int) -> str | None:  # DMS leaves $AR_H_CHANGE_SEQ empty
            return full_load_seq(n, consistent_lsn) if cfg.seq_layout == LAYOUT_LSN else None

        op = OP_INSERT if cfg.fmt.op_for_full_load else None
        fields = (cfg.fmt.fields(op, fixed or clock(),
                                 plan.row(kept, renderer.row(values), load_seq(n),
                                          no_before))
                  for n, values in enumerate(rows, start=1))
        if cfg.fmt.parquet is not None:
            columns = cfg.fmt.header(header, op is not None)
            prefix = len(columns) - len(header)
            types = (*(STRING_COLUMN,) * prefix,
                     *(column_type(table.columns[i].type, cfg.render) for i in kept),
                     *(STRING_COLUMN,) * len(plan.added),
                     *(column_type(table.columns[i].type, cfg.render) for i in before))
            total, files = self.load_parquet(plan.qualified, sink, columns, types, fields)
        else:
            total, files = self.load_csv(plan.qualified, sink, header, op is not None, fields)
        self.state["loading"] = None
        self.save_table(plan.qualified, folder=plan.folder, load_rows=total, load_files=files,
                        shape=[list(c) for c in shape_of(table.columns)])
        self.log(f"full load of {plan.qualified} done: {total} rows")

    def loaded(self, qualified: str, files: int, rows: int, name: str) -> None:
        """A LOAD file stored: saved as the load's progress (a start that waits for the
        load waits on while it moves: cdclab.services.base.wait_until), then logged."""
        self.save(loading={"table": qualified, "files": files, "rows": rows})
        self.log(f"full load: wrote {name} ({rows} rows of {qualified} so far)")

    def load_csv(self, qualified: str, sink: Sink, header: tuple[str, ...], op: bool,
                 fields: Iterator[list[str | None]]) -> tuple[int, int]:
        fmt = self.cfg.fmt
        lines = (encode_line(f, fmt) for f in fields)
        head = encode_line(fmt.header(header, op), fmt).encode() if fmt.add_header else b""
        total = files = 0
        pending = next(lines, None)
        while pending is not None:  # one file per MaxFileSize, streamed, never whole
            files += 1
            name = load_file_name(files, fmt.suffix)
            count, size = 0, len(head)
            with sink.writer(name) as spool, compressed(spool, fmt.gzip) as out:
                out.write(head)
                while pending is not None:
                    data = pending.encode()
                    if count and size + len(data) > self.cfg.max_file_bytes:
                        break
                    out.write(data)
                    count, size = count + 1, size + len(data)
                    pending = next(lines, None)
            total += count
            self.loaded(qualified, files, total, sink.describe(name))
        return total, files

    def load_parquet(self, qualified: str, sink: Sink, columns: list[str], types: tuple,
                     fields: Iterator[list[str | None]]) -> tuple[int, int]:
        """LOAD .parquet files, one row group (RowGroupLength rows) in memory at a time;
        a file ends at the first row group that brings it to MaxFileSize."""
        from dms_emitter.parquet_file import ParquetFileWriter  # pyarrow: ~40 MB, Parquet only

        cfg = self.cfg
        assert cfg.fmt.parquet is not None
        total = files = 0
        pending = next(fields, None)
        while pending is not None:
            files += 1
            name = load_file_name(files, cfg.fmt.suffix)
            with sink.writer(name) as spool:
                writer = ParquetFileWriter(spool, columns, types, cfg.fmt.parquet,
                                           cfg.render, self.log)
                while pending is not None:
                    writer.add(pending)
                    pending = next(fields, None)
                    if writer.rows % cfg.fmt.parquet.rows_per_group == 0 and \
                            spool.tell() >= cfg.max_file_bytes:
                        break
                writer.close()
            total += writer.rows
            self.loaded(qualified, files, total, sink.describe(name))
        return total, files

    def schema_changed(self, change: SchemaChange) -> None:
        """Logged and kept for `cdclab status`; streaming goes on with the new columns."""
        self.log(f"schema change at LSN {pg.format_lsn(change.lsn)}: {change.summary()}; "
                 "the next files carry the new header")
        kept = [*self.state.get("schema_changes", []),
                {**change.to_json(), "seen_at": datetime.now(UTC).isoformat()}]
        self.state["schema_changes"] = kept[-SCHEMA_CHANGES_KEPT:]
        self.save_table(change.table, shape=[list(c) for c in change.after])

    # --- streaming -------------------------------------------------------------------
    def stream(self, conn: repl.ReplicationConnection) -> str | None:
        cfg = self.cfg
        with psycopg.connect(cfg.dsn, autocommit=True) as admin:
            confirmed = repl.slot_confirmed_lsn(admin, cfg.slot) or 0
        reader = repl.SourceReader(cfg.dsn, cfg.session)
        try:
            return self._stream(conn, reader, confirmed)
        finally:
            reader.close()

    def selection_changed(self, reader: repl.SourceReader) -> bool:
        plans = self.cfg.table_mappings().select(repl.list_tables(reader.conn))
        return {p.qualified for p in plans} != {t.plan.qualified for t in self.selected}

    def _stream(self, conn: repl.ReplicationConnection, reader: repl.SourceReader,
                confirmed: int) -> str | None:
        cfg = self.cfg
        known = self.state.get("tables", {})
        batcher = Batcher(cfg.interval_s, cfg.size_bytes, cfg.quiet_s)
        specs = [TableSpec(t.plan, t.key, _shape(known.get(t.plan.qualified, {})))
                 for t in self.selected]

        def add_row(folder: str, header: tuple[str, ...], line: str, types: tuple,
                    partition: str) -> None:
            # a row's batch may let the slot be confirmed up to the last transaction
            # complete before the row's own (seen_end, while its transaction is read)
            batcher.add_row(folder, header, line, time.monotonic(), types, partition,
                            seen_end)
            if batcher.size_reached():  # mid-transaction: a huge one stays bounded
                self.write_batch(batcher, builder.last_change, time.monotonic())

        builder = ChangeBuilder(
            specs, cfg.fmt, warn=self.log, types=reader.types, options=cfg.render,
            pk_update=cfg.pk_update, unchanged_toast=cfg.unchanged_toast,
            lookup=lambda plan, key, cols: self.look_up(reader, plan, key, cols),
            on_schema_change=self.schema_changed,
            fail_on_lob_truncation=cfg.fail_on_lob_truncation, seq_layout=cfg.seq_layout,
            partitions=cfg.partitions,
            on_row=add_row)
        self.folders = {t.plan.folder: t.plan.qualified for t in self.selected}
        streaming = conn.start(cfg.slot, [cfg.publication,
                                          repl.inserts_publication(cfg.publication)],
                               streaming=cfg.stream_in_progress)
        decoder = pg.Decoder()
        self.log(f"streaming from slot {cfg.slot} at {pg.format_lsn(confirmed)}"
                 + (" (large transactions while in progress)" if streaming else ""))
        seen_end = confirmed  # end LSN of the last complete transaction received
        last_status = time.monotonic()
        next_check = last_status + cfg.selection_check_s
        last_saved = 0.0
        server_end = confirmed  # the server's WAL end (keepalives and XLogData say it)
        unsaved = False
        while True:
            now = time.monotonic()
            due = batcher.seconds_until_due(now)
            timeout = min(due if due is not None else 1.0, 1.0)
            for item in ([] if self.stopping else conn.read(timeout)):
                if isinstance(item, pg.Keepalive):
                    server_end = max(server_end, item.end_lsn)
                    if (not builder.in_transaction and not batcher.pending
                            and item.end_lsn > seen_end):
                        seen_end = item.end_lsn  # idle: all sent WAL is processed
                    if item.reply_requested:
                        conn.send_status(confirmed)
                        last_status = time.monotonic()
                    continue
                server_end = max(server_end, item.end_lsn)
                txn = builder.feed(decoder.decode(item.payload), item.start_lsn,
                                   len(item.payload))
                batcher.mid_transaction = builder.in_transaction
                if txn is not None:
                    seen_end = max(seen_end, txn.end_lsn)
            now = time.monotonic()
            # a stop inside a transaction writes nothing more: the slot replays it whole
            stop_flush = self.stopping and not builder.in_transaction
            if batcher.pending and (batcher.ready(now) or stop_flush):
                # each table's file when its own interval or size is up (DMS's cut)
                self.write_batch(batcher, builder.last_change, None if stop_flush else now)
            safe = batcher.safe_lsn()  # every change up to here is in a stored file
            target = seen_end if safe is None else min(seen_end, safe)
            if target > confirmed:
                confirmed = target
                conn.send_status(confirmed)
                last_status = now
                unsaved = True
            elif now - last_status >= STATUS_INTERVAL_S:
                conn.send_status(confirmed)
                last_status = now
            if unsaved and (now - last_saved >= STATUS_SAVE_S or self.stopping):
                self.save(confirmed_lsn=pg.format_lsn(confirmed),  # for `cdclab status`
                          confirmed_at=datetime.now(UTC).isoformat(),
                          slot_lag_bytes=max(server_end - confirmed, 0))
                last_saved, unsaved = now, False
            if self.stopping:
                self.log(f"stopped cleanly at {pg.format_lsn(confirmed)}")
                return None
            if now >= next_check and not builder.in_transaction:
                next_check = now + cfg.selection_check_s
                if self.selection_changed(reader):
                    # store and confirm everything received, then select again
                    if batcher.pending:
                        self.write_batch(batcher, builder.last_change)
                    if seen_end > confirmed:
                        confirmed = seen_end
                        conn.send_status(confirmed)
                        self.save(confirmed_lsn=pg.format_lsn(confirmed),
                                  confirmed_at=datetime.now(UTC).isoformat())
                    return RESELECT

    def write_batch(self, batcher: Batcher,
                    last_change: dict[str, tuple[int, int]] | None = None,
                    now: float | None = None) -> None:
        """One file per table and header: a schema change starts a new file. The tables
        whose batch is due at `now` (all of them when None: a flush).
        `last_change`: per folder, the commit LSN and time of its newest row (status)."""
        batch = batcher.take(now)
        size = batch.size
        self._store_batch(batch, last_change)
        del batch
        if size >= RELEASE_AFTER_BYTES:
            release_freed_heap()

    def _store_batch(self, batch: Batch,
                     last_change: dict[str, tuple[int, int]] | None) -> None:
        # the wall time of the batch's first row (opened_at is the monotonic clock's):
        # a change's way to bronze is then its WAL's send and decode, and the batch's wait
        held = max(0.0, time.monotonic() - batch.opened_at)
        received = (datetime.now(UTC) - timedelta(seconds=held)).isoformat(
            timespec="milliseconds")
        for segment in batch.files():
            sink = self.sink.child(join(segment.folder, segment.partition))
            fmt = self.cfg.fmt
            # DatePartitionTimezone also names CDC files ("when ... a CDC filename is
            # generated"); UTC otherwise
            name = cdc_file_name(datetime.now(UTC), self.state.get("last_file"), fmt.suffix,
                                 self.cfg.partitions.local(datetime.now(UTC)).tzinfo or UTC)
            sink.put(name, self.cdc_body(segment))
            self.files += 1
            self.changes += len(segment.lines)
            qualified = self.folders.get(segment.folder, segment.folder)
            table = self.state.get("tables", {}).get(qualified, {})
            at = datetime.now(UTC).isoformat()
            self.state.update(last_file=name, last_file_at=at,
                              files_written=self.state.get("files_written", 0) + 1,
                              changes_written=self.state.get("changes_written", 0)
                              + len(segment.lines))
            newest = (last_change or {}).get(segment.folder)
            progress = {} if newest is None else {
                "last_lsn": pg.format_lsn(newest[0]),
                "last_commit_at": pg.pg_timestamp(newest[1]).isoformat(),
                # commit to stored in S3, for the newest change of this table
                "lag_seconds": round(
                    (datetime.now(UTC) - pg.pg_timestamp(newest[1])).total_seconds(), 3)}
            self.state.setdefault("tables", {})[qualified] = {
                **table, "last_file": name, "last_file_at": at, **progress,
                "files_written": table.get("files_written", 0) + 1,
                "changes_written": table.get("changes_written", 0) + len(segment.lines)}
            self.log(f"wrote {sink.describe(name)}: {len(segment.lines)} changes "
                     f"(first received {received})")
        self.save()
        self.log(f"batch of {batch.rows} changes stored (total {self.files} files, "
                 f"{self.changes} changes)")


    def cdc_body(self, segment: Segment) -> bytes:
        fmt = self.cfg.fmt
        if fmt.parquet is None:
            return fmt.compress(encode_file(list(segment.header), segment.lines, fmt,
                                            fmt.cdc_op_column).encode())
        from dms_emitter.parquet_file import ParquetFileWriter, parse_rows

        out = io.BytesIO()  # a CDC file is one batch: CdcMinFileSize bounds it
        writer = ParquetFileWriter(out, fmt.header(segment.header, fmt.cdc_op_column),
                                   segment.types, fmt.parquet, self.cfg.render, self.log)
        for row in parse_rows(segment.lines):
            writer.add(row)
        writer.close()
        return out.getvalue()

    def look_up(self, reader: repl.SourceReader, plan: TablePlan,
                key: dict[str, str | None], columns: list[str]) -> dict | None:
        try:
            return reader.lookup(plan.schema, plan.table, key, columns)
        except repl.LookupGone as exc:
            self.log(f"WARNING: unchanged TOAST value(s) of {columns} cannot be looked up "
                     f"({exc}); written as NULL")
            return None


@contextmanager
def compressed(out: BinaryIO, gzip_it: bool) -> Iterator[BinaryIO]:
    """`out` itself, or a GZIP stream into it (CompressionType GZIP)."""
    if not gzip_it:
        yield out
        return
    with gzip.GzipFile(fileobj=out, mode="wb", mtime=0, compresslevel=6) as packed:
        yield packed  # type: ignore[misc]


def _shape(table_state: dict) -> Shape | None:
    shape = table_state.get("shape")
    return tuple((name, kind) for name, kind in shape) if shape else None


RECONNECT_BACKOFF_S = (1, 2, 5, 10, 30)
STABLE_S = 60.0  # connected this long, an outage is a new one: the back-off starts over


def main() -> None:
    """Run until SIGTERM; survive PostgreSQL or S3 outages by reconnecting. A restart
    resumes at the slot's confirmed LSN, so an outage replays changes, never skips them."""
    from dms_emitter.sink import bronze_sink

    p = settings.load_pipeline()  # the process's one read of pipeline.toml
    emitter = Emitter(EmitterConfig.from_env(p), bronze_sink(p))
    signal.signal(signal.SIGTERM, emitter.stop)
    signal.signal(signal.SIGINT, emitter.stop)
    failures = 0
    while not emitter.stopping:
        connected_at = time.monotonic()
        try:
            emitter.run()
            return
        except (repl.ReplicationLost, psycopg.OperationalError, OSError, BotoCoreError,
                ClientError) as exc:
            if time.monotonic() - connected_at >= STABLE_S:
                failures = 0  # it had been streaming: not the same outage any more
            delay = RECONNECT_BACKOFF_S[min(failures, len(RECONNECT_BACKOFF_S) - 1)]
            failures += 1
            emitter.log(f"connection lost ({type(exc).__name__}: {exc}); reconnecting in "
                        f"{delay}s from the slot's confirmed position")
            deadline = time.monotonic() + delay
            while not emitter.stopping and time.monotonic() < deadline:
                time.sleep(0.2)
