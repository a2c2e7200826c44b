# In the style of the script Glue Studio generates for an Amazon S3 target with "Data Catalog
# update options: Create a table in the Data Catalog and on subsequent runs, update the
# schema and add new partitions" (getSink with enableUpdateCatalog, updateBehavior,
# partitionKeys, then setCatalogInfo). Written for cdclab; the update behaviour is a job
# argument here so one script covers UPDATE_IN_DATABASE and "Keep existing schema" (LOG).
import sys
from awsglue.transforms import *
from awsglue.utils import getResolvedOptions
from pyspark.context import SparkContext
from awsglue.context import GlueContext
from awsglue.job import Job

args = getResolvedOptions(sys.argv, ["JOB_NAME", "source", "target", "database", "table",
                                     "update_behavior"])
sc = SparkContext()
glueContext = GlueContext(sc)
spark = glueContext.spark_session
job = Job(glueContext)
job.init(args["JOB_NAME"], args)

# Script generated for node Amazon S3
AmazonS3_node1700000000001 = glueContext.create_dynamic_frame.from_options(
    format_options={"quoteChar": '"', "withHeader": True, "separator": ","},
    connection_type="s3",
    format="csv",
    connection_options={"paths": [args["source"]], "recurse": True},
    transformation_ctx="AmazonS3_node1700000000001",
)

# Script generated for node Change Schema
ChangeSchema_node1700000000002 = ApplyMapping.apply(
    frame=AmazonS3_node1700000000001,
    mappings=[
        ("order_id", "string", "order_id", "long"),
        ("customer", "string", "customer", "string"),
        ("amount", "string", "amount", "double"),
        ("country", "string", "country", "string"),
    ],
    transformation_ctx="ChangeSchema_node1700000000002",
)

# Script generated for node Amazon S3
AmazonS3_node1700000000003 = glueContext.getSink(
    path=args["target"],
    connection_type="s3",
    updateBehavior=args["update_behavior"],
    partitionKeys=["country"],
    enableUpdateCatalog=True,
    transformation_ctx="AmazonS3_node1700000000003",
)
AmazonS3_node1700000000003.setCatalogInfo(
    catalogDatabase=args["database"], catalogTableName=args["table"]
)
AmazonS3_node1700000000003.setFormat("json")
AmazonS3_node1700000000003.writeFrame(ChangeSchema_node1700000000002)
job.commit()
