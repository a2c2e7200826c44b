"""AWS's awsglue transforms unbox, unnest, split_fields, split_rows and
SelectFromCollection over cdclab's JVM side, on a real local Spark (no servers)."""

from __future__ import annotations

import json

import pytest

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
