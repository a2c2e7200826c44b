"""The local Glue API (`python -m glue_local`) as a supervised service: its registry
record, its launcher and the signed raw call its health check (and the conductor) makes.
The registry imports this module, and containers' health checks the registry: the server
(botocore) is imported only to start it."""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from collections.abc import Mapping
from pathlib import Path

from glue_local.access import ADMIN, GLUE, WATCHER
from glue_local.driver_state import driver_healthy
from pipeline_contract import minio_users, settings
from pipeline_contract.listen import LOOPBACK
from pipeline_contract.service_kit import (
    ENV_GLUE_CLIENTS,
    INFRA,
    Port,
    ProcessSpec,
    Service,
    ServiceError,
    ServiceInfo,
    StackContext,
    python_module,
)

SERVICE = ServiceInfo("glue", "glue_local.launcher:GlueApiService", INFRA, (Port("glue", 8090),))
ENV_GLUE_WARM = "CDCLAB_GLUE_WARM"  # 0: no warm Spark session at start (Spark-free tests)


def glue_call(endpoint: str, operation: str, body: dict, timeout: float = 5.0,
              env: Mapping[str, str] | None = None) -> dict:
    """One raw JSON 1.1 call (keeps non-standard fields boto3 drops, e.g. Metrics), signed
    (SigV4, botocore's signer) with the AWS_* keys of `env` (default: this process's)."""
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    env = os.environ if env is None else env
    request = AWSRequest(method="POST", url=endpoint, data=json.dumps(body).encode(), headers={
        "X-Amz-Target": f"AWSGlue.{operation}",
        "Content-Type": "application/x-amz-json-1.1",
    })
    access, secret = env.get(settings.ENV_ACCESS_KEY), env.get(settings.ENV_SECRET_KEY)
    if access and secret:
        region = env.get(settings.ENV_REGION, settings.DEFAULT_REGION)
        SigV4Auth(Credentials(access, secret), "glue", region).add_auth(request)
    req = urllib.request.Request(endpoint, data=request.body, headers=dict(request.headers))
    with urllib.request.urlopen(req, timeout=timeout) as resp:
        return json.loads(resp.read())


def accepted_clients(env: Mapping[str, str]) -> str:
    """Who may call the local Glue API (its ENV_GLUE_CLIENTS), each with the operations
    its AWS role has (glue_local.access): the administrator (the CLI, notebooks: the
    stack's root keys; everything), the watcher (the Lambda role: StartJobRun,
    GetJobRun(s), and ListJobs locally) and the Glue service's own jobs (the job role:
    their Data Catalog calls, GetTable, GetPartitions..., and their job's runs)."""
    clients: dict[str, tuple[str, str]] = {}
    if env.get(settings.ENV_ACCESS_KEY) and env.get(settings.ENV_SECRET_KEY):
        clients[ADMIN] = (env[settings.ENV_ACCESS_KEY], env[settings.ENV_SECRET_KEY])
    for name in (WATCHER, GLUE):  # the MinIO users' keys of those services
        keys = minio_users.user_keys(env, name)
        if keys:
            clients[name] = (keys[settings.ENV_ACCESS_KEY], keys[settings.ENV_SECRET_KEY])
    return minio_users.format_users(clients)


def _aws_profile(env: Mapping[str, str]) -> bool:
    return env.get(settings.ENV_PROFILE) == settings.PROFILE_AWS


def aws_identity(env: Mapping[str, str]) -> dict[str, str]:
    """The AWS key pair the environment gives (none: the default credential chain)."""
    return {k: env[k] for k in (settings.ENV_ACCESS_KEY, settings.ENV_SECRET_KEY) if env.get(k)}


def stack_admin_keys(env: Mapping[str, str]) -> dict[str, str]:
    """The stack's administrator key pair from the file settings.ENV_GLUE_CLIENTS_FILE names
    (empty when there is none)."""
    name = env.get(settings.ENV_GLUE_CLIENTS_FILE)
    if not name or not Path(name).is_file():
        return {}
    creds = json.loads(Path(name).read_text())
    return {k: creds[k] for k in (settings.ENV_ACCESS_KEY, settings.ENV_SECRET_KEY)}


def checked_clients(env: Mapping[str, str]) -> dict[str, str]:
    """ENV_GLUE_CLIENTS for the Glue API process, or {} to answer anyone (a hand-made
    local configuration). The aws profile runs jobs as the developer's AWS identity, so
    it always checks, and answers only the stack's administrator keys."""
    if _aws_profile(env):
        admin = stack_admin_keys(env)
        if not admin:
            raise ServiceError(
                "CDCLAB_PROFILE=aws: the Glue API runs jobs as your AWS identity, so it "
                "answers only requests signed with the stack's keys; set "
                f"{settings.ENV_GLUE_CLIENTS_FILE} to the stack's credentials file (compose mounts "
                "it at /run/cdclab/credentials.json)")
        pair = (admin[settings.ENV_ACCESS_KEY], admin[settings.ENV_SECRET_KEY])
        return {ENV_GLUE_CLIENTS: minio_users.format_users({ADMIN: pair})}
    if env.get(ENV_GLUE_CLIENTS):  # given (a container's own credentials file)
        return {ENV_GLUE_CLIENTS: env[ENV_GLUE_CLIENTS]}
    if minio_users.user_keys(env, "watcher"):  # a generated local stack
        return {ENV_GLUE_CLIENTS: accepted_clients(env)}
    return {}


class GlueApiService(Service):
    info = SERVICE
    depends_on = ("minio", "iceberg-rest")
    # its jobs' Spark catalog and GetTable's Iceberg tables use the catalog's token; the
    # clients' keys check their signatures (read once at start, then out of its env)
    secrets = frozenset({settings.ENV_CATALOG_TOKEN, ENV_GLUE_CLIENTS})
    scratch = True  # Spark's temp dirs and jar copies (spark_session follows TMPDIR)

    def __init__(self, warm: bool = True) -> None:
        self.warm = warm  # tests with Spark-free jobs skip the JVM start

    @classmethod
    def from_environ(cls, environ: Mapping[str, str]) -> GlueApiService:
        return cls(warm=environ.get(ENV_GLUE_WARM, "1") != "0")

    def endpoint(self, ctx: StackContext) -> str:
        return f"http://{LOOPBACK}:{ctx.ports['glue']}"

    def publish(self, ctx: StackContext) -> None:
        ctx.env[settings.ENV_GLUE_ENDPOINT] = self.endpoint(ctx)
        ctx.env.setdefault(settings.ENV_REGION, settings.DEFAULT_REGION)

    def container_env(self) -> dict[str, str]:
        return {ENV_GLUE_WARM: "1" if self.warm else "0"}

    def process(self, ctx: StackContext) -> ProcessSpec:
        from glue_local.server import ENV_GLUE_PORT

        port = str(ctx.ports["glue"])
        argv = python_module("glue_local", "--port", port, *(["--warm"] if self.warm else []))
        return ProcessSpec(argv=argv, env={
            **checked_clients(ctx.env),  # requests must be signed by one of these
            ENV_GLUE_PORT: port,
            settings.ENV_STATE_DIR: str(ctx.state_dir),
            # its jobs' S3 keys (read bronze and scripts, write silver); in the aws profile
            # the developer's AWS identity, which its jobs run as
            **(aws_identity(ctx.env) if _aws_profile(ctx.env)
               else minio_users.service_keys(ctx.env, self.name)),
        })

    def healthy(self, ctx: StackContext) -> bool:
        """It answers (an unsigned call is refused by a stack that checks signatures: an
        answer all the same, and no key is needed), and its Spark driver is not dead."""
        if not driver_healthy(ctx.state_dir):  # its JVM died: runs fail until it is back
            return False
        try:
            return "Jobs" in glue_call(self.endpoint(ctx), "GetJobs", {}, timeout=2.0, env={})
        except urllib.error.HTTPError as e:
            return e.code == 403 and "MissingAuthenticationToken" in e.read().decode(
                errors="replace")

    def startup_timeout(self) -> float:
        return 90.0
