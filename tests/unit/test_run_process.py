"""A run process looks each of PySpark's JVM functions up once (quick_sql_functions): the
member PySpark would find is the one it gets, per gateway, and PySpark's own lookup runs
once per name."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from pyspark.sql import functions

from glue_local import run_process


@pytest.fixture
def lookups(monkeypatch) -> list[tuple[int, str]]:
    seen: list[tuple[int, str]] = []

    def pyspark_lookup(name: str, sc) -> tuple[int, str]:
        seen.append((id(sc._gateway), name))
        return (id(sc._gateway), name)

    monkeypatch.setattr(functions, "_get_jvm_function", pyspark_lookup)
    run_process.quick_sql_functions()
    return seen


def test_each_name_is_looked_up_once_per_gateway(lookups):
    one, other = (SimpleNamespace(_gateway=object()) for _ in range(2))
    for _ in range(3):
        assert functions._get_jvm_function("col", one) == (id(one._gateway), "col")
        assert functions._get_jvm_function("lit", one) == (id(one._gateway), "lit")
    assert functions._get_jvm_function("col", other) == (id(other._gateway), "col")
    assert lookups == [(id(one._gateway), "col"), (id(one._gateway), "lit"),
                       (id(other._gateway), "col")]


def test_applied_twice_it_wraps_once(lookups):
    run_process.quick_sql_functions()
    sc = SimpleNamespace(_gateway=object())
    functions._get_jvm_function("when", sc)
    functions._get_jvm_function("when", sc)
    assert lookups == [(id(sc._gateway), "when")]
