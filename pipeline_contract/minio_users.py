"""Least privilege in MinIO: one user per service, each with a bucket-scoped policy.

The MinIO root user stays with the administrator (the `cdclab` CLI: setup, buckets, job
deploys, resync's archive moves, reconcile, the notebooks); every supervised service gets
a user of its own, created (idempotently) by the MinIO service once it is up:

| service | may |
|---|---|
| emitter | list, read, write, delete (incl. multipart) under s3://<bronze>/<DMS folder>/ |
| watcher (Lambda) | list, read, delete under the watched prefix; write under quarantine/; |
| | read and write the jobs' backlog markers (scripts/jobs/*.backlog); |
| | listen to the bronze bucket's notifications (its S3 events) |
| glue (its jobs) | read bronze and scripts (incl. table specs); write silver, scripts/temp/, |
| | the backlog markers, the input guards |
| iceberg-rest | read, write, delete under s3://<silver>/<warehouse prefix>/ |

The keys travel as one configuration value, CDCLAB_MINIO_USERS
(`name:access_key:secret_key,...`, characters safe in an env file), generated with the
other credentials; each service's process gets only its own pair as AWS_ACCESS_KEY_ID /
AWS_SECRET_ACCESS_KEY (never the root pair, never the list).
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Mapping

from pipeline_contract import settings

ENV_MINIO_USERS = "CDCLAB_MINIO_USERS"  # every service's pair, for the MinIO service only

SERVICES = ("emitter", "watcher", "glue", "iceberg-rest")
POLICY_PREFIX = "cdclab-"
NO_SUCH_POLICY = "XMinioAdminNoSuchPolicy"  # the admin API's code for an unknown policy
NEW_POLICY_ATTEMPTS = 5  # waits 0.5 + 1 + 1.5 + 2 s at most
SCRIPTS_TEMP = "temp"  # s3://<scripts_bucket>/temp/: the jobs' --TempDir
MULTIPART = ["s3:AbortMultipartUpload", "s3:ListMultipartUploadParts"]


def generate() -> str:
    """A fresh CDCLAB_MINIO_USERS value: one key pair per service."""
    return format_users({
        name: (f"{name}-{secrets.token_hex(6)}", secrets.token_urlsafe(30)) for name in SERVICES
    })


def format_users(users: Mapping[str, tuple[str, str]]) -> str:
    for name, (access, secret) in users.items():
        for part in (name, access, secret):
            if not part or any(c in part for c in ":,\n ="):
                raise ValueError(f"MinIO user {name!r}: names and keys must not hold ':,= '")
    return ",".join(f"{name}:{access}:{secret}" for name, (access, secret) in users.items())


def parse_users(value: str) -> dict[str, tuple[str, str]]:
    users: dict[str, tuple[str, str]] = {}
    for item in filter(None, value.split(",")):
        name, access, secret = item.split(":")
        users[name] = (access, secret)
    return users


def user_keys(env: Mapping[str, str], name: str) -> dict[str, str]:
    """The service's own user's AWS_* pair from CDCLAB_MINIO_USERS; {} without it."""
    users = parse_users(env.get(ENV_MINIO_USERS, ""))
    if name not in users:
        return {}
    access, secret = users[name]
    return {settings.ENV_ACCESS_KEY: access, settings.ENV_SECRET_KEY: secret}


def service_keys(env: Mapping[str, str], name: str) -> dict[str, str]:
    """The AWS_* key pair a service's process runs with: its own user's. Without
    CDCLAB_MINIO_USERS (a container's own credentials file, or a hand-made configuration)
    the env's own pair, given explicitly: start_process keeps no other."""
    return user_keys(env, name) or {
        k: env[k] for k in (settings.ENV_ACCESS_KEY, settings.ENV_SECRET_KEY) if env.get(k)}


def _bucket(bucket: str) -> str:
    return f"arn:aws:s3:::{bucket}"


def _objects(bucket: str, prefix: str = "") -> str:
    prefix = prefix.strip("/")
    return f"arn:aws:s3:::{bucket}/{prefix}/*" if prefix else f"arn:aws:s3:::{bucket}/*"


def _list(bucket: str, prefix: str = "") -> dict:
    """ListBucket on a bucket, limited to keys under `prefix` when one is given."""
    statement: dict = {"Effect": "Allow", "Action": ["s3:ListBucket"],
                       "Resource": [_bucket(bucket)]}
    prefix = prefix.strip("/")
    if prefix:
        statement["Condition"] = {"StringLike": {"s3:prefix": [prefix, f"{prefix}/*"]}}
    return statement


def _allow(actions: list[str], *resources: str) -> dict:
    return {"Effect": "Allow", "Action": actions, "Resource": list(resources)}


def policy(name: str, p: settings.PipelineSettings) -> dict:
    """The policy document of one service's user (IAM syntax, which MinIO speaks)."""
    lake = p.lake
    dms_folder = p.dms.bucket_folder.strip("/")
    read, write, delete = ["s3:GetObject"], ["s3:PutObject", *MULTIPART], ["s3:DeleteObject"]
    job_files = p.job_files_prefix.removeprefix(f"s3://{lake.scripts_bucket}/").strip("/")
    markers = f"arn:aws:s3:::{lake.scripts_bucket}/{job_files}/*{settings.BACKLOG_SUFFIX}"
    guards = f"arn:aws:s3:::{lake.scripts_bucket}/{job_files}/*{settings.INPUT_GUARD_SUFFIX}"
    if name == "emitter":
        statements = [_list(lake.bronze_bucket, dms_folder),
                      _allow(read + write + delete, _objects(lake.bronze_bucket, dms_folder))]
    elif name == "watcher":
        statements = [_list(lake.bronze_bucket, p.watched_prefix),
                      # MinIO's bucket notifications: the watcher's S3 events
                      _allow(["s3:ListenBucketNotification"], _bucket(lake.bronze_bucket)),
                      _allow(read + delete, _objects(lake.bronze_bucket, p.watched_prefix)),
                      _allow(write, _objects(lake.bronze_bucket, lake.quarantine_prefix)),
                      # HeadObject: 404 for a missing marker needs ListBucket, else 403
                      _list(lake.scripts_bucket, job_files), _allow(read + write, markers)]
    elif name == "glue":
        statements = [_list(lake.bronze_bucket), _allow(read, _objects(lake.bronze_bucket)),
                      _list(lake.scripts_bucket), _allow(read, _objects(lake.scripts_bucket)),
                      _allow(write + delete, _objects(lake.scripts_bucket, SCRIPTS_TEMP)),
                      _allow(write + delete, markers), _allow(write + delete, guards),
                      _list(lake.silver_bucket),
                      _allow(read + write + delete, _objects(lake.silver_bucket))]
        for bucket in p.glue_job.job_buckets:  # the user's own ([glue_job] job_buckets)
            statements += [_list(bucket), _allow(read + write + delete, _objects(bucket))]
    elif name == "iceberg-rest":
        statements = [_list(lake.silver_bucket, lake.warehouse_prefix),
                      _allow(read + write + delete,
                             _objects(lake.silver_bucket, lake.warehouse_prefix))]
    else:
        raise ValueError(f"no MinIO policy for service {name!r}; one of {', '.join(SERVICES)}")
    return {"Version": "2012-10-17", "Statement": statements}


def admin_client(endpoint: str, access_key: str, secret_key: str):
    """minio's MinioAdmin: it speaks MinIO's admin API itself (no `mc` binary)."""
    from urllib.parse import urlsplit

    from minio.credentials import StaticProvider

    from minio import MinioAdmin

    url = urlsplit(endpoint)
    return MinioAdmin(endpoint=url.netloc, credentials=StaticProvider(access_key, secret_key),
                      secure=url.scheme == "https")


def ensure_users(env: Mapping[str, str], p: settings.PipelineSettings,
                 admin=None, sleep=time.sleep) -> list[str]:
    """Create or update every service's policy and user, and attach the one to the other
    (idempotent: run at each MinIO start). Returns the user names it set up."""
    users = parse_users(env.get(ENV_MINIO_USERS, ""))
    if not users:
        return []
    admin = admin or admin_client(env[settings.ENV_S3_ENDPOINT], env[settings.ENV_ACCESS_KEY],
                                  env[settings.ENV_SECRET_KEY])
    for name, (access, secret) in users.items():
        for attempt in range(1, NEW_POLICY_ATTEMPTS + 1):
            try:
                _ensure_user(admin, name, access, secret, p)
                break
            except Exception as exc:
                # Just after its start MinIO may not know a policy it has just added (its
                # IAM cache is still loading; seen once in CI): add it again, then attach.
                if NO_SUCH_POLICY not in str(exc) or attempt == NEW_POLICY_ATTEMPTS:
                    raise
                sleep(0.5 * attempt)
    return list(users)


def _ensure_user(admin, name: str, access: str, secret: str,
                 p: settings.PipelineSettings) -> None:
    policy_name = POLICY_PREFIX + name
    admin.policy_add(policy_name, policy=policy(name, p))
    admin.user_add(access, secret)
    attached = json.loads(admin.user_info(access) or "{}").get("policyName", "")
    if policy_name not in attached.split(","):
        admin.attach_policy([policy_name], user=access)
