"""The bronze table's Glue TableInput matches the DMS file layout."""

from __future__ import annotations

from cdclab.catalog_tables import BRONZE_COLUMNS, bronze_table_input, database_input
from cdclab.settings import load_pipeline


def test_bronze_columns_in_dms_order_all_strings() -> None:
    sd = bronze_table_input()["StorageDescriptor"]
    assert [c["Name"] for c in sd["Columns"]] == list(BRONZE_COLUMNS)
    assert BRONZE_COLUMNS[:2] == ("op", "last_updated_ts")
    assert BRONZE_COLUMNS[-1] == load_pipeline().dms.change_seq_column
    assert {c["Type"] for c in sd["Columns"]} == {"string"}


def test_bronze_serde_and_location() -> None:
    t = bronze_table_input()
    p = load_pipeline()
    serde = t["StorageDescriptor"]["SerdeInfo"]
    assert serde["SerializationLibrary"] == "org.apache.hadoop.hive.serde2.OpenCSVSerde"
    params = serde["Parameters"]
    assert params["separatorChar"] == p.dms.csv_delimiter and params["quoteChar"] == '"'
    # opencsv refuses equal separator/quote/escape characters
    assert len({params["separatorChar"], params["quoteChar"], params["escapeChar"]}) == 3
    assert t["Parameters"]["skip.header.line.count"] == "1"
    assert t["StorageDescriptor"]["Location"] == p.bronze_location
    assert t["Name"] == p.lake.bronze_table


def test_database_input_names_the_glue_database() -> None:
    assert database_input()["Name"] == load_pipeline().lake.glue_database
