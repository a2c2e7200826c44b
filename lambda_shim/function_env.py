"""The Lambda function's environment, from pipeline.toml: one definition for the
deployed function (cdclab deploy) and the local watcher that calls the same handler."""

from __future__ import annotations

from pipeline_contract.settings import BACKLOG_SUFFIX, DmsSettings, PipelineSettings

KiB, MiB = 1024, 1024 * 1024
# DMS's S3 target defaults (CHAP_Target.S3, "Endpoint settings"): MaxFileSize 1 GB
# (1,048,576 KB, also its greatest value); CdcMinFileSize 32000 KB;
# DataPageSize and DictPageSizeLimit 1,024,000 bytes; RowGroupLength 10,024 rows (the
# emitter's 10,000 is below it)
DMS_MAX_FILE_SIZE_KB = 1048576
DMS_CDC_MIN_FILE_SIZE_KB = 32000
DMS_PAGE_BYTES = 1_024_000
DMS_ROW_GROUP_LENGTH = 10_024
# Not DMS's: a wide non-LOB string (varchar(n) is WSTRING(n), not cut) still passes;
# fields of one record; Spark's CSV reader refuses records over maxColumns (20480)
FIELD_FLOOR_CHARS = 1 * MiB
FIELDS_PER_RECORD = 16
SPARK_MAX_COLUMNS = 20480
PARQUET_FOOTER_BYTES = 8 * MiB
PAGES_PER_READ = 64


def gate_limits(d: DmsSettings) -> dict[str, int]:
    """What the object gate lets through, from what the DMS endpoint can write
    (docs/operations.md, "The object gate's limits"):
    - a field: with an S3 target DMS has limited LOB mode only ("Full LOB mode is not
      supported"), which cuts each LOB at LobMaxSize KB; written out, a value grows at
      most 4-fold (a bytea in hex doubles; CSV quoting doubles quotes; the unit DMS
      counts in is not documented), and never below 1 MiB;
    - a record: 16 such fields;
    - an object, decompressed: a full-load file is cut at MaxFileSize KB, a CDC file is
      written once it reaches CdcMinFileSize KB (the larger of the two), plus the record
      that crossed it;
    - Parquet: RowGroupLength rows a row group; a reader holds a page per column, each
      about DataPageSize / DictPageSizeLimit: 64 of those, added up.
    """
    field = max(4 * d.lob_max_size_kb * KiB, FIELD_FLOOR_CHARS)
    record = FIELDS_PER_RECORD * field
    file_kb = max(d.max_file_size_kb or DMS_MAX_FILE_SIZE_KB,
                  d.cdc_min_file_size_kb or DMS_CDC_MIN_FILE_SIZE_KB)
    page = max(d.data_page_size or DMS_PAGE_BYTES, d.dict_page_size_limit or DMS_PAGE_BYTES)
    return {
        "GATE_MAX_FIELD_CHARS": field,
        "GATE_MAX_RECORD_CHARS": record,
        "GATE_MAX_COLUMNS": SPARK_MAX_COLUMNS,
        "GATE_MAX_OBJECT_BYTES": file_kb * KiB + record,
        "GATE_MAX_PARQUET_FOOTER_BYTES": PARQUET_FOOTER_BYTES,
        "GATE_MAX_ROW_GROUP_ROWS": d.row_group_length or DMS_ROW_GROUP_LENGTH,
        "GATE_MAX_PARQUET_READ_BYTES": PAGES_PER_READ * page,
    }


def function_environment(p: PipelineSettings) -> dict[str, str]:
    return {
        "GLUE_JOB_NAME": p.glue_job.name,
        "QUARANTINE_PREFIX": p.lake.quarantine_prefix,
        # how the DMS endpoint writes its CSV, so the gate parses it the same way
        "DMS_ADD_COLUMN_NAME": str(p.dms.add_column_name).lower(),
        "DMS_CSV_DELIMITER": p.dms.csv_delimiter,
        "DMS_RFC4180": str(p.dms.rfc4180).lower(),
        # <prefix><job><suffix>: a run that left input for later wrote it (--backlog_marker)
        "BACKLOG_MARKER_PREFIX": p.job_files_prefix,
        "BACKLOG_MARKER_SUFFIX": BACKLOG_SUFFIX,
        # the object gate's limits, from what the DMS endpoint can write
        **{name: str(value) for name, value in gate_limits(p.dms).items()},
    }
