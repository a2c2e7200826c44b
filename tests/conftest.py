"""Shared fixtures: one test resource per external dependency (tests/resources/)."""

from __future__ import annotations

import importlib.util
import os
import sys

import boto3
import pytest
from hypothesis import HealthCheck, settings

from pipeline_contract.settings import ENV_DRIVER_WARMUP

# Speed is measured by bench/, never by tests: no per-example deadline (CI shares 2 cores).
settings.register_profile(
    "cdclab", deadline=None, suppress_health_check=[HealthCheck.too_slow], max_examples=100
)
settings.load_profile("cdclab")

# The tests' Glue services (embedded and in containers) start drivers and put them to
# work at once, beside another test worker: no JIT warm-up competing for the two cores
# (tests/integration/test_jit_warmup.py exercises it)
os.environ.setdefault(ENV_DRIVER_WARMUP, "0")

# stack first: launch imports it
_RESOURCES = ["stack", "minio", "iceberg_rest", "postgres", "emitter", "spark", "installed"]

pytest_plugins = [
    f"tests.resources.{name}"
    for name in _RESOURCES
    if importlib.util.find_spec(f"tests.resources.{name}") is not None
]


@pytest.fixture(autouse=True)
def cold_lambda(monkeypatch):
    """Each test meets the Lambda handler as a cold environment: no object it checked in
    an earlier test is known to be good (lambda_function keeps them in module state)."""
    handler = sys.modules.get("lambda_shim.lambda_function")
    if handler is not None:
        monkeypatch.setattr(handler, "_passed", type(handler._passed)())


@pytest.fixture(autouse=True)
def no_default_boto3_session(monkeypatch):
    """Each test's `boto3.client(...)` reads the credentials its own environment holds: the
    default session caches the first it resolved (botocore `Session.get_credentials`), so
    a client made in an earlier test (another MinIO, another user) would sign with those."""
    monkeypatch.setattr(boto3, "DEFAULT_SESSION", None)
