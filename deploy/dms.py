"""DMS settings derived only from pipeline.toml [dms] — what the emitter writes (pure)."""

from __future__ import annotations

import json
from typing import Any

from pipeline_contract.dms_format.table_mappings import default_mappings, read_document
from pipeline_contract.settings import PipelineSettings, table_mappings_path


def s3_target_settings(p: PipelineSettings, *, bucket: str, role_arn: str) -> dict[str, Any]:
    """S3Settings of the DMS target endpoint, field for field the emitter's format."""
    d = p.dms
    return {
        "ServiceAccessRoleArn": role_arn,
        "BucketName": bucket,
        "BucketFolder": d.bucket_folder,
        "DataFormat": d.data_format,
        "AddColumnName": d.add_column_name,
        "IncludeOpForFullLoad": d.include_op_for_full_load,
        "TimestampColumnName": d.timestamp_column_name,
        "CsvDelimiter": d.csv_delimiter,
        "CsvRowDelimiter": d.csv_row_delimiter,
        "CsvNullValue": d.csv_null_value,
        "Rfc4180": d.rfc4180,
        "CompressionType": d.compression_type.upper(),
        "CdcInsertsOnly": d.cdc_inserts_only,
        "CdcInsertsAndUpdates": d.cdc_inserts_and_updates,
        "UseTaskStartTimeForFullLoadTimestamp": d.use_task_start_time_for_full_load_timestamp,
        # the lab's small files and batches are not sent: DMS keeps its defaults unless set
        **({"MaxFileSize": d.max_file_size_kb} if d.max_file_size_kb is not None else {}),
        **({"CdcMaxBatchInterval": d.cdc_max_batch_interval_seconds}
           if d.cdc_max_batch_interval_seconds is not None else {}),
        **({"CdcMinFileSize": d.cdc_min_file_size_kb}
           if d.cdc_min_file_size_kb is not None else {}),
        **(parquet_settings(p) if d.data_format == "parquet" else {}),
        **date_partition_settings(p),
    }


def parquet_settings(p: PipelineSettings) -> dict[str, Any]:
    """The Parquet settings the emitter applies; unset page/group sizes are not sent, so
    DMS keeps the defaults the emitter also uses."""
    d = p.dms
    sizes = {"DataPageSize": d.data_page_size, "RowGroupLength": d.row_group_length,
             "DictPageSizeLimit": d.dict_page_size_limit}
    return {"ParquetVersion": d.parquet_version,
            "ParquetTimestampInMillisecond": d.parquet_timestamp_in_millisecond,
            "EnableStatistics": d.enable_statistics, "EncodingType": d.encoding_type,
            **{k: v for k, v in sizes.items() if v is not None}}


def date_partition_settings(p: PipelineSettings) -> dict[str, Any]:
    """DatePartition*: sent always (false turns it off on an existing endpoint); the
    time zone only when set (unset is UTC on both sides)."""
    d = p.dms
    return {"DatePartitionEnabled": d.date_partition_enabled,
            "DatePartitionSequence": d.date_partition_sequence,
            "DatePartitionDelimiter": d.date_partition_delimiter,
            **({"DatePartitionTimezone": d.date_partition_timezone}
               if d.date_partition_timezone else {})}


def postgres_source_settings(p: PipelineSettings) -> tuple[dict[str, Any], str]:
    """(PostgreSQLSettings, ExtraConnectionAttributes) of the source endpoint: the
    source settings the emitter follows. MapUnboundedNumericAsString is an extra
    connection attribute only (it is not in the API's PostgreSQLSettings); "" turns it
    back off on an existing endpoint."""
    settings = {"TrimSpaceInChar": p.dms.trim_space_in_char,
                "FailTasksOnLobTruncation": p.dms.fail_tasks_on_lob_truncation,
                # the S3 target has no such setting: the source's alone decides
                "MapBooleanAsBoolean": p.dms.map_boolean_as_boolean}
    extra = ("MapUnboundedNumericAsString=true"
             if p.dms.map_unbounded_numeric_as_string else "")
    return settings, extra


def task_settings(p: PipelineSettings) -> dict[str, Any]:
    """ReplicationTaskSettings: the LOB mode the emitter applies (S3 supports limited LOB
    mode only), sent explicitly rather than left to DMS's defaults."""
    return {"TargetMetadata": {"SupportLobs": True, "FullLobMode": False,
                               "LimitedSizeLobMode": True,
                               "LobMaxSize": p.dms.lob_max_size_kb}}


def task_settings_json(p: PipelineSettings) -> str:
    return json.dumps(task_settings(p), sort_keys=True)


def table_mappings(p: PipelineSettings) -> dict[str, Any]:
    """The task's table mappings: the file pipeline.toml names (the same the emitter
    applies, checked the same way), or the source table plus the change-sequence column
    the job dedups by and (dms.before_image_columns) the key's before image, by which
    the job deletes the old key of a primary-key UPDATE."""
    if p.source.table_mappings:
        # what the emitter refuses, deploy refuses
        return read_document(table_mappings_path(p))
    return default_mappings(p.source.schema, p.source.table, p.dms.change_seq_column,
                            p.dms.before_image_columns)


def table_mappings_json(p: PipelineSettings) -> str:
    return json.dumps(table_mappings(p), sort_keys=True)
