"""GetTables' Expression (glue_local.catalog_api.table_name_filter): "A regular expression
pattern. If present, only those tables whose names match the pattern are returned"
(AWS Glue API, GetTables); a pattern that is not one is InvalidInputException."""

from __future__ import annotations

import re
from types import SimpleNamespace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from glue_local.catalog_api import OPERATIONS, table_name_filter
from glue_local.errors import GlueError

NAMES = st.from_regex(r"[a-z_][a-z0-9_]{0,11}", fullmatch=True)


@given(st.lists(NAMES, unique=True, max_size=8), NAMES)
def test_a_literal_name_selects_exactly_that_table(names: list[str], wanted: str) -> None:
    matches = table_name_filter(re.escape(wanted))
    assert [n for n in names if matches(n)] == [n for n in names if n == wanted]


@given(st.lists(NAMES, unique=True, max_size=8), st.from_regex(r"[a-z]{1,3}", fullmatch=True))
def test_a_prefix_pattern_selects_the_names_starting_with_it(names: list[str],
                                                            prefix: str) -> None:
    matches = table_name_filter(prefix + ".*")
    assert [n for n in names if matches(n)] == [n for n in names if n.startswith(prefix)]


@given(NAMES)
def test_no_expression_keeps_every_table(name: str) -> None:
    assert table_name_filter(None)(name)


@given(st.lists(NAMES, unique=True, max_size=8), st.from_regex(r"[a-z]{1,3}", fullmatch=True))
def test_the_blueprint_prefix_star_selects_the_names_starting_with_it(
        names: list[str], prefix: str) -> None:
    """AWS's blueprint sample: get_tables(Expression=table_prefix + "*")."""
    matches = table_name_filter(prefix + "*")
    assert [n for n in names if matches(n)] == [n for n in names if n.startswith(prefix)]


@pytest.mark.parametrize("bad", ["(", "[a-", "a{2,1}", "orders\\"])
def test_a_bad_pattern_is_invalid_input_naming_it(bad: str) -> None:
    with pytest.raises(GlueError) as e:
        table_name_filter(bad)
    assert e.value.code == "InvalidInputException"
    assert repr(bad) in e.value.message and "not a valid regular expression" in e.value.message


@given(st.text(max_size=5), st.sampled_from("\n\r\x00\x1f"), st.text(max_size=5))
def test_a_pattern_of_more_than_one_line_is_invalid_input(head: str, breaks: str,
                                                          tail: str) -> None:
    with pytest.raises(GlueError, match="InvalidInputException"):
        table_name_filter(head + breaks + tail)


def test_limits_named() -> None:
    with pytest.raises(GlueError, match="2049 bytes long; at most 2048"):
        table_name_filter("a" * 2049)
    table_name_filter("a" * 2048)
    with pytest.raises(GlueError, match="must be a string"):
        table_name_filter(7)


def test_get_tables_applies_the_expression(tmp_path) -> None:
    ctx = SimpleNamespace(state_dir=tmp_path)
    OPERATIONS["CreateDatabase"](ctx, {"DatabaseInput": {"Name": "sales"}})
    for name in ["orders", "orders_bronze", "customers"]:
        OPERATIONS["CreateTable"](ctx, {"DatabaseName": "sales", "TableInput": {"Name": name}})

    def listed(expression: str) -> list[str]:
        out = OPERATIONS["GetTables"](ctx, {"DatabaseName": "sales", "Expression": expression})
        return [t["Name"] for t in out["TableList"]]

    assert listed("orders.*") == ["orders", "orders_bronze"]
    assert listed("orders") == ["orders"]
    assert listed("orders|customers") == ["customers", "orders"]
    assert listed(".*_bronze") == ["orders_bronze"] == listed("*_bronze")
    assert listed("ord*") == ["orders", "orders_bronze"]
    with pytest.raises(GlueError, match="InvalidInputException"):
        listed("orders(")
