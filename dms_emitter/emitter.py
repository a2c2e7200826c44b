"""The emitter loop: full load from the slot's snapshot, then CDC batches as DMS files.

INVARIANT: the slot's confirmed flush LSN advances only after the file holding those
changes is stored (put returned). A crash replays from the slot, never skips.
"""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import psycopg
from botocore.exceptions import BotoCoreError, ClientError

from cdclab import settings
from cdclab.atomic import write_json
from dms_emitter import pgoutput as pg
from dms_emitter import replication as repl
from dms_emitter.batching import Batcher
from dms_emitter.change_seq import full_load_seq
from dms_emitter.changes import ChangeBuilder
from dms_emitter.dms_csv import (
    OP_INSERT,
    CsvFormat,
    DmsRow,
    cdc_file_name,
    chunk_lines,
    encode_file,
    encode_row,
    load_file_name,
)
from dms_emitter.schema_change import SchemaChange, shape_of
from dms_emitter.sink import Sink
from dms_emitter.source_types import SourceColumn
from dms_emitter.values import RenderOptions, RowRenderer

PHASE_FULL_LOAD = "full_load"
PHASE_STREAMING = "streaming"
STATUS_INTERVAL_S = 10.0  # standby status even when idle (wal_sender_timeout is 60s)
SCHEMA_CHANGES_KEPT = 20  # newest schema changes kept in the state file (cdclab status)


@dataclass(frozen=True)
class EmitterConfig:
    dsn: str
    schema: str
    table: str
    key: str
    slot: str
    publication: str
    state_path: Path
    fmt: CsvFormat
    interval_s: float
    size_bytes: int
    max_file_bytes: int
    render: RenderOptions = RenderOptions()
    pk_update: str = "update"
    unchanged_toast: str = "lookup"
    task_start_time_for_full_load: bool = False

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None) -> EmitterConfig:
        env = dict(os.environ if env is None else env)
        p = settings.load_pipeline()
        dsn = env.get(settings.ENV_PG_DSN)
        if not dsn:
            raise SystemExit(f"dms_emitter: set {settings.ENV_PG_DSN} to the source DSN")
        state = Path(env.get(settings.ENV_STATE_DIR, settings.state_dir()))
        interval = float(env.get(settings.ENV_BATCH_INTERVAL,
                                 p.dms.cdc_max_batch_interval_seconds
                                 or settings.LAB_BATCH_INTERVAL_S))
        size_kb = float(env.get(settings.ENV_BATCH_SIZE_KB, p.dms.cdc_min_file_size_kb
                                or settings.LAB_BATCH_SIZE_KB))
        d = p.dms
        render = RenderOptions(d.trim_space_in_char, d.map_unbounded_numeric_as_string,
                               d.bytea_format, d.timestamptz_time_zone)
        return cls(dsn, p.source.schema, p.source.table, p.source.primary_key, p.source.slot,
                   p.source.publication, state / "emitter" / "state.json",
                   CsvFormat.from_settings(d), interval, int(size_kb * 1024),
                   d.max_file_size_kb * 1024, render, d.pk_update_handling,
                   d.unchanged_toast, d.use_task_start_time_for_full_load_timestamp)

    @property
    def qualified(self) -> str:
        return f"{self.schema}.{self.table}"


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

    def stop(self, *_args: object) -> None:
        self.stopping = True

    def save(self, **changes: object) -> None:
        self.state.update(changes)
        write_state(self.cfg.state_path, self.state)

    # --- start-up and full load ------------------------------------------------------
    def run(self) -> None:
        cfg = self.cfg
        with psycopg.connect(cfg.dsn, autocommit=True) as admin:
            columns = repl.table_columns(admin, cfg.schema, cfg.table)
            has_pk = self.check_key(admin, columns)
            added = repl.ensure_publication(admin, cfg.publication, cfg.schema, cfg.table,
                                            inserts_only=not has_pk, log=self.log)
            repl.wait_slot_released(admin, cfg.slot)
            slot_lsn = repl.slot_confirmed_lsn(admin, cfg.slot)
            streaming = self.state.get("phase") == PHASE_STREAMING
            if streaming and self.state.get("table", cfg.qualified) != cfg.qualified:
                self.log(f"the configured table is now {cfg.qualified} (was "
                         f"{self.state['table']}): full load of it, then streaming")
                streaming = False
            elif streaming and added:
                self.log(f"{cfg.qualified} was not in the publication: changes since the "
                         "slot's position may be missing, so its full load is redone")
                streaming = False
            if not streaming and slot_lsn is not None:
                self.log(f"slot {cfg.slot} exists but no full load of {cfg.qualified} "
                         "finished with it: dropping it and starting over")
                repl.drop_slot(admin, cfg.slot)
            elif streaming and slot_lsn is None:
                raise SystemExit(
                    f"dms_emitter: state {cfg.state_path} says streaming but slot {cfg.slot} "
                    "is gone; changes may be lost. Delete the state file to redo the full "
                    "load: its rows replace what silver holds, but rows deleted meanwhile "
                    "stay in silver, so for an exact copy reset the lake too (cdclab demo "
                    "--fresh, or `cdclab down && rm -rf .cdclab`)."
                )
        conn = repl.ReplicationConnection(cfg.dsn, cfg.render.time_zone)
        try:
            if not streaming:
                self.save(phase=PHASE_FULL_LOAD, last_file=None, table=cfg.qualified)
                consistent_lsn, snapshot = conn.create_slot(cfg.slot)
                self.full_load(snapshot, columns, consistent_lsn)
                self.save(phase=PHASE_STREAMING, shape=[list(c) for c in shape_of(columns)])
            self.stream(conn, columns)
        finally:
            conn.close()

    def check_key(self, admin: psycopg.Connection, columns: list[SourceColumn]) -> bool:
        """True when the table has a primary key. The configured key must be it, or a
        unique key of a table without one; anything else is refused, naming the table."""
        cfg = self.cfg
        key = (cfg.key,)
        pk = tuple(c.name for c in columns if c.in_key)
        if pk:
            if set(key) != set(pk):
                raise SystemExit(f"dms_emitter: [source].primary_key {list(key)} is not the "
                                 f"primary key {list(pk)} of {cfg.qualified}")
            return True
        if not any(set(key) == set(u) for u in repl.unique_keys(admin, cfg.schema, cfg.table)):
            raise SystemExit(f"dms_emitter: [source].primary_key {list(key)} is neither a "
                             f"primary key nor a unique key of {cfg.qualified}")
        self.log(f"WARNING: {cfg.qualified} has no primary key: only its inserts are "
                 "replicated (like DMS, which ignores UPDATE and DELETE for such tables); "
                 "the source's own updates and deletes keep working")
        return False

    def full_load(self, snapshot: str, columns: list[SourceColumn], consistent_lsn: int) -> None:
        cfg = self.cfg
        for stale in self.sink.names("LOAD"):
            self.sink.delete(stale)  # from an interrupted earlier attempt
        names = [c.name for c in columns]
        renderer = RowRenderer(columns, cfg.render)
        rows = repl.snapshot_rows(cfg.dsn, snapshot, cfg.schema, cfg.table, names, cfg.key,
                                  cfg.render.time_zone)
        # UseTaskStartTimeForFullLoadTimestamp: the task's start for every row; else "the
        # full load timestamp ... increments with the time data arrives at the target"
        started = self.started_at if cfg.task_start_time_for_full_load else None
        op = cfg.fmt.op_for_full_load
        lines = (encode_row(DmsRow(OP_INSERT, started or datetime.now(UTC),
                                   renderer.row(values), full_load_seq(n, consistent_lsn)),
                            cfg.fmt, op)
                 for n, values in enumerate(rows, start=1))
        total = 0
        for number, group in enumerate(chunk_lines(lines, cfg.max_file_bytes), start=1):
            name = load_file_name(number)
            self.sink.put(name, encode_file(names, group, cfg.fmt, op).encode())
            total += len(group)
            self.log(f"full load: wrote {self.sink.describe(name)} ({len(group)} rows)")
        self.log(f"full load done: {total} rows")

    def schema_changed(self, change: SchemaChange) -> None:
        """Logged and kept for `cdclab status`; streaming goes on with the new columns."""
        self.log(f"schema change at LSN {pg.format_lsn(change.lsn)}: {change.summary()}; "
                 "the next files carry the new header")
        kept = [*self.state.get("schema_changes", []),
                {**change.to_json(), "seen_at": datetime.now(UTC).isoformat()}]
        self.save(schema_changes=kept[-SCHEMA_CHANGES_KEPT:],
                  shape=[list(c) for c in change.after])

    # --- streaming -------------------------------------------------------------------
    def stream(self, conn: repl.ReplicationConnection, columns: list[SourceColumn]) -> None:
        cfg = self.cfg
        with psycopg.connect(cfg.dsn, autocommit=True) as admin:
            confirmed = repl.slot_confirmed_lsn(admin, cfg.slot) or 0
        reader = repl.SourceReader(cfg.dsn, cfg.render.time_zone)
        try:
            self._stream(conn, reader, confirmed)
        finally:
            reader.close()

    def _stream(self, conn: repl.ReplicationConnection, reader: repl.SourceReader,
                confirmed: int) -> None:
        cfg = self.cfg
        known = self.state.get("shape")
        builder = ChangeBuilder(
            cfg.schema, cfg.table, [cfg.key], cfg.fmt, warn=self.log, types=reader.types,
            options=cfg.render, pk_update=cfg.pk_update, unchanged_toast=cfg.unchanged_toast,
            lookup=lambda key, cols: reader.lookup(cfg.schema, cfg.table, key, cols),
            on_schema_change=self.schema_changed,
            known_shape=tuple(tuple(c) for c in known) if known else None)
        batcher = Batcher(cfg.interval_s, cfg.size_bytes)
        conn.start(cfg.slot, [cfg.publication, repl.inserts_publication(cfg.publication)])
        self.log(f"streaming from slot {cfg.slot} at {pg.format_lsn(confirmed)}")
        seen_end = confirmed  # end LSN of the last complete transaction received
        last_status = time.monotonic()
        while True:
            now = time.monotonic()
            due = batcher.seconds_until_due(now)
            timeout = min(due if due is not None else 1.0, 1.0)
            for item in ([] if self.stopping else conn.read(timeout)):
                if isinstance(item, pg.Keepalive):
                    if (not builder.in_transaction and not batcher.pending
                            and item.end_lsn > seen_end):
                        seen_end = item.end_lsn  # idle: all sent WAL is processed
                    if item.reply_requested:
                        conn.send_status(confirmed)
                        last_status = time.monotonic()
                    continue
                txn = builder.feed(pg.decode(item.payload))
                if txn is not None:
                    seen_end = max(seen_end, txn.end_lsn)
                    if txn.lines:
                        batcher.add(txn, time.monotonic())
            now = time.monotonic()
            if batcher.pending and (batcher.ready(now) or self.stopping):
                self.write_batch(batcher)
            if not batcher.pending and seen_end > confirmed:
                confirmed = seen_end  # only now: every change up to here is in a stored file
                conn.send_status(confirmed)
                last_status = now
            elif now - last_status >= STATUS_INTERVAL_S:
                conn.send_status(confirmed)
                last_status = now
            if self.stopping:
                self.log(f"stopped cleanly at {pg.format_lsn(confirmed)}")
                return

    def write_batch(self, batcher: Batcher) -> None:
        """One file per header: a schema change inside the batch starts a new file."""
        batch = batcher.take()
        for segment in batch.files():
            name = cdc_file_name(datetime.now(UTC), self.state.get("last_file"))
            self.sink.put(name, encode_file(list(segment.header), segment.lines,
                                            self.cfg.fmt, self.cfg.fmt.cdc_op_column).encode())
            self.files += 1
            self.changes += len(segment.lines)
            self.save(last_file=name, last_file_at=datetime.now(UTC).isoformat(),
                      files_written=self.state.get("files_written", 0) + 1,
                      changes_written=self.state.get("changes_written", 0)
                      + len(segment.lines))
            self.log(f"wrote {self.sink.describe(name)}: {len(segment.lines)} changes")
        self.save(stored_through_lsn=pg.format_lsn(batch.end_lsn))
        self.log(f"batch of {len(batch.transactions)} transactions stored, up to LSN "
                 f"{pg.format_lsn(batch.end_lsn)} (total {self.files} files, "
                 f"{self.changes} changes)")


RECONNECT_BACKOFF_S = (1, 2, 5, 10, 30)


def main() -> None:
    """Run until SIGTERM; survive PostgreSQL or S3 outages by reconnecting. A restart
    resumes at the slot's confirmed LSN, so an outage replays changes, never skips them."""
    from dms_emitter.sink import bronze_sink

    emitter = Emitter(EmitterConfig.from_env(), bronze_sink())
    signal.signal(signal.SIGTERM, emitter.stop)
    signal.signal(signal.SIGINT, emitter.stop)
    failures = 0
    while not emitter.stopping:
        try:
            emitter.run()
            return
        except (repl.ReplicationLost, psycopg.OperationalError, OSError, BotoCoreError,
                ClientError) as exc:
            delay = RECONNECT_BACKOFF_S[min(failures, len(RECONNECT_BACKOFF_S) - 1)]
            failures += 1
            emitter.log(f"connection lost ({type(exc).__name__}: {exc}); reconnecting in "
                        f"{delay}s from the slot's confirmed position")
            deadline = time.monotonic() + delay
            while not emitter.stopping and time.monotonic() < deadline:
                time.sleep(0.2)
