"""The deployer against moto's in-process AWS (no account, no servers: plain unit tests)."""

from __future__ import annotations

import json

import boto3
import pytest
from moto import mock_aws

from cdclab import deploy_cli
from deploy.apply import apply_plan
from deploy.destroy import destroy_plan
from deploy.iam import wildcard_violations
from deploy.lambda_package import build_zip, code_sha256
from deploy.options import STACK_TAG, DeployError, DeployOptions
from deploy.plan import LAMBDA_SOURCE, build_plan, destroy_options
from pipeline_contract.settings import REPO_ROOT, load_pipeline
from tests.resources.specs import hosts_spec

P = load_pipeline()
REGION = "us-east-1"
SECRET = "arn:aws:secretsmanager:us-east-1:123456789012:secret:cdclab-db-AbCdEf"


def quiet(_line: str) -> None:
    pass


@pytest.fixture
def aws(monkeypatch):
    for var in (
        "AWS_PROFILE",
        "AWS_SESSION_TOKEN",
        "AWS_ENDPOINT_URL_GLUE",
        "AWS_ENDPOINT_URL_S3",
        "AWS_ENDPOINT_URL",
    ):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent/config")
    # moto runs the Lambda the S3 notification triggers in Docker (its config's
    # use_docker=False does not reach that path): on a machine with Docker that pulls
    # busybox and leaves a volume named after the zip's digest. No engine for moto.
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
    with mock_aws():
        session = boto3.Session(region_name=REGION)
        account = session.client("sts").get_caller_identity()["Account"]
        yield session, account


def full_plan(account: str, **kw):
    opts = DeployOptions(
        region=REGION,
        account_id=account,
        create_replication_instance=True,
        create_source_endpoint=True,
        source_host="db.internal",
        source_secret_arn=SECRET,
        **kw,
    )
    return build_plan(P, opts, [hosts_spec()])


def deploy(session, plan):
    return {(o.kind, o.name): o.action for o in apply_plan(plan, session, wait=False, echo=quiet)}


def test_deploy_creates_every_resource_with_its_settings(aws):
    session, account = aws
    plan = full_plan(account)
    assert set(deploy(session, plan).values()) == {"created"}
    n = plan.names
    s3 = session.client("s3")
    for bucket in (n.bronze_bucket, n.silver_bucket, n.scripts_bucket):
        pab = s3.get_public_access_block(Bucket=bucket)["PublicAccessBlockConfiguration"]
        assert all(pab.values()) and len(pab) == 4
        rules = s3.get_bucket_encryption(Bucket=bucket)["ServerSideEncryptionConfiguration"]
        assert rules["Rules"][0]["ApplyServerSideEncryptionByDefault"]["SSEAlgorithm"] == ("AES256")
        assert {"Key": STACK_TAG, "Value": "cdclab"} in s3.get_bucket_tagging(Bucket=bucket)[
            "TagSet"
        ]
    # the very file the local tests run
    body = s3.get_object(Bucket=n.scripts_bucket, Key=P.glue_job.script)["Body"].read()
    assert body == (REPO_ROOT / P.glue_job.script).read_bytes()

    glue = session.client("glue")
    job = glue.get_job(JobName=P.glue_job.name)["Job"]
    want = plan.get("glue-job", P.glue_job.name).settings
    assert job["DefaultArguments"] == want["DefaultArguments"]
    assert job["Command"]["ScriptLocation"] == f"s3://{n.scripts_bucket}/{P.glue_job.script}"
    assert (job["GlueVersion"], job["WorkerType"], job["NumberOfWorkers"]) == ("5.1", "G.1X", 2)
    assert job["Role"] == n.role_arn(n.glue_role)
    table = glue.get_table(DatabaseName=P.lake.glue_database, Name=P.lake.bronze_table)["Table"]
    sd = table["StorageDescriptor"]
    assert sd["SerdeInfo"]["SerializationLibrary"] == "org.apache.hadoop.hive.serde2.OpenCSVSerde"
    assert sd["Location"] == plan.pipeline.bronze_location
    assert table["Parameters"]["skip.header.line.count"] == "1"

    lam = session.client("lambda")
    fn = lam.get_function(FunctionName=n.lambda_function)
    cfg = fn["Configuration"]
    assert (cfg["Runtime"], cfg["Handler"]) == ("python3.11", "lambda_function.lambda_handler")
    assert cfg["Environment"]["Variables"]["GLUE_JOB_NAME"] == P.glue_job.name
    stmt = json.loads(lam.get_policy(FunctionName=n.lambda_function)["Policy"])["Statement"][0]
    assert stmt["Principal"] == {"Service": "s3.amazonaws.com"}
    assert n.bronze_bucket in json.dumps(stmt["Condition"]) and account in json.dumps(stmt)

    notes = s3.get_bucket_notification_configuration(Bucket=n.bronze_bucket)
    [ours] = notes["LambdaFunctionConfigurations"]
    assert ours["LambdaFunctionArn"] == n.lambda_arn
    assert ours["Events"] == ["s3:ObjectCreated:*"]
    rules = {r["Name"].lower(): r["Value"] for r in ours["Filter"]["Key"]["FilterRules"]}
    assert rules == {"prefix": P.bronze_prefix + "/"}

    iam = session.client("iam")
    for role in plan.of_kind("iam-role"):
        [name] = iam.list_role_policies(RoleName=role.name)["PolicyNames"]
        doc = iam.get_role_policy(RoleName=role.name, PolicyName=name)["PolicyDocument"]
        assert doc == role.settings["InlinePolicies"][name]
        assert wildcard_violations(doc) == []

    dms = session.client("dms")
    [target] = dms.describe_endpoints(
        Filters=[{"Name": "endpoint-id", "Values": [n.target_endpoint]}]
    )["Endpoints"]
    d = P.dms
    assert target["S3Settings"] == {
        "ServiceAccessRoleArn": n.role_arn(n.dms_s3_role),
        "BucketName": n.bronze_bucket,
        "BucketFolder": d.bucket_folder,
        "DataFormat": d.data_format,
        "AddColumnName": d.add_column_name,
        "IncludeOpForFullLoad": d.include_op_for_full_load,
        "TimestampColumnName": d.timestamp_column_name,
        "CsvDelimiter": d.csv_delimiter,
        "CsvRowDelimiter": d.csv_row_delimiter,
        "CsvNullValue": d.csv_null_value,
        "Rfc4180": d.rfc4180,
        "CompressionType": d.compression_type.upper(),
        "CdcInsertsOnly": d.cdc_inserts_only,
        "CdcInsertsAndUpdates": d.cdc_inserts_and_updates,
        "UseTaskStartTimeForFullLoadTimestamp": (
            d.use_task_start_time_for_full_load_timestamp),
        "DatePartitionEnabled": d.date_partition_enabled,
        "DatePartitionSequence": d.date_partition_sequence,
        "DatePartitionDelimiter": d.date_partition_delimiter,
    }
    [task] = dms.describe_replication_tasks(
        Filters=[{"Name": "replication-task-id", "Values": [n.replication_task]}]
    )["ReplicationTasks"]
    assert task["MigrationType"] == "full-load-and-cdc"
    assert task["TargetEndpointArn"] == target["EndpointArn"]
    mapping = json.loads(task["TableMappings"])["rules"]
    # dms.before_image_columns (default true): a primary-key UPDATE carries its old key
    assert [r["rule-action"] for r in mapping] == ["include", "add-column",
                                                  "add-before-image-columns"]
    assert mapping[1]["expression"] == "$AR_H_CHANGE_SEQ"
    assert mapping[2]["before-image-def"] == {"column-prefix": "BI_", "column-suffix": "",
                                              "column-filter": "pk-only"}


def test_second_deploy_changes_nothing_and_drift_is_repaired(aws):
    session, account = aws
    plan = full_plan(account)
    deploy(session, plan)
    lines: list[str] = []
    apply_plan(plan, session, wait=False, echo=lines.append)
    assert all(line.startswith("unchanged") for line in lines[:-1])
    assert lines[-1].startswith("Nothing changed")
    # someone opens the silver bucket and edits the job: the next deploy restores both
    s3 = session.client("s3")
    s3.delete_public_access_block(Bucket=plan.names.silver_bucket)
    iam = session.client("iam")
    iam.put_role_policy(
        RoleName=plan.names.glue_role,
        PolicyName=plan.names.glue_role,
        PolicyDocument=json.dumps(
            {
                "Version": "2012-10-17",
                "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}],
            }
        ),
    )
    changed = {k: v for k, v in deploy(session, plan).items() if v != "unchanged"}
    assert changed == {
        ("s3-bucket", plan.names.silver_bucket): "updated",
        ("iam-role", plan.names.glue_role): "updated",
    }


def test_deploy_refuses_to_take_over_an_untagged_resource(aws):
    session, account = aws
    session.client("glue").create_database(DatabaseInput={"Name": P.lake.glue_database})
    with pytest.raises(DeployError, match=f"Glue database '{P.lake.glue_database}'.*not tagged"):
        deploy(session, full_plan(account))


def test_lambda_code_is_the_lambda_shim_package(aws):
    session, account = aws
    plan = full_plan(account)
    deploy(session, plan)
    fn = session.client("lambda").get_function(FunctionName=plan.names.lambda_function)
    assert fn["Configuration"]["CodeSha256"] == code_sha256(build_zip(LAMBDA_SOURCE))


def test_destroy_removes_only_what_deploy_created(aws):
    session, account = aws
    plan = full_plan(account)
    deploy(session, plan)
    s3, iam = session.client("s3"), session.client("iam")
    s3.create_bucket(Bucket="someone-elses-bucket")
    iam.create_role(RoleName="someone-elses-role", AssumeRolePolicyDocument="{}")
    s3.put_object(
        Bucket=plan.names.bronze_bucket,
        Key=f"{P.bronze_prefix}/LOAD00000001.csv",
        Body=b"Op,id\nI,1\n",
    )
    destroy = build_plan(P, destroy_options(DeployOptions(region=REGION, account_id=account)))
    first = {
        (o.kind, o.name): o.action for o in destroy_plan(destroy, session, wait=False, echo=quiet)
    }
    assert first[("s3-bucket", plan.names.bronze_bucket)] == "kept"  # holds data
    assert {a for k, a in first.items() if k[1] != plan.names.bronze_bucket} == {"deleted"}
    buckets = {b["Name"] for b in s3.list_buckets()["Buckets"]}
    assert buckets == {"someone-elses-bucket", plan.names.bronze_bucket}
    assert [r["RoleName"] for r in iam.list_roles()["Roles"]] == ["someone-elses-role"]
    assert session.client("glue").get_jobs()["Jobs"] == []
    assert session.client("lambda").list_functions()["Functions"] == []
    assert session.client("events").list_rules()["Rules"] == []
    assert session.client("dms").describe_endpoints()["Endpoints"] == []
    again = destroy_plan(destroy, session, delete_data=True, wait=False, echo=quiet)
    assert {o.action for o in again} == {"absent", "deleted"}
    assert {b["Name"] for b in s3.list_buckets()["Buckets"]} == {"someone-elses-bucket"}


def test_destroy_leaves_a_same_named_resource_without_our_tag(aws):
    session, account = aws
    plan = full_plan(account)
    iam = session.client("iam")
    iam.create_role(RoleName=plan.names.glue_role, AssumeRolePolicyDocument="{}")
    outcomes = destroy_plan(plan, session, wait=False, echo=quiet)
    assert {(o.name, o.action) for o in outcomes if o.kind == "iam-role"} >= {
        (plan.names.glue_role, "not-ours")
    }
    assert iam.get_role(RoleName=plan.names.glue_role)


def test_cli_deploy_twice_then_destroy(aws, capsys, monkeypatch, tmp_path):
    monkeypatch.setattr("deploy.awsutil.Context.wait", False)
    args = ["--profile", "aws", "--region", REGION, "--stack", "demo"]
    # no lab runs here: without the tables' columns deploy stops and says what to do
    assert deploy_cli.main(["deploy", *args]) == 2
    assert "needs the tables' columns" in capsys.readouterr().err
    specs = tmp_path / "tables.json"  # what `cdclab tables --json` prints
    specs.write_text(json.dumps({"tables": [hosts_spec()]}))
    tables = ["--tables-config", str(specs)]
    assert deploy_cli.main(["deploy", *args, *tables, "--workers", "3"]) == 0
    first = capsys.readouterr().out
    assert "created    glue-job" in first and "CDCLAB_SILVER_BUCKET=demo-silver-" in first
    assert "airbnb.hosts_bronze" in first
    assert deploy_cli.main(["deploy", *args, *tables, "--workers", "3"]) == 0
    assert "Nothing changed" in capsys.readouterr().out
    assert deploy_cli.main(["destroy", *args]) == 0
    assert "deleted    glue-job" in capsys.readouterr().out


def test_runs_that_leave_a_backlog_get_the_next_run_through_eventbridge(aws):
    """Two rules invoke the Lambda: the job's SUCCEEDED runs, and the sweep's schedule;
    the function may be invoked by each (its policy names the rule)."""
    session, account = aws
    plan = full_plan(account)
    deploy(session, plan)
    n, events = plan.names, session.client("events")
    ended = events.describe_rule(Name=n.job_ended_rule)
    assert json.loads(ended["EventPattern"]) == {
        "source": ["aws.glue"], "detail-type": ["Glue Job State Change"],
        "detail": {"jobName": [P.glue_job.name], "state": ["SUCCEEDED"]}}
    sweep = events.describe_rule(Name=n.sweep_rule)
    minutes = P.glue_job.backlog_sweep_minutes
    assert sweep["ScheduleExpression"] == f"rate({minutes} minutes)"
    for rule in (ended, sweep):
        assert rule["State"] == "ENABLED"
        [target] = events.list_targets_by_rule(Rule=rule["Name"])["Targets"]
        assert target["Arn"] == n.lambda_arn
    policy = json.loads(session.client("lambda").get_policy(
        FunctionName=n.lambda_function)["Policy"])
    from_events = [s for s in policy["Statement"]
                   if s["Principal"] == {"Service": "events.amazonaws.com"}]
    assert {n.rule_arn(n.job_ended_rule), n.rule_arn(n.sweep_rule)} == {
        s["Condition"]["ArnLike"]["AWS:SourceArn"] for s in from_events}
    # someone disables the sweep and points the other rule elsewhere: the next deploy
    # puts both back
    events.disable_rule(Name=n.sweep_rule)
    events.remove_targets(Rule=n.job_ended_rule, Ids=["bronze-trigger"])
    events.put_targets(Rule=n.job_ended_rule, Targets=[{"Id": "x", "Arn": n.lambda_arn + "2"}])
    changed = {k: v for k, v in deploy(session, plan).items() if v != "unchanged"}
    assert changed == {("events-rule", n.sweep_rule): "updated",
                       ("events-rule", n.job_ended_rule): "updated"}
    [target] = events.list_targets_by_rule(Rule=n.job_ended_rule)["Targets"]
    assert (target["Id"], target["Arn"]) == ("bronze-trigger", n.lambda_arn)


def test_the_lambda_starts_a_run_while_the_backlog_marker_exists(aws, monkeypatch):
    import datetime as dt

    from lambda_shim import eventbridge_events, lambda_function
    from lambda_shim.function_env import function_environment

    session, account = aws
    plan = full_plan(account)
    pa = plan.pipeline
    for name, value in function_environment(pa).items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("GLUE_JOB_NAMES", f"{P.glue_job.name},brought-along")
    s3, glue = session.client("s3"), session.client("glue")
    s3.create_bucket(Bucket=plan.names.scripts_bucket)
    job = P.glue_job.name
    glue.create_job(Name=job, Role="r",
                    Command={"Name": "glueetl", "ScriptLocation": "s3://x/y.py"})
    bucket, key = pa.backlog_marker().removeprefix("s3://").split("/", 1)
    ended = glue.start_job_run(JobName=job)["JobRunId"]  # the run whose end is announced
    started_on = glue.get_job_run(JobName=job, RunId=ended)["JobRun"]["StartedOn"]
    monkeypatch.setattr(lambda_function, "stale_marker",  # moto's runs never end
                        _succeeded_at(lambda_function.stale_marker, started_on))

    def state_change(name: str = job, state: str = "SUCCEEDED") -> dict:
        return eventbridge_events.job_state_change(name, ended, state, region=REGION,
                                                   account=account)

    def runs() -> int:
        return len(glue.get_job_runs(JobName=job)["JobRuns"])

    sweep = eventbridge_events.scheduled(plan.names.sweep_rule, region=REGION, account=account)
    for event in (state_change(), sweep):  # no marker: nothing to start
        out = lambda_function.lambda_handler(event, None)
        assert out["JobRuns"] == {} and out["Backlog"] == {job: False}
    s3.put_object(Bucket=bucket, Key=key, Body=b'{"source": "job"}')
    for event in (state_change(state="FAILED"), state_change(name="brought-along")):
        assert lambda_function.lambda_handler(event, None)["JobRuns"] == {}
    for event in (state_change(), sweep):
        out = lambda_function.lambda_handler(event, None)
        assert out["Backlog"] == {job: True} and out["JobRunId"]
    assert runs() == 3
    # a marker older than the ended run's start: that run should have deleted it (its
    # delete failed); following it would chain runs forever
    later = started_on + dt.timedelta(minutes=5)
    monkeypatch.setattr(lambda_function, "stale_marker",
                        _succeeded_at(lambda_function.stale_marker.__wrapped__, later))
    for event in (state_change(), sweep):
        assert lambda_function.lambda_handler(event, None)["JobRuns"] == {}
    assert runs() == 3
    # ...unless that run read only some tables (--tables): it clears no marker
    monkeypatch.setattr(lambda_function, "stale_marker", _succeeded_at(
        lambda_function.stale_marker.__wrapped__, later, {"--tables": "public.a"}))
    for event in (state_change(), sweep):
        assert lambda_function.lambda_handler(event, None)["JobRunId"]
    assert runs() == 5


def _succeeded_at(stale_marker, started_on, arguments=None):
    """stale_marker as if the runs it looks at SUCCEEDED, having started at `started_on`
    with these arguments."""
    from types import SimpleNamespace

    def check(glue, job, written, run_id):
        run = {"Id": run_id or "newest", "JobRunState": "SUCCEEDED", "StartedOn": started_on,
               "Arguments": arguments or {}}
        fake = SimpleNamespace(get_job_run=lambda **_: {"JobRun": run},
                               get_job_runs=lambda **_: {"JobRuns": [run]})
        return stale_marker(fake, job, written, run_id)

    check.__wrapped__ = stale_marker
    return check
