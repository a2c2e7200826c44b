"""Shared fixtures: one test resource per external dependency (tests/resources/)."""

from __future__ import annotations

import importlib.util

_RESOURCES = ["minio", "iceberg_rest", "postgres", "stack"]

pytest_plugins = [
    f"tests.resources.{name}"
    for name in _RESOURCES
    if importlib.util.find_spec(f"tests.resources.{name}") is not None
]
