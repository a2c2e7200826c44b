"""The emitter on a real PostgreSQL slot: values as DMS writes them (same text in full
load and CDC), schema changes, unchanged TOAST, tables without a primary key."""

from __future__ import annotations

import time
import uuid

import psycopg
import pytest

from dms_emitter.dms_csv import CsvFormat, parse_dms_csv
from dms_emitter.emitter import read_state
from dms_emitter.sink import LocalDirSink
from pipeline_contract.dms_format.values import RenderOptions
from tests.resources.emitter import fresh_table, sql

pytestmark = pytest.mark.integration

TYPES_DDL = """CREATE TYPE {name}_mood AS ENUM ('sad', 'ok');
CREATE TABLE {name} (
  id int PRIMARY KEY, b bool, i2 int2, i8 int8, n numeric, n2 numeric(10,2),
  n40 numeric(40,2), r real, d double precision, m money, t text, v varchar(10),
  c char(5), dt date, tm time, ttz timetz, ts timestamp, tstz timestamptz,
  iv interval, u uuid, j json, jb jsonb, a int[], ta text[], by bytea, ip inet,
  net cidr, e {name}_mood)"""
ROW = ("true, 7, 9000000000, 0.611111104488373, 12.5, 123.45, 32.38, 21804.858784530072, "
       "12.5, "
       "'say \"hi\", bye', 'é', 'ab', '2024-02-29', '03:04:05.5', '03:04:05-07', "
       "'2024-01-02 03:04:05', '2024-01-02 03:04:05.25+05:30', "
       "'1 year 2 mons 3 days 04:05:06', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', "
       "'{\"a\": [1, 2]}', '{\"b\":   1}', '{1,2}', '{a,\"b c\",NULL}', '\\x0102ff', "
       "'10.0.0.1/32', '10.0.0.0/24', 'ok'")
EXPECTED = {
    "b": "true", "i2": "7", "i8": "9000000000", "n": "0.611111", "n2": "12.50",
    "n40": "123.45", "r": "+3.23800011e+01", "d": "+2.1804858784530072e+04", "m": "12.5000",
    "t": 'say "hi", bye',
    "v": "é", "c": "ab", "dt": "2024-02-29", "tm": "03:04:05.5", "ttz": "10:04:05",
    "ts": "2024-01-02 03:04:05.000000", "tstz": "2024-01-01 21:34:05.250000",
    "iv": "1 year 2 mons 3 days 04:05:06", "u": "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
    "j": '{"a": [1, 2]}', "jb": '{"b": 1}', "a": "{1,2}", "ta": '{a,"b c",NULL}',
    "by": "0102ff", "ip": "10.0.0.1", "net": "10.0.0.0/24", "e": "ok",
}


def test_full_load_and_cdc_write_every_type_the_same_dms_way(postgres, emit) -> None:
    table = fresh_table(postgres.dsn, TYPES_DDL)
    sql(postgres.dsn, f"INSERT INTO {table} VALUES (1, {ROW})")
    run = emit(table)
    assert not run.errors
    sql(postgres.dsn, f"INSERT INTO {table} VALUES (2, {ROW})")
    run.wait(lambda: len(run.rows()) == 2, what="the CDC row")
    load, cdc = run.rows()
    assert list(run.files())[0] == "LOAD00000001.csv"
    for row in (load, cdc):
        assert {k: row[k] for k in EXPECTED} == EXPECTED
    # bytes too: RFC 4180 quoting only where needed
    text = next(iter(run.files()))
    assert '"say ""hi"", bye"' in (run.sink.root / text).read_text()


def test_schema_changes_never_stop_streaming(postgres, emit) -> None:
    table = fresh_table(postgres.dsn, "CREATE TABLE {name} (id int PRIMARY KEY, a text, "
                        "b int)")
    sql(postgres.dsn, f"INSERT INTO {table} VALUES (1, 'x', 1)")
    run = emit(table)
    sql(postgres.dsn,
        f"ALTER TABLE {table} ADD COLUMN c boolean",
        f"INSERT INTO {table} VALUES (2, 'y', 2, true)",
        f"ALTER TABLE {table} DROP COLUMN b", f"UPDATE {table} SET a = 'z' WHERE id = 1",
        f"ALTER TABLE {table} RENAME COLUMN a TO title", f"DELETE FROM {table} WHERE id = 2",
        f"ALTER TABLE {table} ALTER COLUMN id TYPE bigint",
        f"INSERT INTO {table} VALUES (3, 'w', false)")
    run.wait(lambda: len(run.rows()) == 5, what="the changes after each ALTER")
    assert not run.errors and run.thread.is_alive()
    # each schema change starts a new file; a file may also end within one schema (the
    # quiet cut, while a slow ALTER rewrites the table): the headers as they change
    files = [h[2:-1] for h in run.headers().values()]
    headers = [h for i, h in enumerate(files) if i == 0 or h != files[i - 1]]
    assert headers == [["id", "a", "b"], ["id", "a", "b", "c"], ["id", "a", "c"],
                       ["id", "title", "c"]]
    rows = run.rows()
    assert [(r["Op"], r["id"]) for r in rows] == [("I", "1"), ("I", "2"), ("U", "1"),
                                                  ("D", "2"), ("I", "3")]
    assert rows[1]["c"] == "true" and rows[2]["a"] == "z" and rows[4]["title"] == "w"
    changes = read_state(run.emitter.cfg.state_path)["schema_changes"]
    assert [c["changes"] for c in changes] == [
        ["added c bool"], ["dropped b"], ["renamed a to title"], ["id type int4 -> int8"]]
    assert any("schema change" in line for line in run.log)


def test_unchanged_toast_under_default_identity_is_looked_up(postgres, emit) -> None:
    table = fresh_table(postgres.dsn, "CREATE TABLE {name} (id int PRIMARY KEY, big text, "
                        "n int)")
    big = "".join(uuid.uuid4().hex for _ in range(4000))  # 128 kB, incompressible: TOASTed
    sql(postgres.dsn, f"INSERT INTO {table} VALUES (1, '{big}', 0)")
    run = emit(table, render=RenderOptions(lob_max_size_kb=1024))
    sql(postgres.dsn, f"UPDATE {table} SET n = 1 WHERE id = 1")
    run.wait(lambda: len(run.rows()) == 2, what="the update")
    assert not run.errors
    assert run.rows()[1]["big"] == big and run.rows()[1]["n"] == "1"


def test_lob_values_are_cut_at_lob_max_size_like_limited_lob_mode(postgres, emit) -> None:
    table = fresh_table(postgres.dsn, "CREATE TABLE {name} (id int PRIMARY KEY, t text, "
                        "b bytea, v varchar(40000))")
    long = "é" * 20_000  # 40,000 UTF-8 bytes
    sql(postgres.dsn, f"INSERT INTO {table} VALUES (1, '{long}', "
        f"decode(repeat('ab', 40000), 'hex'), '{long}')")
    run = emit(table)  # DMS's default LobMaxSize: 32 KB
    sql(postgres.dsn, f"INSERT INTO {table} VALUES (2, '{long}', NULL, NULL)")
    run.wait(lambda: len(run.rows()) == 2, what="the insert")
    load, cdc = run.rows()
    for row in (load, cdc):
        assert row["t"] == "é" * (32 * 1024 // 2)  # cut at 32 KB, never inside a character
    assert load["b"] == "ab" * 32 * 1024 and load["v"] == long  # varchar is not a LOB
    assert any("truncated to LobMaxSize 32 KB" in line for line in run.log)


def test_migration_types_full_load_only_and_cdc_only(postgres, emit) -> None:
    table = fresh_table(postgres.dsn, "CREATE TABLE {name} (id int PRIMARY KEY, a text)")
    sql(postgres.dsn, f"INSERT INTO {table} VALUES (1, 'x')")
    loaded = emit(table, wait=False, migration_type="full-load")
    loaded.wait(lambda: loaded.emitter.state.get("phase") == "loaded", "the full load")
    sql(postgres.dsn, f"INSERT INTO {table} VALUES (2, 'y')")
    time.sleep(1.0)
    assert [(r["Op"], r["id"]) for r in loaded.rows()] == [("I", "1")]
    with psycopg.connect(postgres.dsn) as conn:
        assert not conn.execute("SELECT 1 FROM pg_replication_slots WHERE slot_name = %s",
                                (loaded.emitter.cfg.slot,)).fetchone()
    changes = emit(table, migration_type="cdc")
    assert changes.sink.names() == []  # no LOAD files
    sql(postgres.dsn, f"UPDATE {table} SET a = 'z' WHERE id = 2")
    changes.wait(lambda: len(changes.rows()) == 1, "the update")
    assert [(r["Op"], r["id"], r["a"]) for r in changes.rows()] == [("U", "2", "z")]


def test_a_table_without_primary_key_is_published_for_inserts_only(postgres, emit) -> None:
    table = fresh_table(postgres.dsn, "CREATE TABLE {name} (id int UNIQUE, a text)")
    run = emit(table)
    assert not run.errors
    # the source application's own updates and deletes keep working
    sql(postgres.dsn, f"INSERT INTO {table} VALUES (1, 'x')",
        f"UPDATE {table} SET a = 'y' WHERE id = 1", f"DELETE FROM {table} WHERE id = 1",
        f"INSERT INTO {table} VALUES (2, 'z')")
    run.wait(lambda: len(run.rows()) == 2, what="the inserts")
    assert [(r["Op"], r["id"]) for r in run.rows()] == [("I", "1"), ("I", "2")]
    assert any("no primary key" in line for line in run.log)


def test_a_key_that_is_not_a_key_is_refused_naming_the_table(postgres, emit) -> None:
    table = fresh_table(postgres.dsn, "CREATE TABLE {name} (id int, a text)")
    run = emit(table)
    assert run.errors and f"public.{table}" in str(run.errors[0])
    assert "neither a primary key nor a unique key" in str(run.errors[0])


def test_a_publication_missing_the_table_gets_it(postgres, emit) -> None:
    table = fresh_table(postgres.dsn, "CREATE TABLE {name} (id int PRIMARY KEY, a text)")
    run = emit(table)
    publication = run.emitter.cfg.publication
    with psycopg.connect(postgres.dsn, autocommit=True) as conn:
        members = conn.execute("SELECT pubname FROM pg_publication_tables WHERE "
                               "tablename = %s", (table,)).fetchall()
    assert members == [(publication,)]
    sql(postgres.dsn, f"INSERT INTO {table} VALUES (1, 'x')")
    run.wait(lambda: len(run.rows()) == 1, what="the insert")


def whole_schema(schema: str, *rules: dict) -> dict:
    """Table mappings: every table of `schema`, `rules`, then the change_seq column."""
    locator = {"schema-name": schema, "table-name": "%"}
    return {"rules": [
        {"rule-type": "selection", "rule-id": "1", "rule-name": "all",
         "object-locator": locator, "rule-action": "include"},
        *rules,
        {"rule-type": "transformation", "rule-id": "seq", "rule-name": "seq",
         "rule-target": "column", "object-locator": locator, "rule-action": "add-column",
         "value": "change_seq", "expression": "$AR_H_CHANGE_SEQ"}]}


def test_table_mappings_select_many_tables_each_in_its_own_folder(postgres, emit) -> None:
    schema = f"fid_{uuid.uuid4().hex[:8]}"
    sql(postgres.dsn, f"CREATE SCHEMA {schema}",
        f'CREATE TABLE {schema}."Orders Q1" (region text, id int, total numeric(10,2), '
        "PRIMARY KEY (region, id))",
        f"CREATE TABLE {schema}.items (id int PRIMARY KEY, name text, secret text)",
        f"CREATE TABLE {schema}.items_archive (id int PRIMARY KEY)",
        f"CREATE TABLE {schema}.events (happened text)",
        f"INSERT INTO {schema}.\"Orders Q1\" VALUES ('eu', 1, 9.5), ('us', 1, 3)",
        f"INSERT INTO {schema}.items VALUES (1, 'pen', 'x')",
        f"INSERT INTO {schema}.items_archive VALUES (1)")
    locator = {"schema-name": schema, "table-name": "%"}
    mappings = whole_schema(
        schema,
        {"rule-type": "selection", "rule-id": "2", "rule-name": "no-archive",
         "object-locator": {**locator, "table-name": "%_archive"}, "rule-action": "exclude"},
        {"rule-type": "transformation", "rule-id": "3", "rule-name": "goods",
         "rule-target": "table", "object-locator": {**locator, "table-name": "items"},
         "rule-action": "rename", "value": "goods"},
        {"rule-type": "transformation", "rule-id": "4", "rule-name": "drop-secret",
         "rule-target": "column", "rule-action": "remove-column",
         "object-locator": {**locator, "table-name": "items", "column-name": "secret"}})
    run = emit("items", mappings=mappings, schema=schema)
    assert not run.errors, run.log
    root = run.emitter.sink.root  # type: ignore[attr-defined]
    folders = sorted(str(p.parent.relative_to(root)) for p in root.rglob("LOAD*.csv"))
    assert folders == [f"{schema}/Orders Q1", f"{schema}/goods"]  # events is empty
    sql(postgres.dsn, f"UPDATE {schema}.\"Orders Q1\" SET total = 10 WHERE region = 'eu'",
        f"INSERT INTO {schema}.items VALUES (2, 'ink', 'y')",
        f"INSERT INTO {schema}.events VALUES ('boot')",
        f"INSERT INTO {schema}.items_archive VALUES (2)")
    orders = LocalDirSink(root / schema / "Orders Q1")
    goods = LocalDirSink(root / schema / "goods")
    events = LocalDirSink(root / schema / "events")

    def rows(sink: LocalDirSink) -> list[dict]:
        return [r for n in sorted(sink.names(), key=lambda n: (not n.startswith("LOAD"), n))
                for r in parse_dms_csv((sink.root / n).read_text(), n)]
    run.wait(lambda: len(rows(orders)) == 3 and len(rows(goods)) == 2 and rows(events),
             "a CDC file in each table's folder")
    assert [(r["Op"], r["region"], r["id"], r["total"]) for r in rows(orders)] == [
        ("I", "eu", "1", "9.50"), ("I", "us", "1", "3.00"), ("U", "eu", "1", "10.00")]
    assert [list(r)[2:] for r in rows(goods)] == [["id", "name", "change_seq"]] * 2
    assert [(r["Op"], r["happened"]) for r in rows(events)] == [("I", "boot")]
    assert not (root / schema / "items_archive").exists()
    tables = read_state(run.emitter.cfg.state_path)["tables"]
    assert sorted(tables) == [f"{schema}.Orders Q1", f"{schema}.events", f"{schema}.items"]
    assert tables[f"{schema}.items"]["folder"] == f"{schema}/goods"
    # status per table: the newest change's LSN and its commit-to-S3 lag
    items = tables[f"{schema}.items"]
    assert items["last_lsn"].count("/") == 1 and 0 <= items["lag_seconds"] < 60
    assert items["files_written"] >= 1 and items["changes_written"] == 1


def test_tables_selected_while_streaming_are_picked_up_and_dropped_ones_end(postgres,
                                                                             emit) -> None:
    schema = f"fid_{uuid.uuid4().hex[:8]}"
    sql(postgres.dsn, f"CREATE SCHEMA {schema}",
        f"CREATE TABLE {schema}.first (id int PRIMARY KEY, a text)",
        f"INSERT INTO {schema}.first VALUES (1, 'x')")
    run = emit("first", mappings=whole_schema(schema), schema=schema, selection_check_s=0.5)
    slot_before = read_state(run.emitter.cfg.state_path)["tables"]
    assert list(slot_before) == [f"{schema}.first"]
    sql(postgres.dsn, f"CREATE TABLE {schema}.second (id int PRIMARY KEY, b text)",
        f"INSERT INTO {schema}.second VALUES (1, 'old')")
    root = run.emitter.sink.root  # type: ignore[attr-defined]
    second = LocalDirSink(root / schema / "second")
    run.wait(lambda: second.names("LOAD"), "the new table's full load")
    sql(postgres.dsn, f"UPDATE {schema}.second SET b = 'new' WHERE id = 1",
        f"INSERT INTO {schema}.first VALUES (2, 'y')")
    run.wait(lambda: len(second.names()) == 2 and len(run.rows()) == 2,
             "changes of both tables")
    rows = [r for n in sorted(second.names(), key=lambda n: (not n.startswith("LOAD"), n))
            for r in parse_dms_csv((second.root / n).read_text(), n)]
    assert [(r["Op"], r["b"]) for r in rows] == [("I", "old"), ("U", "new")]
    # DMS leaves $AR_H_CHANGE_SEQ empty in full-load rows; the job orders them first
    assert rows[0]["change_seq"] is None and len(rows[1]["change_seq"]) == 35
    sql(postgres.dsn, f"DROP TABLE {schema}.first")
    run.wait(lambda: list(read_state(run.emitter.cfg.state_path)["tables"]) == [
        f"{schema}.second"], "the dropped table to end")
    assert any("no longer selected" in line for line in run.log)
    assert run.thread.is_alive() and not run.errors


def test_full_load_files_are_cut_at_max_file_size_and_numbered_in_hex(postgres, emit) -> None:
    table = fresh_table(postgres.dsn, "CREATE TABLE {name} (id int PRIMARY KEY, a text)")
    sql(postgres.dsn, f"INSERT INTO {table} SELECT i, repeat('x', 50) FROM "
        "generate_series(1, 24) i")
    run = emit(table, max_file_bytes=240)  # the header and two rows of ~85 bytes per file
    names = run.sink.names()
    assert names[:11] == [f"LOAD{n:08X}.csv" for n in range(1, 12)] and len(names) == 12
    assert [r["id"] for r in run.rows()] == [str(i) for i in range(1, 25)]
    assert all(len(rows) == 2 for rows in run.files().values())


def test_gzip_compression_writes_csv_gz_files(postgres, emit) -> None:
    table = fresh_table(postgres.dsn, "CREATE TABLE {name} (id int PRIMARY KEY, a text)")
    sql(postgres.dsn, f"INSERT INTO {table} VALUES (1, 'x')")
    run = emit(table, fmt=CsvFormat(gzip=True))
    sql(postgres.dsn, f"INSERT INTO {table} VALUES (2, 'y')")
    run.wait(lambda: len(run.rows()) == 2, "the CDC file")
    names = run.names()
    assert names[0] == "LOAD00000001.csv.gz" and names[1].endswith(".csv.gz")
    assert [(r["Op"], r["id"], r["a"]) for r in run.rows()] == [("I", "1", "x"), ("I", "2", "y")]


def test_interval_style_setting_spells_intervals(postgres, emit) -> None:
    """Not documented by AWS: the setting picks one of PostgreSQL's interval styles."""
    table = fresh_table(postgres.dsn, "CREATE TABLE {name} (id int PRIMARY KEY, i interval)")
    sql(postgres.dsn, f"INSERT INTO {table} VALUES (1, '1 year 2 mons 3 days 04:05:06')")
    run = emit(table, render=RenderOptions(interval_style="iso_8601"))
    sql(postgres.dsn, f"INSERT INTO {table} VALUES (2, '1 day')")
    run.wait(lambda: len(run.rows()) == 2, "the CDC row")
    assert [r["i"] for r in run.rows()] == ["P1Y2M3DT4H5M6S", "P1D"]
