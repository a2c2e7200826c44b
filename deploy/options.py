"""Deploy options and the AWS names derived from them (pure)."""

from __future__ import annotations

import re
from dataclasses import dataclass

STACK_TAG = "cdclab:stack"
ACCOUNT_PLACEHOLDER = "<account-id>"
DEFAULT_STACK = "cdclab"
WORKER_TYPES = ("G.025X", "G.1X", "G.2X", "G.4X", "G.8X", "G.12X", "G.16X", "R.1X", "R.2X")
_STACK_RE = re.compile(r"^[a-z][a-z0-9-]{0,19}$")


class DeployError(RuntimeError):
    """The deployment cannot proceed; the message names the resource and the fix."""


@dataclass(frozen=True)
class DeployOptions:
    region: str
    account_id: str = ACCOUNT_PLACEHOLDER  # placeholder in --dry-run without credentials
    stack: str = DEFAULT_STACK
    worker_type: str | None = None  # None: pipeline.toml [glue_job]
    workers: int | None = None
    create_replication_instance: bool = False
    replication_instance_class: str = "dms.t3.micro"
    replication_instance_arn: str | None = None  # use an existing instance
    create_source_endpoint: bool = False
    source_host: str | None = None
    source_port: int = 5432
    source_secret_arn: str | None = None
    source_endpoint_arn: str | None = None  # use an existing source endpoint

    def validate(self) -> None:
        if not _STACK_RE.match(self.stack):
            raise DeployError(
                f"--stack {self.stack!r}: use 1-20 lowercase letters, digits or '-', "
                "starting with a letter (it becomes part of S3 bucket names)"
            )
        if self.worker_type is not None and self.worker_type not in WORKER_TYPES:
            raise DeployError(f"--worker-type {self.worker_type!r}: one of {WORKER_TYPES}")
        if self.workers is not None and self.workers < 2:
            raise DeployError(f"--workers {self.workers}: Glue Spark jobs need at least 2")
        if self.create_source_endpoint and not (self.source_host and self.source_secret_arn):
            raise DeployError(
                "--create-source-endpoint needs --source-host and --source-secret-arn "
                "(a Secrets Manager secret holding the database username and password)"
            )
        if self.create_replication_instance and self.replication_instance_arn:
            raise DeployError(
                "give either --create-replication-instance or --replication-instance-arn"
            )
        if self.create_source_endpoint and self.source_endpoint_arn:
            raise DeployError("give either --create-source-endpoint or --source-endpoint-arn")


@dataclass(frozen=True)
class StackNames:
    """Every AWS name of one stack. Buckets are global, so they carry account and region."""

    stack: str
    account_id: str
    region: str

    def bucket(self, role: str) -> str:
        return f"{self.stack}-{role}-{self.account_id}-{self.region}"

    @property
    def bronze_bucket(self) -> str:
        return self.bucket("bronze")

    @property
    def silver_bucket(self) -> str:
        return self.bucket("silver")

    @property
    def scripts_bucket(self) -> str:
        return self.bucket("scripts")

    @property
    def glue_role(self) -> str:
        return f"{self.stack}-glue-job"

    @property
    def lambda_role(self) -> str:
        return f"{self.stack}-lambda-trigger"

    @property
    def dms_s3_role(self) -> str:
        return f"{self.stack}-dms-s3-target"

    @property
    def dms_secrets_role(self) -> str:
        return f"{self.stack}-dms-source-secret"

    @property
    def lambda_function(self) -> str:
        return f"{self.stack}-start-glue-job"

    @property
    def job_ended_rule(self) -> str:
        """EventBridge rule: the job's runs that SUCCEEDED -> the Lambda (backlog)."""
        return f"{self.stack}-glue-run-ended"

    @property
    def sweep_rule(self) -> str:
        """EventBridge rule: the backlog sweep's schedule -> the Lambda."""
        return f"{self.stack}-backlog-sweep"

    def rule_arn(self, rule: str) -> str:
        return f"arn:aws:events:{self.region}:{self.account_id}:rule/{rule}"

    @property
    def notification_id(self) -> str:
        return f"{self.stack}-bronze-csv-to-lambda"

    @property
    def target_endpoint(self) -> str:
        return f"{self.stack}-s3-bronze-target"

    @property
    def source_endpoint(self) -> str:
        return f"{self.stack}-postgres-source"

    @property
    def replication_instance(self) -> str:
        return f"{self.stack}-replication"

    @property
    def replication_task(self) -> str:
        return f"{self.stack}-full-load-and-cdc"

    def role_arn(self, role: str) -> str:
        return f"arn:aws:iam::{self.account_id}:role/{role}"

    @property
    def lambda_arn(self) -> str:
        return f"arn:aws:lambda:{self.region}:{self.account_id}:function:{self.lambda_function}"
