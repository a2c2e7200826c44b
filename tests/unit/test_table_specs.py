"""The generic job's table specs: built from a source table and pipeline.toml (pure)."""

from __future__ import annotations

import dataclasses
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cdclab.tables_sync import build_specs, layout_of
from pipeline_contract.dms_format.source_types import PgType, SourceColumn
from pipeline_contract.settings import load_pipeline
from pipeline_contract.settings_check import SettingsError
from pipeline_contract.table_specs import (
    Layout,
    SourceTable,
    SpecError,
    TableOverrides,
    before_image_keys,
    bronze_table_input,
    build_spec,
    glue_name,
    spark_type,
)
from tests.resources.specs import hosts_source, hosts_spec

LAYOUT = Layout("bronze", "dms/db", "lake", "cat")


def numeric(precision: int, scale: int) -> PgType:
    return PgType("numeric", "N", ((precision << 16) | scale) + 4)


def table(columns: list[tuple[str, PgType]], key: list[str], name: str = "Order Lines",
          added: tuple[str, ...] = ("change_seq",)) -> SourceTable:
    cols = [SourceColumn(n, t, n in key) for n, t in columns]
    return SourceTable("sales", name, f"sales/{name}", cols, [c.name for c in cols],
                       list(added), key)


def test_the_demo_tables_spec_is_the_shipped_hosts_job() -> None:
    spec = hosts_spec()
    p = load_pipeline()
    assert [c["name"] for c in spec["bronze_columns"]] == [
        "op", "last_updated_ts", "id", "url", "name", "since", "location",
        "response_time", "response_rate", "change_seq"]
    assert [c["name"] for c in spec["silver_columns"]] == [
        "last_updated_ts", "id", "url", "name", "since", "location_city",
        "location_country", "response_time", "response_rate", "change_seq"]
    assert spec["keys"] == ["id"]
    assert spec["silver_table"] == p.qualified(p.lake.silver_table)
    assert spec["tombstone_table"] == p.qualified(p.lake.tombstone_table)
    assert spec["quarantine_table"] == p.qualified(p.lake.quarantine_table)
    assert spec["bronze_table"] == p.lake.bronze_table
    assert spec["bronze_location"] == p.bronze_location
    assert spec["transformation_ctx"] == "hostsIncrementalInputDF"  # bookmark kept


def test_bronze_table_input_is_positional_all_strings_opencsv() -> None:
    spec = hosts_spec()
    t = bronze_table_input(spec, ",")
    sd = t["StorageDescriptor"]
    assert [c["Name"] for c in sd["Columns"]] == [c["name"] for c in spec["bronze_columns"]]
    assert {c["Type"] for c in sd["Columns"]} == {"string"}
    serde = sd["SerdeInfo"]
    assert serde["SerializationLibrary"] == "org.apache.hadoop.hive.serde2.OpenCSVSerde"
    params = serde["Parameters"]
    # opencsv refuses equal separator/quote/escape characters
    assert len({params["separatorChar"], params["quoteChar"], params["escapeChar"]}) == 3
    assert t["Parameters"]["skip.header.line.count"] == "1"
    assert sd["Location"] == spec["bronze_location"]


def test_without_add_column_name_no_line_is_skipped() -> None:
    """DMS's AddColumnName defaults to false: then a file's first line is a change."""
    from tests.resources.specs import hosts_source

    spec = build_spec(hosts_source(), dataclasses.replace(layout_of(load_pipeline()),
                                                          add_column_name=False))
    assert spec["bronze_header"] is False
    t = bronze_table_input(spec, ",")
    assert t["Parameters"]["skip.header.line.count"] == "0"
    assert t["StorageDescriptor"]["SerdeInfo"]["Parameters"]["skip.header.line.count"] == "0"
    assert bronze_table_input(hosts_spec(), ",")["Parameters"]["skip.header.line.count"] == "1"


def test_any_table_gets_default_names_typed_columns_and_a_composite_key() -> None:
    spec = build_spec(table([("Order ID", PgType("int8")), ("line", PgType("int2")),
                             ("price", numeric(10, 2)), ("paid", PgType("bool")),
                             ("at", PgType("timestamptz")), ("tags", PgType("_text", "A"))],
                            ["Order ID", "line"]), LAYOUT)
    assert spec["keys"] == ["order_id", "line"]
    types = {c["name"]: c["type"] for c in spec["silver_columns"]}
    assert types == {"last_updated_ts": "timestamp", "order_id": "bigint", "line": "smallint",
                     "price": "decimal(10,2)", "paid": "boolean", "at": "timestamp",
                     "tags": "string", "change_seq": "string"}
    assert spec["silver_table"] == "cat.lake.order_lines_silver"
    assert spec["tombstone_table"] == "cat.lake.order_lines_silver_tombstones"
    assert spec["quarantine_table"] == "cat.lake.order_lines_quarantine"
    assert spec["bronze_table"] == "order_lines_bronze"
    assert spec["bronze_location"] == "s3://bronze/dms/db/sales/Order Lines/"


def test_dms_type_mapping_for_numbers() -> None:
    assert spark_type(PgType("numeric", "N")) == "decimal(28,6)"  # unbounded: NUMERIC(28,6)
    assert spark_type(PgType("numeric", "N"), map_unbounded_numeric_as_string=True) == "string"
    assert spark_type(numeric(38, 38)) == "decimal(38,38)"
    assert spark_type(numeric(50, 2)) == "string"  # wider than any Spark decimal
    assert spark_type(PgType("money")) == "decimal(38,4)"
    assert spark_type(PgType("uuid")) == "string"


@pytest.mark.parametrize(("source", "why"), [
    (table([("a", PgType("int4"))], []), "no primary key"),
    (table([("a", PgType("int4"))], ["a"], added=()), "change_seq"),
])
def test_tables_the_job_cannot_merge_are_refused_naming_them(source, why) -> None:
    with pytest.raises(SpecError, match=why) as e:
        build_spec(source, LAYOUT)
    assert "sales.Order Lines" in str(e.value)


def test_no_op_on_full_load_rows_is_refused() -> None:
    layout = dataclasses.replace(LAYOUT, op_for_full_load=False)
    with pytest.raises(SpecError, match="include_op_for_full_load"):
        build_spec(table([("a", PgType("int4"))], ["a"]), layout)


def test_derive_splits_a_text_column_in_its_place_and_checks_it() -> None:
    over = TableOverrides.parse("s.x", {"derive": [{"column": "addr",
                                                     "into": ["street", "rest"]}]})
    spec = build_spec(table([("a", PgType("int4")), ("addr", PgType("text")),
                             ("z", PgType("text"))], ["a"]), LAYOUT, over)
    assert [c["name"] for c in spec["silver_columns"]] == [
        "last_updated_ts", "a", "street", "rest", "z", "change_seq"]
    with pytest.raises(SpecError, match="not a column"):
        build_spec(table([("a", PgType("int4"))], ["a"]), LAYOUT, over)
    with pytest.raises(SettingsError, match=re.escape('tables."s.x".silver = "typo": not a '
                                                      "key here (the keys: bronze_table")):
        TableOverrides.parse("s.x", {"silver": "typo"})
    with pytest.raises(SettingsError, match=re.escape(
            'tables."s.x".derive[0].transform = "regexp": one of split')):
        TableOverrides.parse("s.x", {"derive": [{"column": "a", "into": ["b"],
                                                 "transform": "regexp"}]})


def test_overrides_of_tables_the_mappings_do_not_select_are_reported() -> None:
    p = load_pipeline()
    p = dataclasses.replace(p, tables={**p.tables, "public.gone": {}})
    report = build_specs([hosts_source(p)], p)
    assert [s["name"] for s in report.specs] == ["public.hosts_demo"]
    assert "select no such source table" in report.skipped["public.gone"]
    assert layout_of(p).change_seq_column == p.dms.change_seq_column


@given(st.text(min_size=1, max_size=20))
def test_glue_names_are_lower_case_identifiers(name: str) -> None:
    out = glue_name(name)
    assert out and out == out.lower()
    assert all(ch.isascii() and (ch.isalnum() or ch == "_") for ch in out)
    assert glue_name(out) == out  # stable


PARQUET = dataclasses.replace(LAYOUT, data_format="parquet")


def test_parquet_specs_type_the_catalog_as_dms_writes_the_files() -> None:
    spec = build_spec(table([("id", PgType("int4")), ("amount", numeric(10, 2)),
                             ("blob", PgType("bytea")), ("ok", PgType("bool")),
                             ("at", PgType("timestamptz"))], ["id"], name="pay"), PARQUET)
    assert spec["bronze_format"] == "parquet"
    cols = {c["name"]: c for c in spec["bronze_columns"]}
    assert (cols["id"]["hive_type"], cols["amount"]["hive_type"]) == ("int", "decimal(10,2)")
    assert (cols["blob"]["hive_type"], cols["blob"]["type"]) == ("binary", "binary")
    assert (cols["ok"]["hive_type"], cols["ok"]["type"]) == ("string", "boolean")  # CHAR(5)
    assert cols["at"]["hive_type"] == "timestamp"
    booleans = dataclasses.replace(PARQUET, map_boolean_as_boolean=True)
    ok = next(c for c in build_spec(table([("id", PgType("int4")), ("ok", PgType("bool"))],
                                           ["id"], name="pay"), booleans)["bronze_columns"]
              if c["name"] == "ok")
    assert (ok["parquet_type"], ok["hive_type"], ok["type"]) == ("bool", "boolean",
                                                                 "boolean")
    t = bronze_table_input(spec)
    sd = t["StorageDescriptor"]
    assert sd["SerdeInfo"]["SerializationLibrary"].endswith("ParquetHiveSerDe")
    assert t["Parameters"]["classification"] == "parquet"
    assert {c["Name"]: c["Type"] for c in sd["Columns"]}["op"] == "string"


def test_parquet_refuses_what_spark_cannot_read_or_find_naming_the_column() -> None:
    with pytest.raises(SpecError, match="'t' is a Parquet TIME"):
        build_spec(table([("id", PgType("int4")), ("t", PgType("time"))], ["id"]), PARQUET)
    with pytest.raises(SpecError, match="read by name"):
        build_spec(table([("Order ID", PgType("int4"))], ["Order ID"]), PARQUET)


def test_expected_parquet_values_are_the_files_values_as_silver_holds_them() -> None:
    from datetime import date, datetime
    from decimal import Decimal

    from cdclab.reconcile import parquet_typed

    def col(kind: str, silver: str = "string") -> dict:
        return {"parquet_type": kind, "type": silver}

    assert parquet_typed(col("int32", "int"), "7") == 7
    assert parquet_typed(col("decimal(10,2)", "decimal(10,2)"), "1.5") == Decimal("1.50")
    assert parquet_typed(col("decimal(28,6)", "decimal(28,6)"), "NaN") is None  # written NULL
    assert parquet_typed(col("date32", "date"), "2020-02-29") == date(2020, 2, 29)
    assert parquet_typed(col("timestamp", "timestamp"), "2024-01-02 03:04:05.123456",
                         millis=True) == datetime(2024, 1, 2, 3, 4, 5, 123000)
    assert parquet_typed(col("binary", "binary"), "00ff") == b"\x00\xff"
    assert parquet_typed(col("string", "boolean"), "true") is True
    assert parquet_typed(col("string"), "") == "" and parquet_typed(col("string"), None) is None


def test_the_default_mappings_give_the_demo_table_its_keys_before_image() -> None:
    plain, spec = hosts_spec(), hosts_spec(before_image=True)
    bronze = spec["bronze_columns"]
    assert bronze[:-1] == plain["bronze_columns"]
    assert bronze[-1] == {"name": "bi_id", "role": "before_image", "type": "int",
                          "source_type": "int4", "before_image_of": "id"}
    assert spec["silver_columns"] == plain["silver_columns"]  # bronze only
    assert [c["Name"] for c in bronze_table_input(spec)["StorageDescriptor"]["Columns"]][
        -2:] == ["change_seq", "bi_id"]
    assert before_image_keys(spec) == {"id": "bi_id"} and before_image_keys(plain) == {}


def test_before_image_columns_of_a_composite_key_and_parquet_types() -> None:
    columns = [("order_id", PgType("int8")), ("sku", PgType("text")), ("q", PgType("int4"))]
    source = dataclasses.replace(
        table(columns, ["order_id", "sku"]),
        before_image=[("before_order_id", "order_id"), ("before_sku", "sku")])
    spec = build_spec(source, dataclasses.replace(LAYOUT, data_format="parquet"))
    assert before_image_keys(spec) == {"order_id": "before_order_id", "sku": "before_sku"}
    by_name = {c["name"]: c for c in spec["bronze_columns"]}
    for bi, of in (("before_order_id", "order_id"), ("before_sku", "sku")):
        assert {k: v for k, v in by_name[bi].items() if k not in ("name", "role",
                                                                  "before_image_of")} == {
            k: v for k, v in by_name[of].items() if k not in ("name", "role", "key")}
    # a key column without a before image (non-lob leaves text out): no key change known
    partial = dataclasses.replace(source, before_image=[("before_order_id", "order_id")])
    assert before_image_keys(build_spec(partial, LAYOUT)) == {}
    with pytest.raises(SpecError, match="not a written column"):
        build_spec(dataclasses.replace(source, before_image=[("BI_x", "x")]), LAYOUT)
    with pytest.raises(SpecError, match="no Glue column names"):
        build_spec(dataclasses.replace(source, before_image=[("BI q", "q")]),
                   dataclasses.replace(LAYOUT, data_format="parquet"))


_TYPES = {"int4": PgType("int4"), "int8": PgType("int8"), "text": PgType("text"),
          "jsonb": PgType("jsonb"), "date": PgType("date"), "numeric": numeric(12, 2)}


@st.composite
def before_image_tables(draw: st.DrawFn) -> tuple[list[SourceColumn], list[str], dict]:
    """A table (columns, key) and an add-before-image-columns rule for it."""
    names = draw(st.lists(st.sampled_from("abcdef"), min_size=1, max_size=6, unique=True))
    columns = [SourceColumn(n, _TYPES[draw(st.sampled_from(sorted(_TYPES)))]) for n in names]
    key = draw(st.lists(st.sampled_from(names), min_size=1, unique=True))
    columns = [dataclasses.replace(c, in_key=c.name in key) for c in columns]
    prefix, suffix = draw(st.sampled_from([("BI_", ""), ("before_", ""), ("", "_old"),
                                           ("x", "y")]))
    definition = {"column-prefix": prefix, "column-suffix": suffix,
                  "column-filter": draw(st.sampled_from(["pk-only", "non-lob", "all"]))}
    return columns, key, definition


@given(before_image_tables())
def test_the_bronze_catalog_reads_the_emitters_header_with_before_images(
        case: tuple[list[SourceColumn], list[str], dict]) -> None:
    """CSV bronze is read by position: the catalog's columns are the emitter's header
    (Op, the timestamp, the table's columns, the added ones, then the before images),
    each before image typed like its column; the job can tell a key change exactly when
    every key column has one; silver does not change."""
    from cdclab.tables_sync import source_table
    from pipeline_contract.dms_format.table_mappings import TableMappings, default_mappings
    from pipeline_contract.dms_format.values import is_lob

    columns, key, definition = case
    doc = default_mappings("sales", "t", "change_seq", before_image=True)
    doc["rules"][-1]["before-image-def"] = definition
    plan = TableMappings.parse(doc).plan("sales", "t")
    spec = build_spec(source_table(plan, columns, key), LAYOUT)
    names = [c.name for c in columns]
    header = plan.header(names, plan.before(columns, key))
    bronze = spec["bronze_columns"]
    assert [c["name"] for c in bronze] == ["op", "last_updated_ts",
                                           *(glue_name(h) for h in header)]
    by_name = {c["name"]: c for c in bronze}
    images = [c for c in bronze if c["role"] == "before_image"]
    assert [c["before_image_of"] for c in images] == [
        glue_name(names[i]) for i in plan.before(columns, key)]
    for c in images:
        of = by_name[c["before_image_of"]]
        assert (c["type"], c["source_type"]) == (of["type"], of["source_type"])
        assert "key" not in c
    lob_key = any(c.name in key and is_lob(c.type) for c in columns)  # text, jsonb
    told = definition["column-filter"] != "non-lob" or not lob_key
    assert before_image_keys(spec) == ({k: glue_name(plan.before_image.name(k))
                                        for k in spec["keys"]} if told else {})
    plain = build_spec(source_table(TableMappings.parse(default_mappings(
        "sales", "t", "change_seq", before_image=False)).plan("sales", "t"), columns, key),
        LAYOUT)
    assert spec["silver_columns"] == plain["silver_columns"]
    assert [c for c in bronze if c["role"] != "before_image"] == plain["bronze_columns"]
