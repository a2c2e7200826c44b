"""Least privilege: no wildcard action or broad resource in any form, all scoped to the stack."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from deploy.iam import wildcard_violations
from deploy.options import DeployOptions
from deploy.plan import build_plan
from pipeline_contract.settings import load_pipeline

P = load_pipeline()

options = st.builds(
    DeployOptions,
    region=st.sampled_from(["us-east-1", "eu-west-1", "ap-southeast-2"]),
    account_id=st.from_regex(r"\A[0-9]{12}\Z"),
    stack=st.from_regex(r"\A[a-z][a-z0-9-]{0,19}\Z"),
    create_replication_instance=st.booleans(),
    create_source_endpoint=st.just(True),
    source_host=st.just("db.internal"),
    source_secret_arn=st.just("arn:aws:secretsmanager:us-east-1:1:secret:db"),
)


def all_policies(plan):
    for role in plan.of_kind("iam-role"):
        yield role.name, role.settings["AssumeRolePolicyDocument"]
        yield from role.settings["InlinePolicies"].items()


def _statements(doc):
    return doc["Statement"]


def _as_list(v):
    return [v] if isinstance(v, str) else v


@given(options)
def test_no_policy_grants_a_wildcard_action_on_a_wildcard_resource(opts):
    plan = build_plan(P, opts)
    for name, doc in all_policies(plan):
        assert wildcard_violations(doc) == [], name
        for stmt in _statements(doc):
            assert "*" not in _as_list(stmt["Action"]), name


@given(options)
def test_every_resource_is_this_stacks(opts):
    plan = build_plan(P, opts)
    n = plan.names
    ours = [f"arn:aws:s3:::{b}" for b in (n.bronze_bucket, n.silver_bucket, n.scripts_bucket)] + [
        f"arn:aws:glue:{n.region}:{n.account_id}:",
        f"arn:aws:logs:{n.region}:{n.account_id}:log-group:/aws-glue/",
        f"arn:aws:logs:{n.region}:{n.account_id}:log-group:/aws/lambda/{n.lambda_function}",
        opts.source_secret_arn,
    ]
    for role in plan.of_kind("iam-role"):
        for stmt in _statements(role.settings["InlinePolicies"][role.name]):
            for res in _as_list(stmt["Resource"]):
                if res == "*":  # only metrics, pinned to the Glue namespace
                    assert stmt["Action"] == ["cloudwatch:PutMetricData"]
                    assert stmt["Condition"] == {"StringEquals": {"cloudwatch:namespace": "Glue"}}
                else:
                    assert any(res.startswith(o) for o in ours), res


def test_roles_get_only_what_their_service_needs():
    plan = build_plan(P, DeployOptions(region="us-east-1", account_id="111122223333"))
    n = plan.names

    def policy(role):
        return plan.get("iam-role", role).settings["InlinePolicies"][role]

    lam = _statements(policy(n.lambda_role))
    glue_stmt = next(s for s in lam if s["Sid"] == "StartThisJob")
    assert glue_stmt["Resource"] == [f"arn:aws:glue:us-east-1:111122223333:job/{P.glue_job.name}"]
    # the gate: read and delete bronze objects of its table, write only the quarantine
    # and the job's backlog marker
    lam_s3 = {(a, r) for s in lam for a in s["Action"] if a.startswith("s3:")
              for r in s["Resource"]}
    bronze = f"arn:aws:s3:::{n.bronze_bucket}/{P.bronze_prefix}/*"
    quarantine = f"arn:aws:s3:::{n.bronze_bucket}/{P.lake.quarantine_prefix}/*"
    marker = f"arn:aws:s3:::{n.scripts_bucket}/jobs/{P.glue_job.name}.backlog"
    assert lam_s3 == {("s3:GetObject", bronze), ("s3:DeleteObject", bronze),
                      ("s3:PutObject", quarantine), ("s3:GetObject", marker),
                      ("s3:PutObject", marker),
                      ("s3:ListBucket", f"arn:aws:s3:::{n.scripts_bucket}")}
    listing = next(s for s in lam if s["Sid"] == "SeeBacklogMarker")
    assert listing["Condition"]["StringLike"]["s3:prefix"][0] == (
        f"jobs/{P.glue_job.name}.backlog")
    dms_res = {r for s in _statements(policy(n.dms_s3_role)) for r in s["Resource"]}
    assert dms_res == {
        f"arn:aws:s3:::{n.bronze_bucket}",
        f"arn:aws:s3:::{n.bronze_bucket}/{P.dms.bucket_folder}/*",
    }
    glue_doc = _statements(policy(n.glue_role))
    writes = {r for s in glue_doc if "s3:PutObject" in s["Action"] for r in s["Resource"]}
    assert writes == {
        f"arn:aws:s3:::{n.silver_bucket}/{P.lake.warehouse_prefix}/*",
        f"arn:aws:s3:::{n.scripts_bucket}/tmp/*",
        marker,
        f"arn:aws:s3:::{n.scripts_bucket}/jobs/{P.glue_job.name}.input-guard.json",
    }
    # the input guard asks how its own job's earlier run ended, nothing else of Glue's jobs
    own_runs = next(s for s in glue_doc if s["Sid"] == "OwnJobRuns")
    assert own_runs["Action"] == ["glue:GetJobRun", "glue:GetJobRuns"]
    assert own_runs["Resource"] == [f"arn:aws:glue:us-east-1:111122223333:job/{P.glue_job.name}"]
    assert plan.get("iam-role", n.dms_s3_role).settings["AssumeRolePolicyDocument"]["Statement"][0][
        "Condition"
    ] == {"StringEquals": {"aws:SourceAccount": "111122223333"}}


def test_wildcard_detector_catches_admin_statements():
    admin = {"Statement": [{"Sid": "Admin", "Effect": "Allow", "Action": "*", "Resource": "*"}]}
    s3_all = {
        "Statement": [{"Sid": "S3", "Effect": "Allow", "Action": ["s3:*"], "Resource": ["*"]}]
    }
    scoped = {
        "Statement": [
            {
                "Sid": "Ok",
                "Effect": "Allow",
                "Action": ["s3:GetObject"],
                "Resource": ["arn:aws:s3:::b/*"],
            }
        ]
    }
    assert wildcard_violations(admin) == ["Admin"]
    assert wildcard_violations(s3_all) == ["S3"]
    assert wildcard_violations(scoped) == []


@pytest.mark.parametrize(("action", "resource"), [
    ("s3:GetObject", "arn:aws:s3:::*"), ("s3:GetObject", "arn:aws:s3:::*/prefix/*"),
    ("glue:StartJobRun", "arn:aws:glue:*:*:job/x"), ("glue:StartJobRun", "arn:aws:glue:r:1:job/*"),
    ("s3:Get*", "arn:aws:s3:::b/p/*"), ("*:*", "arn:aws:s3:::b/p/*"), ("s3:GetObject", "*"),
    ("logs:PutLogEvents", "arn:*"), ("cloudwatch:PutMetricData", "*"),  # no Condition
])
def test_wildcards_in_any_form_are_caught(action, resource):
    stmt = {"Sid": "X", "Effect": "Allow", "Action": [action], "Resource": [resource]}
    assert wildcard_violations({"Statement": [stmt]}) == ["X"]


def test_not_action_and_not_resource_are_caught_and_scoped_patterns_pass():
    for key in ("NotAction", "NotResource"):
        stmt = {"Sid": key, "Effect": "Allow", key: ["iam:*"], "Resource": ["arn:aws:s3:::b/*"]}
        assert wildcard_violations({"Statement": [stmt]}) == [key]
    fine = [("s3:GetObject", "arn:aws:s3:::bucket/dms/*"),
            ("glue:GetTable", "arn:aws:glue:us-east-1:1:table/airbnb/*"),
            ("logs:PutLogEvents", "arn:aws:logs:us-east-1:1:log-group:/aws/lambda/f:*")]
    for action, resource in fine:
        stmt = {"Sid": "ok", "Effect": "Allow", "Action": [action], "Resource": [resource]}
        assert wildcard_violations({"Statement": [stmt]}) == [], (action, resource)


def test_the_job_role_reaches_the_declared_buckets_only():
    import dataclasses

    mine = dataclasses.replace(P, glue_job=dataclasses.replace(P.glue_job,
                                                               job_buckets=["my-bucket"]))
    plan = build_plan(mine, DeployOptions(region="us-east-1", account_id="111122223333"))
    n = plan.names
    role = plan.get("iam-role", n.glue_role).settings["InlinePolicies"][n.glue_role]
    grants = {(a, r) for s in role["Statement"] for a in _as_list(s["Action"])
              for r in _as_list(s["Resource"]) if "my-bucket" in r}
    assert grants == {("s3:GetObject", "arn:aws:s3:::my-bucket/*"),
                      ("s3:PutObject", "arn:aws:s3:::my-bucket/*"),
                      ("s3:DeleteObject", "arn:aws:s3:::my-bucket/*"),
                      ("s3:ListBucket", "arn:aws:s3:::my-bucket"),
                      ("s3:GetBucketLocation", "arn:aws:s3:::my-bucket")}
    assert not wildcard_violations(role)
    others = [name for name, doc in all_policies(plan) if name != n.glue_role
              and "my-bucket" in str(doc)]
    assert not others
