"""Idempotent boto3 adapters for S3 buckets, the script object, the notification, IAM roles.

Each `ensure_*` returns "created", "updated" or "unchanged".
"""

from __future__ import annotations

import hashlib
import json
from typing import Any
from urllib.parse import unquote

from botocore.exceptions import ClientError

from deploy.awsutil import (
    Context,
    error_code,
    is_not_found,
    require_ours,
    tag_dict,
    tag_list,
)
from deploy.options import DeployError
from deploy.plan import Resource, source_path

SHA_META = "cdclab-sha256"


def bucket_tags(s3: Any, bucket: str) -> dict[str, str]:
    try:
        return tag_dict(s3.get_bucket_tagging(Bucket=bucket)["TagSet"])
    except ClientError as e:
        if error_code(e) == "NoSuchTagSet":
            return {}
        raise


def bucket_exists(s3: Any, bucket: str) -> bool:
    try:
        s3.head_bucket(Bucket=bucket)
        return True
    except ClientError as e:
        if is_not_found(e):
            return False
        if error_code(e) in {"403", "AccessDenied"}:
            raise DeployError(
                f"S3 bucket {bucket!r} exists but belongs to another account "
                "(bucket names are global): deploy with another --stack"
            ) from e
        raise


def ensure_bucket(ctx: Context, r: Resource) -> str:
    s3, name, want = ctx.client("s3"), r.name, r.settings
    action = "unchanged"
    if bucket_exists(s3, name):
        require_ours(bucket_tags(s3, name), ctx.stack, "S3 bucket", name)
    else:
        kwargs: dict[str, Any] = {"Bucket": name}
        if ctx.plan.names.region != "us-east-1":  # us-east-1 rejects a LocationConstraint
            kwargs["CreateBucketConfiguration"] = {"LocationConstraint": ctx.plan.names.region}
        s3.create_bucket(**kwargs)
        s3.put_bucket_tagging(Bucket=name, Tagging={"TagSet": tag_list(want["Tags"])})
        action = "created"
    try:
        pab = s3.get_public_access_block(Bucket=name)["PublicAccessBlockConfiguration"]
    except ClientError as e:
        if error_code(e) != "NoSuchPublicAccessBlockConfiguration":
            raise
        pab = {}
    if pab != want["PublicAccessBlock"]:
        s3.put_public_access_block(
            Bucket=name, PublicAccessBlockConfiguration=want["PublicAccessBlock"]
        )
        action = "updated" if action == "unchanged" else action
    if _bucket_sse(s3, name) != want["SSEAlgorithm"]:
        rule = {"ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": want["SSEAlgorithm"]}}
        s3.put_bucket_encryption(Bucket=name, ServerSideEncryptionConfiguration={"Rules": [rule]})
        action = "updated" if action == "unchanged" else action
    return action


def _bucket_sse(s3: Any, bucket: str) -> str | None:
    try:
        rules = s3.get_bucket_encryption(Bucket=bucket)["ServerSideEncryptionConfiguration"]
    except ClientError as e:
        if error_code(e) == "ServerSideEncryptionConfigurationNotFoundError":
            return None
        raise
    for rule in rules.get("Rules", []):
        return rule.get("ApplyServerSideEncryptionByDefault", {}).get("SSEAlgorithm")
    return None


def ensure_object(ctx: Context, r: Resource) -> str:
    s3, bucket, key = ctx.client("s3"), r.settings["Bucket"], r.settings["Key"]
    if "Body" in r.settings:  # a document the plan built (the job's table specs)
        body = r.settings["Body"].encode()
    else:
        path = source_path(r)
        if not path.is_file():
            raise DeployError(f"{path} is missing: the Glue job deploys exactly that file")
        body = path.read_bytes()
    digest = hashlib.sha256(body).hexdigest()
    try:
        head = s3.head_object(Bucket=bucket, Key=key)
        if head.get("Metadata", {}).get(SHA_META) == digest:
            return "unchanged"
        action = "updated"
    except ClientError as e:
        if not is_not_found(e):
            raise
        action = "created"
    s3.put_object(Bucket=bucket, Key=key, Body=body, Metadata={SHA_META: digest})
    return action


def notification_config(r: Resource) -> dict[str, Any]:
    s = r.settings
    return {
        "Id": s["Id"],
        "LambdaFunctionArn": s["LambdaFunctionArn"],
        "Events": s["Events"],
        "Filter": {
            "Key": {
                "FilterRules": [{"Name": "prefix", "Value": s["Prefix"]}]
            }
        },
    }


def _normalized(cfg: dict[str, Any]) -> dict[str, Any]:
    rules = cfg.get("Filter", {}).get("Key", {}).get("FilterRules", [])
    return {
        "Id": cfg.get("Id"),
        "Arn": cfg.get("LambdaFunctionArn"),
        "Events": sorted(cfg.get("Events", [])),
        "Rules": sorted((x["Name"].lower(), x["Value"]) for x in rules),
    }


def current_notifications(s3: Any, bucket: str) -> dict[str, Any]:
    cfg = s3.get_bucket_notification_configuration(Bucket=bucket)
    cfg.pop("ResponseMetadata", None)
    return cfg


def ensure_notification(ctx: Context, r: Resource) -> str:
    """Add or fix our Lambda configuration, keeping any other configurations on the bucket."""
    s3, bucket, want = ctx.client("s3"), r.settings["Bucket"], notification_config(r)
    cfg = current_notifications(s3, bucket)
    lambdas = cfg.get("LambdaFunctionConfigurations", [])
    ours = [c for c in lambdas if c.get("Id") == want["Id"]]
    if ours and _normalized(ours[0]) == _normalized(want):
        return "unchanged"
    cfg["LambdaFunctionConfigurations"] = [c for c in lambdas if c.get("Id") != want["Id"]]
    cfg["LambdaFunctionConfigurations"].append(want)
    s3.put_bucket_notification_configuration(Bucket=bucket, NotificationConfiguration=cfg)
    return "updated" if ours else "created"


def ensure_role(ctx: Context, r: Resource) -> str:
    iam, name, want = ctx.client("iam"), r.name, r.settings
    try:
        role = iam.get_role(RoleName=name)["Role"]
    except ClientError as e:
        if not is_not_found(e):
            raise
        iam.create_role(
            RoleName=name,
            AssumeRolePolicyDocument=json.dumps(want["AssumeRolePolicyDocument"]),
            Description=f"cdclab stack {ctx.stack}: {r.why}"[:1000],
            Tags=tag_list(want["Tags"]),
        )
        for policy_name, doc in want["InlinePolicies"].items():
            iam.put_role_policy(
                RoleName=name, PolicyName=policy_name, PolicyDocument=json.dumps(doc)
            )
        return "created"
    require_ours(tag_dict(iam.list_role_tags(RoleName=name)["Tags"]), ctx.stack, "IAM role", name)
    action = "unchanged"
    if _doc(role["AssumeRolePolicyDocument"]) != want["AssumeRolePolicyDocument"]:
        iam.update_assume_role_policy(
            RoleName=name, PolicyDocument=json.dumps(want["AssumeRolePolicyDocument"])
        )
        action = "updated"
    existing = set(iam.list_role_policies(RoleName=name)["PolicyNames"])
    for policy_name, doc in want["InlinePolicies"].items():
        if policy_name in existing:
            got = iam.get_role_policy(RoleName=name, PolicyName=policy_name)["PolicyDocument"]
            if _doc(got) == doc:
                continue
        iam.put_role_policy(RoleName=name, PolicyName=policy_name, PolicyDocument=json.dumps(doc))
        action = "updated"
    for stale in existing - set(want["InlinePolicies"]):
        iam.delete_role_policy(RoleName=name, PolicyName=stale)
        action = "updated"
    return action


def _doc(value: Any) -> Any:
    """boto3 decodes policy documents; some endpoints return them as (URL-decoded) JSON."""
    if isinstance(value, str):
        return json.loads(unquote(value))
    return value
