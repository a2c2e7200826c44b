"""Idempotent boto3 adapters for the DMS endpoints, replication instance and task.

The replication task is created, never started: start it once the endpoints' connection
tests pass (see docs/aws.md).
"""

from __future__ import annotations

import json
from typing import Any

from botocore.exceptions import ClientError

from deploy.awsutil import Context, is_not_found, require_ours, subset_equal, tag_dict, tag_list
from deploy.options import DeployError
from deploy.plan import Resource

ENDPOINT_KEYS = ("ServerName", "Port", "DatabaseName", "SslMode", "ExtraConnectionAttributes")


def _describe(dms: Any, op: str, filter_name: str, ident: str, key: str) -> dict | None:
    try:
        found = getattr(dms, op)(Filters=[{"Name": filter_name, "Values": [ident]}])[key]
    except ClientError as e:
        if is_not_found(e):
            return None
        raise
    return found[0] if found else None


def find_endpoint(dms: Any, ident: str) -> dict | None:
    return _describe(dms, "describe_endpoints", "endpoint-id", ident, "Endpoints")


def find_instance(dms: Any, ident: str) -> dict | None:
    return _describe(
        dms,
        "describe_replication_instances",
        "replication-instance-id",
        ident,
        "ReplicationInstances",
    )


def find_task(dms: Any, ident: str) -> dict | None:
    return _describe(
        dms, "describe_replication_tasks", "replication-task-id", ident, "ReplicationTasks"
    )


def dms_tags(dms: Any, arn: str) -> dict[str, str]:
    return tag_dict(dms.list_tags_for_resource(ResourceArn=arn)["TagList"])


def ensure_endpoint(ctx: Context, r: Resource) -> str:
    dms, s = ctx.client("dms"), r.settings
    params = {k: v for k, v in s.items() if k != "Tags"}
    found = find_endpoint(dms, r.name)
    if found is None:
        arn = dms.create_endpoint(EndpointIdentifier=r.name, Tags=tag_list(s["Tags"]), **params)[
            "Endpoint"
        ]["EndpointArn"]
        ctx.arns[r.name] = arn
        return "created"
    arn = ctx.arns[r.name] = found["EndpointArn"]
    require_ours(dms_tags(dms, arn), ctx.stack, "DMS endpoint", r.name)
    changes = {}
    for key in ("S3Settings", "PostgreSQLSettings"):
        # DMS omits some settings (secrets, empty strings) when describing: compare
        # only what it echoes back, or a second deploy would never be "unchanged".
        if key in s and not subset_equal(_echoed(s[key], found.get(key, {})), found.get(key)):
            changes[key] = s[key]
    # an empty value is not echoed back: absent and "" are the same
    changes.update({k: s[k] for k in ENDPOINT_KEYS
                    if k in s and (found.get(k) or "") != (s[k] or "")})
    if not changes:
        return "unchanged"
    dms.modify_endpoint(EndpointArn=arn, **changes)
    return "updated"


def _echoed(want: dict[str, Any], got: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in want.items() if k in got}


def ensure_instance(ctx: Context, r: Resource) -> str:
    dms, s = ctx.client("dms"), r.settings
    found = find_instance(dms, r.name)
    if found is None:
        params = {k: v for k, v in s.items() if k != "Tags"}
        inst = dms.create_replication_instance(
            ReplicationInstanceIdentifier=r.name, Tags=tag_list(s["Tags"]), **params
        )["ReplicationInstance"]
        ctx.arns[r.name] = inst["ReplicationInstanceArn"]
        # the task can only be created on an available instance (takes minutes on AWS)
        ctx.wait_for(
            "dms",
            "replication_instance_available",
            Filters=[{"Name": "replication-instance-id", "Values": [r.name]}],
        )
        return "created"
    arn = ctx.arns[r.name] = found["ReplicationInstanceArn"]
    require_ours(dms_tags(dms, arn), ctx.stack, "DMS replication instance", r.name)
    if found.get("ReplicationInstanceClass") == s["ReplicationInstanceClass"]:
        return "unchanged"
    dms.modify_replication_instance(
        ReplicationInstanceArn=arn,
        ReplicationInstanceClass=s["ReplicationInstanceClass"],
        ApplyImmediately=True,
    )
    return "updated"


def _arn(ctx: Context, ref: dict[str, str], what: str) -> str:
    if "Arn" in ref:
        return ref["Arn"]
    if ref["Ref"] not in ctx.arns:
        raise DeployError(f"{what} {ref['Ref']!r} has no ARN yet: it must be applied first")
    return ctx.arns[ref["Ref"]]


def ensure_task(ctx: Context, r: Resource) -> str:
    dms, s = ctx.client("dms"), r.settings
    found = find_task(dms, r.name)
    if found is None:
        dms.create_replication_task(
            ReplicationTaskIdentifier=r.name,
            SourceEndpointArn=_arn(ctx, s["SourceEndpoint"], "source endpoint"),
            TargetEndpointArn=_arn(ctx, s["TargetEndpoint"], "target endpoint"),
            ReplicationInstanceArn=_arn(ctx, s["ReplicationInstance"], "replication instance"),
            MigrationType=s["MigrationType"],
            TableMappings=s["TableMappings"],
            ReplicationTaskSettings=s["ReplicationTaskSettings"],
            Tags=tag_list(s["Tags"]),
        )
        return "created"
    arn = found["ReplicationTaskArn"]
    require_ours(dms_tags(dms, arn), ctx.stack, "DMS replication task", r.name)
    same = (found.get("MigrationType") == s["MigrationType"]
            and json.loads(found.get("TableMappings", "{}")) == json.loads(s["TableMappings"])
            and settings_include(json.loads(found.get("ReplicationTaskSettings") or "{}"),
                                 json.loads(s["ReplicationTaskSettings"])))
    if same:
        return "unchanged"
    if found.get("Status") not in {"ready", "stopped", "failed"}:
        raise DeployError(
            f"DMS replication task {r.name!r} is {found.get('Status')}: stop it, then deploy "
            "again to change its table mappings or settings"
        )
    dms.modify_replication_task(
        ReplicationTaskArn=arn, MigrationType=s["MigrationType"], TableMappings=s["TableMappings"],
        ReplicationTaskSettings=s["ReplicationTaskSettings"],
    )
    return "updated"


def settings_include(found: dict, wanted: dict) -> bool:
    """DMS answers with every task setting; ours are a subset of groups and keys."""
    return all(isinstance(found.get(group), dict)
               and all(found[group].get(k) == v for k, v in values.items())
               for group, values in wanted.items())
