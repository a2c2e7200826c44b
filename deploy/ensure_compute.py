"""Idempotent boto3 adapters for the Glue database, bronze table, Glue job and Lambda."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

from botocore.exceptions import ClientError

from deploy.awsutil import Context, error_code, is_not_found, require_ours, subset_equal
from deploy.lambda_package import build_zip, code_sha256
from deploy.plan import Resource, source_path


def glue_arn(ctx: Context, path: str) -> str:
    n = ctx.plan.names
    return f"arn:aws:glue:{n.region}:{n.account_id}:{path}"


def ensure_database(ctx: Context, r: Resource) -> str:
    glue, want = ctx.client("glue"), r.settings["DatabaseInput"]
    try:
        db = glue.get_database(Name=r.name)["Database"]
    except ClientError as e:
        if not is_not_found(e):
            raise
        glue.create_database(DatabaseInput=want, Tags=r.settings["Tags"])
        return "created"
    tags = glue.get_tags(ResourceArn=glue_arn(ctx, f"database/{r.name}"))["Tags"]
    require_ours(tags, ctx.stack, "Glue database", r.name)
    if db.get("Description") == want["Description"]:
        return "unchanged"
    glue.update_database(Name=r.name, DatabaseInput=want)
    return "updated"


def ensure_table(ctx: Context, r: Resource) -> str:
    """Tables cannot carry tags: the bronze table is ours because its database is."""
    glue, db, want = ctx.client("glue"), r.settings["DatabaseName"], r.settings["TableInput"]
    try:
        table = glue.get_table(DatabaseName=db, Name=want["Name"])["Table"]
    except ClientError as e:
        if not is_not_found(e):
            raise
        glue.create_table(DatabaseName=db, TableInput=want)
        return "created"
    if subset_equal(want, table):
        return "unchanged"
    glue.update_table(DatabaseName=db, TableInput=want)
    return "updated"


def job_definition(r: Resource) -> dict[str, Any]:
    return {k: v for k, v in r.settings.items() if k != "Tags"}


def ensure_job(ctx: Context, r: Resource) -> str:
    glue, want = ctx.client("glue"), job_definition(r)
    try:
        job = glue.get_job(JobName=r.name)["Job"]
    except ClientError as e:
        if not is_not_found(e):
            raise
        glue.create_job(Name=r.name, Tags=r.settings["Tags"], **want)
        return "created"
    tags = glue.get_tags(ResourceArn=glue_arn(ctx, f"job/{r.name}"))["Tags"]
    require_ours(tags, ctx.stack, "Glue job", r.name)
    # DefaultArguments must match exactly: an extra argument changes the job's behaviour.
    if subset_equal(want, job) and job.get("DefaultArguments") == want["DefaultArguments"]:
        return "unchanged"
    glue.update_job(JobName=r.name, JobUpdate=want)
    return "updated"


def _retry_new_role(call: Callable[[], Any], sleep: Callable[[float], None]) -> Any:
    """A just-created IAM role takes seconds to become assumable by Lambda."""
    for attempt in range(10):
        try:
            return call()
        except ClientError as e:
            if error_code(e) != "InvalidParameterValueException" or attempt == 9:
                raise
            sleep(3)


LAMBDA_CONFIG_KEYS = ("Runtime", "Handler", "Role", "Timeout", "MemorySize", "Environment")


def ensure_lambda(ctx: Context, r: Resource, sleep: Callable[[float], None] = time.sleep) -> str:
    lam, s = ctx.client("lambda"), r.settings
    zip_bytes = build_zip(source_path(r))
    config = {k: s[k] for k in LAMBDA_CONFIG_KEYS}
    try:
        fn = lam.get_function(FunctionName=r.name)
    except ClientError as e:
        if not is_not_found(e):
            raise
        _retry_new_role(
            lambda: lam.create_function(
                FunctionName=r.name, Code={"ZipFile": zip_bytes}, Tags=s["Tags"], **config
            ),
            sleep,
        )
        ctx.wait_for("lambda", "function_active_v2", FunctionName=r.name)
        return "created"
    require_ours(fn.get("Tags", {}), ctx.stack, "Lambda function", r.name)
    action = "unchanged"
    if fn["Configuration"].get("CodeSha256") != code_sha256(zip_bytes):
        lam.update_function_code(FunctionName=r.name, ZipFile=zip_bytes)
        ctx.wait_for("lambda", "function_updated_v2", FunctionName=r.name)
        action = "updated"
    if not subset_equal(config, fn["Configuration"]):
        lam.update_function_configuration(FunctionName=r.name, **config)
        ctx.wait_for("lambda", "function_updated_v2", FunctionName=r.name)
        action = "updated"
    return action


def _permission_statement(lam: Any, function: str, sid: str) -> dict[str, Any] | None:
    try:
        policy = json.loads(lam.get_policy(FunctionName=function)["Policy"])
    except ClientError as e:
        if is_not_found(e):
            return None
        raise
    return next((st for st in policy.get("Statement", []) if st.get("Sid") == sid), None)


def ensure_permission(ctx: Context, r: Resource) -> str:
    lam, s = ctx.client("lambda"), r.settings
    st = _permission_statement(lam, s["FunctionName"], s["StatementId"])
    if st is not None:
        text = json.dumps(st)
        if s["SourceArn"] in text and s["SourceAccount"] in text:
            return "unchanged"
        lam.remove_permission(FunctionName=s["FunctionName"], StatementId=s["StatementId"])
    lam.add_permission(**s)
    return "updated" if st is not None else "created"
