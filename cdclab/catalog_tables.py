"""Glue Data Catalog inputs for the bronze table, shared by local setup and the AWS deployer."""

from __future__ import annotations

from cdclab.settings import PipelineSettings, load_pipeline

# DMS CSV column order: Op first (include_op_for_full_load), the timestamp column, the
# source columns in table order, then the change_seq add-column transformation.
BRONZE_COLUMNS = (
    "op", "last_updated_ts", "id", "url", "name", "since", "location",
    "response_time", "response_rate", "change_seq",
)
OPEN_CSV_SERDE = "org.apache.hadoop.hive.serde2.OpenCSVSerde"


def database_input(p: PipelineSettings | None = None) -> dict:
    p = p or load_pipeline()
    return {"Name": p.lake.glue_database,
            "Description": "cdclab: DMS bronze files and the Iceberg silver tables"}


def bronze_table_input(p: PipelineSettings | None = None) -> dict:
    """TableInput of the bronze table: every column a string, OpenCSVSerde, header skipped."""
    p = p or load_pipeline()
    return {
        "Name": p.lake.bronze_table,
        "TableType": "EXTERNAL_TABLE",
        "Parameters": {"classification": "csv", "skip.header.line.count": "1",
                       "EXTERNAL": "TRUE"},
        "StorageDescriptor": {
            "Columns": [{"Name": c, "Type": "string"} for c in BRONZE_COLUMNS],
            "Location": p.bronze_location,
            "InputFormat": "org.apache.hadoop.mapred.TextInputFormat",
            "OutputFormat": "org.apache.hadoop.hive.ql.io.HiveIgnoreKeyTextOutputFormat",
            "SerdeInfo": {
                "SerializationLibrary": OPEN_CSV_SERDE,
                # OpenCSVSerde needs three distinct characters; DMS doubles quotes ("")
                # inside quoted fields, which opencsv reads as a literal quote.
                "Parameters": {"separatorChar": p.dms.csv_delimiter, "quoteChar": '"',
                               "escapeChar": "\\", "skip.header.line.count": "1"},
            },
        },
    }
