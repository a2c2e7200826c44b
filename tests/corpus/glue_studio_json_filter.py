# In the style of a Glue Studio visual job as Glue Studio writes it (S3 JSON source ->
# Filter -> S3 JSON target), the shape of the course job in issue 24: the Filter node's
# lambda reads a key some records do not have. `source` and `target` are job parameters.
# Runs in tests/integration/test_glue_choice_and_records.py.
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
AmazonS3_node1 = glueContext.create_dynamic_frame.from_options(format_options={"multiline": False}, connection_type="s3", format="json", connection_options={"paths": [args['source']], "recurse": True}, transformation_ctx="AmazonS3_node1")

# Script generated for node Filter
Filter_node2 = Filter.apply(frame=AmazonS3_node1, f=lambda row: (row["rating"] >= 4 and row["country"] != "DE"), transformation_ctx="Filter_node2")

# Script generated for node Amazon S3
AmazonS3_node3 = glueContext.write_dynamic_frame.from_options(frame=Filter_node2, connection_type="s3", format="json", connection_options={"path": args['target'], "partitionKeys": []}, transformation_ctx="AmazonS3_node3")

job.commit()
