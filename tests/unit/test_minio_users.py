"""Per-service MinIO users: the policy documents, the keys' format, who gets which keys."""

from __future__ import annotations

import json
import stat
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cdclab import credentials
from cdclab.services.base import ProcessSpec, Service, StackContext, start_process
from dms_emitter.launcher import EmitterService
from glue_local.launcher import GlueApiService
from lambda_shim.launcher import WatcherService
from pipeline_contract import minio_users, settings
from pipeline_contract.settings import load_pipeline

P = settings.load_pipeline()
STACK_BUCKETS = {P.lake.bronze_bucket, P.lake.silver_bucket, P.lake.scripts_bucket}


def _statements(service: str) -> list[dict]:
    return minio_users.policy(service, P)["Statement"]


def _grants(service: str) -> set[tuple[str, str]]:
    return {(a, r) for s in _statements(service) for a in s["Action"] for r in s["Resource"]}


def test_no_policy_grants_a_wildcard_action_or_another_bucket() -> None:
    for service in minio_users.SERVICES:
        for action, resource in _grants(service):
            assert "*" not in action and action.startswith("s3:")
            assert resource.startswith("arn:aws:s3:::")
            bucket = resource.removeprefix("arn:aws:s3:::").split("/", 1)[0]
            assert bucket in STACK_BUCKETS, (service, resource)


def test_the_emitter_writes_only_under_its_dms_folder() -> None:
    folder = P.dms.bucket_folder.strip("/")
    for action, resource in _grants("emitter"):
        if action != "s3:ListBucket":
            assert resource == f"arn:aws:s3:::{P.lake.bronze_bucket}/{folder}/*"
    listing = next(s for s in _statements("emitter") if s["Action"] == ["s3:ListBucket"])
    assert listing["Condition"]["StringLike"]["s3:prefix"] == [folder, f"{folder}/*"]


MARKERS = f"arn:aws:s3:::{P.lake.scripts_bucket}/jobs/*.backlog"


def test_the_watcher_writes_only_the_quarantine_and_backlog_markers() -> None:
    writes = {r for a, r in _grants("watcher") if a == "s3:PutObject"}
    assert writes == {f"arn:aws:s3:::{P.lake.bronze_bucket}/{P.lake.quarantine_prefix}/*",
                      MARKERS}
    assert P.backlog_marker().startswith(f"s3://{P.lake.scripts_bucket}/jobs/")


def test_only_the_job_deletes_a_backlog_marker() -> None:
    deleters = {svc for svc in minio_users.SERVICES for a, r in _grants(svc)
                if a == "s3:DeleteObject" and r == MARKERS}
    assert deleters == {"glue"}


def test_only_glue_and_the_catalog_write_silver() -> None:
    silver = f"arn:aws:s3:::{P.lake.silver_bucket}/"
    writers = {svc for svc in minio_users.SERVICES for a, r in _grants(svc)
               if a == "s3:PutObject" and r.startswith(silver)}
    assert writers == {"glue", "iceberg-rest"}
    assert {r for a, r in _grants("iceberg-rest") if a == "s3:PutObject"} == {
        f"{silver}{P.lake.warehouse_prefix}/*"}


def test_only_the_emitter_writes_the_dms_folder() -> None:
    bronze = f"arn:aws:s3:::{P.lake.bronze_bucket}/{P.dms.bucket_folder.strip('/')}/"
    writers = {svc for svc in minio_users.SERVICES for a, r in _grants(svc)
               if a == "s3:PutObject" and r.startswith(bronze)}
    assert writers == {"emitter"}


key_text = st.text("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_",
                   min_size=1, max_size=40)


@given(st.dictionaries(key_text, st.tuples(key_text, key_text), max_size=6))
def test_users_round_trip_through_their_env_value(users) -> None:
    value = minio_users.format_users(users)
    assert minio_users.parse_users(value) == users
    assert not set(value) & set(" =\"'\n$")  # safe in cdclab.env and docker env files


def test_generated_users_are_distinct_per_service_and_install() -> None:
    a, b = (minio_users.parse_users(minio_users.generate()) for _ in range(2))
    assert set(a) == set(minio_users.SERVICES)
    assert len({k for pair in a.values() for k in pair}) == 2 * len(a)
    assert not {k for pair in a.values() for k in pair} & {k for pair in b.values() for k in pair}


def test_each_service_process_gets_its_own_keys() -> None:
    env = credentials.generate()
    users = minio_users.parse_users(env[minio_users.ENV_MINIO_USERS])
    ctx = StackContext(pipeline=load_pipeline(), state_dir=Path("/nonexistent"), ports={"glue": 1},
                       env=env)
    for service in (EmitterService(), WatcherService(), GlueApiService(warm=False)):
        spec = service.process(ctx)
        assert (spec.env[settings.ENV_ACCESS_KEY], spec.env[settings.ENV_SECRET_KEY]) \
            == users[service.name]


def test_without_users_a_service_keeps_the_given_keys() -> None:
    given = {settings.ENV_ACCESS_KEY: "k", settings.ENV_SECRET_KEY: "s"}
    assert minio_users.service_keys(given, "emitter") == given  # explicitly: kept
    assert minio_users.user_keys(given, "emitter") == {}


class _PrintEnv(Service):
    name = "printenv"

    def process(self, ctx: StackContext) -> ProcessSpec:
        code = "import json, os; print(json.dumps(dict(os.environ)))"
        return ProcessSpec(argv=[sys.executable, "-c", code],
                           env=minio_users.service_keys(ctx.env, "emitter"))

    def healthy(self, ctx: StackContext) -> bool:
        return True


def test_no_process_sees_the_user_list_or_the_root_secret(tmp_path) -> None:
    env = credentials.generate()
    ctx = StackContext(pipeline=load_pipeline(), state_dir=tmp_path, env=dict(env))
    start_process(_PrintEnv(), ctx).wait(30)
    seen = json.loads(ctx.log_path("printenv").read_text())
    assert minio_users.ENV_MINIO_USERS not in seen
    assert seen[settings.ENV_SECRET_KEY] != env[settings.ENV_SECRET_KEY]
    assert env[settings.ENV_SECRET_KEY] not in json.dumps(seen)


class _CatalogClient(_PrintEnv):
    secrets = frozenset({settings.ENV_CATALOG_TOKEN})


def test_a_process_sees_only_the_secrets_its_service_names(tmp_path) -> None:
    env = credentials.generate()
    env[settings.ENV_PG_DSN] = credentials.with_userinfo(
        "postgresql://127.0.0.1:5432/db", env[credentials.PG_USER], env[credentials.PG_PASSWORD])
    token = env[settings.ENV_CATALOG_TOKEN]
    for service, sees in ((_PrintEnv(), False), (_CatalogClient(), True)):
        ctx = StackContext(pipeline=load_pipeline(), state_dir=tmp_path / str(sees), env=dict(env))
        start_process(service, ctx).wait(30)
        seen = json.loads(ctx.log_path("printenv").read_text())
        assert (seen.get(settings.ENV_CATALOG_TOKEN) == token) is sees
        assert env[credentials.PG_PASSWORD] not in json.dumps(seen)  # nor in the DSN
        assert seen[settings.ENV_PG_DSN] == "postgresql://127.0.0.1:5432/db"
    assert settings.ENV_CATALOG_TOKEN in GlueApiService.secrets
    assert credentials.PG_PASSWORD in EmitterService.secrets
    assert not WatcherService.secrets and not EmitterService.setup_secrets


def test_an_older_credentials_file_gets_the_users_and_token_added_0600(tmp_path) -> None:
    path = tmp_path / "credentials.json"
    later = (minio_users.ENV_MINIO_USERS, settings.ENV_CATALOG_TOKEN)
    old = {k: v for k, v in credentials.generate().items() if k not in later}
    credentials.write_new(path, old)
    assert credentials.ensure_file(path) is False  # the containers' one-shot
    loaded = json.loads(path.read_text())
    assert {k: loaded[k] for k in old} == old and set(later) <= set(loaded)
    assert len(loaded[settings.ENV_CATALOG_TOKEN]) >= 40
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert credentials.load_or_create(tmp_path) == loaded  # embedded: kept from now on
    assert all(credentials.mask(loaded)[k] == "***" for k in later)



def test_the_jobs_reach_the_declared_buckets_and_no_other() -> None:
    import dataclasses

    mine = dataclasses.replace(P, glue_job=dataclasses.replace(
        P.glue_job, job_buckets=["my-bucket", "other.bucket"]))
    grants = {(a, r) for s in minio_users.policy("glue", mine)["Statement"]
              for a in s["Action"] for r in s["Resource"]}
    for bucket in ("my-bucket", "other.bucket"):
        assert ("s3:ListBucket", f"arn:aws:s3:::{bucket}") in grants
        for action in ("s3:GetObject", "s3:PutObject", "s3:DeleteObject"):
            assert (action, f"arn:aws:s3:::{bucket}/*") in grants
    buckets = {r.removeprefix("arn:aws:s3:::").split("/", 1)[0] for _, r in grants}
    assert buckets == STACK_BUCKETS | {"my-bucket", "other.bucket"}
    for service in ("emitter", "watcher", "iceberg-rest"):  # only the jobs' role
        assert minio_users.policy(service, mine) == minio_users.policy(service, P)


class JustStartedMinio:
    """MinIO's admin API as it answers just after a start: the first attach of a new
    policy says the policy does not exist (its IAM cache still loading)."""

    def __init__(self, refusals: int) -> None:
        self.refusals, self.policies, self.attached = refusals, {}, {}

    def policy_add(self, name, policy) -> None:
        self.policies[name] = policy

    def user_add(self, access, secret) -> None:
        self.attached.setdefault(access, [])

    def user_info(self, access) -> str:
        return json.dumps({"policyName": ",".join(self.attached[access])})

    def attach_policy(self, names, user) -> None:
        if self.refusals:
            self.refusals -= 1
            raise RuntimeError('admin request failed; Status: 404, Body: {"Code":'
                               f'"{minio_users.NO_SUCH_POLICY}"}}')
        self.attached[user] += names


def test_a_policy_minio_does_not_know_yet_is_added_again_then_attached() -> None:
    env = {minio_users.ENV_MINIO_USERS: minio_users.generate()}
    admin, waits = JustStartedMinio(refusals=2), []
    names = minio_users.ensure_users(env, P, admin=admin, sleep=waits.append)
    assert names == list(minio_users.SERVICES) and waits == [0.5, 1.0]
    users = minio_users.parse_users(env[minio_users.ENV_MINIO_USERS])
    assert all(admin.attached[access] == [minio_users.POLICY_PREFIX + name]
               for name, (access, _) in users.items())
    stubborn = JustStartedMinio(refusals=minio_users.NEW_POLICY_ATTEMPTS)
    with pytest.raises(RuntimeError, match=minio_users.NO_SUCH_POLICY):
        minio_users.ensure_users(env, P, admin=stubborn, sleep=lambda s: None)
