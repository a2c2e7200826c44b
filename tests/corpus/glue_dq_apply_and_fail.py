# AWS's EvaluateDataQuality.apply example (docs.aws.amazon.com/glue/latest/dg/
# aws-glue-api-crawler-pyspark-transforms-EvaluateDataQuality.html: rules ColumnExists,
# IsComplete, its publishing options) on a CSV source, then Glue Studio's "fail the job
# when data quality fails" line after process_rows (as in public Studio-generated
# scripts); written for cdclab, not copied from a real job. Runs in
# tests/integration/test_glue_data_quality.py.
import sys, json
from awsglue.transforms import *
from awsglue.utils import getResolvedOptions
from pyspark.context import SparkContext
from awsglue.context import GlueContext
from awsglue.job import Job
from awsgluedq.transforms import EvaluateDataQuality

args = getResolvedOptions(sys.argv, ['JOB_NAME', 'source'])
glueContext = GlueContext(SparkContext.getOrCreate())
job = Job(glueContext)
job.init(args['JOB_NAME'], args)
AmazonS3_node1 = glueContext.create_dynamic_frame.from_options(format_options={"withHeader": True}, connection_type="s3", format="csv", connection_options={"paths": [args['source']]}, transformation_ctx="AmazonS3_node1")
ruleset = """Rules = [ColumnExists "order_id", IsComplete "order_id", ColumnCount = 3]"""
dqResults = EvaluateDataQuality.apply(frame=AmazonS3_node1, ruleset=ruleset, publishing_options={"dataQualityEvaluationContext": "legislatorsAreas", "enableDataQualityCloudWatchMetrics": True, "enableDataQualityResultsPublishing": True, "resultsS3Prefix": "amzn-s3-demo-bucket1"})
print("SCHEMA", dqResults.toDF().schema.simpleString())
for row in dqResults.toDF().collect():
    print("OUTCOME", json.dumps(row.asDict()))
EvaluateDataQuality_node2 = EvaluateDataQuality().process_rows(frame=AmazonS3_node1, ruleset=ruleset, publishing_options={"dataQualityEvaluationContext": "EvaluateDataQuality_node2", "enableDataQualityCloudWatchMetrics": True, "enableDataQualityResultsPublishing": True}, additional_options={"performanceTuning.caching":"CACHE_NOTHING"})
assert EvaluateDataQuality_node2[EvaluateDataQuality.DATA_QUALITY_RULE_OUTCOMES_KEY].filter(lambda x: x["Outcome"] == "Failed").count() == 0, "The job failed due to failing DQ rules for node: AmazonS3_node1"
job.commit()
