"""Apply a plan to AWS: create what is missing, fix what drifted, report what changed."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from deploy import ensure_compute, ensure_dms, ensure_events, ensure_storage
from deploy.awsutil import Context
from deploy.plan import Plan, Resource

Handler = Callable[[Context, Resource], str]

HANDLERS: dict[str, Handler] = {
    "s3-bucket": ensure_storage.ensure_bucket,
    "s3-object": ensure_storage.ensure_object,
    "iam-role": ensure_storage.ensure_role,
    "glue-database": ensure_compute.ensure_database,
    "glue-table": ensure_compute.ensure_table,
    "glue-job": ensure_compute.ensure_job,
    "lambda-function": ensure_compute.ensure_lambda,
    "lambda-permission": ensure_compute.ensure_permission,
    "events-rule": ensure_events.ensure_rule,
    "s3-notification": ensure_storage.ensure_notification,
    "dms-replication-instance": ensure_dms.ensure_instance,
    "dms-endpoint": ensure_dms.ensure_endpoint,
    "dms-replication-task": ensure_dms.ensure_task,
}


@dataclass(frozen=True)
class Outcome:
    kind: str
    name: str
    action: str  # created | updated | unchanged | deleted | kept | absent


def apply_plan(
    plan: Plan, session: Any, *, wait: bool = True, echo: Callable[[str], None] = print
) -> list[Outcome]:
    """Make AWS match the plan, resource by resource, in dependency order."""
    ctx = Context(plan, session, wait=wait)
    outcomes = []
    for r in plan.resources:
        action = HANDLERS[r.kind](ctx, r)
        outcomes.append(Outcome(r.kind, r.name, action))
        echo(f"{action:<10} {r.kind:<26} {r.name}")
    echo(summary(outcomes))
    return outcomes


def summary(outcomes: list[Outcome]) -> str:
    counts: dict[str, int] = {}
    for o in outcomes:
        counts[o.action] = counts.get(o.action, 0) + 1
    if set(counts) <= {"unchanged"}:
        return f"Nothing changed: all {len(outcomes)} resources are up to date."
    return ", ".join(f"{n} {a}" for a, n in sorted(counts.items())) + "."
