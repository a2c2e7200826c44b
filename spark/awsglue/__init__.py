"""Local stand-in for AWS Glue's `awsglue` library (the part Glue job scripts use).

Same import paths and call shapes as on AWS Glue 5.1, so job scripts run unchanged:
awsglue.utils.getResolvedOptions, awsglue.context.GlueContext,
awsglue.dynamicframe.DynamicFrame, awsglue.job.Job.
"""

from awsglue.dynamicframe import DynamicFrame

__all__ = ["DynamicFrame"]
