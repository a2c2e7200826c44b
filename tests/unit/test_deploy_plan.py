"""The AWS deployment plan (pure) and its --dry-run rendering, without credentials."""

from __future__ import annotations

import copy
import dataclasses
import io
import json
import subprocess
import sys
import zipfile
from contextlib import redirect_stdout

import botocore.session
import pytest

from cdclab import deploy_cli
from deploy.lambda_package import build_zip, code_sha256
from deploy.options import ACCOUNT_PLACEHOLDER, DeployError, DeployOptions
from deploy.plan import LAMBDA_SOURCE, aws_pipeline, build_plan
from lambda_shim import object_gate
from pipeline_contract.job_config import glue_default_arguments
from pipeline_contract.settings import load_pipeline
from pipeline_contract.table_specs import bronze_table_input, for_lake
from tests.resources.specs import hosts_spec

P = load_pipeline()
FULL = DeployOptions(
    region="eu-west-1",
    account_id="111122223333",
    stack="lab",
    create_replication_instance=True,
    create_source_endpoint=True,
    source_host="db.internal",
    source_secret_arn="arn:aws:secretsmanager:eu-west-1:111122223333:secret:db-x",
)


def emitter_s3_settings(bucket: str, role_arn: str) -> dict:
    """What the emitter writes, spelled as DMS S3Settings straight from pipeline.toml [dms]."""
    d = P.dms
    return {
        "DataFormat": d.data_format,
        "AddColumnName": d.add_column_name,
        "IncludeOpForFullLoad": d.include_op_for_full_load,
        "TimestampColumnName": d.timestamp_column_name,
        "CsvDelimiter": d.csv_delimiter,
        "CsvRowDelimiter": d.csv_row_delimiter,
        "CsvNullValue": d.csv_null_value,
        "BucketFolder": d.bucket_folder,
        "BucketName": bucket,
        "Rfc4180": d.rfc4180,
        "CompressionType": d.compression_type.upper(),
        "CdcInsertsOnly": d.cdc_inserts_only,
        "CdcInsertsAndUpdates": d.cdc_inserts_and_updates,
        "UseTaskStartTimeForFullLoadTimestamp": (
            d.use_task_start_time_for_full_load_timestamp),
        "ServiceAccessRoleArn": role_arn,
        "DatePartitionEnabled": d.date_partition_enabled,
        "DatePartitionSequence": d.date_partition_sequence,
        "DatePartitionDelimiter": d.date_partition_delimiter,
    }


def test_bucket_names_are_global_and_everything_else_follows_pipeline_toml():
    plan = build_plan(P, FULL)
    buckets = [r.name for r in plan.of_kind("s3-bucket")]
    assert buckets == [f"lab-{b}-111122223333-eu-west-1" for b in ("bronze", "silver", "scripts")]
    for r in plan.of_kind("s3-bucket"):
        assert all(r.settings["PublicAccessBlock"].values())
        assert r.settings["SSEAlgorithm"] == "AES256"
    pa = plan.pipeline
    assert (pa.source, pa.dms, pa.glue_job) == (P.source, P.dms, P.glue_job)
    assert pa.lake.glue_database == P.lake.glue_database
    assert pa.bronze_location == f"s3://{buckets[0]}/{P.bronze_prefix}/"


def test_glue_job_runs_the_repo_script_with_the_shared_arguments():
    plan = build_plan(P, FULL)
    job = plan.get("glue-job", P.glue_job.name).settings
    scripts = plan.names.scripts_bucket
    assert job["Command"] == {
        "Name": "glueetl",
        "ScriptLocation": f"s3://{scripts}/{P.glue_job.script}",
        "PythonVersion": "3",
    }
    assert job["GlueVersion"] == "5.1"
    assert (job["WorkerType"], job["NumberOfWorkers"]) == ("G.1X", 2)
    assert job["ExecutionProperty"] == {"MaxConcurrentRuns": P.glue_job.max_concurrent_runs}
    pa = aws_pipeline(P, plan.names)
    assert job["DefaultArguments"] == glue_default_arguments(pa, temp_dir=f"s3://{scripts}/tmp/")
    args = job["DefaultArguments"]
    assert args["--datalake-formats"] == "iceberg"
    assert args["--job-bookmark-option"] == "job-bookmark-enable"
    assert "catalog-impl=org.apache.iceberg.aws.glue.GlueCatalog" in args["--conf"]
    assert f"warehouse=s3://{plan.names.silver_bucket}/warehouse/" in args["--conf"]
    obj = plan.of_kind("s3-object")[0].settings
    assert (obj["Bucket"], obj["Key"], obj["Source"]) == (
        scripts,
        P.glue_job.script,
        P.glue_job.script,
    )


def test_worker_options_override_pipeline_defaults():
    plan = build_plan(P, DeployOptions(region="us-east-1", worker_type="G.2X", workers=5))
    job = plan.get("glue-job", P.glue_job.name).settings
    assert (job["WorkerType"], job["NumberOfWorkers"]) == ("G.2X", 5)


def test_bronze_tables_are_the_specs_table_inputs_at_the_stack_location():
    plan = build_plan(P, FULL, [hosts_spec()])
    table = plan.of_kind("glue-table")[0].settings
    assert table["TableInput"] == bronze_table_input(
        for_lake(hosts_spec(), plan.names.bronze_bucket), P.dms.csv_delimiter)
    sd = table["TableInput"]["StorageDescriptor"]
    assert sd["Location"] == plan.pipeline.bronze_location  # the stack's own bucket
    [config] = [r for r in plan.of_kind("s3-object") if "Body" in r.settings]
    assert config.name == plan.pipeline.tables_config
    assert json.loads(config.settings["Body"])["tables"][0]["bronze_location"] == (
        plan.pipeline.bronze_location)
    assert not build_plan(P, FULL).of_kind("glue-table")  # no specs, no bronze tables
    assert sd["SerdeInfo"]["SerializationLibrary"].endswith("OpenCSVSerde")
    assert table["TableInput"]["Parameters"]["skip.header.line.count"] == "1"


def test_lambda_and_its_notification():
    plan = build_plan(P, FULL)
    fn = plan.of_kind("lambda-function")[0].settings
    assert (fn["Runtime"], fn["Handler"]) == ("python3.11", "lambda_function.lambda_handler")
    env = fn["Environment"]["Variables"]
    assert env["GLUE_JOB_NAME"] == P.glue_job.name
    assert env["QUARANTINE_PREFIX"] == P.lake.quarantine_prefix
    assert (env["DMS_ADD_COLUMN_NAME"], env["DMS_RFC4180"]) == ("true", "true")
    note = plan.of_kind("s3-notification")[0].settings
    assert note["Bucket"] == plan.names.bronze_bucket
    # every object of the prefix reaches the gate, strays included
    assert note["Prefix"] == P.bronze_prefix + "/" and "Suffix" not in note
    assert note["LambdaFunctionArn"] == plan.names.lambda_arn
    perm = plan.of_kind("lambda-permission")[0].settings
    assert perm["Principal"] == "s3.amazonaws.com"
    assert perm["SourceArn"] == f"arn:aws:s3:::{plan.names.bronze_bucket}"
    assert perm["SourceAccount"] == "111122223333"


def test_dms_target_settings_equal_the_emitters():
    plan = build_plan(P, FULL)
    target = plan.get("dms-endpoint", plan.names.target_endpoint).settings
    assert (target["EndpointType"], target["EngineName"]) == ("target", "s3")
    assert target["S3Settings"] == emitter_s3_settings(
        plan.names.bronze_bucket, plan.names.role_arn(plan.names.dms_s3_role)
    )


def test_source_endpoint_gets_the_source_settings_the_emitter_follows():
    plan = build_plan(P, FULL)
    source = plan.get("dms-endpoint", plan.names.source_endpoint).settings
    assert source["PostgreSQLSettings"]["TrimSpaceInChar"] is P.dms.trim_space_in_char
    assert source["ExtraConnectionAttributes"] == ""  # MapUnboundedNumericAsString off
    assert source["PostgreSQLSettings"]["MapBooleanAsBoolean"] is False  # AWS's default
    wide = dataclasses.replace(P, dms=dataclasses.replace(
        P.dms, map_unbounded_numeric_as_string=True, map_boolean_as_boolean=True))
    source = build_plan(wide, FULL).get("dms-endpoint", plan.names.source_endpoint).settings
    assert source["ExtraConnectionAttributes"] == "MapUnboundedNumericAsString=true"
    assert source["PostgreSQLSettings"]["MapBooleanAsBoolean"] is True
    model = botocore.session.get_session().get_service_model("dms")
    assert set(source["PostgreSQLSettings"]) <= set(
        model.shape_for("PostgreSQLSettings").members)


def test_replication_task_is_full_load_and_cdc_with_change_seq():
    plan = build_plan(P, FULL)
    task = plan.of_kind("dms-replication-task")[0].settings
    assert task["MigrationType"] == "full-load-and-cdc"
    # the LOB mode the emitter applies, explicit (S3: limited LOB mode only)
    assert json.loads(task["ReplicationTaskSettings"])["TargetMetadata"] == {
        "SupportLobs": True, "FullLobMode": False, "LimitedSizeLobMode": True,
        "LobMaxSize": P.dms.lob_max_size_kb}
    cdc = dataclasses.replace(P, dms=dataclasses.replace(P.dms, migration_type="cdc"))
    assert build_plan(cdc, FULL).of_kind("dms-replication-task")[0].settings[
        "MigrationType"] == "cdc"
    rules = json.loads(task["TableMappings"])["rules"]
    locator = {"schema-name": P.source.schema, "table-name": P.source.table}
    select = [r for r in rules if r["rule-type"] == "selection"]
    assert select == [{**select[0], "object-locator": locator, "rule-action": "include"}]
    add = [r for r in rules if r["rule-action"] == "add-column"]
    assert len(add) == 1 and add[0]["object-locator"] == locator
    assert (add[0]["value"], add[0]["expression"]) == (P.dms.change_seq_column, "$AR_H_CHANGE_SEQ")


def test_the_task_adds_the_keys_before_image_unless_turned_off():
    """dms.before_image_columns (default true): add-before-image-columns, BI_, pk-only
    (CHAP_Target.Kinesis "Using a before image transformation rule"), so a primary-key
    UPDATE carries the old key the job deletes; false: the rule-less task."""
    def rules(p) -> list[dict]:
        task = build_plan(p, FULL).of_kind("dms-replication-task")[0].settings
        return json.loads(task["TableMappings"])["rules"]

    assert P.dms.before_image_columns is True
    [bi] = [r for r in rules(P) if r["rule-action"] == "add-before-image-columns"]
    assert bi["rule-target"] == "column" and bi["object-locator"] == {
        "schema-name": P.source.schema, "table-name": P.source.table}
    assert bi["before-image-def"] == {"column-prefix": "BI_", "column-suffix": "",
                                      "column-filter": "pk-only"}
    off = dataclasses.replace(P, dms=dataclasses.replace(P.dms, before_image_columns=False))
    assert [r["rule-action"] for r in rules(off)] == ["include", "add-column"]


def test_replication_instance_and_source_only_when_asked():
    plan = build_plan(P, DeployOptions(region="us-east-1"))
    assert [r.name for r in plan.of_kind("dms-endpoint")] == [plan.names.target_endpoint]
    assert not plan.of_kind("dms-replication-instance")
    assert not plan.of_kind("dms-replication-task")
    assert any("replication task: not planned" in n for n in plan.notes)
    existing = build_plan(
        P,
        DeployOptions(
            region="us-east-1", replication_instance_arn="arn:ri", source_endpoint_arn="arn:src"
        ),
    )
    task = existing.of_kind("dms-replication-task")[0].settings
    assert task["ReplicationInstance"] == {"Arn": "arn:ri"}
    assert task["SourceEndpoint"] == {"Arn": "arn:src"}
    assert not existing.of_kind("dms-replication-instance")


@pytest.mark.parametrize(
    "opts",
    [
        DeployOptions(region="us-east-1", stack="Bad_Name"),
        DeployOptions(region="us-east-1", worker_type="X.9"),
        DeployOptions(region="us-east-1", workers=1),
        DeployOptions(region="us-east-1", create_source_endpoint=True, source_host="h"),
    ],
)
def test_invalid_options_name_the_flag(opts):
    with pytest.raises(DeployError, match="--"):
        build_plan(P, opts)


def test_lambda_zip_is_deterministic_and_holds_the_handler_at_the_root():
    a, b = build_zip(LAMBDA_SOURCE), build_zip(LAMBDA_SOURCE)
    assert a == b and code_sha256(a) == code_sha256(b)
    with zipfile.ZipFile(io.BytesIO(a)) as zf:
        assert zf.namelist() == ["lambda_function.py", "object_gate.py", "gate_base.py",
                                 "gate_csv.py", "gate_parquet.py", "eventbridge_events.py"]
        assert zf.read("lambda_function.py") == LAMBDA_SOURCE.read_bytes()


# (key, bytes) the extracted gate decides as the repository's does: CSV, gzip, Parquet
ZIP_GATE_CASES = [
    ("dms/t/a.csv", b"id,name\n1,x\n"),
    ("dms/t/a.csv", b"id,name\n1,x,y\n"),
    ("dms/t/a.csv.gz", b"not gzip"),
    ("dms/t/a.parquet", b"PAR1"),
    ("dms/t/a[1].csv", b""),
]
ZIP_PROBE = """
import json, sys
# the repository's packages (the editable install finds them): none ships in the zip
for name in ("lambda_shim", "cdclab", "deploy", "dms_emitter", "glue_local", "tests"):
    sys.modules[name] = None
sys.path.insert(0, sys.argv[1])
import lambda_function, object_gate
files = {m: sys.modules[m].__file__ for m in sys.modules
         if (getattr(sys.modules[m], "__file__", None) or "").startswith(sys.argv[1])}
verdicts = [getattr(object_gate.inspect(key, [data.encode("latin-1")]), "reason", None)
            for key, data in json.loads(sys.argv[2])]
print(json.dumps({"files": files, "verdicts": verdicts}))
"""


def test_lambda_zip_imports_as_deployed_without_the_repository(tmp_path):
    """Lambda puts the zip's root on sys.path; lambda_shim is not there. Every module of
    the zip imports from the extracted copy (-I: no PYTHONPATH, no script directory) and
    the gate decides as the repository's does."""
    with zipfile.ZipFile(io.BytesIO(build_zip(LAMBDA_SOURCE))) as zf:
        zf.extractall(tmp_path)
        names = zf.namelist()
    cases = [(key, data.decode("latin-1")) for key, data in ZIP_GATE_CASES]
    out = subprocess.run([sys.executable, "-I", "-c", ZIP_PROBE, str(tmp_path),
                          json.dumps(cases)], cwd=tmp_path, check=True, capture_output=True,
                         text=True).stdout
    probe = json.loads(out)
    assert probe["files"] == {name[:-3]: str(tmp_path / name) for name in names}
    expected = [getattr(object_gate.inspect(key, [data]), "reason", None)
                for key, data in ZIP_GATE_CASES]
    assert probe["verdicts"] == expected
    assert expected[0] is None and all(expected[1:])


def test_dry_run_prints_the_complete_plan_without_credentials(monkeypatch, tmp_path):
    for var in (
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_PROFILE",
        "AWS_DEFAULT_REGION",
        "AWS_REGION",
    ):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent/config")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/credentials")

    def no_aws_calls(*_a, **_k):
        raise AssertionError("--dry-run called AWS")

    monkeypatch.setattr("botocore.client.BaseClient._make_api_call", no_aws_calls)
    specs = tmp_path / "tables.json"  # what `cdclab tables --json` prints
    specs.write_text(json.dumps({"tables": [hosts_spec()]}))
    out = io.StringIO()
    with redirect_stdout(out):
        assert deploy_cli.main(["deploy", "--profile", "aws", "--dry-run",
                                "--tables-config", str(specs)]) == 0
    text = out.getvalue()
    plan = build_plan(P, DeployOptions(region="us-east-1"), [hosts_spec()])
    assert ACCOUNT_PLACEHOLDER in text and "Dry run: nothing was sent to AWS." in text
    for r in plan.resources:
        assert f"+ {r.kind} {r.name}" in text
    for needle in (
        "GlueVersion: 5.1",
        "--datalake-formats: iceberg",
        "job-bookmark-enable",
        'CsvRowDelimiter: "\\n"',
        'CsvNullValue: ""',
        "QUARANTINE_PREFIX",
        "OpenCSVSerde",
        "CREATE TABLE IF NOT EXISTS",
        "CDCLAB_PROFILE=aws",
    ):
        assert needle in text, needle


def test_destroy_dry_run_lists_every_optional_piece(capsys):
    assert (
        deploy_cli.main(["destroy", "--profile", "aws", "--dry-run", "--region", "us-east-1"]) == 0
    )
    text = capsys.readouterr().out
    assert "dms-replication-instance cdclab-replication" in text
    assert "dms-replication-task cdclab-full-load-and-cdc" in text


def test_parquet_and_date_partitions_are_sent_as_the_emitter_applies_them():
    from dataclasses import replace

    from deploy.dms import s3_target_settings
    dms = replace(P.dms, data_format="parquet", parquet_version="parquet-2-0",
                  parquet_timestamp_in_millisecond=True, enable_statistics=False,
                  row_group_length=5000, date_partition_enabled=True,
                  date_partition_sequence="YYYYMMDDHH", date_partition_delimiter="DASH",
                  date_partition_timezone="Asia/Seoul")
    sent = s3_target_settings(replace(P, dms=dms), bucket="b", role_arn="r")
    assert {k: sent[k] for k in sent if k.startswith(("Parquet", "Enable", "Encoding",
                                                      "RowGroup", "DataPage", "DictPage",
                                                      "DatePartition", "DataFormat"))} == {
        "DataFormat": "parquet", "ParquetVersion": "parquet-2-0",
        "ParquetTimestampInMillisecond": True, "EnableStatistics": False,
        "EncodingType": "rle-dictionary", "RowGroupLength": 5000,  # unset sizes: not sent
        "DatePartitionEnabled": True, "DatePartitionSequence": "YYYYMMDDHH",
        "DatePartitionDelimiter": "DASH", "DatePartitionTimezone": "Asia/Seoul"}
    # csv: no Parquet settings at all, and no time zone while it is unset
    csv = s3_target_settings(P, bucket="b", role_arn="r")
    assert not any(k.startswith(("Parquet", "Encoding", "DatePartitionTimezone")) for k in csv)


def test_file_sizes_and_batches_the_lab_chooses_are_sent_only_when_set():
    """Unset, the lab cuts LOAD files at 32 MB and CDC files after 1 s or 32000 KB, and DMS
    keeps its own defaults (MaxFileSize 1 GB, 60 s, 32000 KB); set, DMS gets the value."""
    from dataclasses import replace

    from deploy.dms import s3_target_settings
    asked = ("MaxFileSize", "CdcMaxBatchInterval", "CdcMinFileSize")
    unset = replace(P.dms, max_file_size_kb=None, cdc_max_batch_interval_seconds=None,
                    cdc_min_file_size_kb=None)
    sent = s3_target_settings(replace(P, dms=unset), bucket="b", role_arn="r")
    assert not any(k in sent for k in asked)
    chosen = replace(unset, max_file_size_kb=65536, cdc_max_batch_interval_seconds=30,
                     cdc_min_file_size_kb=1000)
    sent = s3_target_settings(replace(P, dms=chosen), bucket="b", role_arn="r")
    assert {k: sent[k] for k in asked} == {"MaxFileSize": 65536, "CdcMaxBatchInterval": 30,
                                           "CdcMinFileSize": 1000}


def test_the_local_and_the_deployed_job_are_one_definition():
    """One builder (pipeline_contract.job_config.job_definition): the deployed job differs
    from the local Glue API's only where AWS must (role, script and buckets in S3,
    TempDir, tags)."""
    from cdclab.services.glue_api import pipeline_job_definition

    local = pipeline_job_definition(P, role="r")
    deployed = copy.deepcopy(build_plan(P, FULL).get("glue-job", P.glue_job.name).settings)
    assert deployed.pop("Tags")
    assert deployed["DefaultArguments"].pop("--TempDir").startswith("s3://")
    for d in (local, deployed):
        d.pop("Role")
        d["Command"].pop("ScriptLocation")
        d["DefaultArguments"] = sorted(d["DefaultArguments"])
    assert local == deployed
