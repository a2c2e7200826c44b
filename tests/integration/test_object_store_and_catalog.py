"""The real S3 server and the real Iceberg REST catalog: up, reachable, durable."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest

from pipeline_contract import settings

pytestmark = pytest.mark.integration


def _request(uri: str, path: str, body: dict | None = None, token: str | None = None,
             data: bytes | None = None) -> dict:
    data = json.dumps(body).encode() if body is not None else data
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    req = urllib.request.Request(uri + path, data=data, headers=headers)
    with urllib.request.urlopen(req, timeout=10) as resp:
        return json.loads(resp.read())


def _refused(uri: str, path: str, **kwargs) -> tuple[int, dict]:
    with pytest.raises(urllib.error.HTTPError) as info:
        _request(uri, path, **kwargs)
    return info.value.code, json.loads(info.value.read())["error"]


def test_minio_has_the_pipeline_buckets(minio: dict) -> None:
    names = {b["Name"] for b in minio["s3"].list_buckets()["Buckets"]}
    lake = settings.load_pipeline().lake
    assert {lake.bronze_bucket, lake.silver_bucket, lake.scripts_bucket} <= names


def test_rest_catalog_is_durable_across_restarts(iceberg_rest: dict) -> None:
    """The JDBC catalog lives in a file, not the fixture's in-memory SQLite."""
    uri, token = iceberg_rest["uri"], iceberg_rest["env"][settings.ENV_CATALOG_TOKEN]
    _request(uri, "/v1/namespaces", {"namespace": ["durability_probe"], "properties": {}},
             token=token)
    iceberg_rest["restart"]()
    assert ["durability_probe"] in _request(uri, "/v1/namespaces", token=token)["namespaces"]


def test_rest_catalog_requires_the_token_and_caps_bodies(iceberg_rest: dict) -> None:
    """Anyone on the machine can reach a loopback port: every route wants the stack's
    generated bearer token, answered as Iceberg's ErrorResponse (clients raise
    NotAuthorizedException); a body over the cap is refused before the catalog reads it."""
    uri, token = iceberg_rest["uri"], iceberg_rest["env"][settings.ENV_CATALOG_TOKEN]
    for path in ("/v1/config", "/v1/namespaces"):
        code, error = _refused(uri, path)
        assert code == 401 and error["type"] == "NotAuthorizedException"
        assert "CDCLAB_CATALOG_TOKEN" in error["message"]
        assert _refused(uri, path, token=token[:-1] + "x")[0] == 401
    assert _request(uri, "/v1/config", token=token)["defaults"] is not None
    code, error = _refused(uri, "/v1/namespaces", token=token,
                           data=b"{" + b" " * (16 << 20) + b"}")
    assert code == 413 and "REST_MAX_BODY_BYTES" in error["message"]
    code, _ = _refused(uri, "/v1/namespaces", data=json.dumps(
        {"namespace": ["anonymous"], "properties": {}}).encode())
    assert code == 401
    assert ["anonymous"] not in _request(uri, "/v1/namespaces", token=token)["namespaces"]


def _listening_addresses(port: int) -> set[str]:
    """Hex local addresses of listening sockets on `port` (IPv4 and IPv6 tables)."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as f:
            for row in (line.split() for line in f.readlines()[1:]):
                addr, hex_port = row[1].rsplit(":", 1)
                if row[3] == "0A" and int(hex_port, 16) == port:
                    found.add(addr)
    return found


def test_rest_catalog_binds_loopback_only(iceberg_rest: dict) -> None:
    addrs = _listening_addresses(iceberg_rest["ctx"].ports["iceberg-rest"])
    loopback = {"0100007F", "0000000000000000FFFF00000100007F"}  # 127.0.0.1, ::ffff:127.0.0.1
    assert addrs and addrs <= loopback, addrs


def test_the_emitter_spool_uploads_in_parts_from_its_nameless_file(minio: dict) -> None:
    """S3Sink.writer's spool has no name (nothing left in /tmp by a killed emitter); the
    multipart upload reopens it through /proc/self/fd once per part."""
    import hashlib
    import os

    from dms_emitter.sink import S3Sink

    lake = settings.load_pipeline().lake
    sink = S3Sink(lake.bronze_bucket, "spool-probe", minio["s3"])
    block = os.urandom(1 << 20)
    with sink.writer("LOAD00000001.csv") as out:
        for _ in range(20):  # 20 MiB: three 8 MiB parts
            out.write(block)
    got = minio["s3"].get_object(Bucket=lake.bronze_bucket, Key="spool-probe/LOAD00000001.csv")
    assert hashlib.sha256(got["Body"].read()).digest() == hashlib.sha256(block * 20).digest()
    minio["s3"].delete_object(Bucket=lake.bronze_bucket, Key="spool-probe/LOAD00000001.csv")
