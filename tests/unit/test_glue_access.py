"""Each client of the local Glue API may call what its AWS role may, and nothing else:
every operation the API serves, for admin / watcher / glue / an unknown key / unsigned,
through boto3 with real SigV4 against an in-process server; and the local policy is
deploy/iam.py's (plus the documented local-only grants), covering every call the watcher
and the jobs' JVM side make."""

from __future__ import annotations

import logging
import re
from datetime import UTC, datetime
from pathlib import Path

import boto3
import pytest
from botocore import UNSIGNED, xform_name
from botocore.config import Config
from botocore.exceptions import ClientError

from deploy.options import DeployOptions
from deploy.plan import build_plan
from glue_local import access
from glue_local.server import ENV_GLUE_CLIENTS, operations, running_server
from pipeline_contract.settings import load_pipeline

ROOT = Path(__file__).resolve().parents[2]
KEYS = {access.ADMIN: ("AKIDADMIN", "admin-secret"), access.WATCHER: ("AKIDWATCH", "w-secret"),
        access.GLUE: ("AKIDGLUE", "g-secret")}
UNKNOWN, UNSIGNED_CALLER = "unknown key", "unsigned"
CALLERS = (*KEYS, UNKNOWN, UNSIGNED_CALLER)
REFUSED_AUTH = {UNKNOWN: ("UnrecognizedClientException", 403),
                UNSIGNED_CALLER: ("MissingAuthenticationTokenException", 403)}


def _minimal(shape):
    """The smallest value botocore accepts for `shape` (its required members only)."""
    kind = shape.type_name
    if kind == "structure":
        return {m: _minimal(shape.members[m]) for m in shape.required_members}
    if kind == "list":
        return [_minimal(shape.member) for _ in range(shape.metadata.get("min", 0))]
    if kind == "map":
        return {}
    if kind == "string":
        return shape.enum[0] if shape.enum else "x" * max(1, shape.metadata.get("min", 1))
    if kind in ("integer", "long"):
        return max(1, shape.metadata.get("min", 1))
    if kind in ("double", "float"):
        return 1.0
    if kind == "boolean":
        return False
    if kind == "timestamp":
        return datetime(2026, 1, 1, tzinfo=UTC)
    return b"x"


@pytest.fixture(scope="module")
def clients(tmp_path_factory):
    state = tmp_path_factory.mktemp("state")
    value = ",".join(f"{name}:{key}:{secret}" for name, (key, secret) in KEYS.items())
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(ENV_GLUE_CLIENTS, value)
        with running_server(state, quiet=True) as server:
            def client(caller: str):
                key, secret = KEYS.get(caller, ("AKIDSTRANGER", "whatever"))
                config = Config(signature_version=UNSIGNED) if caller == UNSIGNED_CALLER \
                    else Config()
                return boto3.client("glue", endpoint_url=server.endpoint,
                                    region_name="us-east-1", aws_access_key_id=key,
                                    aws_secret_access_key=secret,
                                    config=config.merge(Config(retries={"max_attempts": 1})))

            yield {caller: client(caller) for caller in CALLERS}


def _expected(caller: str, operation: str) -> tuple[str, int] | None:
    """None: allowed (any answer but a refusal); else the refusal's code and status."""
    if caller in REFUSED_AUTH:
        return REFUSED_AUTH[caller]
    return None if access.allowed(caller, operation) else ("AccessDeniedException", 400)


@pytest.mark.parametrize("operation", sorted(operations()))
@pytest.mark.parametrize("caller", CALLERS)
def test_every_operation_for_every_caller(clients, caller, operation, caplog):
    client = clients[caller]
    model = client.meta.service_model.operation_model(operation)
    params = _minimal(model.input_shape) if model.input_shape else {}
    method = getattr(client, xform_name(operation))
    with caplog.at_level(logging.WARNING, logger="glue_local.server"):
        try:
            method(**params)
            got = None
        except ClientError as e:
            got = (e.response["Error"]["Code"], e.response["ResponseMetadata"]["HTTPStatusCode"])
    want = _expected(caller, operation)
    if want is None:
        assert got is None or got[0] not in (
            "AccessDeniedException", *[c for c, _ in REFUSED_AUTH.values()]), got
        return
    assert got == want
    if want[0] == "AccessDeniedException":  # the service log names client and operation
        assert any(operation in r.getMessage() and caller in r.getMessage()
                   for r in caplog.records)
        assert not any(KEYS[caller][1] in r.getMessage() for r in caplog.records)


def test_a_refusal_reads_as_aws_writes_it(clients):
    with pytest.raises(ClientError) as info:
        clients[access.WATCHER].create_job(Name="evil", Role="r",
                                           Command={"ScriptLocation": "/tmp/x.py"})
    assert info.value.response["Error"]["Message"] == (
        "User: arn:aws:sts::000000000000:assumed-role/cdclab-lambda-trigger/"
        "cdclab-start-glue-job is not authorized to perform: glue:CreateJob on resource: "
        "arn:aws:glue:us-east-1:000000000000:job/evil because no identity-based policy "
        "allows the glue:CreateJob action")
    assert isinstance(info.value, clients[access.WATCHER].exceptions.AccessDeniedException)
    with pytest.raises(ClientError, match="glue:GetDatabases on resource: arn:aws:glue:"
                                          "us-east-1:000000000000:catalog because"):
        clients[access.WATCHER].get_databases()
    with pytest.raises(ClientError, match="glue:GetJobs because no identity"):  # no resource
        clients[access.GLUE].get_jobs()
    with pytest.raises(ClientError, match=r"glue-job/GlueJobRunnerSession .* glue:DeleteTable"
                                          r" on resource: arn:aws:glue:us-east-1:0{12}:catalog"):
        clients[access.GLUE].delete_table(DatabaseName="db", Name="t")


# --- the local policy is deploy/iam.py's --------------------------------------------------
def _iam_glue_actions() -> dict[str, set[str]]:
    plan = build_plan(load_pipeline(), DeployOptions(region="us-east-1",
                                                     account_id="111122223333"))
    n = plan.names

    def actions(role: str) -> set[str]:
        doc = plan.get("iam-role", role).settings["InlinePolicies"][role]
        return {a.removeprefix("glue:") for s in doc["Statement"] if s["Effect"] == "Allow"
                for a in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"])
                if a.startswith("glue:")}

    return {access.WATCHER: actions(n.lambda_role), access.GLUE: actions(n.glue_role)}


def test_each_clients_operations_are_its_aws_roles_plus_the_documented_local_ones():
    iam = _iam_glue_actions()
    for client, aws_actions in iam.items():
        assert access.AWS_ROLE_ACTIONS[client] == aws_actions, client
        assert access.allowed_operations(client) == aws_actions | set(access.LOCAL_ONLY[client])
        assert not set(access.LOCAL_ONLY[client]) & aws_actions  # nothing listed twice
        assert all(len(why) > 40 for why in access.LOCAL_ONLY[client].values())
    assert access.allowed_operations(access.ADMIN) is None
    # only the administrator creates, changes or deletes jobs
    for client in iam:
        assert not {"CreateJob", "UpdateJob", "DeleteJob"} & access.allowed_operations(client)


def _boto_calls(path: Path) -> set[str]:
    """Glue operations a Python file calls on a Glue client: one named glue (glue.x(...)),
    or made in place (boto3.client("glue", ...).x(...))."""
    from botocore.session import get_session

    model = get_session().get_service_model("glue")
    by_method = {xform_name(op): op for op in model.operation_names}
    text = path.read_text()
    found = re.findall(r"\bglue\.([a-z_]+)\(", text)
    found += re.findall(r"client\(\s*[\"']glue[\"'][^)]*\)\.([a-z_]+)\(", text)
    return {by_method[m] for m in found if m in by_method}


def test_every_call_the_watcher_makes_is_allowed_to_it():
    files = [ROOT / "lambda_shim" / f for f in ("lambda_function.py", "__main__.py",
                                                "watcher.py")]
    calls = set().union(*map(_boto_calls, files))
    assert {"StartJobRun", "GetJobRun", "GetJobRuns", "ListJobs"} <= calls  # the scan works
    assert calls <= access.allowed_operations(access.WATCHER)
    deployed = _boto_calls(ROOT / "lambda_shim" / "lambda_function.py")
    assert deployed <= access.AWS_ROLE_ACTIONS[access.WATCHER]  # on AWS too


def test_every_call_the_shipped_jobs_make_is_allowed_to_glue():
    calls = set().union(*map(_boto_calls, (ROOT / "jobs").glob("*.py")))
    assert "GetJobRun" in calls  # the input guard asks how its job's earlier run ended
    assert calls <= access.AWS_ROLE_ACTIONS[access.GLUE]


def test_every_call_the_jobs_jvm_side_makes_is_allowed_to_glue():
    jvm = ROOT / "spark" / "glue-jvm" / "src" / "main" / "java"
    calls = set()
    for source in jvm.rglob("*.java"):
        for method in re.findall(r"client\(\)\.([a-zA-Z]+)\(", source.read_text()):
            calls.add(method[0].upper() + method[1:])
    assert {"GetTable", "GetPartitions"} <= calls
    assert calls <= access.AWS_ROLE_ACTIONS[access.GLUE]
