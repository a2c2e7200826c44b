"""The Lambda function's environment, from pipeline.toml: one definition for the
deployed function (cdclab deploy) and the local watcher that calls the same handler."""

from __future__ import annotations

from cdclab.settings import BACKLOG_SUFFIX, PipelineSettings


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
    }
