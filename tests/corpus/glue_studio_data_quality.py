# A Glue Studio visual job with data quality on (S3 CSV source -> Change Schema ->
# Evaluate Data Quality -> ruleOutcomes / rowLevelOutcomes -> S3 targets), written for
# cdclab in the style Glue Studio generates (node names, one-line calls, the
# process_rows options, SelectFromCollection keys as in public generated scripts); not
# copied from a real job. `source` and `target` are job parameters. Runs in
# tests/integration/test_glue_data_quality.py.
import sys
from awsglue.transforms import *
from awsglue.utils import getResolvedOptions
from pyspark.context import SparkContext
from awsglue.context import GlueContext
from awsglue.job import Job
from awsgluedq.transforms import EvaluateDataQuality

args = getResolvedOptions(sys.argv, ['JOB_NAME', 'source', 'target'])
sc = SparkContext()
glueContext = GlueContext(sc)
spark = glueContext.spark_session
job = Job(glueContext)
job.init(args['JOB_NAME'], args)

# Script generated for node Amazon S3
AmazonS3_node1732000000001 = glueContext.create_dynamic_frame.from_options(format_options={"quoteChar": "\"", "withHeader": True, "separator": ",", "optimizePerformance": False}, connection_type="s3", format="csv", connection_options={"paths": [args['source']], "recurse": True}, transformation_ctx="AmazonS3_node1732000000001")

# Script generated for node Change Schema
ChangeSchema_node1732000000002 = ApplyMapping.apply(frame=AmazonS3_node1732000000001, mappings=[("order_id", "string", "order_id", "int"), ("customer", "string", "customer", "string"), ("amount", "string", "amount", "double"), ("country", "string", "country", "string")], transformation_ctx="ChangeSchema_node1732000000002")

# Script generated for node Evaluate Data Quality
EvaluateDataQuality_node1732000000003_ruleset = """
    # Example rules: Completeness "colA" between 0.4 and 0.8, ColumnCount > 10
    Rules = [
        RowCount between 0 and 1000,
        IsComplete "order_id",
        IsUnique "order_id",
        ColumnValues "amount" > 0,
        ColumnValues "country" in ["DE", "FR"],
        ColumnLength "customer" <= 10,
        ColumnValues "amount" < 100 where "country = 'FR'",
        Mean "amount" < 100,
        CustomSql "select count(*) from primary where amount > 100" = 1,
        RowCount > 0 where "no_such_column > 1"
    ]
"""

EvaluateDataQuality_node1732000000003 = EvaluateDataQuality().process_rows(frame=ChangeSchema_node1732000000002, ruleset=EvaluateDataQuality_node1732000000003_ruleset, publishing_options={"dataQualityEvaluationContext": "EvaluateDataQuality_node1732000000003", "enableDataQualityCloudWatchMetrics": True, "enableDataQualityResultsPublishing": True}, additional_options={"observations.scope":"ALL","performanceTuning.caching":"CACHE_NOTHING"})

# Script generated for node ruleOutcomes
ruleOutcomes_node1732000000004 = SelectFromCollection.apply(dfc=EvaluateDataQuality_node1732000000003, key="ruleOutcomes", transformation_ctx="ruleOutcomes_node1732000000004")

# Script generated for node rowLevelOutcomes
rowLevelOutcomes_node1732000000005 = SelectFromCollection.apply(dfc=EvaluateDataQuality_node1732000000003, key="rowLevelOutcomes", transformation_ctx="rowLevelOutcomes_node1732000000005")

# Script generated for node Amazon S3
AmazonS3_node1732000000006 = glueContext.write_dynamic_frame.from_options(frame=ruleOutcomes_node1732000000004, connection_type="s3", format="json", connection_options={"path": args['target'] + "/rule_outcomes", "partitionKeys": []}, transformation_ctx="AmazonS3_node1732000000006")

# Script generated for node Amazon S3
AmazonS3_node1732000000007 = glueContext.write_dynamic_frame.from_options(frame=rowLevelOutcomes_node1732000000005, connection_type="s3", format="glueparquet", connection_options={"path": args['target'] + "/row_level", "partitionKeys": []}, format_options={"compression": "snappy"}, transformation_ctx="AmazonS3_node1732000000007")

job.commit()
