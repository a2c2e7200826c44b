"""The real S3 server and the real Iceberg REST catalog: up, reachable, durable."""

from __future__ import annotations

import json
import urllib.request

import pytest

from cdclab import settings

pytestmark = pytest.mark.integration


def _request(uri: str, path: str, body: dict | None = None) -> dict:
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(
        uri + path, data=data, headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(req, timeout=10) as resp:
        return json.loads(resp.read())


def test_minio_has_the_pipeline_buckets(minio: dict) -> None:
    names = {b["Name"] for b in minio["s3"].list_buckets()["Buckets"]}
    lake = settings.load_pipeline().lake
    assert {lake.bronze_bucket, lake.silver_bucket, lake.scripts_bucket} <= names


def test_rest_catalog_is_durable_across_restarts(iceberg_rest: dict) -> None:
    """The JDBC catalog lives in a file, not the fixture's in-memory SQLite."""
    uri = iceberg_rest["uri"]
    _request(uri, "/v1/namespaces", {"namespace": ["durability_probe"], "properties": {}})
    iceberg_rest["restart"]()
    assert ["durability_probe"] in _request(uri, "/v1/namespaces")["namespaces"]


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
    addrs = _listening_addresses(iceberg_rest["ctx"].ports["iceberg_rest"])
    loopback = {"0100007F", "0000000000000000FFFF00000100007F"}  # 127.0.0.1, ::ffff:127.0.0.1
    assert addrs and addrs <= loopback, addrs
