# A Glue Studio visual job as Glue Studio writes it (S3 CSV source -> Change Schema ->
# Filter -> S3 Parquet target, job bookmarks on), unmodified. `source` and `target` are
# job parameters. Runs in tests/integration/test_glue_corpus.py.
import sys
from awsglue.transforms import *
from awsglue.utils import getResolvedOptions
from pyspark.context import SparkContext
from awsglue.context import GlueContext
from awsglue.job import Job

args = getResolvedOptions(sys.argv, ['JOB_NAME', 'source', 'target'])
sc = SparkContext()
glueContext = GlueContext(sc)
spark = glueContext.spark_session
job = Job(glueContext)
job.init(args['JOB_NAME'], args)

# Script generated for node Amazon S3
AmazonS3_node1 = glueContext.create_dynamic_frame.from_options(format_options={"quoteChar": "\"", "withHeader": True, "separator": ",", "optimizePerformance": False}, connection_type="s3", format="csv", connection_options={"paths": [args['source']], "recurse": True}, transformation_ctx="AmazonS3_node1")

# Script generated for node Change Schema
ChangeSchema_node2 = ApplyMapping.apply(frame=AmazonS3_node1, mappings=[("order_id", "string", "order_id", "int"), ("customer", "string", "customer", "string"), ("amount", "string", "amount", "double"), ("country", "string", "country", "string")], transformation_ctx="ChangeSchema_node2")

# Script generated for node Filter
Filter_node3 = Filter.apply(frame=ChangeSchema_node2, f=lambda row: (row["amount"] > 10), transformation_ctx="Filter_node3")

# Script generated for node Amazon S3
AmazonS3_node4 = glueContext.write_dynamic_frame.from_options(frame=Filter_node3, connection_type="s3", format="glueparquet", connection_options={"path": args['target'], "partitionKeys": ["country"]}, format_options={"compression": "snappy"}, transformation_ctx="AmazonS3_node4")

job.commit()
