"""A large transaction streamed while in progress (pgoutput protocol 2) gives the rows it
gives whole: two emitters on two slots of one real PostgreSQL, streaming on and off."""

from __future__ import annotations

import dataclasses
import threading
import uuid
from pathlib import Path

import psycopg
import pytest

from dms_emitter.emitter import Emitter, EmitterConfig
from dms_emitter.sink import S3Sink
from pipeline_contract import settings
from tests.integration.test_emitter import (
    PIPE,
    drop_slot,
    read_files,
    replay,
    reset_source,
    run_in_thread,
    s3_env,  # noqa: F401 - fixture
    source_rows,
    wait_for,
)

pytestmark = pytest.mark.integration
ROWS = 4000  # one UPDATE of all of them decodes to more than the lab's 1MB work memory


def big_transaction(dsn: str) -> None:
    """Updates every row, rolls a savepoint's changes back, commits a small transaction
    of another session before its own commit."""
    with psycopg.connect(dsn) as conn, psycopg.connect(dsn, autocommit=True) as other:
        conn.execute("UPDATE public.hosts_demo SET name = name || ' (big)'")
        conn.execute("SAVEPOINT undone")
        conn.execute("UPDATE public.hosts_demo SET location = 'rolled back'")
        conn.execute("DELETE FROM public.hosts_demo WHERE id % 7 = 0")
        conn.execute("ROLLBACK TO SAVEPOINT undone")
        conn.execute("UPDATE public.hosts_demo SET response_rate = '1%' WHERE id % 5 = 0")
        conn.execute("DELETE FROM public.hosts_demo WHERE id % 11 = 0")
        other.execute("INSERT INTO public.hosts_demo (id, name) VALUES (-1, 'between')")
        conn.commit()


def stream_txns(dsn: str, slot: str) -> int:
    with psycopg.connect(dsn) as conn:
        row = conn.execute("SELECT stream_txns FROM pg_stat_replication_slots "
                           "WHERE slot_name = %s", (slot,)).fetchone()
    return int(row[0]) if row else 0


def test_streamed_and_whole_transactions_write_the_same_rows(postgres, s3_env,  # noqa: F811
                                                             tmp_path: Path) -> None:
    dsn = postgres.dsn
    reset_source(dsn, ROWS)
    runs: dict[bool, tuple[Emitter, S3Sink, threading.Thread]] = {}
    errors: list[BaseException] = []
    for streaming in (True, False):
        slot = f"stream_{int(streaming)}_{uuid.uuid4().hex[:8]}"
        cfg = dataclasses.replace(
            EmitterConfig.from_env(PIPE, {settings.ENV_PG_DSN: dsn,
                                          settings.ENV_STATE_DIR: str(tmp_path / slot),
                                          settings.ENV_BATCH_INTERVAL: "0.5"}),
            slot=slot, stream_in_progress=streaming)
        sink = S3Sink(PIPE.lake.bronze_bucket, f"streamtest-{slot}/{PIPE.dms.bucket_folder}")
        emitter = Emitter(cfg, sink, log=lambda _m: None)
        thread = run_in_thread(emitter, errors)
        runs[streaming] = (emitter, sink.child(f"{PIPE.source.schema}/{PIPE.source.table}"),
                           thread)
        # one after the other: a slot is made once the transactions running then end
        wait_for(lambda e=emitter: e.state.get("phase") == "streaming" or errors,
                 what="full load")
    try:
        big_transaction(dsn)
        expected = source_rows(dsn)
        for _emitter, files, _t in runs.values():
            wait_for(lambda f=files: replay(read_files(f)) == expected,
                     what="the files to match the source")
        assert not errors, errors
        rows = {streaming: sorted((r for name, rs in read_files(files).items()
                                   if not name.startswith("LOAD") for r in rs),
                                  key=lambda r: r["change_seq"])
                for streaming, (_e, files, _t) in runs.items()}
        assert len(rows[True]) > ROWS and rows[True] == rows[False]
        assert not any(r["location"] == "rolled back" for r in rows[True])
        slots = {s: e.cfg.slot for s, (e, _f, _t) in runs.items()}
        wait_for(lambda: stream_txns(dsn, slots[True]) > 0, what="the slot's streamed count")
        assert stream_txns(dsn, slots[False]) == 0
    finally:
        for emitter, files, thread in runs.values():
            emitter.stop()
            thread.join(timeout=30)
            drop_slot(dsn, emitter.cfg.slot)
            for name in files.names():
                files.delete(name)
