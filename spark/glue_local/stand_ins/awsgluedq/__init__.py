"""cdclab's stand-in for AWS Glue Data Quality's `awsgluedq` (not published by AWS).

Glue Studio generates `from awsgluedq.transforms import EvaluateDataQuality` when a job
has data quality on; the import works locally and every call fails by name.
"""
