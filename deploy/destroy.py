"""Remove what `deploy` created — only resources tagged cdclab:stack=<stack>.

Walks the plan backwards. Something with the plan's name but without this stack's tag is
left alone and reported as "not-ours". Buckets holding data are kept unless asked.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from botocore.exceptions import ClientError

from deploy import ensure_dms, ensure_events
from deploy.apply import Outcome, summary
from deploy.awsutil import Context, is_not_found, is_ours, tag_dict
from deploy.ensure_compute import glue_arn
from deploy.ensure_storage import bucket_exists, bucket_tags, current_notifications
from deploy.plan import Plan, Resource


def _ours_bucket(ctx: Context, bucket: str) -> str | None:
    """None when the bucket is ours, else the outcome to report."""
    s3 = ctx.client("s3")
    if not bucket_exists(s3, bucket):
        return "absent"
    return None if is_ours(bucket_tags(s3, bucket), ctx.stack) else "not-ours"


def _bucket(ctx: Context, r: Resource, delete_data: bool) -> str:
    if (status := _ours_bucket(ctx, r.name)) is not None:
        return status
    s3 = ctx.client("s3")
    versions = s3.list_object_versions(Bucket=r.name, MaxKeys=1000)
    objects = [
        {"Key": v["Key"], "VersionId": v["VersionId"]}
        for key in ("Versions", "DeleteMarkers")
        for v in versions.get(key, [])
    ]
    if objects and not delete_data:
        return "kept"  # holds data: rerun with --delete-data
    while objects:
        s3.delete_objects(Bucket=r.name, Delete={"Objects": objects, "Quiet": True})
        versions = s3.list_object_versions(Bucket=r.name, MaxKeys=1000)
        objects = [
            {"Key": v["Key"], "VersionId": v["VersionId"]}
            for key in ("Versions", "DeleteMarkers")
            for v in versions.get(key, [])
        ]
    s3.delete_bucket(Bucket=r.name)
    return "deleted"


def _object(ctx: Context, r: Resource) -> str:
    if (status := _ours_bucket(ctx, r.settings["Bucket"])) is not None:
        return status
    ctx.client("s3").delete_object(Bucket=r.settings["Bucket"], Key=r.settings["Key"])
    return "deleted"


def _notification(ctx: Context, r: Resource) -> str:
    bucket = r.settings["Bucket"]
    if (status := _ours_bucket(ctx, bucket)) is not None:
        return status
    s3 = ctx.client("s3")
    cfg = current_notifications(s3, bucket)
    lambdas = cfg.get("LambdaFunctionConfigurations", [])
    keep = [c for c in lambdas if c.get("Id") != r.settings["Id"]]
    if len(keep) == len(lambdas):
        return "absent"
    cfg["LambdaFunctionConfigurations"] = keep
    s3.put_bucket_notification_configuration(Bucket=bucket, NotificationConfiguration=cfg)
    return "deleted"


def _role(ctx: Context, r: Resource) -> str:
    iam = ctx.client("iam")
    try:
        tags = tag_dict(iam.list_role_tags(RoleName=r.name)["Tags"])
    except ClientError as e:
        if is_not_found(e):
            return "absent"
        raise
    if not is_ours(tags, ctx.stack):
        return "not-ours"
    for name in iam.list_role_policies(RoleName=r.name)["PolicyNames"]:
        iam.delete_role_policy(RoleName=r.name, PolicyName=name)
    iam.delete_role(RoleName=r.name)
    return "deleted"


def _glue_tagged(ctx: Context, path: str, get: Callable[[], Any]) -> str | None:
    try:
        get()
    except ClientError as e:
        if is_not_found(e):
            return "absent"
        raise
    tags = ctx.client("glue").get_tags(ResourceArn=glue_arn(ctx, path))["Tags"]
    return None if is_ours(tags, ctx.stack) else "not-ours"


def _database(ctx: Context, r: Resource) -> str:
    glue = ctx.client("glue")
    status = _glue_tagged(ctx, f"database/{r.name}", lambda: glue.get_database(Name=r.name))
    if status:
        return status
    glue.delete_database(Name=r.name)  # also drops the job's Iceberg table entries
    return "deleted"


def _table(ctx: Context, r: Resource) -> str:
    glue, db = ctx.client("glue"), r.settings["DatabaseName"]
    status = _glue_tagged(ctx, f"database/{db}", lambda: glue.get_database(Name=db))
    if status:
        return status
    try:
        glue.delete_table(DatabaseName=db, Name=r.settings["TableInput"]["Name"])
    except ClientError as e:
        if is_not_found(e):
            return "absent"
        raise
    return "deleted"


def _job(ctx: Context, r: Resource) -> str:
    glue = ctx.client("glue")
    status = _glue_tagged(ctx, f"job/{r.name}", lambda: glue.get_job(JobName=r.name))
    if status:
        return status
    glue.delete_job(JobName=r.name)
    return "deleted"


def _lambda_tags(ctx: Context, name: str) -> str | None:
    try:
        fn = ctx.client("lambda").get_function(FunctionName=name)
    except ClientError as e:
        if is_not_found(e):
            return "absent"
        raise
    return None if is_ours(fn.get("Tags", {}), ctx.stack) else "not-ours"


def _lambda(ctx: Context, r: Resource) -> str:
    if status := _lambda_tags(ctx, r.name):
        return status
    ctx.client("lambda").delete_function(FunctionName=r.name)
    return "deleted"


def _permission(ctx: Context, r: Resource) -> str:
    s, lam = r.settings, ctx.client("lambda")
    if status := _lambda_tags(ctx, s["FunctionName"]):
        return status
    try:
        policy = json.loads(lam.get_policy(FunctionName=s["FunctionName"])["Policy"])
    except ClientError as e:
        if is_not_found(e):
            return "absent"
        raise
    if not any(st.get("Sid") == s["StatementId"] for st in policy.get("Statement", [])):
        return "absent"
    lam.remove_permission(FunctionName=s["FunctionName"], StatementId=s["StatementId"])
    return "deleted"


def _dms(
    find: Callable[[Any, str], dict | None], arn_key: str, delete: str, waiter: str | None = None
) -> Callable[[Context, Resource], str]:
    def remove(ctx: Context, r: Resource) -> str:
        dms = ctx.client("dms")
        found = find(dms, r.name)
        if found is None:
            return "absent"
        arn = found[arn_key]
        if not is_ours(ensure_dms.dms_tags(dms, arn), ctx.stack):
            return "not-ours"
        if arn_key == "ReplicationTaskArn" and found.get("Status") == "running":
            dms.stop_replication_task(ReplicationTaskArn=arn)
            ctx.wait_for(
                "dms",
                "replication_task_stopped",
                Filters=[{"Name": "replication-task-arn", "Values": [arn]}],
            )
        getattr(dms, delete)(**{arn_key: arn})
        if waiter:  # endpoints cannot be deleted while a task still uses them
            ctx.wait_for("dms", waiter, Filters=[{"Name": "replication-task-arn", "Values": [arn]}])
        return "deleted"

    return remove


REMOVERS: dict[str, Callable[[Context, Resource], str]] = {
    "s3-object": _object,
    "s3-notification": _notification,
    "iam-role": _role,
    "glue-database": _database,
    "glue-table": _table,
    "glue-job": _job,
    "lambda-function": _lambda,
    "lambda-permission": _permission,
    "events-rule": ensure_events.remove_rule,
    "dms-replication-task": _dms(
        ensure_dms.find_task,
        "ReplicationTaskArn",
        "delete_replication_task",
        "replication_task_deleted",
    ),
    "dms-endpoint": _dms(ensure_dms.find_endpoint, "EndpointArn", "delete_endpoint"),
    "dms-replication-instance": _dms(
        ensure_dms.find_instance, "ReplicationInstanceArn", "delete_replication_instance"
    ),
}


def destroy_plan(
    plan: Plan,
    session: Any,
    *,
    delete_data: bool = False,
    wait: bool = True,
    echo: Callable[[str], None] = print,
) -> list[Outcome]:
    ctx = Context(plan, session, wait=wait)
    removers = {**REMOVERS, "s3-bucket": lambda c, r: _bucket(c, r, delete_data)}
    outcomes = []
    for r in reversed(plan.resources):
        action = removers[r.kind](ctx, r)
        outcomes.append(Outcome(r.kind, r.name, action))
        echo(f"{action:<10} {r.kind:<26} {r.name}")
    if any(o.action == "kept" for o in outcomes):
        echo("Buckets holding data were kept: rerun with --delete-data to delete them too.")
    echo(summary(outcomes))
    return outcomes
