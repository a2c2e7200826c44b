"""DMS table mappings: selection with % wildcards, include/exclude, transformations."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pipeline_contract.dms_format.table_mappings import (
    MappingError,
    TableMappings,
    default_mappings,
    folder_conflicts,
    read_document,
)
from pipeline_contract.settings_check import SettingsError


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
    ({**select("public", "%"), "filters": [{"filter-type": "source"}]}, ".filters = "),
    ({**select("public", "%"), "rule-action": "include-all"}, "include-all"),
    (transform("column", "add-column", "9", value="x", expression="$a || $b"), "$a || $b"),
    (transform("table", "remove-column", "9"), "needs rule-target column"),
    (transform("column", "change-data-type", "9", column="a"), "change-data-type"),
    ({"rule-type": "table-settings", "rule-id": "9",
      "object-locator": {"schema-name": "s"}}, "table-settings"),
])
def test_what_is_not_implemented_fails_naming_the_rule(rule: dict, named: str) -> None:
    with pytest.raises(MappingError, match=re.escape(named)) as err:
        TableMappings.parse({"rules": [select("public", "%", rule_id="1"), rule]}, "m.json")
    assert str(err.value).startswith(f"m.json: rules[1] (rule-id {rule['rule-id']!r}).")
    assert isinstance(err.value, SettingsError)  # one error type for every bad setting


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


@pytest.mark.parametrize(("rule", "key", "allowed"), [
    ({**select("public", "%"), "rule_action": "include"}, "rules[0] (rule-id '1').rule_action",
     "not a key of a rule"),
    ({**select("public", "%"), "rule-id": True}, "rules[0].rule-id", "rule's number"),
    ({**select("public", "%"), "object-locator": ["public"]}, "object-locator", "an object"),
    ({**select("public", "%"), "object-locator": {"table-name": "t"}},
     "object-locator.schema-name is missing", "the schema"),
    ({**select("public", "%"), "object-locator": {"schema-name": 7}},
     "object-locator.schema-name = 7", "a string"),
    ({**select("public", "%"), "object-locator": {"schema-name": "s", "tabel-name": "t"}},
     "object-locator.tabel-name", "not a key of a object-locator"),
    ({**select("public", "%"), "object-locator": {"schema-name": "s", "table-type": "view"}},
     "table-type", "not views"),
    ({**select("public", "%"), "rule-action": None}, "rule-action = null", "one of include"),
    (transform("table", "rename", "2"), "value is missing", "rename needs a value"),
    (transform("column", "rename", "2", value="x"), "column-name is missing", "% for any"),
    (transform("column", "add-column", "2", value="x"), "expression is missing", "literal"),
])
def test_bad_keys_and_values_name_the_rule_key_value_and_what_is_allowed(
        rule: dict, key: str, allowed: str) -> None:
    with pytest.raises(MappingError) as err:
        TableMappings.parse({"rules": [rule]}, "m.json")
    assert key in str(err.value) and allowed in str(err.value)
    assert str(err.value).startswith("m.json: ")


@pytest.mark.parametrize(("doc", "named"), [
    ([], "expected a JSON object"),
    ({"rules": {}}, "rules = {}: a list of rules"),
    ({"rule": []}, "rule = []: not a key"),
    ({"rules": ["x"]}, 'rules[0] = "x": a rule'),
])
def test_bad_documents_are_refused_naming_what(doc: object, named: str) -> None:
    with pytest.raises(MappingError, match=re.escape(named)):
        TableMappings.parse(doc, "m.json")  # type: ignore[arg-type]


_JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=5),
                     lambda inner: st.lists(inner, max_size=2)
                     | st.dictionaries(st.text(max_size=5), inner, max_size=2), max_leaves=4)
_RULE_KEYS = ("rule-type", "rule-id", "rule-name", "rule-action", "rule-target",
              "object-locator", "value", "expression", "old-value", "data-type", "filters")


@given(st.sampled_from(_RULE_KEYS), _JSON,
       st.sampled_from([select("public", "%"), transform("column", "rename", "2",
                                                         column="a", value="b")]))
def test_any_value_of_any_key_parses_or_is_a_mapping_error_naming_the_rule(
        key: str, value: object, rule: dict) -> None:
    """Never a bare TypeError or KeyError: a value the lab cannot apply is refused
    naming the rule (and the key, when one key is at fault)."""
    include = select("public", "%", rule_id="9")
    try:
        TableMappings.parse({"rules": [include, {**rule, key: value}]}, "m.json")
    except MappingError as exc:
        assert str(exc).startswith("m.json: rules[1]")


def test_read_document_names_the_file(tmp_path) -> None:
    path = tmp_path / "m.json"
    with pytest.raises(MappingError, match=re.escape(f"{path}: cannot read")):
        read_document(path)
    path.write_text("{rules")
    with pytest.raises(MappingError, match=re.escape(f"{path}: not JSON")):
        read_document(path)
    path.write_text(json.dumps(default_mappings("public", "t", "change_seq")))
    assert read_document(path)["rules"][0]["rule-action"] == "include"


def test_tables_dms_would_mix_are_named_in_pairs() -> None:
    m = TableMappings.parse({"rules": [
        select("%", "%"),
        transform("table", "rename", "2", "s2", "orders_v2", value="orders"),
        transform("schema", "rename", "3", "s2", "%", value="s1")]})
    plans = m.select([("s1", "orders"), ("s2", "orders_v2"), ("s1", "Items"),
                      ("s1", "items"), ("s1", "other")])
    conflicts = folder_conflicts(plans)
    assert len(conflicts) == 2
    assert "s1.orders and s2.orders_v2 are both written to the folder 's1/orders'" in (
        conflicts[0])
    assert "s1.Items and s1.items differ only in case" in conflicts[1]
    plain = TableMappings.parse({"rules": [select("%", "%")]})
    assert folder_conflicts(plain.select([("s1", "orders"), ("s2", "orders")])) == []
