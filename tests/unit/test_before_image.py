"""add-before-image-columns: the rule as DMS documents it, and the rows the builder writes
with it (what real DMS output shows: docs/dms-fidelity.md, "Before-image columns")."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dms_emitter import pgoutput as pg
from dms_emitter.changes import PK_UPDATE_AS_DELETE_INSERT, ChangeBuilder, TableSpec
from dms_emitter.dms_csv import CsvFormat, parse_dms_csv
from pipeline_contract.dms_format import parquet_types as pt
from pipeline_contract.dms_format.source_types import PgType, SourceColumn
from pipeline_contract.dms_format.table_mappings import (
    BeforeImage,
    MappingError,
    TableMappings,
    default_mappings,
)

INT4, TEXT, TIMESTAMP = 23, 25, 1114


def select(schema: str = "public", table: str = "%") -> dict:
    return {"rule-type": "selection", "rule-id": "1", "rule-name": "1",
            "object-locator": {"schema-name": schema, "table-name": table},
            "rule-action": "include"}


def before_rule(definition: object = None, rule_id: str = "3", table: str = "%",
                **extra: object) -> dict:
    rule = {"rule-type": "transformation", "rule-id": rule_id, "rule-name": rule_id,
            "rule-target": "column", "object-locator": {"schema-name": "%",
                                                        "table-name": table},
            "rule-action": "add-before-image-columns", **extra}
    if definition is not None:
        rule["before-image-def"] = definition
    return rule


SEQ = {"rule-type": "transformation", "rule-id": "2", "rule-name": "2",
       "rule-target": "column", "object-locator": {"schema-name": "%", "table-name": "%"},
       "rule-action": "add-column", "value": "seq", "expression": "$AR_H_CHANGE_SEQ"}


def mappings(*rules: dict) -> TableMappings:
    return TableMappings.parse({"rules": [select(), SEQ, *rules]}, "m.json")


# --- the rule ---------------------------------------------------------------------------
def test_the_definition_defaults_to_bi_prefix_no_suffix_and_pk_only() -> None:
    assert mappings(before_rule({})).plan("public", "t").before_image == BeforeImage(
        "BI_", "", "pk-only", "3")
    plan = mappings(before_rule({"column-prefix": "", "column-suffix": "_old",
                                 "column-filter": "all"})).plan("public", "t")
    assert plan.before_image == BeforeImage("", "_old", "all", "3")
    assert mappings().plan("public", "t").before_image is None


@pytest.mark.parametrize(("rule", "named"), [
    (before_rule(), "before-image-def is missing: an object"),
    (before_rule([]), "before-image-def = []: an object"),
    (before_rule({"column-prefix": "", "column-suffix": ""}), "not both empty"),
    (before_rule({"column-filter": "lob"}),
     'before-image-def.column-filter = "lob": one of pk-only, non-lob, all'),
    (before_rule({"column-filter": None}), "one of pk-only, non-lob, all"),
    (before_rule({"column-prefix": 1}), "before-image-def.column-prefix = 1: a string"),
    (before_rule({"column_prefix": "x"}), "before-image-def.column_prefix"),
    (before_rule({}, value="x"), 'value = "x": left out'),
    ({**before_rule({}), "rule-target": "table"}, "needs rule-target column"),
    ({**before_rule({}), "object-locator": {"schema-name": "%", "table-name": "%",
                                            "column-name": "id"}},
     "object-locator.column-name"),
])
def test_a_bad_definition_is_refused_naming_the_rule_and_key(rule: dict, named: str) -> None:
    with pytest.raises(MappingError) as err:
        mappings(rule)
    text = str(err.value)
    assert text.startswith("m.json: rules[2] (rule-id '3')"), text
    assert named in text, text


def test_two_rules_for_one_table_are_refused_naming_both() -> None:
    m = mappings(before_rule({}), before_rule({"column-prefix": "old_"}, rule_id="4",
                                              table="orders"))
    assert m.plan("public", "other").before_image is not None
    with pytest.raises(MappingError, match=re.escape(
            "m.json: rule-id '4': a second add-before-image-columns rule for public.orders "
            "(rule-id '3' is the first)")):
        m.plan("public", "orders")


@given(st.dictionaries(st.sampled_from(["column-prefix", "column-suffix", "column-filter",
                                        "x"]),
                       st.none() | st.booleans() | st.integers() | st.text(max_size=4)
                       | st.lists(st.text(max_size=2), max_size=2), max_size=3))
def test_any_definition_parses_or_names_the_rule(definition: dict) -> None:
    try:
        mappings(before_rule(definition))
    except MappingError as exc:
        assert str(exc).startswith("m.json: rules[2] (rule-id '3')")


def test_the_default_mappings_add_the_keys_before_image() -> None:
    plan = TableMappings.parse(default_mappings("public", "hosts_demo", "change_seq")).plan(
        "public", "hosts_demo")
    assert plan.before_image == BeforeImage("BI_", "", "pk-only", "3")
    cols = [SourceColumn("id", PgType("int4"), True), SourceColumn("a", PgType("text"))]
    assert plan.header(["id", "a"], plan.before(cols, ["id"])) == (
        "id", "a", "change_seq", "BI_id")
    off = TableMappings.parse(default_mappings("public", "hosts_demo", "change_seq",
                                               before_image=False))
    assert off.plan("public", "hosts_demo").before_image is None


@pytest.mark.parametrize("on", [True, False])
def test_the_emitter_follows_the_before_image_setting(on: bool, tmp_path, monkeypatch) -> None:
    """[dms] before_image_columns decides the emitter's default mappings, as it decides
    the task's (deploy) and the bronze specs' (tables_sync)."""
    from cdclab.tables_sync import table_mappings
    from dms_emitter.emitter import EmitterConfig
    from pipeline_contract import settings

    text = settings.PIPELINE_FILE.read_text()
    assert "before_image_columns = true" in text
    path = tmp_path / "pipeline.toml"
    path.write_text(text.replace("before_image_columns = true",
                                 f"before_image_columns = {str(on).lower()}"))
    monkeypatch.setenv(settings.ENV_PIPELINE_FILE, str(path))
    cfg = EmitterConfig.from_env(settings.load_pipeline(), {settings.ENV_PG_DSN: "postgresql://unused",
                                  settings.ENV_STATE_DIR: str(tmp_path)})
    p = settings.load_pipeline()
    for mappings in (cfg.table_mappings(), table_mappings(p)):
        plan = mappings.plan(p.source.schema, p.source.table)
        assert (plan.before_image == BeforeImage("BI_", "", "pk-only", "3")) is on
        assert (plan.before_image is None) is not on


def test_filters_choose_kept_columns_in_column_order_named_as_written() -> None:
    cols = [SourceColumn("note", PgType("text")), SourceColumn("p", PgType("int4"), True),
            SourceColumn("o", PgType("int4"), True), SourceColumn("doc", PgType("jsonb")),
            SourceColumn("gone", PgType("int4"))]
    names = [c.name for c in cols]
    rename = {"rule-type": "transformation", "rule-id": "5", "rule-name": "5",
              "rule-target": "column", "rule-action": "rename", "value": "P2",
              "object-locator": {"schema-name": "%", "table-name": "%", "column-name": "p"}}
    drop = {**rename, "rule-id": "6", "rule-action": "remove-column",
            "object-locator": {"schema-name": "%", "table-name": "%", "column-name": "gone"}}
    del drop["value"]
    for column_filter, want in (("pk-only", [1, 2]), ("non-lob", [1, 2]),
                                ("all", [0, 1, 2, 3])):
        plan = mappings(before_rule({"column-prefix": "b_", "column-suffix": "_x",
                                     "column-filter": column_filter}), rename, drop).plan(
            "public", "t")
        before = plan.before(cols, ["o", "p"])
        assert before == want, column_filter
        header = plan.header(names, before)
        assert header[:5] == ("note", "P2", "o", "doc", "seq")
        assert header[5:] == tuple(f"b_{['note', 'P2', 'o', 'doc'][i]}_x" for i in want)


# --- the rows: pgoutput messages -> DMS rows -------------------------------------------
def relation(identity: str = "d") -> pg.Relation:
    """(o, t) is the primary key; pgoutput flags the replica identity's columns."""
    full = identity == "f"
    return pg.Relation(7, "public", "t", identity, (
        pg.Column(1, "o", INT4, -1), pg.Column(1, "t", TIMESTAMP, -1),
        pg.Column(1 if full else 0, "q", INT4, -1), pg.Column(1 if full else 0, "n", TEXT, -1)))


def builder(definition: dict, identity: str = "d", fmt: CsvFormat | None = None,
            **options: object) -> ChangeBuilder:
    m = TableMappings.parse({"rules": [select(), SEQ, before_rule(definition)]})
    b = ChangeBuilder([TableSpec(m.plan("public", "t"), ("o", "t"))], fmt, **options)
    b.feed(relation(identity))
    return b


def rows_of(b: ChangeBuilder, *msgs: pg.PgOutputMessage) -> tuple[list[str], list[dict]]:
    b.feed(pg.Begin(500, 0, 1))
    for m in msgs:
        b.feed(m)
    txn = b.feed(pg.Commit(0, 500, 520, 0))
    assert txn is not None
    [segment] = txn.segments
    header = ",".join(("Op", "last_updated_ts", *segment.header))
    return list(segment.header), parse_dms_csv(header + "\n" + "".join(txn.lines),
                                               fmt=CsvFormat(change_seq_column="seq"))


T1, T2 = "2024-07-05 20:09:37", "2024-07-05 20:09:38.5"
ROW = ("1", T1, "12", "x")


def test_pk_only_under_replica_identity_default() -> None:
    """INSERT and an UPDATE leaving the key: empty; a key change: the old key, rendered
    like new values (timestamps with six fractional digits); DELETE: empty."""
    moved = ("1", T2, "1", "x")
    header, rows = rows_of(
        builder({"column-prefix": "before_"}),
        pg.Insert(7, ROW),
        pg.Update(7, None, None, ("1", T1, "1", "x")),  # SET q = 1: no old tuple logged
        pg.Update(7, "K", ("1", T1, None, None), moved),  # SET t = ...: the old key
        pg.Delete(7, "K", ("1", T2, None, None)))
    assert header == ["o", "t", "q", "n", "seq", "before_o", "before_t"]
    assert [(r["Op"], r["before_o"], r["before_t"]) for r in rows] == [
        ("I", None, None), ("U", None, None),
        ("U", "1", "2024-07-05 20:09:37.000000"), ("D", None, None)]
    assert rows[2]["t"] == "2024-07-05 20:09:38.500000"


def test_full_replica_identity_with_filter_all_gives_every_old_value() -> None:
    new = ("1", T1, "2", "y")
    header, rows = rows_of(builder({"column-filter": "all"}, "f"),
                           pg.Update(7, "O", ROW, new), pg.Insert(7, ("2", T1, None, None)))
    assert header[5:] == ["BI_o", "BI_t", "BI_q", "BI_n"]
    assert [rows[0][c] for c in header[5:]] == ["1", "2024-07-05 20:09:37.000000", "12", "x"]
    assert [rows[1][c] for c in header[5:]] == [None] * 4
    # pk-only under FULL: the key, changed or not
    _, rows = rows_of(builder({}, "f"), pg.Update(7, "O", ROW, new))
    assert (rows[0]["BI_o"], rows[0]["BI_t"]) == ("1", "2024-07-05 20:09:37.000000")


def test_filter_all_under_default_has_only_the_key() -> None:
    """"PostgreSQL provides only data for columns that are part of the primary key"."""
    _, rows = rows_of(builder({"column-filter": "all"}),
                      pg.Update(7, "K", ("1", T1, None, None), ("3", T1, "12", "x")))
    assert [rows[0][c] for c in ("BI_o", "BI_t", "BI_q", "BI_n")] == [
        "1", "2024-07-05 20:09:37.000000", None, None]


def test_non_lob_leaves_text_out() -> None:
    header, _ = rows_of(builder({"column-filter": "non-lob"}), pg.Insert(7, ROW))
    assert header[5:] == ["BI_o", "BI_t", "BI_q"]


def test_delete_insert_handling_writes_no_before_image() -> None:
    _, rows = rows_of(builder({}, pk_update=PK_UPDATE_AS_DELETE_INSERT),
                      pg.Update(7, "K", ("1", T1, None, None), ("3", T1, "12", "x")))
    assert [(r["Op"], r["o"], r["BI_o"]) for r in rows] == [("D", "1", None),
                                                             ("I", "3", None)]


def test_parquet_before_image_columns_have_the_source_columns_types() -> None:
    rows: list[tuple] = []
    b = builder({"column-filter": "all"}, fmt=CsvFormat(parquet=pt.ParquetOptions()),
                on_row=lambda *a: rows.append(a))
    b.feed(pg.Begin(100, 0, 7))
    b.feed(pg.Insert(7, ROW))
    _folder, header, _line, types, _partition = rows[0]
    assert header[-4:] == ("BI_o", "BI_t", "BI_q", "BI_n")
    kinds = [t.describe() for t in types]
    assert kinds[2:6] == kinds[-4:]  # o, t, q, n as their own columns
    assert kinds[-4:] == ["int32", "timestamp", "int32", "string"]
