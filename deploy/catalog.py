"""Glue Data Catalog inputs for the database and the bronze CSV table (pure).

Stand-in until the shared builders in cdclab/catalog_tables.py exist; it describes the
files the emitter (and DMS) write: Op, the timestamp column, the source columns, then the
change-sequence column added by the table mapping, with a header row.
"""

from __future__ import annotations

from typing import Any

from cdclab.settings import PipelineSettings

# public.hosts_demo as DMS writes it (all text in CSV; the job casts while cleaning).
SOURCE_COLUMNS: tuple[tuple[str, str], ...] = (
    ("id", "int"),
    ("url", "string"),
    ("name", "string"),
    ("since", "string"),
    ("location", "string"),
    ("response_time", "string"),
    ("response_rate", "string"),
)
OPEN_CSV_SERDE = "org.apache.hadoop.hive.serde2.OpenCSVSerde"


def bronze_columns(p: PipelineSettings) -> list[dict[str, str]]:
    cols = [("op", "string"), (p.dms.timestamp_column_name, "string"), *SOURCE_COLUMNS]
    cols.append((p.dms.change_seq_column, "string"))
    return [{"Name": n, "Type": t} for n, t in cols]


def database_input(p: PipelineSettings) -> dict[str, Any]:
    return {"Name": p.lake.glue_database, "Description": "cdclab bronze and silver tables"}


def bronze_table_input(p: PipelineSettings, *, location: str) -> dict[str, Any]:
    return {
        "Name": p.lake.bronze_table,
        "Description": "DMS CSV files (header, Op column) of the source table",
        "TableType": "EXTERNAL_TABLE",
        "Parameters": {
            "classification": "csv",
            "skip.header.line.count": "1",
            "EXTERNAL": "TRUE",
        },
        "StorageDescriptor": {
            "Columns": bronze_columns(p),
            "Location": location,
            "InputFormat": "org.apache.hadoop.mapred.TextInputFormat",
            "OutputFormat": "org.apache.hadoop.hive.ql.io.HiveIgnoreKeyTextOutputFormat",
            "SerdeInfo": {
                "SerializationLibrary": OPEN_CSV_SERDE,
                "Parameters": {
                    "separatorChar": p.dms.csv_delimiter,
                    "quoteChar": '"',
                    "escapeChar": "\\",
                },
            },
        },
    }
