"""MinIO, built from its Go module at the pinned release, as the S3 server."""

from __future__ import annotations

import urllib.request

from cdclab.services.base import (
    ENV_MINIO_USERS,
    LOOPBACK,
    ROOT_KEYS,
    ProcessSpec,
    Service,
    ServiceError,
    StackContext,
    bind_host,
    private_dir,
)
from pipeline_contract import minio_users, settings
from pipeline_contract.service_kit import INFRA, Port, ServiceInfo

SERVICE = ServiceInfo("minio", "cdclab.services.minio:MinioService", INFRA,
                      (Port("minio", 9000), Port("minio-console", 9001)))


def s3_client(env: dict[str, str], timeout: float | None = None):
    """A boto3 S3 client for the stack's MinIO (path-style, as MinIO wants); `timeout`
    bounds connecting and reading, for callers that must answer fast (status)."""
    import boto3  # here: the registry imports this module, containers' health checks it
    from botocore.config import Config

    limits = {} if timeout is None else {"connect_timeout": timeout, "read_timeout": timeout}
    return boto3.client(
        "s3",
        endpoint_url=env[settings.ENV_S3_ENDPOINT],
        aws_access_key_id=env[settings.ENV_ACCESS_KEY],
        aws_secret_access_key=env[settings.ENV_SECRET_KEY],
        region_name=env.get(settings.ENV_REGION, settings.DEFAULT_REGION),
        config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 3},
                      **limits),
    )


MINIO_GOGC = "25"


class MinioService(Service):
    info = SERVICE
    # the server gets the root pair as MINIO_ROOT_* (process()); its set-up makes the
    # buckets and every service's user with it
    setup_secrets = ROOT_KEYS | {ENV_MINIO_USERS}

    def prepare(self, ctx: StackContext) -> None:
        if not settings.minio_binary().exists():
            raise ServiceError(
                f"MinIO binary not found at {settings.minio_binary()}. Run `make setup` "
                "in a cdclab checkout (scripts/bootstrap.sh builds it from its Go module: "
                "needs Go); the cache it fills (CDCLAB_CACHE) serves every install."
            )
        self.publish(ctx)

    def publish(self, ctx: StackContext) -> None:
        ctx.env[settings.ENV_S3_ENDPOINT] = f"http://{LOOPBACK}:{ctx.ports['minio']}"
        ctx.env.setdefault(settings.ENV_REGION, settings.DEFAULT_REGION)

    def process(self, ctx: StackContext) -> ProcessSpec:
        data = private_dir(ctx.service_dir("minio") / "data")  # users' secrets are in it
        return ProcessSpec(
            argv=[
                str(settings.minio_binary()), "server", str(data),
                "--address", f"{bind_host()}:{ctx.ports['minio']}",
                "--console-address", f"{bind_host()}:{ctx.ports['minio-console']}",
            ],
            env={
                "MINIO_ROOT_USER": ctx.env[settings.ENV_ACCESS_KEY],
                "MINIO_ROOT_PASSWORD": ctx.env[settings.ENV_SECRET_KEY],
                "MINIO_UPDATE": "off",
                "MINIO_BROWSER_REDIRECT": "off",
                # Go's heap grows to twice what is live before it collects (GOGC 100):
                # after a run's concurrent reads MinIO kept ~410 MiB; at 25, ~210 MiB,
                # for the same CPU (docs/performance.md, eleventh run)
                "GOGC": MINIO_GOGC,
            },
        )

    def healthy(self, ctx: StackContext) -> bool:
        url = f"http://{LOOPBACK}:{ctx.ports['minio']}/minio/health/live"
        with urllib.request.urlopen(url, timeout=1) as resp:
            return resp.status == 200

    def after_start(self, ctx: StackContext) -> None:
        p = ctx.pipeline
        lake = p.lake
        s3 = s3_client(ctx.env)
        existing = {b["Name"] for b in s3.list_buckets().get("Buckets", [])}
        # the lab's buckets, and the user's own the jobs may reach ([glue_job] job_buckets)
        for bucket in (lake.bronze_bucket, lake.silver_bucket, lake.scripts_bucket,
                       *p.glue_job.job_buckets):
            if bucket not in existing:
                s3.create_bucket(Bucket=bucket)
        # one user per service, with a policy scoped to its buckets and prefixes
        minio_users.ensure_users(ctx.env, p)

    def address(self, ctx: StackContext) -> str:
        return (
            f"http://{LOOPBACK}:{ctx.ports['minio']} "
            f"(console http://{LOOPBACK}:{ctx.ports['minio-console']})"
        )
