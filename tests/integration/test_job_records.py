"""The job's record handling on Glue's own reader (AWS's awsglue over cdclab's JVM side):
DMS CSV read by from_options, numbered, validated, full-load sequences filled in. The
validation rules are checked against a Python oracle on generated rows (hypothesis)."""

from __future__ import annotations

import gzip
import importlib.util
import json
import re
from datetime import UTC, date, datetime
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.resources.specs import hosts_spec

pytestmark = pytest.mark.integration

SCRIPT = Path(__file__).resolve().parents[2] / "jobs" / "bronze_to_silver.py"
_spec = importlib.util.spec_from_file_location("bronze_to_silver", SCRIPT)
job = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(job)

SPEC = hosts_spec()
# the job's internal record columns, by the quarantine table's names for them
QUARANTINE_NAMES = {job.FILE: "source_file", job.RECORD: "record_number",
                    job.LINE: "line_number", job.REASON: "reason", job.RAW: "raw_fields"}
BRONZE_COLUMNS = tuple(c["name"] for c in SPEC["bronze_columns"])
HEADER = "Op,last_updated_ts,id,url,name,since,location,response_time,response_rate,change_seq\n"
SEQ = "0" * 34 + "1"
GOOD = (
    f'I,2026-11-22 10:15:00.123456,1,http://x,"Anna, ""A""",2020-01-02,"Paris, France",,"",{SEQ}\n'
)


@pytest.fixture()
def glue(spark):
    from awsglue.context import GlueContext

    return GlueContext(spark.sparkContext)


def read_records(glue, folder: Path) -> list[dict]:
    """The folder's files as the job sees them: Glue's CSV reader with attachFilename."""
    frame = glue.create_dynamic_frame.from_options(
        connection_type="s3", connection_options={"paths": [folder.as_uri()]},
        format="csv", format_options={"withHeader": True, "multiLine": True,
                                      "attachFilename": job.SOURCE_FILE_COLUMN})
    rows = job.bronze_records(frame.toDF(), SPEC).collect()
    return sorted(({QUARANTINE_NAMES.get(k, k): v for k, v in r.asDict().items()}
                   for r in rows), key=lambda r: (r["source_file"], r["record_number"]))


def fields(record: dict) -> dict:
    return {c: record[c] for c in BRONZE_COLUMNS}


def test_glues_reader_reads_gzip_files_like_plain_ones(glue, tmp_path) -> None:
    """CompressionType GZIP: DMS (and the emitter) write .csv.gz; the job reads them."""
    (tmp_path / "20261122-101500123.csv.gz").write_bytes(
        gzip.compress((HEADER + GOOD).encode()))
    [record] = read_records(glue, tmp_path)
    assert record["source_file"].endswith("/20261122-101500123.csv.gz")
    assert (record["record_number"], record["reason"]) == (2, None)
    assert record["name"] == 'Anna, "A"'


def test_glues_reader_keeps_nulls_empty_strings_quotes_and_newlines(glue, tmp_path) -> None:
    body = GOOD + GOOD.replace("Anna, ", "multi\nline, ").replace(",1,", ",2,", 1)
    (tmp_path / "20261122-101500123.csv").write_text(HEADER + body)
    first, second = read_records(glue, tmp_path)
    assert first["source_file"].endswith("/20261122-101500123.csv")
    assert (first["record_number"], first["reason"]) == (2, None)
    assert first["name"] == 'Anna, "A"' and first["location"] == "Paris, France"
    assert first["response_time"] is None and first["response_rate"] == ""
    assert (second["record_number"], second["name"]) == (3, 'multi\nline, "A"')


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        (GOOD.replace("I,", "X,", 1), "bad Op 'X'"),
        (GOOD.replace("I,", ",", 1), "bad Op NULL"),
        (GOOD.replace(",1,", ",one,", 1), "id is not an INT: 'one'"),
        (GOOD.replace(",1,", ",99999999999,", 1), "id is not an INT"),
        (GOOD.replace(",1,", ",2147483648,", 1), "id is not an INT"),
        (GOOD.replace(SEQ, "123"), "change_seq is not 35 digits: '123'"),
        (GOOD.replace(SEQ, ""), "change_seq is not 35 digits: NULL"),
        (GOOD.replace("2026-11-22 10:15:00.123456", "yesterday"), "unparseable last_updated_ts"),
        (GOOD.replace("2020-01-02", "2020-02-30"), "unparseable since '2020-02-30'"),
        # a short row: Glue's reader pads it, the missing change_seq names it
        (GOOD.replace(f",{SEQ}", ""), "change_seq is not 35 digits: NULL"),
    ],
)
def test_malformed_records_get_a_reason_and_their_place(glue, tmp_path, line, reason) -> None:
    (tmp_path / "20261122-101500123.csv").write_text(HEADER + GOOD + line + GOOD)
    records = read_records(glue, tmp_path)
    assert [r["reason"] is None for r in records] == [True, False, True]
    bad = records[1]
    assert bad["record_number"] == 3 and reason in bad["reason"]
    assert bad["raw_fields"].startswith("[") and bad["line_number"] is None


def test_full_load_rows_come_first_cdc_rows_without_a_sequence_are_bad(glue, tmp_path) -> None:
    """AWS DMS leaves $AR_H_CHANGE_SEQ empty on full-load rows (LOAD files)."""
    no_seq = GOOD.replace(f",{SEQ}\n", ",\n")
    (tmp_path / "LOAD00000001.csv").write_text(HEADER + no_seq + no_seq.replace(",1,", ",2,", 1))
    (tmp_path / "20261122-101500123.csv").write_text(HEADER + no_seq)
    cdc, load1, load2 = read_records(glue, tmp_path)
    assert [load1["change_seq"], load2["change_seq"]] == [
        "0" * 20 + f"{2:015d}", "0" * 20 + f"{3:015d}"]  # by record number
    assert load1["reason"] is None and load2["reason"] is None
    assert "change_seq is not 35 digits" in cdc["reason"]


def test_records_are_numbered_in_their_file_across_partitions(spark, glue, tmp_path) -> None:
    """Splits of one file in several partitions, several files in one partition: each
    record's number is its place in its file (as a window over the file would give),
    whether the spans' bases come as a CASE or a broadcast join, and a span that is not a
    run of rows falls back to that window with the same numbers."""
    sizes = {"20261122-101500001.csv": 2, "LOAD00000001.csv": 40, "20261122-101500002.csv": 3}
    for name, n in sizes.items():
        body = "".join(GOOD.replace(",1,", f",{i},", 1) for i in range(n))
        if name.startswith("LOAD"):
            body = body.replace(f",{SEQ}\n", ",\n")
        (tmp_path / name).write_text(HEADER + body)
    split = {"spark.sql.files.maxPartitionBytes": "800", "spark.sql.files.openCostInBytes": "1"}
    before = {k: spark.conf.get(k) for k in split}
    for k, v in split.items():
        spark.conf.set(k, v)
    try:
        frame = glue.create_dynamic_frame.from_options(
            connection_type="s3", connection_options={"paths": [tmp_path.as_uri()]},
            format="csv", format_options={"withHeader": True, "multiLine": False,
                                          "attachFilename": job.SOURCE_FILE_COLUMN})
        records = job.read_records(frame.toDF(), SPEC).cache()
        a = job.account(records, SPEC)
        files, rows, bad, spans, changes = a.files, a.rows, a.quarantined, a.spans, a.changes
        ours = job.numbered(records, spans, SPEC).collect()
        assert len(spans) <= job.SPANS_AS_CASE
        with pytest.MonkeyPatch.context() as mp:  # as many spans as a big load has
            mp.setattr(job, "SPANS_AS_CASE", 0)
            joined = job.numbered(records, spans, SPEC).collect()
        window = job.numbered(records, [(*s[:4], s[4] + 1) for s in spans], SPEC).collect()
        records.unpersist()
    finally:
        for k, v in before.items():
            spark.conf.set(k, v)
    assert (len(files), rows, bad, changes) == (3, 45, 0, 0)
    parts = {}
    for file, part, *_ in spans:
        parts.setdefault(part, set()).add(file)
    assert len(spans) > len(files) and max(len(f) for f in parts.values()) > 1  # mixed
    for got in (ours, joined, window):
        by_file: dict[str, list[tuple[int, int]]] = {}
        for r in got:
            by_file.setdefault(r[job.FILE].rsplit("/", 1)[1], []).append(
                (r[job.RECORD], int(r["id"])))
        assert {f: sorted(v) for f, v in by_file.items()} == {
            f: [(i + 2, i) for i in range(n)] for f, n in sizes.items()}
    load = sorted(r["change_seq"] for r in ours if "LOAD" in r[job.FILE])
    assert load == ["0" * 20 + f"{i + 2:015d}" for i in range(40)]


# --- the validation rules against a Python oracle -------------------------------------
def parses(fn, value: str) -> bool:
    try:
        fn(value)
    except ValueError:
        return False
    return True


def oracle(row: dict) -> str | None:
    """The rules as written in the job's docstring, in plain Python."""

    if row["op"] not in job.OPS:
        return "bad Op"
    if row["id"] is None or not re.fullmatch(r"[+-]?\d{1,19}", row["id"], re.ASCII) or not (
            -(2**31) <= int(row["id"]) <= 2**31 - 1):
        return "id is not an INT"
    if row["change_seq"] is None or not re.fullmatch(r"\d{35}", row["change_seq"], re.ASCII):
        return "change_seq is not 35 digits"
    ts = row["last_updated_ts"]
    if ts is None or not re.fullmatch(
            r"\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(\.\d{1,6})?", ts, re.ASCII) or not parses(
            datetime.fromisoformat, ts):
        return "unparseable last_updated_ts"
    since = row["since"]
    if since is not None and not (re.fullmatch(r"\d{4}-\d{2}-\d{2}", since, re.ASCII)
                                  and parses(date.fromisoformat, since)):
        return "unparseable since"
    return None


def two(lo: int, hi: int):
    return st.integers(lo, hi).map(lambda n: f"{n:02d}")


dates = st.builds(lambda y, m, d: f"{y:04d}-{m}-{d}", st.integers(1, 9999), two(0, 13),
                  two(0, 32))
stamps = st.builds(lambda d, sep, h, mi, s, frac: f"{d}{sep}{h}:{mi}:{s}{frac}", dates,
                   st.sampled_from([" ", "T", "_"]), two(0, 25), two(0, 61), two(0, 61),
                   st.sampled_from(["", ".1", ".123456", ".1234567", "."]))
noise = st.one_of(st.none(), st.text(max_size=6))
rows = st.fixed_dictionaries({
    "op": st.one_of(st.sampled_from(["I", "U", "D", "X", "i", ""]), st.none()),
    "id": st.one_of(st.integers(-(2**33), 2**33).map(str),
                    st.integers(0, 99).map(lambda n: f"+{n}"), noise),
    "change_seq": st.one_of(st.integers(34, 36).map(lambda n: "7" * n), noise),
    "last_updated_ts": st.one_of(stamps, noise),
    "since": st.one_of(dates, st.none(), st.text(max_size=4)),
})


@settings(max_examples=15)
@given(batch=st.lists(rows, min_size=1, max_size=40))
def test_validation_agrees_with_the_python_oracle(spark, batch) -> None:
    columns = [*BRONZE_COLUMNS, job.SOURCE_FILE_COLUMN]
    data = [tuple({**dict.fromkeys(BRONZE_COLUMNS), **r,
                   job.SOURCE_FILE_COLUMN: f"s3://b/{i:05d}.csv"}[c] for c in columns)
            for i, r in enumerate(batch)]
    df = spark.createDataFrame(data, ", ".join(f"`{c}` string" for c in columns))
    got = {r[job.FILE]: r[job.REASON] for r in job.bronze_records(df, SPEC).collect()}
    for i, row in enumerate(batch):
        want, reason = oracle(row), got[f"s3://b/{i:05d}.csv"]
        assert (reason is None) == (want is None), (row, reason, want)
        assert want is None or reason.startswith(want), (row, reason, want)


def test_unquoted_empty_fields_read_as_empty_strings_when_configured(spark, glue,
                                                                    tmp_path) -> None:
    """How Glue's reader returns an unquoted empty field is not public: a setting."""
    (tmp_path / "f.csv").write_text(HEADER + GOOD)
    spark.conf.set("spark.cdclab.glue.csvUnquotedEmpty", "empty")
    try:
        [record] = read_records(glue, tmp_path)
    finally:
        spark.conf.unset("spark.cdclab.glue.csvUnquotedEmpty")
    assert record["response_time"] == "" and record["response_rate"] == ""
    assert record["source_file"].endswith("/f.csv")


def test_rows_without_a_source_file_stop_the_run_before_the_bookmark(spark) -> None:
    columns = [*BRONZE_COLUMNS, job.SOURCE_FILE_COLUMN]
    good = ("I", "2026-01-01 00:00:00", "1", None, None, None, None, None, None, SEQ)
    df = spark.createDataFrame([good + ("s3://b/a.csv",), good + (None,)],
                               ", ".join(f"`{c}` string" for c in columns))
    with pytest.raises(job.UnaccountedRowsError, match="1 of 2 bronze rows"):
        job.account(job.read_records(df, SPEC), SPEC)
    named = df.where(f"{job.SOURCE_FILE_COLUMN} IS NOT NULL")
    a = job.account(job.read_records(named, SPEC), SPEC)
    assert (a.files, a.rows, a.quarantined, a.changes, a.deletes) == (["s3://b/a.csv"], 1, 0, 0, 0)


def test_the_accounting_counts_the_valid_deletes(spark) -> None:
    """A batch without a valid D needs no tombstone (and its rows no cache for one)."""
    columns = [*BRONZE_COLUMNS, job.SOURCE_FILE_COLUMN]
    ts = "2026-01-01 00:00:00"
    rows = [(op, ts, key, None, None, None, None, None, None, seq, "s3://b/a.csv")
            for op, key, seq in (("I", "1", SEQ), ("U", "1", SEQ), ("D", "2", SEQ),
                                 ("D", "x", SEQ), ("D", "3", "not a sequence"))]
    df = spark.createDataFrame(rows, ", ".join(f"`{c}` string" for c in columns))
    a = job.account(job.read_records(df, SPEC), SPEC)
    assert (a.rows, a.quarantined, a.changes, a.deletes) == (5, 2, 2, 1)


def test_a_read_of_no_records_is_numbered_as_nothing(spark) -> None:
    """No span (a header-only or empty file): the numbering has no file to place."""
    columns = [*BRONZE_COLUMNS, job.SOURCE_FILE_COLUMN]
    empty = spark.createDataFrame([], ", ".join(f"`{c}` string" for c in columns))
    records = job.read_records(empty, SPEC)
    accounted = job.account(records, SPEC)
    assert (accounted.files, accounted.rows, accounted.spans) == ([], 0, [])
    assert job.numbered(records, accounted.spans, SPEC).collect() == []


def test_accounting_counts_the_valid_records_that_are_not_inserts(spark) -> None:
    columns = [*BRONZE_COLUMNS, job.SOURCE_FILE_COLUMN]
    rest = ("2026-01-01 00:00:00", "1", None, None, None, None, None, None, SEQ, "s3://b/a")
    rows = [("I", *rest), ("U", *rest), ("D", *rest), ("X", *rest),  # X: quarantined
            ("U", "2026-01-01 00:00:00", "not-an-int", *rest[2:])]  # quarantined too
    df = spark.createDataFrame(rows, ", ".join(f"`{c}` string" for c in columns))
    accounted = job.account(job.read_records(df, SPEC), SPEC)
    assert (accounted.rows, accounted.quarantined, accounted.changes) == (5, 2, 2)


def test_accounting_keeps_the_commit_times_of_valid_cdc_inserts_only(spark) -> None:
    """The latencies of a batch appended without classification: each valid insert of a
    CDC file, by its commit time; not a full load's rows, a U or D, nor a bad record."""
    columns = [*BRONZE_COLUMNS, job.SOURCE_FILE_COLUMN]

    def row(op: str, ts: str, key: str, file: str) -> tuple:
        return (op, ts, key, None, None, None, None, None, None, SEQ, file)

    cdc, load = "s3://b/t/20260101-000000000.csv", "s3://b/t/LOAD00000001.csv"
    rows = [row("I", "2026-01-01 00:00:01.5", "1", cdc), row("I", "2026-01-01 00:00:02", "2", cdc),
            row("U", "2026-01-01 00:00:03", "1", cdc), row("I", "2026-01-01 00:00:04", "x", cdc),
            row("I", "2026-01-01 00:00:05", "3", load)]
    df = spark.createDataFrame(rows, ", ".join(f"`{c}` string" for c in columns))
    accounted = job.account(job.read_records(df, SPEC), SPEC)
    epoch = datetime(2026, 1, 1, tzinfo=UTC).timestamp()
    assert sorted(accounted.insert_times) == [epoch + 1.5, epoch + 2]


def test_the_key_range_spans_the_valid_keys_and_the_before_images_only(spark) -> None:
    """account's key_range bounds what the MERGE reads of silver: every valid record's
    key, and the old key of a key change (its before image), which the MERGE deletes."""
    spec = hosts_spec(before_image=True)
    names = [c["name"] for c in spec["bronze_columns"]]
    row = dict.fromkeys(names)
    row |= {"op": "U", "last_updated_ts": "2026-01-01 00:00:00", "change_seq": SEQ}

    def record(file: str, **values: str | None) -> tuple:
        return (*({**row, **values}[n] for n in names), file)

    rows = [record("s3://b/a", id="10", bi_id="10"),
            record("s3://b/a", id="12", bi_id="3"),  # a key change from 3
            record("s3://b/b", op="I", id="11", bi_id=None),
            record("s3://b/b", id="-50", op="X"),  # quarantined: not in the range
            record("s3://b/b", id="99x")]  # quarantined too
    df = spark.createDataFrame(rows, ", ".join(f"`{c}` string" for c in
                                               [*names, job.SOURCE_FILE_COLUMN]))
    accounted = job.account(job.read_records(df, spec), spec)
    assert accounted.quarantined == 2 and accounted.key_range == (3, 12)
    none_valid = df.where("id IN ('-50', '99x')")
    assert job.account(job.read_records(none_valid, spec), spec).key_range is None


def test_the_accounting_counts_the_valid_key_changes(spark) -> None:
    """A U whose before image of the key differs from its key, as the silver type
    compares them, deletes its old key; a batch without one makes no old-key rows and
    needs no tombstone. Without before images nothing counts as moved."""
    spec = hosts_spec(before_image=True)
    names = [c["name"] for c in spec["bronze_columns"]]
    row = dict.fromkeys(names)
    row |= {"op": "U", "last_updated_ts": "2026-01-01 00:00:00", "change_seq": SEQ}

    def record(**values: str | None) -> tuple:
        return (*({**row, **values}[n] for n in names), "s3://b/a")

    rows = [record(id="12", bi_id="3"),  # moved
            record(id="7", bi_id="007"),  # the same INT
            record(id="8", bi_id=None),  # no before image: DMS wrote none
            record(op="I", id="9", bi_id="4"),  # not a U
            record(id="13", bi_id="x"),  # quarantined
            record(id="14", bi_id="5")]  # moved
    df = spark.createDataFrame(rows, ", ".join(f"`{c}` string" for c in
                                               [*names, job.SOURCE_FILE_COLUMN]))
    accounted = job.account(job.read_records(df, spec), spec)
    assert (accounted.quarantined, accounted.moved) == (1, 2)
    without = hosts_spec(before_image=False)
    kept = df.select(*[c["name"] for c in without["bronze_columns"]], job.SOURCE_FILE_COLUMN)
    assert job.account(job.read_records(kept, without), without).moved == 0


@settings(max_examples=60, deadline=None)
@given(values=st.lists(st.text(min_size=0, max_size=12), min_size=1, max_size=4),
       numbers=st.lists(st.integers(-2**63, 2**63 - 1), min_size=1, max_size=4),
       days=st.lists(st.integers(-719_528, 2_932_896), min_size=1, max_size=4))
def test_ranged_keys_read_back_as_the_same_values_in_the_same_order(spark, values, numbers,
                                                                     days) -> None:
    """account's ranged form of a key (first_key_values') and key_within's literal of it:
    any string (quotes, backslashes, any code point), any BIGINT and any DATE of years
    0-9999 reads back in Spark as the same form, and Python's order of the forms (which
    the range takes) is Spark's order of the values."""
    from pyspark.sql import functions as F

    forms = [r.f for r in spark.createDataFrame([(v,) for v in values], "k string")
             .select(F.hex("k").alias("f")).collect()]
    assert forms == [v.encode().hex().upper() for v in values]  # the bytes, in hex
    back = {"string": "hex(x)", "bigint": "x", "date": "datediff(x, DATE '1970-01-01')"}
    for sql_type, items in (("string", forms), ("bigint", numbers), ("date", days)):
        literals = f"array({', '.join(job.key_literal(v, sql_type) for v in items)})"
        got = spark.sql(f"SELECT transform({literals}, x -> {back[sql_type]}) AS a, "
                        f"transform(array_sort({literals}), x -> {back[sql_type]}) AS s"
                        ).first()
        assert list(got.a) == items and list(got.s) == sorted(items), sql_type


def test_floats_in_dms_exponent_form_cast_to_the_same_values(glue, tmp_path) -> None:
    """real / double precision as DMS writes them (%+.8e / %+.16e; NaN and infinities as
    glibc prints them): every form the emitter writes reads back, through Glue's reader
    and the job's cast, as the source's float32 / double; anything else is quarantined."""
    import math

    from cdclab.tables_sync import layout_of
    from pipeline_contract.dms_format.source_types import PgType, SourceColumn
    from pipeline_contract.dms_format.values import float32_of, render_double, render_real
    from pipeline_contract.settings import load_pipeline
    from pipeline_contract.table_specs import SourceTable, build_spec

    reals = ["32.38", "-1.5", "0", "-0", "1e-45", "3.4028235e+38", "NaN", "Infinity",
             "-Infinity", "9.80000019", "NaN"]
    doubles = ["21804.858784530072", "1e+300", "-0.11118453", "5e-324", "NaN", "Infinity",
               "-Infinity", "-0", "0.1", "1.7976931348623157e+308", "NaN"]
    columns = [SourceColumn("id", PgType("int4"), True), SourceColumn("r", PgType("float4")),
               SourceColumn("d", PgType("float8"))]
    spec = build_spec(SourceTable("public", "f", "public/f", columns, ["id", "r", "d"],
                                  ["change_seq"], ["id"]), layout_of(load_pipeline()))
    rows = [f"I,2026-11-22 10:15:00.123456,{i},{render_real(r)},{render_double(d)},{SEQ}\n"
            for i, (r, d) in enumerate(zip(reals, doubles, strict=True))]
    rows.append(f"I,2026-11-22 10:15:00.123456,99,+nanx,1,{SEQ}\n")
    (tmp_path / "20261122-101500123.csv").write_text(
        "Op,last_updated_ts,id,r,d,change_seq\n" + "".join(rows))
    frame = glue.create_dynamic_frame.from_options(
        connection_type="s3", connection_options={"paths": [tmp_path.as_uri()]},
        format="csv", format_options={"withHeader": True, "multiLine": True,
                                      "attachFilename": job.SOURCE_FILE_COLUMN})
    records = job.bronze_records(frame.toDF(), spec).cache()
    bad = [r[job.REASON] for r in records.where(f"{job.REASON} IS NOT NULL").collect()]
    assert bad == ["r is not a FLOAT: '+nanx'"]
    silver = records.where(f"{job.REASON} IS NULL").select(*job.silver_projection(spec))
    got = {row["id"]: (row["r"], row["d"]) for row in silver.collect()}

    def same(a: float, b: float) -> bool:  # NaN is NaN; -0 is not 0
        return (math.isnan(a) and math.isnan(b)) or (
            a == b and math.copysign(1, a) == math.copysign(1, b))

    assert len(got) == len(reals)
    for i, (r, d) in enumerate(zip(reals, doubles, strict=True)):
        assert same(got[i][0], float32_of(r)), (r, got[i][0])
        assert same(got[i][1], float(d)), (d, got[i][1])


@settings(max_examples=20)
@given(rows=st.lists(st.tuples(st.one_of(st.none(), st.text()),
                               st.one_of(st.none(), st.integers(-(2**63), 2**63 - 1))),
                     max_size=20))
def test_literal_rows_hold_any_text_and_long_as_given(spark, rows) -> None:
    """File names come from outside (object keys): quotes, commas, newlines, any Unicode,
    NULLs, and the full BIGINT range reach the frame unchanged, in order; none gives an
    empty frame with its columns."""
    frame = job.literal_rows(spark, rows, (("name", "string"), ("n", "long")))
    assert frame.columns == ["name", "n"]
    assert [tuple(r) for r in frame.collect()] == rows


# --- names and values from outside, through the records' SQL text ------------------------
def is_full_load_name(file: str) -> bool:
    """DMS's full-load files: the object's last path segment starts with LOAD."""
    return file.rsplit("/", 1)[-1].startswith("LOAD")


object_names = st.builds(lambda d, s, load: f"s3://b/{d}/{'LOAD' if load else ''}{s}",
                         st.text(max_size=6), st.text(max_size=10), st.booleans())
hostile = st.one_of(st.text(max_size=10),
                    st.sampled_from(["'", "\\", "\\'", "`", "''", '"', "%s", "$1", "\u2028",
                                     "\x00", "\\u0027", "X'27'", "NULL", "\n--"]))


@settings(max_examples=25, deadline=None)
@given(files=st.lists(st.tuples(object_names, st.lists(st.one_of(st.none(), hostile),
                                                       min_size=1, max_size=4)),
                      min_size=1, max_size=5, unique_by=lambda f: f[0]),
       as_case=st.booleans())
def test_object_names_and_values_reach_the_records_unchanged(spark, files, as_case) -> None:
    """Object keys and field values are anyone's: quotes, backslashes, backticks, NUL,
    line separators, SQL-looking text. The SQL text the job builds from them (file names
    in the span numbering, values in a reason) keeps each one as it came, whether the
    spans' bases are a CASE or a join: the file, the record's number in it, the full-load
    sequence, the reason quoting the value, and the raw fields."""
    columns = [*BRONZE_COLUMNS, job.SOURCE_FILE_COLUMN]
    data, want = [], []
    for file, values in files:
        load = is_full_load_name(file)
        for i, since in enumerate(values):
            row = {**dict.fromkeys(BRONZE_COLUMNS), "op": "I", "id": str(i),
                   "last_updated_ts": "2026-01-01 00:00:00", "name": since, "since": since,
                   "change_seq": None if load else SEQ}
            data.append(tuple({**row, job.SOURCE_FILE_COLUMN: file}[c] for c in columns))
            good = since is None or (re.fullmatch(r"\d{4}-\d{2}-\d{2}", since, re.ASCII)
                                     and parses(date.fromisoformat, since))
            want.append((file, i + 2,
                         job.FULL_LOAD_LSN + f"{i + 2:015d}" if load else SEQ,
                         None if good else f"unparseable since '{since}'",
                         [row[c] for c in BRONZE_COLUMNS]))
    df = spark.createDataFrame(data, ", ".join(f"`{c}` string" for c in columns))
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(job, "SPANS_AS_CASE", 16 if as_case else 0)
        got = job.bronze_records(df, SPEC).collect()
    assert sorted(((r[job.FILE], r[job.RECORD], r["change_seq"], r[job.REASON],
                    json.loads(r[job.RAW])) for r in got), key=repr) == sorted(want, key=repr)
