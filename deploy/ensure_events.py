"""Idempotent boto3 adapters for the EventBridge rules that start a run for a backlog."""

from __future__ import annotations

import json
from typing import Any

from botocore.exceptions import ClientError

from deploy.awsutil import Context, is_not_found, is_ours, require_ours, tag_dict, tag_list
from deploy.plan import Resource

RULE_KEYS = ("Name", "EventPattern", "ScheduleExpression", "State", "Description")


def _rule_input(r: Resource) -> dict[str, Any]:
    return {k: r.settings[k] for k in RULE_KEYS if k in r.settings}


def _same(key: str, want: Any, have: Any) -> bool:
    if key == "EventPattern":  # EventBridge may give the pattern back re-serialized
        return have is not None and json.loads(want) == json.loads(have)
    return want == have


def _targets(r: Resource) -> list[tuple[str, str]]:
    return [(t["Id"], t["Arn"]) for t in r.settings["Targets"]]


def ensure_rule(ctx: Context, r: Resource) -> str:
    events, want = ctx.client("events"), _rule_input(r)
    try:
        rule = events.describe_rule(Name=r.name)
    except ClientError as e:
        if not is_not_found(e):
            raise
        events.put_rule(**want, Tags=tag_list(r.settings["Tags"]))
        events.put_targets(Rule=r.name, Targets=r.settings["Targets"])
        return "created"
    tags = tag_dict(events.list_tags_for_resource(ResourceARN=rule["Arn"])["Tags"])
    require_ours(tags, ctx.stack, "EventBridge rule", r.name)
    action = "unchanged"
    if not all(_same(k, v, rule.get(k)) for k, v in want.items()):
        events.put_rule(**want)
        action = "updated"
    have = [(t["Id"], t["Arn"]) for t in events.list_targets_by_rule(Rule=r.name)["Targets"]]
    if sorted(have) != sorted(_targets(r)):
        stale = [i for i, _ in have if i not in {i for i, _ in _targets(r)}]
        if stale:
            events.remove_targets(Rule=r.name, Ids=stale)
        events.put_targets(Rule=r.name, Targets=r.settings["Targets"])
        action = "updated"
    return action


def remove_rule(ctx: Context, r: Resource) -> str:
    """Targets first: EventBridge refuses to delete a rule that still has any."""
    events = ctx.client("events")
    try:
        rule = events.describe_rule(Name=r.name)
    except ClientError as e:
        if is_not_found(e):
            return "absent"
        raise
    tags = tag_dict(events.list_tags_for_resource(ResourceARN=rule["Arn"])["Tags"])
    if not is_ours(tags, ctx.stack):
        return "not-ours"
    ids = [t["Id"] for t in events.list_targets_by_rule(Rule=r.name)["Targets"]]
    if ids:
        events.remove_targets(Rule=r.name, Ids=ids)
    events.delete_rule(Name=r.name)
    return "deleted"
