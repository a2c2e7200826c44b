"""dms_emitter against a real PostgreSQL slot and MinIO: full load + CDC, crash and replay."""

from __future__ import annotations

import dataclasses
import threading
import uuid
from collections.abc import Iterator
from functools import partial
from pathlib import Path

import psycopg
import pytest

from cdclab.sample_data import seed
from cdclab.services.base import StackContext
from cdclab.workload import run_workload
from dms_emitter.dms_csv import parse_dms_csv
from dms_emitter.emitter import Emitter, EmitterConfig
from dms_emitter.launcher import EmitterService
from dms_emitter.sink import S3Sink, bronze_sink
from pipeline_contract import settings
from pipeline_contract.settings import load_pipeline
from tests.resources.launch import launch
from tests.resources.waiting import wait_for as _wait_for

wait_for = partial(_wait_for, every=0.5)  # this module's polling period

pytestmark = pytest.mark.integration
PIPE = settings.load_pipeline()
COLUMNS = ["id", "url", "name", "since", "location", "response_time", "response_rate"]


def source_rows(dsn: str) -> dict[str, dict]:
    """The source as the files carry it: DMS writes '' as an empty field, read as NULL."""
    cols = ", ".join(f"NULLIF({c}::text, '')" for c in COLUMNS)
    with psycopg.connect(dsn) as conn:
        rows = conn.execute(f"SELECT {cols} FROM public.hosts_demo").fetchall()
    return {r[0]: dict(zip(COLUMNS, r, strict=True)) for r in rows}


def read_files(sink: S3Sink) -> dict[str, list[dict]]:
    out = {}
    for name in sink.names():
        body = sink.client.get_object(Bucket=sink.bucket, Key=sink.key(name))["Body"].read()
        out[name] = parse_dms_csv(body.decode(), name)
    return out


def replay(files: dict[str, list[dict]]) -> dict[str, dict]:
    """The table the files describe: apply every change in change_seq order (dups harmless).
    Full-load rows have no change sequence (as with DMS): they come first."""
    table: dict[str, dict] = {}
    changes = sorted((r for rows in files.values() for r in rows),
                     key=lambda r: r["change_seq"] or "")
    for r in changes:
        if r["Op"] == "D":
            table.pop(r["id"], None)
        else:
            table[r["id"]] = {c: r[c] for c in COLUMNS}
    return table


def reset_source(dsn: str, rows: int) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("TRUNCATE public.hosts_demo")
    with psycopg.connect(dsn) as conn:
        seed(conn, load_pipeline(), rows, seed=11)


def drop_slot(dsn: str, slot: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots "
                     "WHERE slot_name = %s AND NOT active", (slot,))


def clear(sink: S3Sink) -> None:
    for name in sink.names():
        sink.delete(name)


@pytest.fixture
def s3_env(minio: dict, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict]:
    for key, value in minio["env"].items():
        monkeypatch.setenv(key, value)
    yield minio


def test_full_load_then_cdc_as_a_service(postgres, s3_env, tmp_path: Path) -> None:
    dsn = postgres.dsn
    reset_source(dsn, 300)
    sink = bronze_sink(PIPE).child(f"{PIPE.source.schema}/{PIPE.source.table}")
    clear(sink)
    state = tmp_path / "state"
    ctx = StackContext(state_dir=state, env={**s3_env["env"], settings.ENV_PG_DSN: dsn,
                                             settings.ENV_BATCH_INTERVAL: "0.5"},
                       pipeline=load_pipeline())
    running = launch(EmitterService(), ctx)  # healthy = full load done, streaming
    try:
        files = read_files(sink)
        assert list(files) == ["LOAD00000001.csv"]
        load = files["LOAD00000001.csv"]
        assert len(load) == 300 and {r["Op"] for r in load} == {"I"}
        assert replay(files) == source_rows(dsn)

        report = run_workload(dsn, load_pipeline(), transactions=80, rate=0, seed=5)
        assert report["transactions"] == 80
        expected = source_rows(dsn)
        wait_for(lambda: replay(read_files(sink)) == expected, what="CDC files to match source")
        cdc = [n for n in sink.names() if not n.startswith("LOAD")]
        assert cdc and all(len(n) == len("20261122-101500123.csv") for n in cdc)
        rows = [r for n in cdc for r in read_files(sink)[n]]
        assert {r["Op"] for r in rows} == {"I", "U", "D"}
        seqs = [r["change_seq"] for r in rows]
        assert len(set(seqs)) == len(seqs) and all(len(s) == 35 for s in seqs)
        assert {r["change_seq"] for r in load} == {None}  # DMS leaves it empty
    finally:
        running.stop()
        drop_slot(dsn, PIPE.source.slot)
        clear(sink)
    assert "stopped cleanly" in ctx.log_path("emitter").read_text()


def run_in_thread(emitter: Emitter, errors: list[BaseException]) -> threading.Thread:
    """The emitter on a daemon thread; what it raises goes to `errors`."""
    def target() -> None:
        try:
            emitter.run()
        except BaseException as exc:  # noqa: BLE001 - reported to the test thread
            errors.append(exc)
    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    return thread


class Crash(Exception):
    pass


class CrashAfterPut:
    """Stores the first CDC file, then 'dies' before the emitter can confirm the slot."""

    def __init__(self, inner: S3Sink, parent: CrashAfterPut | None = None) -> None:
        self.inner = inner
        self.parent = parent
        self.crashed_file: str | None = None

    def put(self, name: str, body: bytes) -> None:
        self.inner.put(name, body)
        root = self.parent or self
        if not name.startswith("LOAD") and root.crashed_file is None:
            root.crashed_file = name
            raise Crash(name)

    def child(self, folder: str) -> CrashAfterPut:
        return CrashAfterPut(self.inner.child(folder), self.parent or self)

    def __getattr__(self, attr: str):
        return getattr(self.inner, attr)


def test_crash_before_confirm_replays_and_loses_nothing(postgres, s3_env, tmp_path: Path) -> None:
    dsn = postgres.dsn
    reset_source(dsn, 50)
    slot = f"crash_{uuid.uuid4().hex[:8]}"
    cfg = dataclasses.replace(
        EmitterConfig.from_env(PIPE, {settings.ENV_PG_DSN: dsn,
                                      settings.ENV_STATE_DIR: str(tmp_path),
                                      settings.ENV_BATCH_INTERVAL: "0.3"}),
        slot=slot)
    sink = S3Sink(PIPE.lake.bronze_bucket, f"crashtest-{slot}/{PIPE.dms.bucket_folder}")
    table_files = sink.child(f"{PIPE.source.schema}/{PIPE.source.table}")
    crashing = CrashAfterPut(sink)
    errors: list[BaseException] = []
    run = partial(run_in_thread, errors=errors)

    try:
        first = Emitter(cfg, crashing, log=lambda _m: None)
        t1 = run(first)
        wait_for(lambda: table_files.names("LOAD")
                 and first.state.get("phase") == "streaming", what="full load")
        run_workload(dsn, load_pipeline(), transactions=30, rate=0, seed=9)
        t1.join(timeout=60)
        assert len(errors) == 1 and isinstance(errors[0], Crash), errors
        crashed = crashing.crashed_file
        assert crashed is not None
        crashed_rows = read_files(table_files)[crashed]
        assert crashed_rows

        second = Emitter(cfg, sink, log=lambda _m: None)  # restart: same state, same slot
        t2 = run(second)
        expected = source_rows(dsn)
        wait_for(lambda: second.files > 0 and replay(read_files(table_files)) == expected,
                 what="replayed files to match the source")
        second.stop()
        t2.join(timeout=30)
        files = read_files(table_files)
        later = {r["change_seq"] for n, rows in files.items() if n > crashed for r in rows}
        # the unconfirmed changes came again: duplicates, nothing lost
        assert {r["change_seq"] for r in crashed_rows} <= later
        assert len(errors) == 1
    finally:
        drop_slot(dsn, slot)
        clear(table_files)
