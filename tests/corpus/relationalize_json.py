# Flatten nested JSON into relational tables the way AWS's Relationalize examples do
# (us-legislators persons): Relationalize into a DynamicFrameCollection, then write every
# table it produced to S3 as Parquet, one folder per table.
import sys
from awsglue.context import GlueContext
from awsglue.job import Job
from awsglue.transforms import Relationalize
from awsglue.utils import getResolvedOptions
from pyspark.context import SparkContext

args = getResolvedOptions(sys.argv, ["JOB_NAME", "source", "target", "TempDir"])
glueContext = GlueContext(SparkContext.getOrCreate())
job = Job(glueContext)
job.init(args["JOB_NAME"], args)

persons = glueContext.create_dynamic_frame.from_options(
    connection_type="s3", connection_options={"paths": [args["source"]]}, format="json")
dfc = Relationalize.apply(frame=persons, staging_path=args["TempDir"], name="root",
                          transformation_ctx="relationalize")
for name in dfc.keys():
    print(name, dfc.select(name).count())
    glueContext.write_dynamic_frame.from_options(
        frame=dfc.select(name), connection_type="s3",
        connection_options={"path": args["target"] + "/" + name}, format="parquet")
job.commit()
