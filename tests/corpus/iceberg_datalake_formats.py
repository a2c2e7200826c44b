# Written for cdclab in the style of AWS's "Using the Iceberg framework in AWS Glue"
# (https://docs.aws.amazon.com/glue/latest/dg/aws-glue-programming-etl-format-iceberg.html):
# the job runs with `--datalake-formats iceberg` and the page's `--conf` string for the
# `glue_catalog` Spark catalog, then follows the page's examples: "Write an Iceberg table
# to Amazon S3 and register it to the AWS Glue Data Catalog" (CREATE TABLE ... USING iceberg
# AS SELECT), "Insert a DataFrame into an Iceberg table ... using the AWS Glue Data Catalog"
# (write_data_frame.from_catalog), "Read an Iceberg table ... using the AWS Glue Data
# Catalog" (create_data_frame.from_catalog) and "Read from an Iceberg table using Spark".
# The test's `--conf` makes glue_catalog a Hadoop catalog in a local warehouse (the page's
# is GlueCatalog), so no catalog service is needed; the test registers the table in the
# local Data Catalog as GlueCatalog would. Runs in tests/integration/test_glue_corpus_more.py.
import sys
from awsglue.context import GlueContext
from awsglue.job import Job
from awsglue.utils import getResolvedOptions
from pyspark.context import SparkContext

args = getResolvedOptions(sys.argv, ['JOB_NAME', 'source', 'database', 'table_name', 'target'])
sc = SparkContext()
glueContext = GlueContext(sc)
spark = glueContext.spark_session
job = Job(glueContext)
job.init(args['JOB_NAME'], args)
database = args['database']
table = args['table_name']

def read(batch):
    return glueContext.create_dynamic_frame.from_options(
        connection_type="s3",
        connection_options={"paths": [args['source'] + "/" + batch]},
        format="json").toDF().selectExpr("CAST(id AS bigint) AS id", "item",
                                         "CAST(amount AS double) AS amount")

# Write an Iceberg table to Amazon S3 and register it to the AWS Glue Data Catalog
dataFrame = read("first")
dataFrame.createOrReplaceTempView(f"tmp_{table}")
query = f"""
CREATE TABLE glue_catalog.{database}.{table}
USING iceberg
TBLPROPERTIES ("format-version"="2")
AS SELECT * FROM tmp_{table}
"""
spark.sql(query)

# Insert a DataFrame into an Iceberg table using the AWS Glue Data Catalog
glueContext.write_data_frame.from_catalog(
    frame=read("second"),
    database=database,
    table_name=table,
)

# Read an Iceberg table using the AWS Glue Data Catalog
df = glueContext.create_data_frame.from_catalog(
    database=database,
    table_name=table,
)
df.write.mode("overwrite").json(args['target'] + "/catalog")

# Read from an Iceberg table using Spark
totals = spark.read.format("iceberg").load(f"glue_catalog.{database}.{table}") \
    .groupBy("item").sum("amount").withColumnRenamed("sum(amount)", "total")
totals.write.mode("overwrite").json(args['target'] + "/totals")
snapshots = spark.sql(f"SELECT count(*) AS n FROM glue_catalog.{database}.{table}.snapshots")
print("Snapshots: ", snapshots.collect()[0]["n"])
job.commit()
