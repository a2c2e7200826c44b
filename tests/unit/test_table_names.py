"""Two tables never share a name where their data lives: bronze folder, catalog table
(bronze, silver, tombstone, quarantine), bookmark key, source name (pure; hypothesis over
table sets with colliding and near-colliding names, cases, rename rules, overrides)."""

from __future__ import annotations

import dataclasses
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cdclab.tables_sync import build_specs, layout_of, overrides_for
from pipeline_contract.dms_format.source_types import PgType, SourceColumn
from pipeline_contract.dms_format.table_mappings import TableMappings
from pipeline_contract.settings import load_pipeline
from pipeline_contract.table_names import NameCollision, check_names, collisions
from pipeline_contract.table_specs import SourceTable, SpecError, build_spec

BASE = dataclasses.replace(load_pipeline(), tables={})
SUGGESTION = re.compile(r'\[tables\."([^"]+)"\] (\w+) = "([^"]+)"')
OVERRIDE_KEYS = ("bronze_table", "silver_table", "tombstone_table", "quarantine_table",
                 "transformation_ctx")


def source(schema: str, table: str, folder: str | None = None) -> SourceTable:
    cols = [SourceColumn("id", PgType("int4"), True)]
    return SourceTable(schema, table, folder or f"{schema}/{table}", cols, ["id"],
                       ["change_seq"], ["id"])


def specs_of(tables: list[SourceTable], overrides: dict[str, dict] | None = None,
             ) -> list[dict[str, Any]]:
    p = dataclasses.replace(BASE, tables=overrides or {})
    return [build_spec(t, layout_of(p), overrides_for(p, t.qualified)) for t in tables]


def names_by_namespace(specs: list[dict[str, Any]]) -> list[list[str]]:
    """The oracle: every name each spec claims, per namespace, as the check compares
    them (S3 folders exactly; catalog tables, bookmark keys and sources ignoring case)."""
    def catalog(qualified: str) -> str:
        return ".".join(qualified.split(".")[-2:]).casefold()

    return [
        [s["bronze_location"] for s in specs],
        [n for s in specs for n in (f"{s['bronze_database']}.{s['bronze_table']}".casefold(),
                                    catalog(s["silver_table"]), catalog(s["tombstone_table"]),
                                    catalog(s["quarantine_table"]))],
        [s["transformation_ctx"].casefold() for s in specs],
        [s["name"].casefold() for s in specs],
    ]


def test_the_findings_two_schemas_and_two_cases_are_refused_naming_both() -> None:
    with pytest.raises(NameCollision) as err:
        build_specs([source("s1", "orders"), source("s2", "orders")], BASE)
    text = str(err.value)
    assert "s1.orders and s2.orders share the silver table 'airbnb.orders_silver'" in text
    assert "s1.orders and s2.orders share the bronze catalog table 'airbnb.orders_bronze'" \
        in text
    assert "quarantine table 'airbnb.orders_quarantine'" in text
    assert '[tables."s2.orders"] silver_table = "s2_orders_silver"' in text
    with pytest.raises(NameCollision) as err:
        build_specs([source("public", "Orders"), source("public", "orders")], BASE)
    assert str(err.value).endswith(
        "public.Orders and public.orders share the source name 'public.orders', ignoring "
        "case: AWS DMS does not replicate tables whose names differ only in case "
        "(CHAP_Source.PostgreSQL limitations); exclude one with a selection rule")
    assert "override" not in str(err.value)  # no override makes DMS replicate both
    with pytest.raises(NameCollision) as err:
        build_specs([source("public", "a-b"), source("public", "a_b")], BASE)
    assert "public.a-b and public.a_b share the bookmark key 'bronze_public_a_b'" in str(
        err.value)
    assert '[tables."public.a_b"] transformation_ctx = "bronze_public_a_b_2"' in str(err.value)


def test_one_tables_silver_name_may_not_be_anothers_quarantine_name() -> None:
    overrides = {"s.b": {"silver_table": "a_quarantine"}}
    with pytest.raises(NameCollision, match=re.escape(
            "the quarantine table of s.a and the silver table of s.b are both "
            "'airbnb.a_quarantine'")):
        check_names(specs_of([source("s", "a"), source("s", "b")], overrides))


def test_the_demo_tables_lake_names_are_claimed_too() -> None:
    """[source].table takes the [lake] names: a table called hosts gets hosts_bronze,
    which is the demo table's bronze catalog table name."""
    p = load_pipeline()
    specs = specs_of([source(p.source.schema, p.source.table), source("other", "hosts")])
    assert {(a.role, b.table) for a, b in collisions(specs)} >= {
        ("bronze catalog table", "other.hosts"), ("silver table", "other.hosts")}


def test_a_rename_rule_that_writes_two_tables_to_one_folder_is_refused() -> None:
    m = TableMappings.parse({"rules": [
        {"rule-type": "selection", "rule-id": "1", "rule-action": "include",
         "object-locator": {"schema-name": "s", "table-name": "%"}},
        {"rule-type": "transformation", "rule-id": "2", "rule-action": "rename",
         "rule-target": "table", "value": "a",
         "object-locator": {"schema-name": "s", "table-name": "b"}}]})
    tables = [source(p.schema, p.table, p.folder) for p in m.select([("s", "a"), ("s", "b")])]
    with pytest.raises(NameCollision, match=re.escape(
            "s.a and s.b share the bronze folder 's3://cdclab-bronze/dms/airbnb_db/s/a/': "
            "give one another target name with a table-mapping rename rule")):
        check_names(specs_of(tables))


def test_a_collision_is_a_spec_error_the_cli_reports_without_a_traceback() -> None:
    assert issubclass(NameCollision, SpecError)


# --- properties -----------------------------------------------------------------------
SCHEMAS = st.sampled_from(["s1", "S1", "s2", "sales"])
NAMES = st.text(alphabet="aAb-_ .", min_size=1, max_size=3)  # case and glue_name junk
OVERRIDE_NAMES = st.sampled_from(["x", "x_silver", "x_quarantine", "x_bronze", "a_silver",
                                  "a_quarantine", "bronze_s1_a"])


@st.composite
def table_sets(draw: st.DrawFn) -> tuple[list[SourceTable], dict[str, dict]]:
    """Source tables (distinct, as a database has them), some renamed by table-mapping
    rules, some with [tables] overrides drawn from a small pool of names."""
    pairs = draw(st.lists(st.tuples(SCHEMAS, NAMES), min_size=1, max_size=5, unique=True))
    rules: list[dict[str, Any]] = [
        {"rule-type": "selection", "rule-id": "1", "rule-action": "include",
         "object-locator": {"schema-name": "%", "table-name": "%"}}]
    for i, (schema, table) in enumerate(pairs):
        renamed = draw(st.none() | NAMES)
        if renamed is not None:
            rules.append({"rule-type": "transformation", "rule-id": str(i + 2),
                          "rule-action": "rename", "rule-target": "table", "value": renamed,
                          "object-locator": {"schema-name": schema, "table-name": table}})
    plans = TableMappings.parse({"rules": rules}).select(pairs)
    tables = [source(p.schema, p.table, p.folder) for p in plans]
    overrides: dict[str, dict] = {}
    for t in tables:
        chosen = draw(st.dictionaries(st.sampled_from(OVERRIDE_KEYS), OVERRIDE_NAMES,
                                      max_size=2))
        if chosen:
            overrides[t.qualified] = chosen
    return tables, overrides


@given(table_sets())
def test_refused_exactly_when_two_claims_share_a_name(case) -> None:
    tables, overrides = case
    specs = specs_of(tables, overrides)
    shared = any(len(set(names)) < len(names) for names in names_by_namespace(specs))
    if not shared:
        check_names(specs)
        return
    with pytest.raises(NameCollision) as err:
        check_names(specs)
    found = collisions(specs)
    case_only = {(a.table, b.table) for a, b in found if a.role == "source name"}
    for a, b in found:  # each names both tables and the name
        if (a.table, b.table) in case_only and a.role != "source name":
            continue  # said once: DMS cannot replicate both, whatever their names
        assert f"{a.table} and {b.table}" in str(err.value) or (
            f"of {a.table} and the" in str(err.value) and f"of {b.table} are" in str(err.value))
        assert repr(b.name) in str(err.value)


@given(table_sets(), st.data())
def test_a_forced_collision_is_always_refused(case, data: st.DataObject) -> None:
    tables, overrides = case
    specs = specs_of(tables, overrides)
    if len(specs) < 2:
        return
    i, j = data.draw(st.lists(st.integers(0, len(specs) - 1), min_size=2, max_size=2,
                              unique=True))
    a, b = specs[i], specs[j]
    role = data.draw(st.sampled_from(["silver_table", "quarantine_table", "bronze_table",
                                      "transformation_ctx"]))
    taken = {"silver_table": a["silver_table"], "quarantine_table": a["quarantine_table"],
             "bronze_table": a["bronze_table"],
             "transformation_ctx": a["transformation_ctx"]}[role].split(".")[-1]
    into = data.draw(st.sampled_from(["silver_table", "quarantine_table", "bronze_table"])
                     if role != "transformation_ctx" else st.just(role))
    changed = {**overrides, b["name"]: {**overrides.get(b["name"], {}), into: taken}}
    with pytest.raises(NameCollision) as err:
        check_names(specs_of(tables, changed))
    assert a["name"] in str(err.value) and b["name"] in str(err.value)


@given(st.lists(st.text(alphabet="abcdefghij", min_size=1, max_size=6), min_size=1,
                max_size=6, unique=True), st.booleans())
def test_distinct_names_are_never_refused(names: list[str], upper: bool) -> None:
    """Names that stay apart after lower-casing and cleaning never collide, whatever
    their case in the source."""
    tables = [source("sales", f"T{i}_{n.upper() if upper else n}") for i, n in
              enumerate(names)]
    check_names(build_specs(tables, BASE).specs)


@settings(max_examples=50)
@given(table_sets())
def test_the_suggested_overrides_resolve_what_overrides_can(case) -> None:
    """What the error says to do works: applying its suggested overrides leaves only the
    collisions an override cannot fix (a shared folder, names differing only in case)."""
    tables, overrides = case
    for _ in range(4):
        try:
            check_names(specs_of(tables, overrides))
            return
        except NameCollision as exc:
            found = SUGGESTION.findall(str(exc))
            if not found:
                assert "rename rule" in str(exc) or "differ only in case" in str(exc)
                return
            for table, key, value in found:
                overrides = {**overrides, table: {**overrides.get(table, {}), key: value}}
    check_names(specs_of(tables, overrides))
