-- Silver: cleaned, merged hosts. The job builds this statement from the demo table's
-- spec (jobs/bronze_to_silver.py silver_ddl; tests/unit/test_job_script.py compares).
-- change_seq is kept so an older change never overwrites a newer.
CREATE NAMESPACE IF NOT EXISTS job_catalog.airbnb;
CREATE TABLE IF NOT EXISTS job_catalog.airbnb.hosts_silver (
  last_updated_ts TIMESTAMP,
  id INT,
  url STRING,
  name STRING,
  since DATE,
  location_city STRING,
  location_country STRING,
  response_time STRING,
  response_rate STRING,
  change_seq STRING
)
USING iceberg
TBLPROPERTIES ('format-version' = '2', 'write.format.default' = 'parquet',
  'write.delete.mode' = 'merge-on-read', 'write.update.mode' = 'merge-on-read',
  'write.merge.mode' = 'merge-on-read');
