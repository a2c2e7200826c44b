"""Test resource: the DMS emitter on the session's PostgreSQL, in a thread, writing to a
local folder. `emit(table, ...)` starts one (its own slot and publications, dropped
afterwards) and returns a Run to read its files, state and log. Without `mappings` it
writes the table with the default mappings' change_seq column, and their before image
of the key only with `before_image=True` (tests of other rules keep their columns)."""

from __future__ import annotations

import dataclasses
import gzip
import threading
import uuid
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path

import psycopg
import pytest

from dms_emitter.dms_csv import parse_dms_csv
from dms_emitter.emitter import Emitter, EmitterConfig
from dms_emitter.replication import inserts_publication
from dms_emitter.sink import LocalDirSink
from pipeline_contract import settings
from pipeline_contract.dms_format.table_mappings import TableMappings, default_mappings
from tests.resources.waiting import wait_for as _wait_for

wait_for = partial(_wait_for, every=0.3)  # this module's polling period


@dataclasses.dataclass
class Run:
    emitter: Emitter
    sink: LocalDirSink
    thread: threading.Thread
    errors: list[BaseException]
    log: list[str]

    def names(self) -> list[str]:
        """Full-load files first, then CDC files in time order."""
        return sorted(self.sink.names(), key=lambda n: (not n.startswith("LOAD"), n))

    def text(self, name: str) -> str:
        body = (self.sink.root / name).read_bytes()
        return (gzip.decompress(body) if name.endswith(".gz") else body).decode()

    def files(self) -> dict[str, list[dict]]:
        return {n: parse_dms_csv(self.text(n), n) for n in self.names()}

    def headers(self) -> dict[str, list[str]]:
        return {n: self.text(n).split("\n", 1)[0].split(",") for n in self.names()}

    def rows(self) -> list[dict]:
        return [r for rows in self.files().values() for r in rows]

    def streaming(self) -> bool:
        return self.emitter.state.get("phase") == "streaming"

    def wait(self, check: Callable[[], object], what: str) -> None:
        try:
            wait_for(lambda: check() or self.errors, what=what)
        except AssertionError as exc:
            raise AssertionError(f"{exc}; emitter log: {self.log[-10:]}") from None
        assert not self.errors, self.errors


@pytest.fixture
def emit(postgres, tmp_path: Path) -> Iterator[Callable[..., Run]]:
    runs: list[tuple[Run, str, str]] = []

    def start(table: str, key: str = "id", mappings: dict | None = None,
              schema: str = "public", wait: bool = True, before_image: bool = False,
              configured: bool = True, **changes: object) -> Run:
        """`configured`: false keeps `table` out of [source] (its key is then its
        primary key, composite or not, as for any table the mappings select)."""
        tag = uuid.uuid4().hex[:8]
        cfg = dataclasses.replace(
            EmitterConfig.from_env(settings.load_pipeline(), {settings.ENV_PG_DSN: postgres.dsn,
                                    settings.ENV_STATE_DIR: str(tmp_path / tag),
                                    settings.ENV_BATCH_INTERVAL: "0.2"}),
            schema=schema, table=table if configured else f"{table}_unconfigured", key=key,
            slot=f"fid_{tag}", publication=f"fid_{tag}",
            **changes)
        cfg = dataclasses.replace(cfg, mappings=TableMappings.parse(
            mappings or default_mappings(schema, table, cfg.fmt.change_seq_column,
                                         before_image)))
        log: list[str] = []
        files = LocalDirSink(tmp_path / tag / "files")
        run = Run(Emitter(cfg, files, log=log.append), files.child(f"{schema}/{table}"),
                  None, [], log)  # type: ignore[arg-type]

        def target() -> None:
            try:
                run.emitter.run()
            except BaseException as exc:  # noqa: BLE001 - the test thread asserts on it
                run.errors.append(exc)
        run.thread = threading.Thread(target=target, daemon=True)
        run.thread.start()
        runs.append((run, cfg.slot, cfg.publication))
        if wait:
            wait_for(lambda: run.streaming() or run.errors, what="the full load")
        return run

    yield start
    with psycopg.connect(postgres.dsn, autocommit=True) as conn:
        for run, slot, publication in runs:
            run.emitter.stop()
            run.thread.join(timeout=30)
            # the walsender may hold the slot a moment after the emitter disconnects
            wait_for(lambda slot=slot: not conn.execute(
                "SELECT 1 FROM pg_replication_slots WHERE slot_name = %s AND active",
                (slot,)).fetchone(), what=f"slot {slot} to be released")
            conn.execute("SELECT pg_drop_replication_slot(slot_name) FROM "
                         "pg_replication_slots WHERE slot_name = %s", (slot,))
            for name in (publication, inserts_publication(publication)):
                conn.execute(f'DROP PUBLICATION IF EXISTS "{name}"')


def sql(dsn: str, *statements: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        for s in statements:
            conn.execute(s)


def fresh_table(dsn: str, ddl: str) -> str:
    """A new table named fid_<random>: `{name}` in the DDL is replaced by it (only that:
    other braces, JSON or arrays, stay)."""
    name = f"fid_{uuid.uuid4().hex[:8]}"
    sql(dsn, ddl.replace("{name}", name))
    return name


