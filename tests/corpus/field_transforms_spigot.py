# Written for cdclab in the style of the Python examples of AWS's DynamicFrame class
# reference (https://docs.aws.amazon.com/glue/latest/dg/aws-glue-api-crawler-pyspark-extensions-dynamic-frame.html:
# "Example: Use select_fields ...", "Example: Use split_fields ...", "Example: Use spigot
# to write sample fields from a DynamicFrame to Amazon S3") and of the DropNullFields class
# page, over the legislators' persons data, put in a job as AWS's join_and_relationalize
# sample (aws-samples/aws-glue-samples) is. `source`, `target` and `spigot` are job
# parameters. Runs in tests/integration/test_glue_corpus_more.py.
import sys
from awsglue.transforms import *
from awsglue.utils import getResolvedOptions
from pyspark.context import SparkContext
from awsglue.context import GlueContext
from awsglue.job import Job

args = getResolvedOptions(sys.argv, ['JOB_NAME', 'source', 'target', 'spigot'])

# Create GlueContext
sc = SparkContext.getOrCreate()
glueContext = GlueContext(sc)
job = Job(glueContext)
job.init(args['JOB_NAME'], args)

# Load the persons data into a DynamicFrame
persons = glueContext.create_dynamic_frame.from_options(
    connection_type="s3",
    connection_options={"paths": [args['source']]},
    format="json",
)
print("Count: ", persons.count())
persons.printSchema()

# Drop the fields that are null in every record
persons_not_null = DropNullFields.apply(frame=persons)

# Select the fields of interest
persons_selected = SelectFields.apply(
    frame=persons_not_null,
    paths=["id", "name", "family_name", "gender", "contact"],
)

# Split the names and e-mail addresses off into their own DynamicFrame
split_collection = SplitFields.apply(
    frame=persons_selected,
    paths=["id", "name", "contact.email"],
    name1="names",
    name2="details",
)
print("Frames: ", sorted(split_collection.keys()))
names = SelectFromCollection.apply(dfc=split_collection, key="names")
details = SelectFromCollection.apply(dfc=split_collection, key="details")
names.toDF().show()
details.toDF().show()

# Write samples of both frames to check the transformations
names = names.spigot(path=args['spigot'] + "/names", options={"topk": 2})
details = Spigot.apply(
    frame=details,
    path=args['spigot'] + "/details",
    options={"topk": 5, "prob": 0.5},
)

glueContext.write_dynamic_frame.from_options(
    frame=names,
    connection_type="s3",
    connection_options={"path": args['target'] + "/names"},
    format="json",
)
glueContext.write_dynamic_frame.from_options(
    frame=details,
    connection_type="s3",
    connection_options={"path": args['target'] + "/details"},
    format="json",
)
job.commit()
