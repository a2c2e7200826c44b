"""cdclab's stand-in for AWS Glue Data Quality's `awsgluedq` (not published by AWS).

Glue Studio generates `from awsgluedq.transforms import EvaluateDataQuality` when a job
has data quality on; locally EvaluateDataQuality evaluates DQDL rulesets (awsgluedq.dqdl,
awsgluedq.evaluate) and rule types it does not know fail by name.
"""
