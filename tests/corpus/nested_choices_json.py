# In the style of AWS's resolve_choice sample (aws-samples/aws-glue-samples,
# examples/resolve_choice.py, MIT-0) over JSON: a provider id that holds numbers and a few
# strings, at the top level (`pid`) and inside a struct (`provider.id`). Read twice: from
# multi-line JSON files with the Glue Studio spelling of the option
# (format_options={"multiline": True}), and from the catalog JSON table
# `payments.providers` (classification json) that declares both ids bigint. Each choice is
# resolved on its (dotted) path: cast, make_cols, project, match_catalog; one JSON folder
# per result. `source` and `target` are job parameters. Runs in
# tests/integration/test_glue_choice_and_records.py.
import sys
from awsglue.utils import getResolvedOptions
from pyspark.context import SparkContext
from awsglue.context import GlueContext

args = getResolvedOptions(sys.argv, ['JOB_NAME', 'source', 'target'])
glueContext = GlueContext(SparkContext.getOrCreate())


def write(frame, folder):
    glueContext.write_dynamic_frame.from_options(
        frame=frame, connection_type="s3", format="json",
        connection_options={"path": args['target'] + "/" + folder})


files_dyf = glueContext.create_dynamic_frame.from_options(
    connection_type="s3", format="json", format_options={"multiline": True},
    connection_options={"paths": [args['source']], "recurse": True})
files_dyf.printSchema()

write(files_dyf.resolveChoice(specs=[("provider.id", "cast:long"), ("pid", "cast:long")]),
      "files_cast")
cols_dyf = files_dyf.resolveChoice(specs=[("provider.id", "make_cols"), ("pid", "make_cols")])
cols_dyf.printSchema()
write(cols_dyf, "files_make_cols")
write(files_dyf.resolveChoice(specs=[("provider.id", "project:string"),
                                     ("pid", "project:long")]), "files_project")

catalog_dyf = glueContext.create_dynamic_frame.from_catalog(database="payments",
                                                            table_name="providers")
catalog_dyf.printSchema()
write(catalog_dyf.resolveChoice(specs=[("provider.id", "match_catalog"),
                                       ("pid", "match_catalog")],
                                database="payments", table_name="providers"),
      "catalog_match_catalog")
write(catalog_dyf.resolveChoice(choice="make_struct"), "catalog_make_struct")
