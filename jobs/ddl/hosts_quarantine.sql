-- Quarantine: bronze records the job could not parse or validate; one row per
-- (source_file, record_number), so replays add no duplicates. record_number counts the
-- file's records as Glue's reader returns them, from 1 (the header); line_number is NULL
-- (Glue's readers report none; kept for tables created by earlier versions).
CREATE TABLE IF NOT EXISTS job_catalog.airbnb.hosts_quarantine (
  source_file STRING,
  record_number BIGINT,
  line_number BIGINT,
  reason STRING,
  raw_fields STRING,          -- the record's fields as a JSON array
  run_id STRING,
  quarantined_at TIMESTAMP
)
USING iceberg
TBLPROPERTIES ('format-version' = '2', 'write.format.default' = 'parquet');
