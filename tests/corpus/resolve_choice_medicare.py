# In the style of AWS's resolve_choice sample (aws-samples/aws-glue-samples,
# examples/resolve_choice.py, MIT-0): the crawled `payments.medicare` CSV table, whose
# `provider id` (bigint in the catalog) holds a few strings, read with from_catalog; each
# of the four resolveChoice strategies (cast, project, make_cols, make_struct) and
# match_catalog; toDF and Spark SQL; one JSON folder per result. `target` is a job
# parameter, the database and table are the sample's. Runs in
# tests/integration/test_glue_choice_and_records.py.
import sys
from awsglue.utils import getResolvedOptions
from pyspark.context import SparkContext
from awsglue.context import GlueContext
from awsglue.dynamicframe import DynamicFrame

args = getResolvedOptions(sys.argv, ['JOB_NAME', 'target'])
glueContext = GlueContext(SparkContext.getOrCreate())
spark = glueContext.spark_session

db_name = "payments"
tbl_name = "medicare"

medicare_cast = args['target'] + "/medicare_json_cast"
medicare_project = args['target'] + "/medicare_json_project"
medicare_cols = args['target'] + "/medicare_json_make_cols"
medicare_struct = args['target'] + "/medicare_json_make_struct"
medicare_catalog = args['target'] + "/medicare_json_match_catalog"
medicare_sql = args['target'] + "/medicare_json_sql"

medicare_dyf = glueContext.create_dynamic_frame.from_catalog(database = db_name, table_name = tbl_name)
medicare_dyf.printSchema()

medicare_res_cast = medicare_dyf.resolveChoice(specs = [('provider id','cast:long')])
medicare_res_project = medicare_dyf.resolveChoice(specs = [('provider id','project:long')])
medicare_res_make_cols = medicare_dyf.resolveChoice(specs = [('provider id','make_cols')])
medicare_res_make_struct = medicare_dyf.resolveChoice(specs = [('provider id','make_struct')])
medicare_res_catalog = medicare_dyf.resolveChoice(specs = [('provider id','match_catalog')], database = db_name, table_name = tbl_name)
for frame in (medicare_res_cast, medicare_res_project, medicare_res_make_cols, medicare_res_make_struct):
    frame.printSchema()

medicare_df = medicare_dyf.toDF()
medicare_df.createOrReplaceTempView("medicareTable")
medicare_sql_df = spark.sql("SELECT * FROM medicareTable WHERE `total discharges` > 30")
medicare_sql_dyf = DynamicFrame.fromDF(medicare_sql_df, glueContext, "medicare_sql_dyf")

glueContext.write_dynamic_frame.from_options(frame = medicare_res_cast, connection_type = "s3", connection_options = {"path": medicare_cast}, format = "json")
glueContext.write_dynamic_frame.from_options(frame = medicare_res_project, connection_type = "s3", connection_options = {"path": medicare_project}, format = "json")
glueContext.write_dynamic_frame.from_options(frame = medicare_res_make_cols, connection_type = "s3", connection_options = {"path": medicare_cols}, format = "json")
glueContext.write_dynamic_frame.from_options(frame = medicare_res_make_struct, connection_type = "s3", connection_options = {"path": medicare_struct}, format = "json")
glueContext.write_dynamic_frame.from_options(frame = medicare_res_catalog, connection_type = "s3", connection_options = {"path": medicare_catalog}, format = "json")
glueContext.write_dynamic_frame.from_options(frame = medicare_sql_dyf, connection_type = "s3", connection_options = {"path": medicare_sql}, format = "json")
