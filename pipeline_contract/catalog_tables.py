"""Glue Data Catalog inputs shared by local setup and the AWS deployer (the bronze
tables' inputs are per table: pipeline_contract.table_specs.bronze_table_input)."""

from __future__ import annotations

from pipeline_contract.settings import PipelineSettings


def database_input(p: PipelineSettings) -> dict:
    return {"Name": p.lake.glue_database,
            "Description": "cdclab: DMS bronze files and the Iceberg silver tables"}
