-- Bronze: the demo table's DMS CSV files as an external Glue Data Catalog table (every
-- column a string). The deployer and the local setup create it from the table's spec
-- (pipeline_contract/table_specs.py, the source of truth); this is the equivalent Hive DDL, for reading.
CREATE EXTERNAL TABLE IF NOT EXISTS airbnb.hosts_bronze (
  op STRING,
  last_updated_ts STRING,
  id STRING,
  url STRING,
  name STRING,
  since STRING,
  location STRING,
  response_time STRING,
  response_rate STRING,
  change_seq STRING          -- 20-digit commit LSN + 15-digit position; compare as strings
)
ROW FORMAT SERDE 'org.apache.hadoop.hive.serde2.OpenCSVSerde'
WITH SERDEPROPERTIES ('separatorChar' = ',', 'quoteChar' = '"', 'escapeChar' = '\\')
LOCATION 's3://cdclab-bronze/dms/airbnb_db/public/hosts_demo/'
TBLPROPERTIES ('skip.header.line.count' = '1', 'classification' = 'csv');
