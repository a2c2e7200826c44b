# The job script of AWS's "getting started with crawlers and jobs" SDK scenario
# (awsdocs/aws-doc-sdk-examples, python/example_code/glue/flight_etl_job_script.py,
# Apache-2.0), its catalog table read from the same flight CSV through S3: ApplyMapping
# renames and casts, and the JSON output goes to the bucket root, where the scenario lists
# the job's objects with Prefix="run-". `source` and `output_bucket_url` are job parameters.
# Runs in tests/integration/test_glue_public_scripts.py.
import sys

from awsglue.context import GlueContext
from awsglue.job import Job
from awsglue.transforms import *
from awsglue.utils import getResolvedOptions
from pyspark.context import SparkContext

args = getResolvedOptions(
    sys.argv, [
        "JOB_NAME", "source", "output_bucket_url"])
sc = SparkContext()
glueContext = GlueContext(sc)
spark = glueContext.spark_session
job = Job(glueContext)
job.init(args["JOB_NAME"], args)

S3FlightData_node1 = glueContext.create_dynamic_frame.from_options(
    connection_type="s3", connection_options={"paths": [args["source"]]}, format="csv",
    format_options={"withHeader": True}, transformation_ctx="S3FlightData_node1",
)

ApplyMapping_node2 = ApplyMapping.apply(
    frame=S3FlightData_node1,
    mappings=[
        ("year", "string", "year", "long"),
        ("month", "string", "month", "tinyint"),
        ("day_of_month", "string", "day", "tinyint"),
        ("fl_date", "string", "flight_date", "string"),
        ("carrier", "string", "carrier", "string"),
        ("fl_num", "string", "flight_num", "long"),
        ("origin_city_name", "string", "origin_city_name", "string"),
        ("dest_city_name", "string", "dest_city_name", "string"),
    ],
    transformation_ctx="ApplyMapping_node2",
)

RevisedFlightData_node3 = glueContext.write_dynamic_frame.from_options(
    frame=ApplyMapping_node2,
    connection_type="s3",
    format="json",
    connection_options={
        "path": args["output_bucket_url"],
        "partitionKeys": []},
    transformation_ctx="RevisedFlightData_node3",
)

job.commit()
