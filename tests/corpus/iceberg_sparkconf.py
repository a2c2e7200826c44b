# In the style of AWS's "Using the Iceberg framework in AWS Glue" (Enabling the Iceberg
# framework): the script configures Spark itself with a SparkConf instead of --conf.
# Written for cdclab: the catalog is a Hadoop one in a given warehouse (the page's is
# GlueCatalog), so the run needs no catalog service; a spark.sql.* setting rides along.
import sys
from pyspark.conf import SparkConf
from pyspark.context import SparkContext
from awsglue.context import GlueContext
from awsglue.job import Job
from awsglue.utils import getResolvedOptions

args = getResolvedOptions(sys.argv, ["JOB_NAME", "warehouse", "target"])

conf = SparkConf()
conf.set("spark.sql.catalog.my_catalog", "org.apache.iceberg.spark.SparkCatalog")
conf.set("spark.sql.catalog.my_catalog.warehouse", args["warehouse"])
conf.set("spark.sql.catalog.my_catalog.type", "hadoop")
conf.set("spark.sql.extensions", "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions")
conf.set("spark.sql.session.timeZone", "Asia/Tokyo")
conf.setAppName("iceberg-sparkconf")

sc = SparkContext(conf=conf)
glueContext = GlueContext(sc)
spark = glueContext.spark_session
job = Job(glueContext)
job.init(args["JOB_NAME"], args)

spark.sql("CREATE TABLE IF NOT EXISTS my_catalog.db.events (id bigint, at timestamp) USING iceberg")
spark.sql("INSERT INTO my_catalog.db.events VALUES (1, TIMESTAMP '2024-01-02 03:04:05')")
spark.sql("SELECT id, CAST(at AS string) AS at, current_timezone() AS tz FROM my_catalog.db.events") \
    .write.mode("overwrite").json(args["target"])
job.commit()
