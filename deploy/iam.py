"""Least-privilege IAM policy documents, scoped to this stack's resources (pure).

Every statement names its buckets/prefixes, Glue database, job or Lambda. The one
unavoidable "*" resource (cloudwatch:PutMetricData has no resource-level permissions)
is pinned to the Glue namespace by a condition.
"""

from __future__ import annotations

from typing import Any

from deploy.options import StackNames
from pipeline_contract.settings import PipelineSettings

VERSION = "2012-10-17"
Policy = dict[str, Any]


def _doc(*statements: dict[str, Any]) -> Policy:
    return {"Version": VERSION, "Statement": list(statements)}


def _allow(sid: str, actions: list[str], resources: list[str], **extra: Any) -> dict[str, Any]:
    return {"Sid": sid, "Effect": "Allow", "Action": actions, "Resource": resources, **extra}


def trust_policy(service: str, *, source_account: str | None = None) -> Policy:
    stmt: dict[str, Any] = {
        "Effect": "Allow",
        "Principal": {"Service": service},
        "Action": "sts:AssumeRole",
    }
    if source_account:  # confused-deputy guard
        stmt["Condition"] = {"StringEquals": {"aws:SourceAccount": source_account}}
    return _doc(stmt)


def _bucket(name: str) -> str:
    return f"arn:aws:s3:::{name}"


def _objects(bucket: str, prefix: str) -> str:
    return f"arn:aws:s3:::{bucket}/{prefix}/*"


def _list_prefix(sid: str, bucket: str, prefix: str) -> dict[str, Any]:
    return _allow(
        sid,
        ["s3:ListBucket"],
        [_bucket(bucket)],
        Condition={"StringLike": {"s3:prefix": [prefix, f"{prefix}/*"]}},
    )


def _marker_key(n: StackNames, p: PipelineSettings) -> str:
    return p.backlog_marker().removeprefix(f"s3://{n.scripts_bucket}/")


def _marker(n: StackNames, p: PipelineSettings) -> str:
    return f"arn:aws:s3:::{n.scripts_bucket}/{_marker_key(n, p)}"


def _guard_key(n: StackNames, p: PipelineSettings) -> str:
    return p.input_guard().removeprefix(f"s3://{n.scripts_bucket}/")


def glue_job_policy(n: StackNames, p: PipelineSettings, *, temp_prefix: str) -> Policy:
    """Read bronze files and the script, write the silver warehouse, use this database,
    see the job's own runs."""
    region, account, db = n.region, n.account_id, p.lake.glue_database
    wh = p.lake.warehouse_prefix
    script_prefix = p.glue_job.script.rsplit("/", 1)[0]
    glue = f"arn:aws:glue:{region}:{account}"
    return _doc(
        _allow(
            "BucketLocation",
            ["s3:GetBucketLocation"],
            [_bucket(b) for b in (n.bronze_bucket, n.silver_bucket, n.scripts_bucket)],
        ),
        # every table's folder: the job merges each table the mappings select
        _allow("ReadBronze", ["s3:GetObject"],
               [_objects(n.bronze_bucket, p.watched_prefix)]),
        _list_prefix("ListBronze", n.bronze_bucket, p.watched_prefix),
        _allow("ReadScript", ["s3:GetObject"], [_objects(n.scripts_bucket, script_prefix)]),
        # the run's backlog marker: written when it left input for later, deleted when not
        _allow("BacklogMarker", ["s3:GetObject", "s3:PutObject", "s3:DeleteObject"],
               [_marker(n, p)]),
        _list_prefix("SeeBacklogMarker", n.scripts_bucket, _marker_key(n, p)),
        # what a run is reading (--input_guard): an object that fails every run is skipped
        _allow("InputGuard", ["s3:GetObject", "s3:PutObject", "s3:DeleteObject"],
               [f"arn:aws:s3:::{n.scripts_bucket}/{_guard_key(n, p)}"]),
        _list_prefix("SeeInputGuard", n.scripts_bucket, _guard_key(n, p)),
        # the guard asks how the run that left it ended; a run may look at its own job's
        # earlier runs (never start, stop or change one)
        _allow("OwnJobRuns", ["glue:GetJobRun", "glue:GetJobRuns"],
               [f"{glue}:job/{p.glue_job.name}"]),
        _allow(
            "TempDir",
            ["s3:GetObject", "s3:PutObject", "s3:DeleteObject"],
            [_objects(n.scripts_bucket, temp_prefix)],
        ),
        _list_prefix("ListTempDir", n.scripts_bucket, temp_prefix),
        _allow(
            "SilverWarehouse",
            ["s3:GetObject", "s3:PutObject", "s3:DeleteObject"],
            [_objects(n.silver_bucket, wh)],
        ),
        _list_prefix("ListSilverWarehouse", n.silver_bucket, wh),
        _allow(
            "GlueCatalog",
            [
                "glue:GetDatabase",
                "glue:GetTable",
                "glue:GetTables",
                "glue:CreateTable",
                "glue:UpdateTable",
                "glue:GetPartition",
                "glue:GetPartitions",
                "glue:BatchGetPartition",
                # a job's sink adds the partitions it wrote (enableUpdateCatalog,
                # docs.aws.amazon.com/glue/latest/dg/update-from-job.html)
                "glue:BatchCreatePartition",
            ],
            [f"{glue}:catalog", f"{glue}:database/{db}", f"{glue}:table/{db}/*"],
        ),
        _allow(
            "JobLogs",
            ["logs:CreateLogGroup", "logs:CreateLogStream", "logs:PutLogEvents"],
            [f"arn:aws:logs:{region}:{account}:log-group:/aws-glue/*"],
        ),
        _allow(
            "JobMetrics",
            ["cloudwatch:PutMetricData"],
            ["*"],
            Condition={"StringEquals": {"cloudwatch:namespace": "Glue"}},
        ),
        *_job_buckets(p.glue_job.job_buckets),
    )


def _job_buckets(buckets: list[str]) -> list[dict[str, Any]]:
    """The user's own buckets ([glue_job] job_buckets): whole buckets, nothing else."""
    if not buckets:
        return []
    return [_allow("JobBuckets", ["s3:GetObject", "s3:PutObject", "s3:DeleteObject"],
                   [f"arn:aws:s3:::{b}/*" for b in buckets]),
            _allow("ListJobBuckets", ["s3:ListBucket", "s3:GetBucketLocation"],
                   [_bucket(b) for b in buckets])]


def lambda_policy(n: StackNames, p: PipelineSettings, *, job_name: str) -> Policy:
    """Check new bronze objects (read), move a bad one to the quarantine prefix (write
    there, delete in bronze); see and write the job's backlog marker; start (and look at runs of)
    this one Glue job; write this function's logs."""
    log_group = f"arn:aws:logs:{n.region}:{n.account_id}:log-group:/aws/lambda/{n.lambda_function}"
    quarantine = p.lake.quarantine_prefix.strip("/")
    return _doc(
        _allow("CheckAndMoveBronzeObjects", ["s3:GetObject", "s3:DeleteObject"],
               [_objects(n.bronze_bucket, p.watched_prefix)]),
        _allow("WriteQuarantine", ["s3:PutObject"], [_objects(n.bronze_bucket, quarantine)]),
        # the job's backlog marker: HeadObject (404 when absent needs ListBucket), and
        # written when a file lands while a run is going
        _allow("BacklogMarker", ["s3:GetObject", "s3:PutObject"], [_marker(n, p)]),
        _list_prefix("SeeBacklogMarker", n.scripts_bucket, _marker_key(n, p)),
        _allow(
            "StartThisJob",
            ["glue:StartJobRun", "glue:GetJobRun", "glue:GetJobRuns"],
            [f"arn:aws:glue:{n.region}:{n.account_id}:job/{job_name}"],
        ),
        _allow("CreateLogGroup", ["logs:CreateLogGroup"], [log_group]),
        _allow("WriteLogs", ["logs:CreateLogStream", "logs:PutLogEvents"], [f"{log_group}:*"]),
    )


def dms_s3_target_policy(n: StackNames, p: PipelineSettings) -> Policy:
    """What the DMS S3 target needs, limited to the bronze bucket's DMS folder."""
    return _doc(
        _allow(
            "WriteDmsFolder",
            ["s3:PutObject", "s3:DeleteObject", "s3:PutObjectTagging"],
            [_objects(n.bronze_bucket, p.dms.bucket_folder)],
        ),
        _list_prefix("ListDmsFolder", n.bronze_bucket, p.dms.bucket_folder),
    )


def dms_secret_policy(secret_arn: str) -> Policy:
    return _doc(_allow("ReadSourceSecret", ["secretsmanager:GetSecretValue"], [secret_arn]))


def _as_list(value: Any) -> list[str]:
    return [value] if isinstance(value, str) else list(value)


# Actions IAM only grants on Resource "*"; allowed there only under a Condition.
STAR_ONLY_ACTIONS = frozenset({"cloudwatch:PutMetricData"})


def broad_resource(arn: str) -> bool:
    """A resource pattern that names no particular thing: "*", or an ARN whose partition,
    service, region, account or resource name is a wildcard ("arn:aws:s3:::*",
    "arn:aws:glue:*:*:job/x", "arn:aws:glue:r:a:job/*", "arn:*")."""
    if "*" not in arn and "?" not in arn:
        return False
    parts = arn.split(":", 5)
    if len(parts) < 6 or parts[0] != "arn":
        return True
    if any(c in p for p in parts[1:5] for c in "*?"):
        return True
    resource = parts[5]
    # the name after a type prefix (job/x, log-group:x); for S3 the bucket comes first
    if parts[2] == "s3":
        name = resource
    elif "/" in resource:
        name = resource.split("/", 1)[1]
    else:
        name = resource.split(":", 1)[-1]
    return name[:1] in ("*", "?", "")


def wildcard_violations(doc: Policy) -> list[str]:
    """Statements that grant too much (must be none): NotAction/NotResource (everything
    but), an action with a wildcard ("*", "s3:*", "s3:Get*"), or a broad resource
    (broad_resource) unless every action is one IAM grants only on "*" and a Condition
    narrows it."""
    bad = []
    for stmt in doc["Statement"]:
        if stmt.get("Effect", "Allow") != "Allow":
            continue
        actions = _as_list(stmt.get("Action", []))
        resources = _as_list(stmt.get("Resource", []))
        star_only = bool(actions) and set(actions) <= STAR_ONLY_ACTIONS and "Condition" in stmt
        if ("NotAction" in stmt or "NotResource" in stmt
                or any("*" in a or "?" in a for a in actions)
                or (any(broad_resource(r) for r in resources) and not star_only)):
            bad.append(stmt.get("Sid", str(stmt)))
    return bad
