# The seed blog's Glue job (RDS -> DMS -> S3 -> Lambda -> Glue MERGE INTO Iceberg), as
# written there, with its bugs fixed and nothing else changed in shape:
#   - the boilerplate it leaves out (getResolvedOptions, GlueContext, Job init/commit:
#     the blog turns job bookmarks on, which only advance at job.commit());
#   - dedup ordered by DMS's change_seq ($AR_H_CHANGE_SEQ), not last_updated_ts: rows of
#     one transaction share a commit timestamp, so "insert then delete" was a coin toss;
#   - the MERGE's missing commas; INSERT of the split location columns (it inserted the
#     dropped `location`); no INSERT of a row whose last change is a delete; a matched
#     'I' (re-insert after delete) updates;
#   - a row whose id is not an INT is dropped (it became a NULL-id silver row; the lab's
#     shipped job quarantines it instead);
#   - the target table is created if missing, and its name is a job parameter.
# The catalog comes from the blog's own --conf (GlueCatalog "job_catalog"); locally the
# runner points it at the Iceberg REST catalog.
import sys
from awsglue.context import GlueContext
from awsglue.job import Job
from awsglue.utils import getResolvedOptions
from pyspark.context import SparkContext
from pyspark.sql.functions import col, row_number, split
from pyspark.sql.types import DateType, TimestampType
from pyspark.sql.window import Window

args = getResolvedOptions(sys.argv, ["JOB_NAME", "silver_table"])
glueContext = GlueContext(SparkContext.getOrCreate())
spark = glueContext.spark_session
job = Job(glueContext)
job.init(args["JOB_NAME"], args)
target = f"job_catalog.airbnb.{args['silver_table']}"
spark.sql("CREATE NAMESPACE IF NOT EXISTS job_catalog.airbnb")

## --- Read Input Table ---
hostsIncrementalInputDF = glueContext.create_dynamic_frame.from_catalog(
    database="airbnb",
    table_name="hosts_bronze",
    transformation_ctx="hostsIncrementalInputDF"
).toDF()

## --- DEDUPLICATION ---
windowSpec = Window \
    .partitionBy(hostsIncrementalInputDF.id) \
    .orderBy(col("change_seq").desc())
rankedDF = hostsIncrementalInputDF \
    .withColumn("row_num", row_number().over(windowSpec))
deduplicatedDF = rankedDF \
    .filter(col("row_num") == 1) \
    .drop("row_num")

## --- CLEANING ---
deduplicatedDF = deduplicatedDF \
    .withColumn("id", col("id").cast("int")) \
    .filter(col("id").isNotNull()) \
    .withColumn("last_updated_ts", col("last_updated_ts").cast(TimestampType())) \
    .withColumn("since", col("since").cast(DateType())) \
    .withColumn("location_split", split(col("location"), r",\s*")) \
    .withColumn("location_city", col("location_split").getItem(0)) \
    .withColumn("location_country", col("location_split").getItem(1)) \
    .drop("location") \
    .drop("location_split")
deduplicatedDF.createOrReplaceTempView("deduplicated_view")

spark.sql(f"""
CREATE TABLE IF NOT EXISTS {target} (
  last_updated_ts TIMESTAMP, id INT, url STRING, name STRING, since DATE,
  location_city STRING, location_country STRING, response_time STRING, response_rate STRING
) USING iceberg
""")

## --- MERGE ---
merge_sql = f"""
MERGE INTO {target} AS target
USING deduplicated_view AS source
ON target.id = source.id
WHEN MATCHED AND source.op IN ('U', 'I') THEN UPDATE SET
target.last_updated_ts = source.last_updated_ts,
target.url = source.url,
target.name = source.name,
target.since = source.since,
target.location_city = source.location_city,
target.location_country = source.location_country,
target.response_time = source.response_time,
target.response_rate = source.response_rate
WHEN MATCHED AND source.op = 'D' THEN DELETE
WHEN NOT MATCHED AND source.op != 'D' THEN INSERT (last_updated_ts, id, url, name, since, location_city, location_country, response_time, response_rate)
VALUES (source.last_updated_ts, source.id, source.url, source.name, source.since, source.location_city, source.location_country, source.response_time, source.response_rate)
"""
spark.sql(merge_sql)
job.commit()
