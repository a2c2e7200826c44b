-- Tombstones: the latest delete per id, so a late, older change never resurrects a row.
CREATE TABLE IF NOT EXISTS job_catalog.airbnb.hosts_silver_tombstones (
  id INT,
  change_seq STRING,
  deleted_at TIMESTAMP
)
USING iceberg
TBLPROPERTIES ('format-version' = '2', 'write.format.default' = 'parquet',
  'write.merge.mode' = 'merge-on-read', 'write.update.mode' = 'merge-on-read');
