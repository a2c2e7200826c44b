"""The awsglue stand-in, bookmarks and the local Data Catalog API (no Spark, no servers)."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from awsglue.catalog_source import (
    CatalogReadError,
    SourceFile,
    csv_options,
    is_data_file,
    list_files,
    unprocessed,
)
from awsglue.job import BookmarkSession
from awsglue.utils import GlueArgumentError, getResolvedOptions
from cdclab.catalog_tables import bronze_table_input, database_input
from glue_local import bookmarks
from glue_local.catalog_api import OPERATIONS
from glue_local.errors import GlueError


def test_resolves_glue_style_arguments() -> None:
    argv = ["script.py", "--JOB_NAME", "j", "--bronze_table=t", "--job-bookmark-option",
            "job-bookmark-enable", "--JOB_RUN_ID", "jr_1", "--unrelated", "x"]
    args = getResolvedOptions(argv, ["JOB_NAME", "bronze_table"])
    assert args["JOB_NAME"] == "j" and args["bronze_table"] == "t"
    assert args["job_bookmark_option"] == "job-bookmark-enable"
    assert "unrelated" not in args


def test_missing_argument_is_a_glue_argument_error_naming_it() -> None:
    with pytest.raises(GlueArgumentError, match="--silver_table"):
        getResolvedOptions(["s.py", "--JOB_NAME", "j"], ["JOB_NAME", "silver_table"])


def test_bad_bookmark_option_is_rejected() -> None:
    with pytest.raises(GlueArgumentError, match="job-bookmark-option"):
        getResolvedOptions(["s.py", "--job-bookmark-option", "on"], [])


def files(*specs: tuple[str, str]) -> list[SourceFile]:
    return [SourceFile(f"s3://b/{k}", k, etag, 10) for k, etag in specs]


def test_bookmark_reads_only_new_files_and_saves_only_at_commit(tmp_path) -> None:
    first = BookmarkSession(tmp_path, "job", bookmarks.ENABLE, "jr_1")
    assert first.select("ctx", files(("a", "1"))) == files(("a", "1"))
    # not committed yet: a second run would read it again
    assert bookmarks.processed_files(tmp_path, "job", "ctx") == {}
    first.commit()
    second = BookmarkSession(tmp_path, "job", bookmarks.ENABLE, "jr_2")
    assert second.select("ctx", files(("a", "1"), ("b", "1"))) == files(("b", "1"))
    # a rewritten object (new ETag) is read again
    assert unprocessed(files(("a", "2")), bookmarks.processed_files(tmp_path, "job", "ctx"))
    entry = bookmarks.get_bookmark(tmp_path, "job")
    assert entry["RunId"] == "jr_1" and "a" in json.loads(entry["JobBookmark"])["ctx"]["files"]


def test_pause_and_disable_never_save(tmp_path) -> None:
    for option in (bookmarks.PAUSE, bookmarks.DISABLE):
        s = BookmarkSession(tmp_path, "job", option, "r")
        s.select("ctx", files(("a", "1")))
        s.commit()
    assert bookmarks.processed_files(tmp_path, "job", "ctx") == {}


def test_reset_forgets_everything(tmp_path) -> None:
    bookmarks.commit(tmp_path, "job", "r1", {"ctx": {"a": {"etag": "1", "size": 10}}})
    bookmarks.reset_bookmark(tmp_path, "job")
    assert bookmarks.get_bookmark(tmp_path, "job")["Version"] == 0


def test_csv_options_follow_the_serde() -> None:
    table = {"Name": "t", **bronze_table_input()}
    opts = csv_options(table)
    assert opts["header"] == "true" and opts["sep"] == "," and opts["quote"] == '"'
    table["StorageDescriptor"]["SerdeInfo"]["SerializationLibrary"] = "x.JsonSerDe"
    with pytest.raises(CatalogReadError, match="JsonSerDe"):
        csv_options(table)


def test_listing_skips_hidden_files(tmp_path) -> None:
    (tmp_path / "LOAD00000001.csv").write_text("x")
    (tmp_path / "_SUCCESS").write_text("")
    (tmp_path / ".x.crc").write_text("")
    assert [f.key.rsplit("/", 1)[-1] for f in list_files(str(tmp_path))] == ["LOAD00000001.csv"]
    assert not is_data_file("dms/t/")


def test_catalog_api_round_trip_and_glue_errors(tmp_path) -> None:
    ctx = SimpleNamespace(state_dir=tmp_path)
    ops = OPERATIONS
    ops["CreateDatabase"](ctx, {"DatabaseInput": database_input()})
    with pytest.raises(GlueError) as e:
        ops["CreateDatabase"](ctx, {"DatabaseInput": database_input()})
    assert e.value.code == "AlreadyExistsException"
    ops["CreateTable"](ctx, {"DatabaseName": "airbnb", "TableInput": bronze_table_input()})
    table = ops["GetTable"](ctx, {"DatabaseName": "airbnb", "Name": "hosts_bronze"})["Table"]
    assert table["StorageDescriptor"]["Location"].startswith("s3://")
    updated = {**bronze_table_input(), "Description": "v2"}
    ops["UpdateTable"](ctx, {"DatabaseName": "airbnb", "TableInput": updated})
    [listed] = ops["GetTables"](ctx, {"DatabaseName": "AIRBNB"})["TableList"]
    assert listed["Description"] == "v2" and listed["CreateTime"] == table["CreateTime"]
    assert (tmp_path / "glue/catalog/airbnb/tables/hosts_bronze.json").exists()
    ops["DeleteTable"](ctx, {"DatabaseName": "airbnb", "Name": "hosts_bronze"})
    with pytest.raises(GlueError) as e:
        ops["GetTable"](ctx, {"DatabaseName": "airbnb", "Name": "hosts_bronze"})
    assert e.value.code == "EntityNotFoundException"
    assert [d["Name"] for d in ops["GetDatabases"](ctx, {})["DatabaseList"]] == ["airbnb"]
    ops["DeleteDatabase"](ctx, {"Name": "airbnb"})
    with pytest.raises(GlueError, match="EntityNotFoundException"):
        ops["GetDatabase"](ctx, {"Name": "airbnb"})


def test_session_conf_local_and_aws(tmp_path, monkeypatch) -> None:
    from glue_local import spark_session

    monkeypatch.setattr(spark_session.settings, "spark_jars", lambda: [tmp_path / "a.jar"])
    (tmp_path / "a.jar").write_text("")
    env = {"CDCLAB_STATE_DIR": str(tmp_path), "AWS_ENDPOINT_URL_S3": "http://127.0.0.1:9",
           "CDCLAB_CATALOG_URI": "http://127.0.0.1:8", "AWS_ACCESS_KEY_ID": "k",
           "AWS_SECRET_ACCESS_KEY": "s"}
    local = spark_session.session_conf(env, master="local[1]")
    assert local["spark.jars"] == str(tmp_path / "a.jar")
    assert local["spark.ui.enabled"] == "false" and local["spark.sql.shuffle.partitions"] == "2"
    assert local["spark.sql.catalog.job_catalog.uri"] == "http://127.0.0.1:8"
    assert local["spark.sql.warehouse.dir"].startswith(str(tmp_path))
    assert local["spark.driver.bindAddress"] == local["spark.driver.host"] == "127.0.0.1"
    cluster = spark_session.session_conf({**env, "CDCLAB_SPARK_MASTER": "spark://m:7077"})
    assert cluster["spark.master"] == "spark://m:7077" and "spark.driver.host" not in cluster
    aws = spark_session.session_conf({"CDCLAB_PROFILE": "aws", "CDCLAB_STATE_DIR": "/s"})
    assert aws["spark.sql.catalog.job_catalog.catalog-impl"].endswith("GlueCatalog")
    assert "spark.hadoop.fs.s3a.endpoint" not in aws
    (tmp_path / "a.jar").unlink()
    with pytest.raises(FileNotFoundError, match="a.jar"):
        spark_session.session_conf(env)
