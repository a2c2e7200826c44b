"""AWS's awsglue transforms unbox, unnest, split_fields, split_rows,
SelectFromCollection, apply_mapping to nested targets and join over cdclab's JVM side, and
Glue's output object names, on a real local Spark (no servers)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytestmark = pytest.mark.integration


@pytest.fixture()
def glue(spark):
    from awsglue.context import GlueContext

    return GlueContext(spark.sparkContext)


@pytest.fixture()
def people(glue, spark):
    from awsglue.dynamicframe import DynamicFrame

    df = spark.createDataFrame(
        [(1, "Sally", 36, ("NE", ("Omaha", "68102")), [("a", 1), ("b", 2)]),
         (2, "Bob", 70, ("CA", ("LA", None)), []),
         (3, "Cy", None, None, None)],
        "id int, name string, age int, "
        "address struct<state:string, city:struct<name:string, zip:string>>, "
        "items array<struct<k:string, n:int>>")
    return DynamicFrame.fromDF(df, glue, "people")


def test_unnest_flattens_structs_and_names_structs_in_arrays_val(people) -> None:
    from awsglue.transforms import UnnestFrame

    for flat in (people.unnest(), UnnestFrame.apply(frame=people)):
        df = flat.toDF()
        assert df.columns == ["id", "name", "age", "address.state", "address.city.name",
                              "address.city.zip", "items"]
        # AWS's Scala reference: structs inside arrays are named <array>.val.<field>
        assert df.schema["items"].dataType.simpleString() == \
            "array<struct<items.val.k:string,items.val.n:int>>"
        rows = {r["id"]: r.asDict() for r in df.collect()}
        assert rows[1]["address.city.name"] == "Omaha"
        assert [tuple(i) for i in rows[1]["items"]] == [("a", 1), ("b", 2)]
        assert rows[2]["items"] == [] and rows[3]["items"] is None
        assert rows[3]["address.state"] is None


def test_split_fields_keeps_paths_in_the_first_frame(people) -> None:
    from awsglue.transforms import SelectFromCollection, SplitFields

    dfc = people.split_fields(["name", "address.city.zip"], "picked", "rest")
    assert sorted(dfc.keys()) == ["picked", "rest"]
    picked, rest = dfc.select("picked").toDF(), dfc["rest"].toDF()
    assert picked.columns == ["name", "address"]
    assert picked.schema["address"].dataType.simpleString() == "struct<city:struct<zip:string>>"
    assert rest.columns == ["id", "age", "address", "items"]
    assert rest.schema["address"].dataType.simpleString() == \
        "struct<state:string,city:struct<name:string>>"
    assert sorted((r.name, r.address and r.address.city.zip) for r in picked.collect()) == [
        ("Bob", None), ("Cy", None), ("Sally", "68102")]
    assert people.count() == picked.count() == rest.count()

    named = SplitFields.apply(frame=people, paths=["id"])  # names from the frame's name
    assert sorted(named.keys()) == ["people1", "people2"]
    assert SelectFromCollection.apply(dfc=named, key="people1").toDF().columns == ["id"]
    assert SelectFromCollection.apply(dfc=named, key="nope").count() == 0  # AWS's Python


def test_split_rows_by_comparisons_all_of_which_must_hold(people) -> None:
    from awsglue.transforms import SplitRows

    dfc = people.split_rows({"age": {">": 30, "<": 65}}, "middle", "others")
    assert sorted(r.id for r in dfc["middle"].toDF().collect()) == [1]
    assert sorted(r.id for r in dfc["others"].toDF().collect()) == [2, 3]  # null age: others
    nested = SplitRows.apply(people, {"address.state": {"=": "CA"}, "id": {"!=": 5}})
    assert sorted(nested.keys()) == ["frame1", "frame2"]
    assert [r.id for r in nested["frame1"].toDF().collect()] == [2]
    assert sorted(r.id for r in nested["frame2"].toDF().collect()) == [1, 3]
    with pytest.raises(Exception, match="split_rows operator ~"):
        people.split_rows({"age": {"~": 1}}, "a", "b")


def test_unbox_parses_json_and_csv_strings_in_place(glue, spark) -> None:
    from awsglue.dynamicframe import DynamicFrame
    from awsglue.transforms import Unbox
    from pyspark.sql.types import IntegerType, StringType, StructField, StructType

    df = spark.createDataFrame(
        [("Sally", '{"state": "NE", "city": "Omaha"}', "1|x", ("7,8",)),
         ("Bob", None, "2|y", None)],
        "name string, address string, pair string, deep struct<csv:string>")
    frame = DynamicFrame.fromDF(df, glue, "boxed")

    unboxed = frame.unbox("address", "json").toDF()  # AWS's Scala reference example
    assert unboxed.schema["address"].dataType.simpleString() == \
        "struct<city:string,state:string>"
    assert [(r.name, r.address and r.address.city) for r in unboxed.collect()] == [
        ("Sally", "Omaha"), ("Bob", None)]

    schema = StructType([StructField("n", IntegerType()), StructField("s", StringType())])
    typed = Unbox.apply(frame=frame, path="pair", format="csv", separator="|",
                        withSchema=schema.json()).toDF()
    assert [tuple(r.pair) for r in typed.collect()] == [(1, "x"), (2, "y")]
    plain = frame.unbox("deep.csv", "csv").toDF()
    assert plain.schema["deep"].dataType.simpleString() == \
        "struct<csv:struct<col0:string,col1:string>>"
    assert [r.deep and tuple(r.deep.csv) for r in plain.collect()] == [("7", "8"), None]
    with pytest.raises(Exception, match="unbox option withHeader is not supported"):
        frame.unbox("pair", "csv", withHeader=True)
    assert json.loads(frame.unbox("address", "json").toDF().toJSON().first())["address"] == {
        "city": "Omaha", "state": "NE"}


def test_apply_mapping_nests_dotted_targets_and_names_conflicts(people) -> None:
    nested = people.apply_mapping([
        ("id", "int", "person.id", "long"), ("name", "string", "`person.name`", "string"),
        ("address.city.name", "string", "person.home.city", "string"),
        ("age", "int", "person.age", "string"), ("nope", "string", "person.nope", "string")])
    df = nested.toDF()
    assert df.schema.simpleString() == ("struct<person:struct<id:bigint,home:struct<city:"
                                        "string>,age:string>,person.name:string>")
    assert sorted((r.person.id, r["person.name"], r.person.home.city, r.person.age)
                  for r in df.collect()) == [(1, "Sally", "Omaha", "36"),
                                             (2, "Bob", "LA", "70"), (3, "Cy", None, None)]
    with pytest.raises(Exception, match="apply_mapping to both person and person.id"):
        people.apply_mapping([("id", "int", "person", "int"), ("id", "int", "person.id", "int")])
    with pytest.raises(Exception, match="apply_mapping to both a.b and fields inside it"):
        people.apply_mapping([("id", "int", "a.b.c", "int"), ("age", "int", "a.b", "int")])
    with pytest.raises(Exception, match="apply_mapping with two mappings to x.y"):
        people.apply_mapping([("id", "int", "x.y", "int"), ("age", "int", "x.y", "int")])


def test_join_keeps_shared_fields_as_glue_does(glue, spark) -> None:
    from awsglue.dynamicframe import DynamicFrame
    from awsglue.transforms import Join

    left = DynamicFrame.fromDF(spark.createDataFrame(
        [(1, "L1", "x"), (2, "L2", "y"), (3, "L3", None)], "id int, note string, only_l string"),
        glue, "left")
    right = DynamicFrame.fromDF(spark.createDataFrame(
        [(1, "R1", 10), (2, None, 20), (4, "R4", 40)], "id int, note string, only_r int"),
        glue, "right")
    df = Join.apply(left, right, "id", "id").toDF()
    # the first frame's copy of a key both name alike is `.id` (aws-glue-libs issue 76);
    # a shared non-key field is one field: the second frame's value, else the first's
    assert df.columns == [".id", "note", "only_l", "id", "only_r"]
    assert sorted(tuple(r) for r in df.collect()) == [(1, "R1", "x", 1, 10),
                                                      (2, "L2", "y", 2, 20)]
    assert Join.apply(left, right, "id", "id").drop_fields(["`.id`"]).toDF().columns == [
        "note", "only_l", "id", "only_r"]
    other = DynamicFrame.fromDF(spark.createDataFrame([(1, 5)], "key int, note int"), glue, "o")
    assert sorted(left.join(["id"], ["key"], other).toDF().columns) == [
        "id", "key", "note", "only_l"]  # int and string notes: Spark's common type
    structs = DynamicFrame.fromDF(spark.createDataFrame([(1, (1,))], "key int, note struct<a:int>"),
                                  glue, "s")
    with pytest.raises(Exception, match="join of frames sharing a field of different types"):
        left.join(["id"], ["key"], structs).toDF().collect()
    with pytest.raises(Exception, match="same number of keys"):
        left.join(["id", "note"], ["id"], right)


@settings(max_examples=60, deadline=None)
@given(split=st.integers(0, 99999), counter=st.integers(0, 999),
       codec=st.sampled_from(["snappy", "gz", "zstd", ""]), partitioned=st.booleans())
def test_glue_output_names(spark, split, counter, codec, partitioned) -> None:
    names = spark.sparkContext._jvm.org.cdclab.glue.GlueOutputNames
    sep = "." if partitioned else "-"  # Spark's suffix inside partition folders: ".c000"
    ext = f".{codec}" if codec else ""
    layout = "parquet-partitioned" if partitioned else "parquet"
    block = f"block-0-{counter}" if partitioned else f"block-{counter}"
    want_codec = {"": "uncompressed", "gz": "gzip"}.get(codec, codec)
    assert names.name("run-1", layout, split, f"{sep}c{counter:03d}{ext}.parquet") == \
        f"run-1-part-{block}-r-{split:05d}-{want_codec}.parquet"
    text = names.name("run-1", "text", split, f"{sep}c{counter:03d}.csv{ext}")
    assert text == f"run-1-part-r-{split:05d}" + (f"-c{counter:03d}" if counter else "") + ext
    assert names.name("run-1", "", split, f"-c{counter:03d}.snappy.orc") == \
        f"run-1-part-r-{split:05d}" + (f"-c{counter:03d}" if counter else "") + ".snappy.orc"
