"""DMS table mappings: selection with % wildcards, include/exclude, transformations."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dms_emitter.table_mappings import MappingError, TableMappings, default_mappings


def select(schema: str, table: str, action: str = "include", rule_id: str = "1") -> dict:
    return {"rule-type": "selection", "rule-id": rule_id, "rule-name": rule_id,
            "object-locator": {"schema-name": schema, "table-name": table},
            "rule-action": action}


def transform(target: str, action: str, rule_id: str, schema: str = "%", table: str = "%",
              **extra: object) -> dict:
    locator = {"schema-name": schema, "table-name": table}
    if "column" in extra:
        locator["column-name"] = extra.pop("column")
    return {"rule-type": "transformation", "rule-id": rule_id, "rule-name": rule_id,
            "rule-target": target, "object-locator": locator, "rule-action": action,
            **extra}


TABLES = [("public", "hosts"), ("public", "hosts_archive"), ("public", "reviews"),
          ("sales", "Orders Q1"), ("sales", "orders")]


def test_wildcards_include_and_exclude_like_dms() -> None:
    m = TableMappings.parse({"rules": [
        select("public", "%"), select("public", "%_archive", "exclude", "2"),
        select("sales", "Orders%", rule_id="3")]})
    assert [(p.schema, p.table) for p in m.select(TABLES)] == [
        ("public", "hosts"), ("public", "reviews"), ("sales", "Orders Q1")]
    explicit = TableMappings.parse({"rules": [select("sales", "orders%", "explicit")]})
    assert explicit.select(TABLES) == []  # explicit: no wildcards


@given(st.text(alphabet="ab%_.", max_size=6), st.text(alphabet="ab_.", max_size=6))
def test_percent_is_the_only_wildcard(pattern: str, name: str) -> None:
    m = TableMappings.parse({"rules": [select("s", pattern)]})
    like = "".join(".*" if c == "%" else re.escape(c) for c in pattern)
    assert m.selects("s", name) == (re.fullmatch(like, name) is not None)


def test_transformations_rename_folders_and_columns_and_add_columns() -> None:
    m = TableMappings.parse({"rules": [
        select("public", "%"),
        transform("schema", "rename", "2", "public", value="lake"),
        transform("table", "add-prefix", "3", "public", "hosts", value="src_"),
        transform("column", "rename", "4", "public", "hosts", column="name", value="title"),
        transform("column", "convert-uppercase", "5", "public", "%", column="url"),
        transform("column", "remove-column", "6", "public", "hosts", column="secret%"),
        transform("column", "add-column", "7", "public", "%", value="change_seq",
                  expression="$AR_H_CHANGE_SEQ"),
        transform("column", "add-column", "8", "public", "%", value="src",
                  expression="$AR_M_SOURCE_TABLE_NAME"),
        transform("column", "add-column", "9", "public", "%", value="env",
                  expression="'it''s lab'"),
    ]})
    plan = m.plan("public", "hosts")
    assert plan.folder == "lake/src_hosts"
    columns = ["id", "name", "url", "secret_a", "since"]
    kept = plan.kept(columns)
    assert plan.header(columns) == ("id", "title", "URL", "since", "change_seq", "src", "env")
    assert plan.row(kept, ("1", "n", "u", "s", "d"), "0042") == (
        "1", "n", "u", "d", "0042", "hosts", "it's lab")
    assert m.plan("public", "reviews").folder == "lake/reviews"


@pytest.mark.parametrize(("rule", "named"), [
    ({**select("public", "%"), "filters": [{"filter-type": "source"}]}, "'filters'"),
    ({**select("public", "%"), "rule-action": "include-all"}, "include-all"),
    (transform("column", "add-column", "9", value="x", expression="$a || $b"), "$a || $b"),
    (transform("table", "remove-column", "9"), "needs rule-target column"),
    (transform("column", "change-data-type", "9", column="a"), "change-data-type"),
    ({"rule-type": "table-settings", "rule-id": "9",
      "object-locator": {"schema-name": "s"}}, "table-settings"),
])
def test_what_is_not_implemented_fails_naming_the_rule(rule: dict, named: str) -> None:
    with pytest.raises(MappingError, match=re.escape(named)) as err:
        TableMappings.parse({"rules": [select("public", "%", rule_id="1"), rule]})
    assert "rule '" in str(err.value)


def test_no_included_table_or_bad_json_is_an_error() -> None:
    with pytest.raises(MappingError, match="no selection rule includes"):
        TableMappings.parse({"rules": [select("public", "%", "exclude")]})
    with pytest.raises(MappingError, match="not JSON"):
        TableMappings.parse("{rules", "mappings.json")


def test_the_default_mapping_is_one_table_with_change_seq_last() -> None:
    m = TableMappings.parse(default_mappings("public", "hosts_demo", "change_seq"))
    assert [p.qualified for p in m.select(TABLES + [("public", "hosts_demo")])] == [
        "public.hosts_demo"]
    plan = m.plan("public", "hosts_demo")
    assert plan.folder == "public/hosts_demo"
    assert plan.header(["id", "a"]) == ("id", "a", "change_seq")
