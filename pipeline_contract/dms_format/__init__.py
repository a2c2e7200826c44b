"""How AWS DMS writes a PostgreSQL source to S3: source types, value rendering, Parquet
types and table-mapping rules, shared by the emitter that writes and the job that reads."""
