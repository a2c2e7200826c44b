"""Glue's special job parameters as the local runner reads them (pure)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from glue_local import run_args
from pipeline_contract.job_config import conf_argument

keys = st.from_regex(r"spark\.[a-z]{1,8}(\.[a-zA-Z0-9-]{1,8}){0,3}", fullmatch=True)
values = st.text(st.characters(blacklist_characters="\n\r", blacklist_categories=("Cs",)),
                 max_size=20).map(str.strip).filter(lambda v: " --conf " not in f" {v} ")


@given(st.dictionaries(keys, values, max_size=6))
def test_conf_argument_round_trips(conf):
    assert run_args.conf_pairs(conf_argument(conf)) == conf


def test_conf_pairs_reads_glue_style_and_rejects_non_pairs():
    assert run_args.conf_pairs("a=1=2 --conf b= ") == {"a": "1=2", "b": ""}
    assert run_args.conf_pairs("--conf a=1") == {"a": "1"}
    assert run_args.conf_pairs(None) == {}
    with pytest.raises(run_args.RunArgumentError, match="'novalue' is not key=value"):
        run_args.conf_pairs("a=1 --conf novalue")


def test_glue_catalogs_map_onto_the_local_catalog():
    aws = {
        "spark.sql.catalog.glue_catalog": "org.apache.iceberg.spark.SparkCatalog",
        "spark.sql.catalog.glue_catalog.catalog-impl": run_args.GLUE_CATALOG_IMPL,
        "spark.sql.catalog.glue_catalog.warehouse": "s3://prod/warehouse",
        "spark.sql.catalog.glue_catalog.io-impl": "org.apache.iceberg.aws.s3.S3FileIO",
        "spark.sql.catalog.other": "org.apache.iceberg.spark.SparkCatalog",
        "spark.sql.catalog.other.type": "glue",
        "spark.sql.catalog.hive.type": "hive",
    }
    local = {
        "spark.sql.catalog.lake": "org.apache.iceberg.spark.SparkCatalog",
        "spark.sql.catalog.lake.type": "rest",
        "spark.sql.catalog.lake.uri": "http://127.0.0.1:8181",
        "spark.sql.catalog.lake.warehouse": "s3://local/warehouse",
        "spark.hadoop.fs.s3a.endpoint": "http://127.0.0.1:9000",
    }
    assert run_args.glue_catalogs(aws) == ["glue_catalog", "other"]
    out, notes = run_args.localize_catalogs(aws, local, "lake")
    assert out["spark.sql.catalog.glue_catalog.type"] == "rest"
    assert "spark.sql.catalog.glue_catalog.catalog-impl" not in out
    assert out["spark.sql.catalog.glue_catalog.uri"] == "http://127.0.0.1:8181"
    assert out["spark.sql.catalog.glue_catalog.warehouse"] == "s3://prod/warehouse"  # kept
    assert out["spark.sql.catalog.other.warehouse"] == "s3://local/warehouse"  # none given
    assert out["spark.sql.catalog.hive.type"] == "hive"  # not a Glue catalog: untouched
    assert "spark.hadoop.fs.s3a.endpoint" not in out  # the driver has it already
    assert len(notes) == 2 and "GlueCatalog -> the local Iceberg REST catalog" in notes[0]


def test_what_one_machine_cannot_apply():
    assert run_args.process_level("spark.executor.memory")
    assert run_args.process_level("spark.driver.memory")
    assert run_args.process_level("spark.jars")
    assert not run_args.process_level("spark.driver.maxResultSize")
    assert not run_args.process_level("spark.sql.shuffle.partitions")
    assert run_args.datalake_formats("iceberg") == ["iceberg"]
    with pytest.raises(run_args.RunArgumentError, match="hudi,delta is not supported locally"):
        run_args.datalake_formats("iceberg,hudi,delta")
    assert run_args.worker_note({"WorkerType": "G.1X", "NumberOfWorkers": 10}) == (
        "worker settings (G.1X x 10) -> one local driver on this machine")
    assert run_args.worker_note({}) is None


def test_python_modules_and_their_cache_key():
    spec = run_args.modules_spec({"--additional-python-modules": "a==1, b",
                                  "--python-modules-installer-option": "--upgrade --pre"})
    assert spec == (["a==1", "b"], ["--upgrade", "--pre"])
    assert run_args.modules_spec({}) is None
    key = run_args.modules_key(*spec, "3.11")
    assert key == run_args.modules_key(*spec, "3.11") != run_args.modules_key(*spec, "3.12")
    assert run_args.csv_list(" a.py ,, s3://b/c.zip ") == ["a.py", "s3://b/c.zip"]


def test_the_catalog_token_goes_to_each_catalog_named():
    from pipeline_contract.job_config import catalog_token_conf

    env = {"CDCLAB_CATALOG_TOKEN": "t"}
    assert catalog_token_conf(env, ["a", "b"]) == {"spark.sql.catalog.a.token": "t",
                                                   "spark.sql.catalog.b.token": "t"}
    assert catalog_token_conf({}, ["a"]) == {}  # a hand-made stack without one
