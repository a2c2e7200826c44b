"""Iceberg tables as GlueCatalog shows them in the Glue Data Catalog (pure)."""

from __future__ import annotations

from glue_local.iceberg_tables import glue_table, glue_type


def test_types_as_gluecatalog_writes_them():
    assert [glue_type(t) for t in ("int", "long", "timestamptz", "uuid", "fixed[16]",
                                   "decimal(38, 4)", "time")] == [
        "int", "bigint", "timestamp", "string", "binary", "decimal(38,4)", "string"]
    nested = {"type": "struct", "fields": [
        {"id": 3, "name": "tags", "required": False,
         "type": {"type": "list", "element-id": 4, "element": "string", "element-required": False}},
        {"id": 5, "name": "attrs", "required": False,
         "type": {"type": "map", "key-id": 6, "key": "string", "value-id": 7, "value": "long",
                  "value-required": False}}]}
    assert glue_type(nested) == "struct<tags:array<string>,attrs:map<string,bigint>>"


ID = {"id": 1, "name": "id", "required": True, "type": "int"}


def test_table_parameters_columns_and_schema_history():
    loaded = {
        "metadata-location": "s3://lake/wh/db/t/metadata/00002-b.metadata.json",
        "metadata": {
            "location": "s3://lake/wh/db/t", "current-schema-id": 1,
            "last-updated-ms": 1700000000000, "properties": {"comment": "silver"},
            "metadata-log": [{"metadata-file": "s3://lake/wh/db/t/metadata/00001-a.metadata.json",
                              "timestamp-ms": 1}],
            "schemas": [
                {"schema-id": 0, "fields": [ID,
                                            {"id": 2, "name": "old", "required": False,
                                             "type": "string"}]},
                {"schema-id": 1, "fields": [ID,
                                            {"id": 3, "name": "new", "required": False,
                                             "type": "long", "doc": "added"}]},
            ]},
    }
    t = glue_table("db", "t", loaded, "000000000000")
    assert t["TableType"] == "EXTERNAL_TABLE" and t["Description"] == "silver"
    assert t["Parameters"] == {
        "table_type": "ICEBERG",
        "metadata_location": "s3://lake/wh/db/t/metadata/00002-b.metadata.json",
        "previous_metadata_location": "s3://lake/wh/db/t/metadata/00001-a.metadata.json"}
    assert t["StorageDescriptor"]["Location"] == "s3://lake/wh/db/t"
    assert [(c["Name"], c["Type"], c["Parameters"]["iceberg.field.current"],
             c["Parameters"]["iceberg.field.optional"]) for c in t["StorageDescriptor"]["Columns"]
            ] == [("id", "int", "true", "false"), ("new", "bigint", "true", "true"),
                  ("old", "string", "false", "true")]
    assert t["StorageDescriptor"]["Columns"][1]["Comment"] == "added"
