"""DMS-format CDC emitter: PostgreSQL logical replication -> AWS DMS S3-target CSV files."""
