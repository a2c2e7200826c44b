"""AWS's own awsglue (AWSGlueDataplanePython) over cdclab's JVM side, on a real local Spark.

No servers (tests/resources/spark.py): S3 stands in as file:// paths. The Data Catalog
paths run in test_job.py against the local Glue API.
"""

from __future__ import annotations

import json
import os
import time

import pytest

pytestmark = pytest.mark.integration


@pytest.fixture()
def glue(spark):
    from awsglue.context import GlueContext

    return GlueContext(spark.sparkContext)


def write(path, text: str, mtime: float | None = None) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    if mtime is not None:
        os.utime(path, (mtime, mtime))


def run_job(glue, name: str, argv: list[str], read) -> list:
    """One Glue-style run: getResolvedOptions on a Glue argv, Job.init, read, commit."""
    from awsglue.job import Job
    from awsglue.utils import getResolvedOptions

    args = getResolvedOptions(["script.py", "--JOB_NAME", name, *argv], ["JOB_NAME"])
    job = Job(glue)
    job.init(args["JOB_NAME"], args)
    rows = read()
    job.commit()
    return rows


def test_it_is_awss_package_not_a_look_alike() -> None:
    from importlib.metadata import distribution

    import awsglue

    dist = distribution("AWSGlueDataplanePython")
    assert dist.version == "5.1.0"
    assert str(dist.locate_file("awsglue")) in awsglue.__file__


def test_from_options_csv_with_attach_filename_and_odd_names(glue, tmp_path) -> None:
    root = tmp_path / "in"
    write(root / "a [1] {x},y%20 é.csv", 'id,name\n1,"Fran ""The Host"""\n')
    write(root / "b.csv", "id,name\n2,plain\n")
    write(root / "_SUCCESS", "")
    df = glue.create_dynamic_frame.from_options(
        "s3", {"paths": [f"file://{root}"]}, format="csv",
        format_options={"withHeader": True, "attachFilename": "file"}).toDF()
    rows = sorted((r.id, r.name, r.file.rsplit("/", 1)[-1]) for r in df.collect())
    assert rows == [("1", 'Fran "The Host"', "a [1] {x},y%20 é.csv"), ("2", "plain", "b.csv")]
    assert df.schema["id"].dataType.typeName() == "string"  # from_options: strings, as Glue


def test_bookmarks_read_each_file_once_and_only_commit_saves(glue, tmp_path) -> None:
    root = tmp_path / "bm"
    old = time.time() - 3600
    write(root / "1.json", '{"v": 1}\n', old)

    def read():
        return glue.create_dynamic_frame.from_options(
            "s3", {"paths": [f"file://{root}"]}, format="json",
            transformation_ctx="src").toDF().collect()

    enable = ["--job-bookmark-option", "job-bookmark-enable"]
    assert [r.v for r in run_job(glue, "bm", enable, read)] == [1]
    # An object that appears with an old modification time counts as processed: Glue
    # assumes listings are complete maxBand (15 min) after a run starts.
    write(root / "late.json", '{"v": 0}\n', old + 10)
    write(root / "2.json", '{"v": 2}\n', time.time() - 60)
    assert [r.v for r in run_job(glue, "bm", enable, read)] == [2]
    assert run_job(glue, "bm", enable, read) == []
    # a rewritten object (new modification time) is read again, like Glue's S3 bookmarks
    write(root / "1.json", '{"v": 11}\n', time.time() - 5)
    assert [r.v for r in run_job(glue, "bm", enable, read)] == [11]
    # pause reads what is new but never saves; disable reads everything
    write(root / "3.json", '{"v": 3}\n', time.time() - 5)
    pause = ["--job-bookmark-option", "job-bookmark-pause"]
    assert [r.v for r in run_job(glue, "bm", pause, read)] == [3]
    assert [r.v for r in run_job(glue, "bm", pause, read)] == [3]
    assert sorted(r.v for r in run_job(glue, "bm", [], read)) == [0, 2, 3, 11]


def test_bookmark_pause_range_and_rewind(glue, spark, tmp_path) -> None:
    from glue_local import bookmarks

    root = tmp_path / "range"
    state = spark.conf.get("spark.cdclab.stateDir")

    def read():
        return sorted(r.v for r in glue.create_dynamic_frame.from_options(
            "s3", {"paths": [f"file://{root}"]}, format="json",
            transformation_ctx="src").toDF().collect())

    base = time.time() - 300  # inside the 15-minute band: tracked file by file
    for run, v in enumerate((1, 2, 3), start=1):
        write(root / f"{v}.json", json.dumps({"v": v}) + "\n", base + v)
        run_job(glue, "rng", ["--job-bookmark-option", "job-bookmark-enable",
                              "--JOB_RUN_ID", f"jr_{run}"], read)
    ranged = run_job(glue, "rng", ["--job-bookmark-option", "job-bookmark-pause",
                                   "--job-bookmark-from", "jr_1", "--job-bookmark-to", "jr_3"],
                     read)
    assert ranged == [2, 3]
    bookmarks.reset_bookmark(state, "rng", "jr_1")  # ResetJobBookmark(RunId=jr_1): rewind
    assert run_job(glue, "rng", ["--job-bookmark-option", "job-bookmark-enable"], read) == [2, 3]


def test_a_wall_clock_step_back_never_hides_new_files(glue, spark, tmp_path) -> None:
    """Locally objects carry this machine's wall clock. Here the last run happened while
    the clock was 2 h ahead (its cutoff, band and clock mark say so); it has been set back
    since, so a new object looks older than the cutoff. The bookmark measures the step
    against the boot clock and reads the span again: nothing is skipped, nothing the band
    remembers is read twice."""
    from glue_local import bookmarks

    root, ahead = tmp_path / "clock", 2 * 3600
    state_dir = spark.conf.get("spark.cdclab.stateDir")

    def read():
        return sorted(r.v for r in glue.create_dynamic_frame.from_options(
            "s3", {"paths": [f"file://{root}"]}, format="json",
            transformation_ctx="src").toDF().collect())

    enable = ["--job-bookmark-option", "job-bookmark-enable"]
    write(root / "a.json", '{"v": 1}\n', time.time() - 60)
    assert run_job(glue, "clk", enable, read) == [1]
    path = bookmarks.bookmark_path(state_dir, "clk")
    saved = json.loads(path.read_text())
    assert saved["clock"]["boot_id"]  # the mark this run left
    # as if that run and a.json had happened with the clock 2 h ahead
    saved["clock"]["wall_minus_boot_ms"] += ahead * 1000
    ctx = saved["contexts"]["src"]
    ctx["cutoff_ms"] += ahead * 1000
    ctx["band"] = {k: v + ahead * 1000 for k, v in ctx["band"].items()}
    path.write_text(json.dumps(saved))
    os.utime(root / "a.json", (time.time() + ahead - 60,) * 2)
    write(root / "b.json", '{"v": 2}\n', time.time() - 30)  # written after the step back
    assert run_job(glue, "clk", enable, read) == [2]
    assert run_job(glue, "clk", enable, read) == []  # the step is accounted for once


def test_transforms_apply_mapping_resolve_choice_union_and_schema(glue, spark) -> None:
    from awsglue.dynamicframe import DynamicFrame
    from awsglue.transforms import ApplyMapping, DropFields, RenameField, SelectFields

    df = spark.createDataFrame([("1", "x", "2.5"), ("2", "y", "bad")], ["id", "name", "score"])
    dyf = DynamicFrame.fromDF(df, glue, "t")
    mapped = ApplyMapping.apply(frame=dyf, mappings=[
        ("id", "string", "host_id", "long"), ("score", "string", "score", "double"),
        ("missing", "string", "gone", "string")])
    assert [(r.host_id, r.score) for r in mapped.toDF().collect()] == [(1, 2.5), (2, None)]
    assert [f.name for f in mapped.schema().fields] == ["host_id", "score"]
    assert mapped.schema().fields[0].dataType.typeName() == "long"
    cast = dyf.resolveChoice(specs=[("id", "cast:int")])
    assert cast.toDF().schema["id"].dataType.typeName() == "integer"
    renamed = RenameField.apply(dyf, "name", "host_name")
    assert SelectFields.apply(renamed, ["host_name"]).toDF().columns == ["host_name"]
    assert DropFields.apply(dyf, ["score"]).toDF().columns == ["id", "name"]
    assert dyf.union(dyf).count() == 4 and dyf.errorsCount() == 0
    assert dyf.repartition(2).getNumPartitions() == 2


def test_write_dynamic_frame_parquet_and_purge(glue, spark, tmp_path) -> None:
    from awsglue.dynamicframe import DynamicFrame

    out = tmp_path / "out"
    dyf = DynamicFrame.fromDF(spark.createDataFrame([(1, "a"), (2, "b")], ["id", "v"]), glue, "w")
    glue.write_dynamic_frame.from_options(
        dyf, "s3", {"path": f"file://{out}", "partitionKeys": ["v"]}, format="glueparquet")
    back = glue.create_dynamic_frame.from_options(
        "s3", {"paths": [f"file://{out}"], "recurse": True}, format="parquet").toDF()
    assert sorted(r.id for r in back.collect()) == [1, 2]
    glue.purge_s3_path(f"file://{out}", {"retentionPeriod": 0})
    assert not [p for p in out.rglob("*.parquet")]


def test_map_and_filter_run_python_functions_on_records(glue, spark) -> None:
    import datetime

    from awsglue.dynamicframe import DynamicFrame
    from awsglue.transforms import Filter, Map

    df = spark.createDataFrame(
        [(1, "ann", datetime.date(2024, 1, 2), 10.5, (7, "x")),
         (2, "bob", None, 20.0, None),
         (3, "cy", datetime.date(2024, 3, 4), None, (9, "z"))],
        "id int, name string, born date, score double, tag struct<n:int,s:string>")
    people = DynamicFrame.fromDF(df, glue, "people")

    kept = Filter.apply(frame=people, f=lambda r: r["id"] != 2 and r.tag.n > 0)
    assert kept.toDF().schema == df.schema  # a filter keeps the schema and the values
    assert sorted(kept.toDF().collect()) == sorted(r for r in df.collect() if r.id != 2)

    def enrich(r):
        r["name"] = r["name"].upper()
        r["year"] = r["born"].year if r["born"] else None  # a datetime.date in Python
        r["ratio"] = 1 / (r["id"] - 3)  # record 3: ZeroDivisionError -> an error record
        del r["score"]
        return r

    mapped = Map.apply(frame=people, f=enrich)
    out = mapped.toDF()
    assert out.columns == ["id", "name", "born", "tag", "year", "ratio"]
    assert [f.dataType.simpleString() for f in out.schema.fields] == [
        "int", "string", "date", "struct<n:int,s:string>", "bigint", "double"]
    assert sorted(out.collect()) == [
        (1, "ANN", datetime.date(2024, 1, 2), (7, "x"), 2024, -0.5),
        (2, "BOB", None, None, None, -1.0)]
    assert mapped.errorsCount() == 1
    [error] = mapped.errorsAsDynamicFrame().toDF().collect()
    assert error.errorMessage == "division by zero"
    assert json.loads(error.record) == {"id": 3, "name": "cy", "born": "2024-03-04T00:00",
                                        "score": None, "tag": {"n": 9, "s": "z"}}
    with pytest.raises(Exception, match="3 error records exceed stageThreshold 2"):
        people.map(lambda r: r["id"] // 0, stageThreshold=2)


def test_map_keeps_instants_map_columns_and_flags_non_records(glue, spark) -> None:

    from awsglue.dynamicframe import DynamicFrame

    spark.conf.set("spark.sql.session.timeZone", "America/New_York")  # not the JVM's zone
    try:
        df = spark.sql("SELECT 1 AS id, TIMESTAMP '2024-07-01 12:34:56.789' AS ts, "
                       "map('a', 1, 'b', 2) AS props")
        frame = DynamicFrame.fromDF(df, glue, "t")
        same = frame.map(lambda r: r).toDF()
        assert [(f.name, f.dataType) for f in same.schema] == [
            (f.name, f.dataType) for f in df.schema]  # a DynamicFrame has no NOT NULL
        assert same.collect() == df.collect()  # the same instant, the same map
        seen = frame.map(lambda r: {**r, "hour": r["ts"].hour}).toDF().collect()
        assert seen[0].hour == 12  # Python saw the session's wall-clock time
        odd = frame.mapPartitions(lambda rows: iter([1, *rows]))
        assert odd.count() == 1 and odd.errorsCount() == 1
        [error] = odd.errorsAsDynamicFrame().toDF().collect()
        assert "returned int where a record was expected" in error.errorMessage
    finally:
        spark.conf.unset("spark.sql.session.timeZone")


def test_unsupported_calls_fail_with_a_named_error(glue, spark) -> None:
    from awsglue.dynamicframe import DynamicFrame

    # PySpark re-raises the JVM's UnsupportedOperationException with its message
    dyf = DynamicFrame.fromDF(spark.createDataFrame([(1,)], ["id"]), glue, "u")
    with pytest.raises(Exception, match="cdclab: DynamicFrame.unnest_ddb_json is not supp"):
        dyf.unnest_ddb_json()
    with pytest.raises(Exception, match="cdclab: unbox format avro is not supported"):
        dyf.unbox("id", "avro")
    with pytest.raises(Exception, match="cdclab: connection_type dynamodb is not supported"):
        glue.create_dynamic_frame.from_options("dynamodb", {"paths": ["x"]})
