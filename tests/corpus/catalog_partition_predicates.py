# Written for cdclab in the style of AWS's "Managing partitions for ETL output in AWS Glue"
# (https://docs.aws.amazon.com/glue/latest/dg/aws-glue-programming-etl-partitions.html):
# a crawled, Hive-style partitioned table read through from_catalog, once with a
# push_down_predicate ("Pre-filtering using pushdown predicates", the page's
# "(year=='2017' and month=='04')" form) and once with a catalogPartitionPredicate
# filtered by the Data Catalog plus a push_down_predicate ("Server-side filtering using
# catalog partition predicates"). The database, table and `target` are job parameters.
# Runs in tests/integration/test_glue_corpus_more.py.
import sys
from awsglue.transforms import *
from awsglue.utils import getResolvedOptions
from pyspark.context import SparkContext
from awsglue.context import GlueContext
from awsglue.job import Job

args = getResolvedOptions(sys.argv, ['JOB_NAME', 'database', 'table_name', 'target'])
sc = SparkContext()
glue_context = GlueContext(sc)
job = Job(glue_context)
job.init(args['JOB_NAME'], args)
dbname = args['database']
tablename = args['table_name']

# Only the partitions of April 2024 are listed and read
my_partition_predicate = "(year=='2024' and month=='04')"
april = glue_context.create_dynamic_frame.from_catalog(
    database = dbname,
    table_name = tablename,
    push_down_predicate = my_partition_predicate)
print("April count: ", april.count())
april.printSchema()

# The Data Catalog selects May's partitions; the pushdown predicate keeps days 10 and later
late_may = glue_context.create_dynamic_frame.from_catalog(
    database=dbname,
    table_name=tablename,
    transformation_ctx="datasource0",
    push_down_predicate="day>=10",
    additional_options={"catalogPartitionPredicate":"year='2024' and month='05'"}
)
print("Late May count: ", late_may.count())

for name, frame in [("april", april), ("late_may", late_may)]:
    glue_context.write_dynamic_frame.from_options(
        frame = frame,
        connection_type = "s3",
        connection_options = {"path": args['target'] + "/" + name},
        format = "json")
job.commit()
