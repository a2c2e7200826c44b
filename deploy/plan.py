"""The deployment plan: every AWS resource of a stack with its exact settings (pure).

Built from pipeline_contract/pipeline.toml (via pipeline_contract.settings) and
DeployOptions only, so `--dry-run` needs neither credentials nor network. The applier,
the renderer, destroy and the tests all read this one list.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import lambda_shim
from deploy import dms, iam
from deploy.options import STACK_TAG, DeployOptions, StackNames
from lambda_shim.function_env import function_environment
from pipeline_contract import resources
from pipeline_contract.catalog_tables import database_input
from pipeline_contract.job_config import glue_default_arguments, job_definition
from pipeline_contract.settings import PipelineSettings
from pipeline_contract.table_specs import bronze_table_input, for_lake, tables_document

LAMBDA_SOURCE = Path(lambda_shim.__file__).resolve().with_name("lambda_function.py")
LAMBDA_RUNTIME = "python3.11"
LAMBDA_HANDLER = "lambda_function.lambda_handler"
LAMBDA_TIMEOUT_SECONDS = 900
LAMBDA_MEMORY_MB = 512
TEMP_PREFIX = "tmp"  # Glue --TempDir, in the scripts bucket
SSE_ALGORITHM = "AES256"  # SSE-S3: default encryption with no key to manage

# Kinds in dependency order; destroy walks them backwards.
KINDS = (
    "s3-bucket",
    "s3-object",
    "iam-role",
    "glue-database",
    "glue-table",
    "glue-job",
    "lambda-function",
    "lambda-permission",
    "events-rule",
    "s3-notification",
    "dms-replication-instance",
    "dms-endpoint",
    "dms-replication-task",
)


@dataclass(frozen=True)
class Resource:
    kind: str
    name: str
    settings: dict[str, Any]
    why: str = ""


@dataclass(frozen=True)
class Plan:
    options: DeployOptions
    names: StackNames
    pipeline: PipelineSettings  # pipeline.toml with this stack's bucket names
    resources: list[Resource]
    notes: list[str] = field(default_factory=list)

    @property
    def tags(self) -> dict[str, str]:
        return {STACK_TAG: self.names.stack}

    def of_kind(self, kind: str) -> list[Resource]:
        return [r for r in self.resources if r.kind == kind]

    def get(self, kind: str, name: str) -> Resource:
        for r in self.resources:
            if r.kind == kind and r.name == name:
                return r
        raise KeyError(f"no {kind} {name!r} in the plan")


def aws_pipeline(p: PipelineSettings, n: StackNames) -> PipelineSettings:
    """The pipeline with this stack's globally unique bucket names; nothing else changes."""
    lake = dataclasses.replace(
        p.lake,
        bronze_bucket=n.bronze_bucket,
        silver_bucket=n.silver_bucket,
        scripts_bucket=n.scripts_bucket,
    )
    return dataclasses.replace(p, lake=lake)


def _bucket(name: str, why: str, tags: dict[str, str]) -> Resource:
    return Resource(
        "s3-bucket",
        name,
        {
            "PublicAccessBlock": {
                "BlockPublicAcls": True,
                "IgnorePublicAcls": True,
                "BlockPublicPolicy": True,
                "RestrictPublicBuckets": True,
            },
            "SSEAlgorithm": SSE_ALGORITHM,
            "Tags": tags,
        },
        why,
    )


def _role(
    name: str, trust: dict[str, Any], policy: dict[str, Any], tags: dict[str, str], why: str
) -> Resource:
    return Resource(
        "iam-role",
        name,
        {"AssumeRolePolicyDocument": trust, "InlinePolicies": {name: policy}, "Tags": tags},
        why,
    )


def build_plan(p: PipelineSettings, opts: DeployOptions,
               specs: list[dict[str, Any]] | None = None) -> Plan:
    """`specs`: the tables the job merges (pipeline_contract.table_specs, as the lab built them
    from its source); their bronze catalog tables and the job's --tables_config."""
    opts.validate()
    specs = specs or []
    n = StackNames(opts.stack, opts.account_id, opts.region)
    pa = aws_pipeline(p, n)
    tags = {STACK_TAG: opts.stack}
    job = pa.glue_job
    script_key = job.script  # jobs/bronze_to_silver.py, the file the local tests run
    temp_dir = f"s3://{n.scripts_bucket}/{TEMP_PREFIX}/"
    res: list[Resource] = [
        _bucket(n.bronze_bucket, "DMS CSV files (bronze)", tags),
        _bucket(n.silver_bucket, "Iceberg warehouse (silver)", tags),
        _bucket(n.scripts_bucket, "Glue job script and TempDir", tags),
        Resource(
            "s3-object",
            f"s3://{n.scripts_bucket}/{script_key}",
            {
                "Bucket": n.scripts_bucket,
                "Key": script_key,
                "Source": source_name(pa.script_path),
            },
            "the very job script the local tests run",
        ),
    ]
    config_bucket, config_key = pa.tables_config.removeprefix("s3://").split("/", 1)
    specs = [for_lake(s, pa.lake.bronze_bucket) for s in specs]
    res += [
        Resource(
            "s3-object",
            pa.tables_config,
            {"Bucket": config_bucket, "Key": config_key,
             "Body": json.dumps(tables_document(specs), indent=1, sort_keys=True)},
            f"the job's table specs ({len(specs)} table(s), as the lab built them)",
        ),
        _role(
            n.glue_role,
            iam.trust_policy("glue.amazonaws.com"),
            iam.glue_job_policy(n, pa, temp_prefix=TEMP_PREFIX),
            tags,
            "Glue job: read bronze + script, write silver warehouse, this database",
        ),
        _role(
            n.lambda_role,
            iam.trust_policy("lambda.amazonaws.com"),
            iam.lambda_policy(n, pa, job_name=job.name),
            tags,
            "Lambda: check bronze objects, quarantine bad ones, start this Glue job, log",
        ),
        _role(
            n.dms_s3_role,
            iam.trust_policy("dms.amazonaws.com", source_account=opts.account_id),
            iam.dms_s3_target_policy(n, pa),
            tags,
            "DMS S3 target: write the bronze DMS folder",
        ),
    ]
    if opts.create_source_endpoint:
        assert opts.source_secret_arn  # validate() checked
        res.append(
            _role(
                n.dms_secrets_role,
                iam.trust_policy(
                    f"dms.{opts.region}.amazonaws.com", source_account=opts.account_id
                ),
                iam.dms_secret_policy(opts.source_secret_arn),
                tags,
                "DMS source endpoint: read the database secret",
            )
        )
    res += [
        Resource(
            "glue-database",
            pa.lake.glue_database,
            {"DatabaseInput": database_input(pa), "Tags": tags},
        ),
        *(Resource(
            "glue-table",
            f"{spec['bronze_database']}.{spec['bronze_table']}",
            {
                "DatabaseName": spec["bronze_database"],
                "TableInput": bronze_table_input(spec, pa.dms.csv_delimiter),
            },
            f"bronze CSV table of {spec['name']} (OpenCSVSerde, header skipped)",
        ) for spec in specs),
        Resource(
            "glue-job",
            job.name,
            job_definition(job, role=n.role_arn(n.glue_role),
                           script_location=f"s3://{n.scripts_bucket}/{script_key}",
                           arguments=glue_default_arguments(pa, temp_dir=temp_dir),
                           worker_type=opts.worker_type, workers=opts.workers, tags=tags),
        ),
        Resource(
            "lambda-function",
            n.lambda_function,
            {
                "Runtime": LAMBDA_RUNTIME,
                "Handler": LAMBDA_HANDLER,
                "Role": n.role_arn(n.lambda_role),
                # the gate reads each object once, streaming: a 1 GB full-load file
                # takes minutes at Lambda's smallest CPU share
                "Timeout": LAMBDA_TIMEOUT_SECONDS,
                "MemorySize": LAMBDA_MEMORY_MB,
                "Environment": {"Variables": function_environment(pa)},
                "Source": source_name(LAMBDA_SOURCE),
                "Tags": tags,
            },
            "lambda_shim's handler: checks new bronze objects, starts the Glue job",
        ),
        Resource(
            "lambda-permission",
            f"{n.lambda_function}/s3-invoke",
            {
                "FunctionName": n.lambda_function,
                "StatementId": f"{opts.stack}-s3-invoke",
                "Action": "lambda:InvokeFunction",
                "Principal": "s3.amazonaws.com",
                "SourceArn": f"arn:aws:s3:::{n.bronze_bucket}",
                "SourceAccount": opts.account_id,
            },
        ),
        *_backlog_rules(pa, opts, n, tags),
        Resource(
            "s3-notification",
            f"{n.bronze_bucket}/{n.notification_id}",
            {
                "Bucket": n.bronze_bucket,
                "Id": n.notification_id,
                "LambdaFunctionArn": n.lambda_arn,
                "Events": ["s3:ObjectCreated:*"],
                # every object, whatever its name: the Lambda quarantines strays
                "Prefix": f"{pa.watched_prefix}/",
            },
        ),
    ]
    res += _dms_resources(pa, opts, n, tags)
    notes = [
        f"Silver Iceberg tables ({pa.lake.silver_table}, {pa.lake.tombstone_table}, "
        f"{pa.lake.quarantine_table}) are created by the job itself (CREATE TABLE IF NOT "
        f"EXISTS, jobs/ddl) on its first run, in Glue database {pa.lake.glue_database} "
        f"under {pa.warehouse} - one DDL for local and AWS.",
    ]
    if not any(r.kind == "dms-replication-task" for r in res):
        notes.append(
            "DMS replication task: not planned - it needs a replication instance and a source "
            "endpoint (--create-replication-instance or --replication-instance-arn; "
            "--create-source-endpoint ... or --source-endpoint-arn)."
        )
    return Plan(opts, n, pa, res, notes)


def _backlog_rules(
    pa: PipelineSettings, opts: DeployOptions, n: StackNames, tags: dict[str, str]
) -> list[Resource]:
    """EventBridge -> the Lambda: each run of the job that SUCCEEDED (a run that left
    input for later wrote its backlog marker) and the sweep's schedule (Glue's events are
    best effort). The Lambda starts the next run while the marker exists."""
    rules = [(n.job_ended_rule, "events-run-ended", {"EventPattern": json.dumps({
        "source": ["aws.glue"], "detail-type": ["Glue Job State Change"],
        "detail": {"jobName": [pa.glue_job.name], "state": ["SUCCEEDED"]}})},
        "a run of the job SUCCEEDED: start the next one if it left input for later")]
    minutes = pa.glue_job.backlog_sweep_minutes  # 0: the rule stays, DISABLED
    rate = f"rate({max(minutes, 1)} minute{'s' if minutes > 1 else ''})"
    rules.append((n.sweep_rule, "events-sweep",
                  {"ScheduleExpression": rate, "State": "ENABLED" if minutes else "DISABLED"},
                  "the backlog sweep: EventBridge delivers Glue's events best effort"))
    res = []
    for rule, sid, trigger, why in rules:
        res.append(Resource(
            "lambda-permission",
            f"{n.lambda_function}/{sid}",
            {
                "FunctionName": n.lambda_function,
                "StatementId": f"{opts.stack}-{sid}",
                "Action": "lambda:InvokeFunction",
                "Principal": "events.amazonaws.com",
                "SourceArn": n.rule_arn(rule),
                "SourceAccount": opts.account_id,
            },
        ))
        res.append(Resource(
            "events-rule",
            rule,
            {
                "Name": rule,
                "State": "ENABLED",
                **trigger,
                "Description": why,
                "Targets": [{"Id": "bronze-trigger", "Arn": n.lambda_arn}],
                "Tags": tags,
            },
            why,
        ))
    return res


def _dms_resources(
    pa: PipelineSettings, opts: DeployOptions, n: StackNames, tags: dict[str, str]
) -> list[Resource]:
    res = [
        Resource(
            "dms-endpoint",
            n.target_endpoint,
            {
                "EndpointType": "target",
                "EngineName": "s3",
                "S3Settings": dms.s3_target_settings(
                    pa, bucket=n.bronze_bucket, role_arn=n.role_arn(n.dms_s3_role)
                ),
                "Tags": tags,
            },
            "S3 target: the exact file format the local emitter writes",
        )
    ]
    instance: dict[str, str] | None = None
    source: dict[str, str] | None = None
    if opts.replication_instance_arn:
        instance = {"Arn": opts.replication_instance_arn}
    if opts.create_replication_instance:
        res.append(
            Resource(
                "dms-replication-instance",
                n.replication_instance,
                {
                    "ReplicationInstanceClass": opts.replication_instance_class,
                    "AllocatedStorage": 20,
                    "PubliclyAccessible": False,
                    "MultiAZ": False,
                    "Tags": tags,
                },
                "billed per hour while it exists",
            )
        )
        instance = {"Ref": n.replication_instance}
    if opts.source_endpoint_arn:
        source = {"Arn": opts.source_endpoint_arn}
    if opts.create_source_endpoint:
        source_settings, extra = dms.postgres_source_settings(pa)
        res.append(
            Resource(
                "dms-endpoint",
                n.source_endpoint,
                {
                    "EndpointType": "source",
                    "EngineName": "postgres",
                    "ServerName": opts.source_host,
                    "Port": opts.source_port,
                    "DatabaseName": pa.source.database,
                    "SslMode": "require",
                    "PostgreSQLSettings": {
                        "SecretsManagerSecretId": opts.source_secret_arn,
                        "SecretsManagerAccessRoleArn": n.role_arn(n.dms_secrets_role),
                        **source_settings,
                    },
                    "ExtraConnectionAttributes": extra,
                    "Tags": tags,
                },
                "PostgreSQL source (credentials from Secrets Manager)",
            )
        )
        source = {"Ref": n.source_endpoint}
    if instance and source:
        res.append(
            Resource(
                "dms-replication-task",
                n.replication_task,
                {
                    "MigrationType": pa.dms.migration_type,
                    "TableMappings": dms.table_mappings_json(pa),
                    "ReplicationTaskSettings": dms.task_settings_json(pa),
                    "ReplicationInstance": instance,
                    "SourceEndpoint": source,
                    "TargetEndpoint": {"Ref": n.target_endpoint},
                    "Tags": tags,
                },
                f"{pa.dms.migration_type} (created, not started)",
            )
        )
    return res


def destroy_options(opts: DeployOptions) -> DeployOptions:
    """Destroy considers every optional piece, whatever flags the deploy used."""
    return dataclasses.replace(
        opts,
        create_replication_instance=True,
        replication_instance_arn=None,
        create_source_endpoint=True,
        source_host=opts.source_host or "<source-host>",
        source_secret_arn=opts.source_secret_arn or "<secret-arn>",
        source_endpoint_arn=None,
    )


def source_name(path: Path) -> str:
    """A file the plan uploads: relative to the lab's files when it is one of them (the
    plan reads the same from any checkout), else absolute (the user's own script)."""
    try:
        return str(path.relative_to(resources.lab_root()))
    except ValueError:
        return str(path)


def source_path(resource: Resource) -> Path:
    return resources.lab_root() / resource.settings["Source"]
