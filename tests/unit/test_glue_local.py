"""AWS's getResolvedOptions on the shipped job, the bookmark API side, the local Data
Catalog API and the Spark session conf (no Spark, no servers)."""

from __future__ import annotations

import ast
import json
from types import SimpleNamespace

import pytest
from awsglue.utils import GlueArgumentError, getResolvedOptions

from glue_local import bookmarks
from glue_local.catalog_api import OPERATIONS
from glue_local.errors import GlueError
from glue_local.runner import script_argv
from pipeline_contract import settings
from pipeline_contract.catalog_tables import database_input
from pipeline_contract.settings import load_pipeline
from pipeline_contract.table_specs import bronze_table_input
from tests.resources.specs import hosts_spec

JOBS = sorted((settings.REPO_ROOT / "jobs").glob("*.py"))


def resolved_option_lists(path) -> list[list[str]]:
    """The literal option lists a script passes to getResolvedOptions."""
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if (isinstance(node, ast.Call) and getattr(node.func, "id", None) == "getResolvedOptions"
                and len(node.args) == 2 and isinstance(node.args[1], ast.List)
                and all(isinstance(e, ast.Constant) for e in node.args[1].elts)):
            out.append([e.value for e in node.args[1].elts])
        # the job's optional_arg(name) calls getResolvedOptions(sys.argv, [name])
        if (isinstance(node, ast.Call) and getattr(node.func, "id", None) == "optional_arg"
                and node.args and isinstance(node.args[0], ast.Constant)):
            out.append([node.args[0].value])
    return out


@pytest.mark.parametrize("job", JOBS, ids=lambda p: p.name)
def test_shipped_jobs_parse_glue_argv_with_awss_parser(job) -> None:
    """AWS's parser reserves JOB_RUN_ID etc. and raises "conflicting option string" when a
    script names one; every call of the shipped job works on Glue's own argv."""
    lists = resolved_option_lists(job)
    assert lists, f"{job.name} never calls getResolvedOptions with a literal list"
    args = {f"--{n}": "x" for names in lists for n in names if n != "JOB_NAME"}
    argv = script_argv(str(job), "j", "jr_1", {**args, "--job-bookmark-option":
                                                "job-bookmark-enable"})
    for names in lists:
        resolved = getResolvedOptions(argv, names)
        assert resolved["JOB_RUN_ID"] == "jr_1"  # reserved: always resolved
        assert resolved["job_bookmark_option"] == "job-bookmark-enable"


def test_awss_parser_rejects_reserved_names_and_missing_arguments() -> None:
    with pytest.raises(Exception, match="conflicting option string"):
        getResolvedOptions(["s.py", "--JOB_RUN_ID", "r"], ["JOB_RUN_ID"])
    with pytest.raises(GlueArgumentError, match="--silver_table"):
        getResolvedOptions(["s.py", "--JOB_NAME", "j"], ["JOB_NAME", "silver_table"])


def state_with_history(tmp_path) -> None:
    contexts = {f"jr_{i}": {"ctx": {"cutoff_ms": i, "band": {}}} for i in (1, 2)}
    state = {**bookmarks.empty("job"), "version": 2, "run": 2, "run_id": "jr_2",
             "previous_run_id": "jr_1", "contexts": contexts["jr_2"],
             "history": [{"run_id": r, "contexts": c} for r, c in contexts.items()]}
    path = bookmarks.bookmark_path(tmp_path, "job")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(state))


def test_get_reset_rewind_and_delete_bookmarks(tmp_path) -> None:
    with pytest.raises(GlueError, match="Continuation for job job not found"):
        bookmarks.get_bookmark(tmp_path, "job")  # never committed: no bookmark
    state_with_history(tmp_path)
    entry = bookmarks.get_bookmark(tmp_path, "job")
    assert (entry["RunId"], entry["PreviousRunId"], entry["Run"]) == ("jr_2", "jr_1", 2)
    as_of_1 = bookmarks.get_bookmark(tmp_path, "job", "jr_1")
    assert as_of_1["RunId"] == "jr_1" and '"cutoff_ms": 1' in as_of_1["JobBookmark"]
    bookmarks.reset_bookmark(tmp_path, "job", "jr_1")  # rewind
    rewound = bookmarks.load(tmp_path, "job")
    assert rewound["contexts"]["ctx"]["cutoff_ms"] == 1 and len(rewound["history"]) == 1
    with pytest.raises(GlueError, match="EntityNotFoundException"):
        bookmarks.reset_bookmark(tmp_path, "job", "jr_9")
    bookmarks.reset_bookmark(tmp_path, "job")
    assert not bookmarks.bookmark_path(tmp_path, "job").exists()
    state_with_history(tmp_path)
    bookmarks.delete_bookmark(tmp_path, "job")
    assert not bookmarks.bookmark_path(tmp_path, "job").exists()


def test_catalog_api_round_trip_and_glue_errors(tmp_path) -> None:
    ctx = SimpleNamespace(state_dir=tmp_path)
    ops = OPERATIONS
    ops["CreateDatabase"](ctx, {"DatabaseInput": database_input(settings.load_pipeline())})
    with pytest.raises(GlueError) as e:
        ops["CreateDatabase"](ctx, {"DatabaseInput": database_input(settings.load_pipeline())})
    assert e.value.code == "AlreadyExistsException"
    bronze = bronze_table_input(hosts_spec())
    ops["CreateTable"](ctx, {"DatabaseName": "airbnb", "TableInput": bronze})
    table = ops["GetTable"](ctx, {"DatabaseName": "airbnb", "Name": "hosts_bronze"})["Table"]
    assert table["StorageDescriptor"]["Location"].startswith("s3://")
    updated = {**bronze, "Description": "v2"}
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
    from glue_local import glue_jvm, spark_session

    monkeypatch.setattr(spark_session.settings, "spark_jars", lambda: [tmp_path / "a.jar"])
    monkeypatch.setattr(glue_jvm, "jar_path", lambda: tmp_path / "glue.jar")
    (tmp_path / "a.jar").write_text("")
    (tmp_path / "glue.jar").write_text("")
    env = {"CDCLAB_STATE_DIR": str(tmp_path), "AWS_ENDPOINT_URL_S3": "http://127.0.0.1:9",
           "CDCLAB_CATALOG_URI": "http://127.0.0.1:8", "AWS_ACCESS_KEY_ID": "k",
           "AWS_SECRET_ACCESS_KEY": "s", "CDCLAB_CATALOG_TOKEN": "t0k3n"}
    lake = load_pipeline()
    local = spark_session.session_conf(env, spark_session.catalog_conf(env, lake),
                                       master="local[1]")
    # no secret in the launch conf (PySpark puts it on the JVM's command line)
    assert not {"s", "t0k3n"} & set(local.values())
    assert local["spark.jars"] == f"{tmp_path / 'a.jar'},{tmp_path / 'glue.jar'}"
    assert local["spark.cdclab.stateDir"] == str(tmp_path)
    assert local["spark.ui.enabled"] == "false" and local["spark.sql.shuffle.partitions"] == "1"
    assert local["spark.sql.catalog.job_catalog.uri"] == "http://127.0.0.1:8"
    assert local["spark.sql.warehouse.dir"].startswith(str(tmp_path))
    assert local["spark.driver.bindAddress"] == local["spark.driver.host"] == "127.0.0.1"
    # the JVM's tiered JIT unless asked for the quick one alone; a typo is named
    assert "TieredStopAtLevel" not in local["spark.driver.extraJavaOptions"]
    c1 = spark_session.session_conf({**env, "CDCLAB_DRIVER_JIT": "c1"}, {})
    assert c1["spark.driver.extraJavaOptions"].endswith(" -XX:TieredStopAtLevel=1")
    with pytest.raises(ValueError, match="CDCLAB_DRIVER_JIT='c2'"):
        spark_session.session_conf({**env, "CDCLAB_DRIVER_JIT": "c2"}, {})
    # the JVM's temp files and Spark's local dirs follow this process's TMPDIR (a
    # supervised service's is emptied at each start: a killed JVM's never are)
    import tempfile
    assert f"-Djava.io.tmpdir={tempfile.gettempdir()}" in local["spark.driver.extraJavaOptions"]
    assert local["spark.local.dir"] == tempfile.gettempdir()
    on_cluster = {**env, "CDCLAB_SPARK_MASTER": "spark://m:7077"}
    cluster = spark_session.session_conf(on_cluster,
                                         spark_session.catalog_conf(on_cluster, lake))
    assert cluster["spark.master"] == "spark://m:7077" and "spark.driver.host" not in cluster
    assert "spark.local.dir" not in cluster  # the workers keep their own
    # one task per core: those a local master names, a cluster's from CDCLAB_SPARK_CORES
    assert cluster["spark.sql.shuffle.partitions"] == cluster["spark.default.parallelism"] == "2"
    four = spark_session.session_conf({**on_cluster, "CDCLAB_SPARK_CORES": "4"}, {})
    assert four["spark.sql.shuffle.partitions"] == "4"
    with pytest.raises(ValueError, match="CDCLAB_SPARK_CORES='0'"):
        spark_session.session_conf({**on_cluster, "CDCLAB_SPARK_CORES": "0"}, {})
    one = spark_session.session_conf({**env, "CDCLAB_SPARK_MASTER": "local[1]"}, {})
    assert one["spark.sql.shuffle.partitions"] == one["spark.default.parallelism"] == "1"
    assert one["spark.driver.bindAddress"] == "127.0.0.1"
    on_aws = {"CDCLAB_PROFILE": "aws", "CDCLAB_STATE_DIR": "/s"}
    aws = spark_session.session_conf(on_aws, spark_session.catalog_conf(on_aws, lake))
    assert aws["spark.sql.catalog.job_catalog.catalog-impl"].endswith("GlueCatalog")
    assert "spark.hadoop.fs.s3a.endpoint" not in aws
    (tmp_path / "a.jar").unlink()
    with pytest.raises(FileNotFoundError, match="a.jar"):
        spark_session.session_conf(env, {})


@pytest.mark.parametrize(("master", "cores"), [
    ("local", 1), ("local[1]", 1), ("local[3]", 3), ("local[4,2]", 4), ("local[2, 3]", 2),
    ("local[*]", "usable"), ("spark://spark-master:7077", None),
    ("local-cluster[2,1,1024]", None), ("yarn", None)])
def test_a_local_master_names_its_cores_and_a_cluster_leaves_them_to_its_workers(
        master, cores) -> None:
    from glue_local import spark_session

    if cores == "usable":
        cores = spark_session.usable_cpus()
    assert spark_session.local_cores(master) == cores


def test_the_runner_refuses_a_wrong_warm_up_setting_at_start_and_skips_a_cluster(tmp_path):
    from glue_local import jobs_api
    from glue_local.runner import Runner
    from pipeline_contract import settings as s

    def runner(**env: str) -> Runner:
        return Runner(jobs_api.JobStore(tmp_path), env, tmp_path, s.load_pipeline(),
                      session_factory=lambda *a, **k: pytest.fail("no driver is built"))

    with pytest.raises(ValueError, match=s.ENV_DRIVER_WARMUP):
        runner(**{s.ENV_DRIVER_WARMUP: "soon"})
    for env in ({s.ENV_DRIVER_WARMUP: "0"},  # off
                {s.ENV_SPARK_MASTER: "spark://spark-master:7077"}):  # its workers' files
        runner(**env)._start_jit_warmup()  # returns without building the driver
