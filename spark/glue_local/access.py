"""Who may call which operation of the local Glue API: each client what its AWS role may.

The API knows its clients by their SigV4 access keys (glue_local/launcher.py's
accepted_clients): `admin` (the stack's root keys: the CLI, notebooks, tests) may call
everything, as the account's administrator does on AWS. The others get exactly the glue:*
actions of their role's policy in deploy/iam.py — the Lambda role for `watcher`, the Glue
job role for `glue` — plus LOCAL_ONLY, each with why it is needed locally only
(tests/unit/test_glue_access.py derives the roles' actions from deploy/iam.py and checks
they agree, and that every call the watcher and the jobs' JVM side make is allowed).
Actions only, not resources: locally every client already reaches only this stack's
jobs and one catalog. A refusal is AWS's AccessDeniedException. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping

from glue_local.errors import GlueError

ADMIN, WATCHER, GLUE = "admin", "watcher", "glue"
CLIENTS = (ADMIN, WATCHER, GLUE)
ACCOUNT = "000000000000"  # the local account (tags_api.LOCAL_ACCOUNT, catalog_api.CATALOG_ID)

# The glue:* actions of each role's policy in deploy/iam.py (lambda_policy, glue_job_policy)
AWS_ROLE_ACTIONS: dict[str, frozenset[str]] = {
    WATCHER: frozenset({"StartJobRun", "GetJobRun", "GetJobRuns"}),
    GLUE: frozenset({
        "GetDatabase", "GetTable", "GetTables", "CreateTable", "UpdateTable",
        "GetPartition", "GetPartitions", "BatchGetPartition", "BatchCreatePartition",
        "GetJobRun", "GetJobRuns",
    }),
}
# Granted locally beyond the AWS role, and why
LOCAL_ONLY: dict[str, dict[str, str]] = {
    WATCHER: {
        "ListJobs": "the local watcher (lambda_shim/__main__.py, TriggeredJobs) finds the jobs "
                    "tagged to run with the pipeline's; the deployed Lambda is given them in "
                    "GLUE_JOB_NAMES instead",
    },
    GLUE: {},
}
# The role and session a refusal names (the role names are deploy/options.StackNames')
_PRINCIPALS = {
    WATCHER: ("cdclab-lambda-trigger", "cdclab-start-glue-job"),
    GLUE: ("cdclab-glue-job", "GlueJobRunnerSession"),
}


def allowed_operations(client: str) -> frozenset[str] | None:
    """The operations `client` may call; None: all of them (the administrator)."""
    if client == ADMIN:
        return None
    return AWS_ROLE_ACTIONS.get(client, frozenset()) | frozenset(LOCAL_ONLY.get(client, {}))


def allowed(client: str, operation: str) -> bool:
    ops = allowed_operations(client)
    return ops is None or operation in ops


def principal(client: str) -> str:
    role, session = _PRINCIPALS.get(client, (f"cdclab-{client}", client))
    return f"arn:aws:sts::{ACCOUNT}:assumed-role/{role}/{session}"


def resource(operation: str, request: Mapping, region: str) -> str | None:
    """The ARN IAM checks `operation` on, as a refusal names it: the job for job and run
    operations, the ARN given for tag operations, the catalog for Data Catalog ones (IAM
    checks the catalog first); None for list operations that have no resource."""
    glue = f"arn:aws:glue:{region}:{ACCOUNT}"
    if "ResourceArn" in request:
        return str(request["ResourceArn"])
    for key in ("JobName", "Name"):
        if "Job" in operation and isinstance(request.get(key), str):
            return f"{glue}:job/{request[key]}"
    if any(w in operation for w in ("Database", "Table", "Partition")):
        return f"{glue}:catalog"
    return None


def check(client: str, operation: str, request: Mapping, region: str) -> None:
    """AccessDeniedException (HTTP 400, as Glue sends it) unless `client` may call it."""
    if allowed(client, operation):
        return
    action = f"glue:{operation}"
    arn = resource(operation, request, region)
    on = f" on resource: {arn}" if arn else ""
    raise GlueError("AccessDeniedException",
                    f"User: {principal(client)} is not authorized to perform: {action}{on} "
                    f"because no identity-based policy allows the {action} action")
