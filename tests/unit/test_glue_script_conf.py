"""A script's own SparkConf (glue_local.script_conf): what reaches the run's session."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from glue_local import run_args, script_conf

LAKE = "lake"
CONTEXT = {
    "spark.master": "local[2]", "spark.app.name": "cdclab-glue",
    "spark.sql.extensions": "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions",
    "spark.sql.catalog.lake": "org.apache.iceberg.spark.SparkCatalog",
    "spark.sql.catalog.lake.type": "rest",
    "spark.sql.catalog.lake.uri": "http://127.0.0.1:8181",
    "spark.sql.catalog.lake.token": "t0k",
    "spark.sql.catalog.lake.warehouse": "s3://silver/warehouse",
}


def test_settings_the_script_did_not_make_are_left_out():
    defaults = {"spark.master": "local[2]", "spark.jars": "a.jar"}
    given_ = {**defaults, "spark.sql.session.timeZone": "UTC", "spark.jars": "b.jar"}
    assert script_conf.script_settings(given_, defaults) == {
        "spark.sql.session.timeZone": "UTC", "spark.jars": "b.jar"}


def test_aws_iceberg_page_settings_map_the_glue_catalog_to_the_local_one():
    # AWS's "Enabling the Iceberg framework" SparkConf, with GlueCatalog
    settings = {
        "spark.sql.extensions": CONTEXT["spark.sql.extensions"],
        "spark.sql.catalog.glue_catalog": "org.apache.iceberg.spark.SparkCatalog",
        "spark.sql.catalog.glue_catalog.warehouse": "s3://mine/wh",
        "spark.sql.catalog.glue_catalog.catalog-impl": run_args.GLUE_CATALOG_IMPL,
        "spark.sql.catalog.glue_catalog.io-impl": "org.apache.iceberg.aws.s3.S3FileIO",
        "spark.app.name": "mine", "spark.executor.memory": "4g",
    }
    out = script_conf.plan(settings, CONTEXT, LAKE)
    assert out.session == {
        "spark.sql.catalog.glue_catalog": "org.apache.iceberg.spark.SparkCatalog",
        "spark.sql.catalog.glue_catalog.warehouse": "s3://mine/wh",
        "spark.sql.catalog.glue_catalog.io-impl": "org.apache.iceberg.aws.s3.S3FileIO",
        "spark.sql.catalog.glue_catalog.type": "rest",
        "spark.sql.catalog.glue_catalog.uri": "http://127.0.0.1:8181",
        "spark.sql.catalog.glue_catalog.token": "t0k",
    }
    assert any("spark.app.name" in n for n in out.notes)
    assert any("spark.executor.memory" in n for n in out.notes)
    assert any("glue_catalog: GlueCatalog" in n for n in out.notes)


def test_extensions_the_driver_loads_need_nothing_and_others_go_to_the_session():
    out = script_conf.plan({"spark.sql.extensions": "x.Other"}, CONTEXT, LAKE)
    assert out.session == {"spark.sql.extensions": "x.Other"}  # set, then refused by Spark
    assert "--conf" in script_conf.refusal("spark.sql.extensions", "x.Other")


keys = st.sampled_from([*CONTEXT, "spark.sql.shuffle.partitions", "spark.serializer",
                        "spark.driver.memory", "spark.sql.catalog.x", "spark.jars"])


@given(st.dictionaries(keys, st.sampled_from(["1", "local[2]", "rest", "v"])))
def test_every_setting_is_applied_noted_or_already_the_drivers(settings):
    out = script_conf.plan(settings, CONTEXT, LAKE)
    for key, value in settings.items():
        noted = any(f"SparkConf {key} " in n for n in out.notes)
        assert (out.session.get(key) == value) or noted or CONTEXT.get(key) == value or (
            key == "spark.sql.extensions")
        assert not (noted and key in out.session)
        assert not (run_args.process_level(key) and key in out.session)
