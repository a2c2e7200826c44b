# AWS's join_and_relationalize sample (aws-samples/aws-glue-samples,
# examples/join_and_relationalize.py, MIT-0) with its catalog tables read from S3 JSON:
# the same drop_fields/rename_field and the same nested Join.apply of orgs, persons and
# memberships; then a join on a key both frames name alike (`customerid`), whose duplicate
# public Glue scripts drop as `.customerid`. `source` and `target` are job parameters.
# Runs in tests/integration/test_glue_public_scripts.py.
import sys
from awsglue.transforms import Join
from awsglue.utils import getResolvedOptions
from pyspark.context import SparkContext
from awsglue.context import GlueContext
from awsglue.job import Job

args = getResolvedOptions(sys.argv, ['JOB_NAME', 'source', 'target', 'TempDir'])
glueContext = GlueContext(SparkContext.getOrCreate())
job = Job(glueContext)
job.init(args['JOB_NAME'], args)


def read(name):
    return glueContext.create_dynamic_frame.from_options(
        connection_type="s3", connection_options={"paths": [args['source'] + "/" + name]},
        format="json")


persons = read("persons")
memberships = read("memberships")
orgs = read("organizations")

# Keep the fields we need and rename some.
orgs = orgs.drop_fields(['other_names', 'identifiers']).rename_field('id', 'org_id').rename_field('name', 'org_name')

# Join the frames to create history
l_history = Join.apply(orgs, Join.apply(persons, memberships, 'id', 'person_id'), 'org_id', 'organization_id').drop_fields(['person_id', 'org_id'])
print("Count: ", l_history.count())
l_history.printSchema()

glueContext.write_dynamic_frame.from_options(frame = l_history, connection_type = "s3", connection_options = {"path": args['target'] + "/legislator_history"}, format = "parquet")

dfc = l_history.relationalize("hist_root", args['TempDir'])
for df_name in dfc.keys():
    glueContext.write_dynamic_frame.from_options(frame = dfc.select(df_name), connection_type = "s3", connection_options = {"path": args['target'] + "/" + df_name}, format = "parquet")

salesDF = read("sales")
customerDF = read("customers")
customersalesDF = Join.apply(salesDF, customerDF, 'customerid', 'customerid')
customersalesDF.printSchema()
customersalesDF = customersalesDF.drop_fields(['`.customerid`'])
glueContext.write_dynamic_frame.from_options(customersalesDF, connection_type = "s3", connection_options = {"path": args['target'] + "/customersales"}, format = "json")
job.commit()
