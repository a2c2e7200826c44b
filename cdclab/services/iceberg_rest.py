"""Apache Iceberg's REST catalog server, durable (JDBC catalog in a SQLite file).

The server is the `iceberg-open-api` jar resolved by Maven coordinates; our loopback
launcher (iceberg_rest/LoopbackRESTCatalogServer.java) only binds it to one host.
Catalog properties travel as CATALOG_* variables, as the stock server reads them.
"""

from __future__ import annotations

import hashlib
import json
import secrets
import shutil
import subprocess
import urllib.request
from collections.abc import Mapping
from pathlib import Path

from cdclab.services.base import (
    LOOPBACK,
    ProcessSpec,
    Service,
    ServiceError,
    StackContext,
    bind_host,
)
from pipeline_contract import minio_users, resources, settings
from pipeline_contract.service_kit import INFRA, Port, ServiceInfo

SERVICE = ServiceInfo("iceberg-rest", "cdclab.services.iceberg_rest:IcebergRestService",
                      INFRA, (Port("iceberg-rest", 8181),))

LAUNCHER_SOURCE = resources.resource("iceberg_rest", "LoopbackRESTCatalogServer.java")
LAUNCHER_CLASS = "org.apache.iceberg.rest.LoopbackRESTCatalogServer"


def catalog_environment(
    *, jdbc_uri: str, warehouse: str, s3_endpoint: str, access_key: str, secret_key: str,
    region: str, host: str, port: int,
) -> dict[str, str]:
    """CATALOG_* / REST_* variables for the server (shared with docker compose)."""
    return {
        "CATALOG_URI": jdbc_uri,
        "CATALOG_WAREHOUSE": warehouse,
        "CATALOG_IO__IMPL": "org.apache.iceberg.aws.s3.S3FileIO",
        "CATALOG_S3_ENDPOINT": s3_endpoint,
        "CATALOG_S3_PATH__STYLE__ACCESS": "true",
        "CATALOG_S3_ACCESS__KEY__ID": access_key,
        "CATALOG_S3_SECRET__ACCESS__KEY": secret_key,
        "CATALOG_CLIENT_REGION": region,
        "AWS_REGION": region,
        "REST_HOST": host,
        "REST_PORT": str(port),
    }


def config_request(env: Mapping[str, str]) -> urllib.request.Request:
    """GET /v1/config with the stack's token (every route of the catalog requires it)."""
    headers = {}
    if env.get(settings.ENV_CATALOG_TOKEN):
        headers["Authorization"] = f"Bearer {env[settings.ENV_CATALOG_TOKEN]}"
    return urllib.request.Request(f"{env[settings.ENV_CATALOG_URI]}/v1/config", headers=headers)


def launcher_dir() -> Path:
    """Where the compiled launcher lives: one directory per source and server version."""
    source = LAUNCHER_SOURCE.read_bytes()
    digest = hashlib.sha256(source + settings.iceberg_rest_jar().name.encode()).hexdigest()[:16]
    return settings.cache_dir() / "classes" / f"iceberg-rest-launcher-{digest}"


def compiled_launcher() -> Path:
    """Compile the launcher once per source version into the cache; returns the class dir.
    (The container image compiles it at build time, so it needs only a JRE.)"""
    out = launcher_dir()
    if (out / "org/apache/iceberg/rest/LoopbackRESTCatalogServer.class").exists():
        return out
    if not shutil.which("javac"):
        raise ServiceError("javac not found: install a JDK 17 (not only a JRE).")
    tmp = out.with_suffix(".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    subprocess.run(
        ["javac", "-nowarn", "-cp", str(settings.iceberg_rest_jar()), "-d", str(tmp),
         str(LAUNCHER_SOURCE)],
        check=True, capture_output=True,
    )
    tmp.rename(out)
    return out


class IcebergRestService(Service):
    info = SERVICE
    # its own MinIO user's keys and the token it checks come from process(); its health
    # check asks with the token
    setup_secrets = frozenset({settings.ENV_CATALOG_TOKEN})
    depends_on = ("minio",)
    scratch = True  # sqlite-jdbc's native library, extracted at each start

    def prepare(self, ctx: StackContext) -> None:
        if not settings.iceberg_rest_jar().exists():
            raise ServiceError(
                f"{settings.iceberg_rest_jar()} is missing. Run `make setup` in a cdclab "
                "checkout (resolves org.apache.iceberg:iceberg-open-api by Maven "
                "coordinates: needs Maven and a JDK 17); the cache it fills serves every "
                "install."
            )
        if not shutil.which("java"):
            raise ServiceError("java not found: install a JDK 17 and put it on PATH.")
        self.publish(ctx)

    def publish(self, ctx: StackContext) -> None:
        ctx.env[settings.ENV_CATALOG_URI] = f"http://{LOOPBACK}:{ctx.ports['iceberg-rest']}"
        # stacks take it from their credentials; a bare context (a test's) gets one here
        ctx.env.setdefault(settings.ENV_CATALOG_TOKEN, secrets.token_urlsafe(32))

    def process(self, ctx: StackContext) -> ProcessSpec:
        db = ctx.service_dir("iceberg-rest") / "catalog.db"
        classes = compiled_launcher()
        keys = {**ctx.env, **minio_users.service_keys(ctx.env, self.name)}
        env = catalog_environment(
            jdbc_uri=f"jdbc:sqlite:file:{db}",
            warehouse=ctx.pipeline.warehouse,
            s3_endpoint=ctx.env[settings.ENV_S3_ENDPOINT],
            access_key=keys[settings.ENV_ACCESS_KEY],
            secret_key=keys[settings.ENV_SECRET_KEY],
            region=ctx.env.get(settings.ENV_REGION, settings.DEFAULT_REGION),
            host=bind_host(),
            port=ctx.ports["iceberg-rest"],
        )
        env["REST_AUTH_TOKEN"] = ctx.env[settings.ENV_CATALOG_TOKEN]  # read from env only
        return ProcessSpec(
            argv=[
                "java", "-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                # its live heap is ~25 MB: start small and give back what a burst took
                "-Xms16m", "-XX:MinHeapFreeRatio=10", "-XX:MaxHeapFreeRatio=30",
                f"-Djava.io.tmpdir={ctx.scratch_dir(self.name)}",  # Java ignores TMPDIR
                "-cp", f"{classes}:{settings.iceberg_rest_jar()}", LAUNCHER_CLASS,
            ],
            env=env,
        )

    def healthy(self, ctx: StackContext) -> bool:
        with urllib.request.urlopen(config_request(ctx.env), timeout=1) as resp:
            return resp.status == 200 and "defaults" in json.loads(resp.read())

    def startup_timeout(self) -> float:
        return 90.0
