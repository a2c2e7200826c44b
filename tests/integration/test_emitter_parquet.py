"""DataFormat parquet and date-based folder partitioning on a real slot: the .parquet
files read back with pyarrow hold, column by column, the values the CSV path writes (as
DMS's Parquet types), in full load and CDC; partitioned files land in their date folder."""

from __future__ import annotations

from datetime import UTC, date, datetime, time
from decimal import Decimal

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dms_emitter.date_partition import DatePartitioning
from dms_emitter.dms_csv import CsvFormat
from dms_emitter.parquet_file import arrow_type
from pipeline_contract.dms_format import parquet_types as pt
from pipeline_contract.dms_format.values import RenderOptions
from tests.integration.test_emitter_fidelity import EXPECTED, ROW, TYPES_DDL
from tests.resources.emitter import fresh_table, sql

pytestmark = pytest.mark.integration

# the Parquet value of each column of ROW (DMS type -> "S3 parquet data type")
TYPED = {
    "b": "true", "i2": 7, "i8": 9000000000, "n": Decimal("0.611111"), "n2": Decimal("12.50"),
    "n40": "123.45", "m": Decimal("12.5000"), "t": 'say "hi", bye', "v": "é", "c": "ab",
    "dt": date(2024, 2, 29), "tm": time(3, 4, 5, 500000), "ttz": time(10, 4, 5),
    "ts": datetime(2024, 1, 2, 3, 4, 5), "tstz": datetime(2024, 1, 1, 21, 34, 5, 250000),
    "iv": "1 year 2 mons 3 days 04:05:06", "by": b"\x01\x02\xff", "ip": "10.0.0.1",
    "a": "{1,2}", "e": "ok", "r": 32.380001068115234, "d": 21804.858784530072,
}
ARROW_TYPES = {"b": "string", "i2": "int16", "i8": "int64", "n": "decimal128(28, 6)",
               "n2": "decimal128(10, 2)", "n40": "string", "r": "float", "d": "double",
               "m": "decimal128(38, 4)", "dt": "date32[day]", "tm": "time32[ms]",
               "ts": "timestamp[us, tz=UTC]", "by": "binary", "Op": "string",
               "last_updated_ts": "string", "change_seq": "string"}


def as_parquet(text: str | None, typ: pa.DataType) -> object:
    """The CSV path's text through the same conversion, as pyarrow reads it back."""
    kinds = {"string": pt.STRING, "int16": pt.INT16, "int32": pt.INT32, "int64": pt.INT64,
             "date32[day]": pt.DATE32, "time32[ms]": pt.TIME32, "binary": pt.BINARY,
             "timestamp[us, tz=UTC]": pt.TIMESTAMP, "float": pt.FLOAT,
             "double": pt.DOUBLE}
    col = (pt.ColumnType(pt.DECIMAL, typ.precision, typ.scale)
           if pa.types.is_decimal(typ) else pt.ColumnType(kinds[str(typ)]))
    convert = pt.converter(col)
    value = text if text is None or convert is None else convert(text)
    return pa.array([value], type=arrow_type(col)).to_pylist()[0]


def parquet_rows(root, pattern: str = "*.parquet") -> dict[str, list[dict]]:
    return {str(p.relative_to(root)): pq.read_table(p).to_pylist()
            for p in sorted(root.rglob(pattern), key=lambda p: (p.name[:4] != "LOAD", p.name))}


def test_parquet_holds_the_csv_values_as_dms_parquet_types(postgres, emit) -> None:
    table = fresh_table(postgres.dsn, TYPES_DDL)
    sql(postgres.dsn, f"INSERT INTO {table} VALUES (1, {ROW})")
    fmt = CsvFormat(parquet=pt.ParquetOptions(gzip=True))
    run, csv_run = emit(table, fmt=fmt), emit(table)
    sql(postgres.dsn, f"INSERT INTO {table} VALUES (2, {ROW})")
    run.wait(lambda: len(run.sink.names()) == 2, what="the CDC .parquet file")
    csv_run.wait(lambda: len(csv_run.rows()) == 2, what="the CDC .csv file")
    files = parquet_rows(run.sink.root)
    names = list(files)
    assert names[0] == "LOAD00000001.parquet" and names[1].endswith(".parquet")
    first = pq.ParquetFile(run.sink.root / names[0])
    assert first.metadata.row_group(0).column(0).compression == "GZIP"
    assert {k: str(first.schema_arrow.field(k).type) for k in ARROW_TYPES} == ARROW_TYPES
    (load,), (cdc,) = files.values()
    csv_load, csv_cdc = csv_run.rows()
    for row, csv_row in ((load, csv_load), (cdc, csv_cdc)):
        assert {k: row[k] for k in TYPED} == {**TYPED, "ts": TYPED["ts"].replace(
            tzinfo=UTC), "tstz": TYPED["tstz"].replace(tzinfo=UTC)}
        # every column: the CSV text, as its Parquet type
        for name, text in csv_row.items():
            if name in EXPECTED:
                typ = first.schema_arrow.field(name).type
                assert row[name] == as_parquet(text, typ), name
        assert (row["Op"], row["change_seq"] is None) == (csv_row["Op"],
                                                          csv_row["change_seq"] is None)
    assert not run.errors and not csv_run.errors
    # the footer as DMS writes it (docs/dms-fidelity.md rule 4)
    md = first.metadata
    assert md.metadata is None  # no ARROW:schema
    required = [md.schema.column(i).name for i in range(md.num_columns)
                if md.schema.column(i).max_definition_level == 0]
    assert required == ["last_updated_ts"]
    assert md.schema.column(names_of(first).index("ts")).converted_type == "TIMESTAMP_MICROS"
    no_stats = {n for i, n in enumerate(names_of(first))
                if not md.row_group(0).column(i).is_stats_set}
    assert no_stats == {"n", "n2", "m"}  # the DECIMAL columns


def names_of(f: pq.ParquetFile) -> list[str]:
    return [f.metadata.schema.column(i).name for i in range(f.metadata.num_columns)]


def test_map_boolean_as_boolean_writes_parquet_booleans_and_csv_text(postgres, emit) -> None:
    """PostgreSQL source MapBooleanAsBoolean: Parquet BOOLEAN; its CSV text is not
    documented (cdclab keeps true/false)."""
    table = fresh_table(postgres.dsn, "CREATE TABLE {name} (id int PRIMARY KEY, ok bool)")
    sql(postgres.dsn, f"INSERT INTO {table} VALUES (1, true), (2, NULL)")
    render = RenderOptions(map_boolean_as_boolean=True)
    run = emit(table, fmt=CsvFormat(parquet=pt.ParquetOptions()), render=render)
    csv_run = emit(table, render=render)
    sql(postgres.dsn, f"INSERT INTO {table} VALUES (3, false)")
    run.wait(lambda: len(run.sink.names()) == 2, what="the CDC .parquet file")
    csv_run.wait(lambda: len(csv_run.rows()) == 3, what="the CDC .csv file")
    load = pq.ParquetFile(run.sink.root / "LOAD00000001.parquet")
    assert load.metadata.schema.column(names_of(load).index("ok")).physical_type == "BOOLEAN"
    rows = [r for f in parquet_rows(run.sink.root).values() for r in f]
    assert [r["ok"] for r in rows] == [True, None, False]
    assert [r["ok"] for r in csv_run.rows()] == ["true", None, "false"]


def test_date_partitions_put_files_in_their_date_folder(postgres, emit) -> None:
    table = fresh_table(postgres.dsn, "CREATE TABLE {name} (id int PRIMARY KEY, a text)")
    sql(postgres.dsn, f"INSERT INTO {table} VALUES (1, 'x')")
    partitions = DatePartitioning(True, "YYYYMMDDHH", "SLASH")
    run = emit(table, partitions=partitions)
    sql(postgres.dsn, f"INSERT INTO {table} VALUES (2, 'y')")
    root = run.sink.root
    run.wait(lambda: len(list(root.rglob("2*.csv"))) == 1, what="the CDC file")
    (load,) = root.rglob("LOAD*.csv")
    (cdc,) = root.rglob("2*.csv")
    now = datetime.now(UTC)
    for f in (load, cdc):  # load: its start's hour; CDC: the commit's (both just now)
        folder = str(f.parent.relative_to(root))
        assert folder in {partitions.folder(now), partitions.folder(now.replace(
            hour=max(now.hour - 1, 0)))}, folder
    assert not list(root.glob("*.csv"))  # nothing beside the date folders
    assert "2,y" in cdc.read_text()
