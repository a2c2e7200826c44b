# In the style of AWS's "Creating tables, updating schema, and adding new partitions in the
# Data Catalog from AWS Glue ETL jobs" (Updating Table Schema, Python):
# write_dynamic_frame_from_catalog with additional_options enableUpdateCatalog and
# updateBehavior UPDATE_IN_DATABASE, into an existing catalog table. Written for cdclab.
import sys
from awsglue.transforms import *
from awsglue.utils import getResolvedOptions
from pyspark.context import SparkContext
from awsglue.context import GlueContext
from awsglue.job import Job

args = getResolvedOptions(sys.argv, ["JOB_NAME", "source", "database", "table"])
glueContext = GlueContext(SparkContext.getOrCreate())
job = Job(glueContext)
job.init(args["JOB_NAME"], args)

last_transform = glueContext.create_dynamic_frame.from_options(
    connection_type="s3", connection_options={"paths": [args["source"]]}, format="json",
    transformation_ctx="source")

additionalOptions = {
    "enableUpdateCatalog": True,
    "updateBehavior": "UPDATE_IN_DATABASE"}

sink = glueContext.write_dynamic_frame_from_catalog(frame=last_transform, database=args["database"],
    table_name=args["table"], transformation_ctx="write_sink",
    additional_options=additionalOptions)
job.commit()
