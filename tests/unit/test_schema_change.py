"""ALTER TABLE mid-stream: the builder follows the new Relation, the writer cuts files by header."""

from __future__ import annotations

from dms_emitter import pgoutput as pg
from dms_emitter.batching import Batcher
from dms_emitter.changes import one_table
from dms_emitter.dms_csv import CsvFormat, encode_file, parse_dms_csv
from dms_emitter.schema_change import SchemaChange

INT4, TEXT, INT8 = 23, 25, 20


def relation(*cols: tuple[str, int]) -> pg.Relation:
    """The first column is the key (pgoutput flags the replica identity's columns)."""
    return pg.Relation(7, "public", "t", "d", tuple(
        pg.Column(1 if i == 0 else 0, name, oid, -1) for i, (name, oid) in enumerate(cols)))


def shape(*cols: tuple[str, str]) -> tuple[tuple[str, str], ...]:
    return tuple(cols)


def test_changes_are_described_for_logs_and_status() -> None:
    before = shape(("id", "int4"), ("a", "text"), ("b", "int4"))
    assert SchemaChange("s.t", 0, before, (*before, ("c", "bool"))).changes() == [
        "added c bool"]
    assert SchemaChange("s.t", 0, before, before[:2]).changes() == ["dropped b"]
    assert SchemaChange("s.t", 0, before, shape(("id", "int4"), ("z", "text"),
                                                ("b", "int4"))).changes() == [
        "renamed a to z"]
    assert SchemaChange("s.t", 0, before, shape(("id", "int4"), ("a", "text"),
                                                ("b", "int8"))).changes() == [
        "b type int4 -> int8"]
    assert SchemaChange("s.t", 0, before, before[::-1]).changes() == ["columns reordered"]
    change = SchemaChange("s.t", 5, before, (*before[:2], ("c", "text")))
    assert change.changes() == ["dropped b", "added c text"]
    assert change.to_json()["columns"] == ["id", "a", "c"]


def test_alter_table_mid_transaction_never_stops_and_starts_a_new_header() -> None:
    seen: list[SchemaChange] = []
    b = one_table("public", "t", ["id"], on_schema_change=seen.append)
    b.feed(relation(("id", INT4), ("a", TEXT)))
    b.feed(pg.Begin(100, 0, 1))
    b.feed(pg.Insert(7, ("1", "x")))
    b.feed(relation(("id", INT4), ("a", TEXT), ("c", INT8)))  # ADD COLUMN c bigint
    b.feed(pg.Insert(7, ("2", "y", "5")))
    txn = b.feed(pg.Commit(0, 100, 120, 0))
    assert txn is not None
    assert [s.header for s in txn.segments] == [("id", "a", "change_seq"),
                                                ("id", "a", "c", "change_seq")]
    assert [c.changes() for c in seen] == [["added c int8"]]
    b.feed(pg.Begin(130, 0, 2))
    b.feed(pg.Insert(7, ("3", "z", "6")))
    later = b.feed(pg.Commit(0, 130, 140, 0))
    assert later is not None

    batcher = Batcher(1.0, 10**6)
    batcher.add(txn, 0.0)
    batcher.add(later, 0.1)
    files = batcher.take().files()
    assert [f.header[:-1] for f in files] == [("id", "a"), ("id", "a", "c")]
    rows = [parse_dms_csv(encode_file(list(f.header), f.lines)) for f in files]
    assert [r["id"] for r in rows[0]] == ["1"]
    assert [(r["id"], r["c"]) for r in rows[1]] == [("2", "5"), ("3", "6")]
    seqs = [r["change_seq"] for f in rows for r in f]
    assert seqs == sorted(seqs) and len(set(seqs)) == 3


def test_a_restarted_builder_knows_the_last_written_shape() -> None:
    seen: list[SchemaChange] = []
    b = one_table("public", "t", ["id"], on_schema_change=seen.append,
                      known_shape=shape(("id", "int4"), ("a", "text")))
    b.feed(relation(("id", INT4), ("a", TEXT)))
    assert seen == []
    b.feed(relation(("id", INT4), ("b", TEXT)))
    assert [c.changes() for c in seen] == [["renamed a to b"]]


def test_a_renamed_key_column_falls_back_to_the_replica_identity_key() -> None:
    warned: list[str] = []
    b = one_table("public", "t", ["id"], warn=warned.append, pk_update="delete-insert")
    b.feed(relation(("pk", INT4), ("a", TEXT)))
    assert "no longer in public.t" in warned[0] and "['pk']" in warned[0]
    b.feed(pg.Begin(100, 0, 1))
    b.feed(pg.Update(7, "K", ("1", None), ("2", "x")))
    txn = b.feed(pg.Commit(0, 100, 120, 0))
    assert txn is not None and [line[0] for line in txn.lines] == ["D", "I"]


def test_status_shows_the_emitter_per_table_and_its_newest_schema_change() -> None:
    from cdclab.cli import emitter_lines, emitter_summary

    state = {"phase": "streaming", "files_written": 3, "changes_written": 9,
             "last_file": "20261123-101500123.csv",
             "tables": {"public.t": {"shape": [], "load_rows": 5, "files_written": 3,
                                     "changes_written": 9, "folder": "public/t",
                                     "last_lsn": "0/1A2B", "lag_seconds": 0.4}},
             "schema_changes": [{"table": "public.t", "changes": ["added c bool"],
                                 "seen_at": "2026-11-23T10:15:00+00:00"}]}
    summary = emitter_summary(state)
    assert "shape" not in summary["tables"]["public.t"]
    lines = emitter_lines(summary)
    assert "streaming; 3 CDC files, 9 changes" in lines[0]
    assert "public.t" in lines[1] and "full load 5 rows, 3 CDC files" in lines[1]
    assert "newest at LSN 0/1A2B, 0.4 s from commit to S3" in lines[1]
    assert "1 schema change(s)" in lines[2] and "public.t: added c bool" in lines[2]
    assert emitter_lines(emitter_summary({})) == []


def test_cdc_inserts_only_writes_inserts_without_op_and_keeps_sequence_stable() -> None:
    fmt = CsvFormat(op_for_full_load=False, cdc_ops=("I",), timestamp_column="")
    b = one_table("public", "t", ["id"], fmt, seq_layout="lsn")
    b.feed(relation(("id", INT4), ("a", TEXT)))
    b.feed(pg.Begin(100, 0, 1))
    b.feed(pg.Insert(7, ("1", "x")))
    b.feed(pg.Update(7, None, None, ("1", "y")))
    b.feed(pg.Insert(7, ("2", "z")))
    txn = b.feed(pg.Commit(0, 100, 120, 0))
    assert txn is not None
    assert [line.split(",")[:2] for line in txn.lines] == [["1", "x"], ["2", "z"]]
    assert txn.lines[1].rstrip().endswith("3")  # lsn layout: the update took position 2


def test_a_key_is_compared_as_sent_not_as_rendered() -> None:
    """bool 't' renders as 'true': an update of another column is still one U row."""
    b = one_table("public", "t", ["flag"], pk_update="delete-insert")
    b.feed(relation(("flag", 16), ("a", TEXT)))
    b.feed(pg.Begin(100, 0, 1))
    b.feed(pg.Update(7, "O", ("t", "x"), ("t", "y")))
    b.feed(pg.Update(7, "K", (None, None), ("f", "z")))  # another identity index: no verdict
    txn = b.feed(pg.Commit(0, 100, 120, 0))
    assert txn is not None and [line[0] for line in txn.lines] == ["U", "U"]
