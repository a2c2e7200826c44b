"""The plan as readable text: what `--dry-run` prints (pure apart from reading sources)."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from deploy.plan import Plan, Resource, source_path
from pipeline_contract.settings import ENV_PROFILE, ENV_REGION, PROFILE_AWS

SECTIONS = (
    ("S3 buckets", ("s3-bucket",)),
    ("Job script", ("s3-object",)),
    ("IAM roles (inline least-privilege policies)", ("iam-role",)),
    ("Glue Data Catalog and job", ("glue-database", "glue-table", "glue-job")),
    ("Lambda trigger", ("lambda-function", "lambda-permission", "events-rule",
                        "s3-notification")),
    ("DMS", ("dms-replication-instance", "dms-endpoint", "dms-replication-task")),
)


def _value(v: Any) -> str:
    if isinstance(v, str):
        # delimiters like "\n" and "" must stay visible
        return json.dumps(v) if (not v or not v.isprintable() or v != v.strip()) else v
    return json.dumps(v)


def _lines(obj: Any, indent: int) -> list[str]:
    pad = " " * indent
    out: list[str] = []
    if isinstance(obj, dict):
        for k, v in obj.items():
            if isinstance(v, dict | list) and v:
                out.append(f"{pad}{k}:")
                out += _lines(v, indent + 2)
            else:
                out.append(f"{pad}{k}: {_value(v)}")
    elif isinstance(obj, list):
        for v in obj:
            if isinstance(v, dict | list):
                sub = _lines(v, indent + 2)
                out.append(f"{pad}- {sub[0].strip()}" if sub else f"{pad}-")
                out += sub[1:]
            else:
                out.append(f"{pad}- {_value(v)}")
    return out


def _source_line(r: Resource) -> str:
    path = source_path(r)
    if not path.is_file():
        return f"    source: {r.settings['Source']} (MISSING - deploy will stop here)"
    data = path.read_bytes()
    digest = hashlib.sha256(data).hexdigest()[:16]
    return f"    source: {r.settings['Source']} ({len(data)} bytes, sha256 {digest}...)"


def _resource(r: Resource) -> list[str]:
    head = f"  + {r.kind} {r.name}" + (f"  ({r.why})" if r.why else "")
    settings = {k: v for k, v in r.settings.items() if k != "Tags"}  # in the header
    extra: list[str] = []
    if "Source" in settings:
        extra.append(_source_line(r))
        settings.pop("Source")
    if r.kind == "glue-job":  # one --conf pair per line is easier to review
        args = dict(settings["DefaultArguments"])
        settings["DefaultArguments"] = args
        args["--conf"] = args["--conf"].split(" --conf ")
    if r.kind == "dms-replication-task":
        settings["TableMappings"] = json.loads(settings["TableMappings"])
    return [head, *extra, *_lines(settings, 4)]


def render_plan(plan: Plan, *, dry_run: bool = True) -> str:
    n = plan.names
    out = [
        f"cdclab deploy --profile aws: stack {n.stack!r}, region {n.region}, "
        f"account {n.account_id}",
        "Dry run: nothing was sent to AWS." if dry_run else "Plan:",
        "Every resource is tagged "
        + ", ".join(f"{k}={v}" for k, v in plan.tags.items())
        + "; destroy removes only resources with that tag.",
    ]
    for title, kinds in SECTIONS:
        items = [r for r in plan.resources if r.kind in kinds]
        if items:
            out += ["", f"{title}:"]
            for r in items:
                out += _resource(r)
    out += ["", "Notes:"] + [f"  - {note}" for note in plan.notes]
    out += ["", "Environment for the local job runner against this stack:"]
    out += [f"  {k}={v}" for k, v in runner_env(plan).items()]
    return "\n".join(out) + "\n"


def runner_env(plan: Plan) -> dict[str, str]:
    """What the compose `aws` profile passes to the job runner (see docs/aws.md)."""
    n = plan.names
    return {
        ENV_PROFILE: PROFILE_AWS,
        ENV_REGION: n.region,
        "CDCLAB_BRONZE_BUCKET": n.bronze_bucket,
        "CDCLAB_SILVER_BUCKET": n.silver_bucket,
        "CDCLAB_SCRIPTS_BUCKET": n.scripts_bucket,
    }
