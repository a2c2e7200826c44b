# A hand-written Glue job in the style of AWS's examples: JSON in, resolveChoice, a Python
# Map over records, DropNullFields, select_fields, rename_field, CSV out; getResolvedOptions
# (JOB_RUN_ID is reserved: always resolved, and naming it raises on Glue 5); the DataFrame
# API mixed in (fromDF/toDF).
import sys
from awsglue.context import GlueContext
from awsglue.dynamicframe import DynamicFrame
from awsglue.job import Job
from awsglue.transforms import DropNullFields, Map, SelectFields
from awsglue.utils import getResolvedOptions
from pyspark.context import SparkContext
from pyspark.sql import functions as F

args = getResolvedOptions(sys.argv, ["JOB_NAME", "source", "target"])
glue = GlueContext(SparkContext.getOrCreate())
job = Job(glue)
job.init(args["JOB_NAME"], args)

events = glue.create_dynamic_frame.from_options(
    "s3", {"paths": [args["source"]]}, format="json", transformation_ctx="events")
events = events.resolveChoice(specs=[("qty", "cast:long")])


def tidy(rec):
    rec["sku"] = rec["sku"].strip().upper()
    rec["total"] = rec["qty"] * rec["price"]
    return rec


priced = Map.apply(frame=events, f=tidy, transformation_ctx="priced")
priced = DropNullFields.apply(frame=priced)
slim = SelectFields.apply(frame=priced, paths=["sku", "qty", "total"]).rename_field("qty", "quantity")
df = slim.toDF().withColumn("run", F.lit(args["JOB_RUN_ID"]))
out = DynamicFrame.fromDF(df, glue, "out")
glue.write_dynamic_frame.from_options(
    frame=out, connection_type="s3", connection_options={"path": args["target"]},
    format="csv", format_options={"writeHeader": True})
print("rows written:", out.count())
job.commit()
