"""DQDL parsing (spark/glue_local/stand_ins/awsgluedq/dqdl.py): what it parses renders
back to the same rule; anything else fails naming the line and column, or, for a rule
type not evaluated locally, naming the rule type."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

sys.path.append(str(Path(__file__).resolve().parents[2] / "spark/glue_local/stand_ins"))

from awsgluedq.dqdl import (  # noqa: E402
    RULE_TYPES,
    Condition,
    DQDLError,
    Rule,
    Ruleset,
    UnsupportedLocally,
    Value,
    composite,
    parse,
    render,
)

numbers = st.from_regex(r"-?[0-9]{1,6}(\.[0-9]{1,4})?", fullmatch=True).map(
    lambda t: Value("number", t))
strings = st.text(max_size=12).map(lambda t: Value("string", t))
keywords = st.sampled_from(["NULL", "EMPTY", "WHITESPACES_ONLY"]).map(
    lambda t: Value("keyword", t))
any_value = st.one_of(numbers, strings, keywords)


def numeric_conditions() -> st.SearchStrategy[Condition]:
    return st.one_of(
        st.builds(lambda op, v: Condition(op, (v,)),
                  st.sampled_from(["=", ">", ">=", "<", "<="]), numbers),
        st.builds(lambda v: Condition("=", (v,), True), numbers),
        st.builds(lambda a, b, n: Condition("between", (a, b), n), numbers, numbers,
                  st.booleans()),
        st.builds(lambda vs, n: Condition("in", tuple(vs), n),
                  st.lists(numbers, min_size=1, max_size=3), st.booleans()))


def value_conditions() -> st.SearchStrategy[Condition]:
    return st.one_of(
        numeric_conditions(),
        st.builds(lambda v, n: Condition("=", (v,), n), st.one_of(strings, keywords),
                  st.booleans()),
        st.builds(lambda vs, n: Condition("in", tuple(vs), n),
                  st.lists(any_value, min_size=1, max_size=3), st.booleans()),
        st.builds(lambda v, n: Condition("matches", (v,), n), strings, st.booleans()))


thresholds = st.one_of(
    st.builds(lambda op, v: Condition(op, (v,)), st.sampled_from(["=", ">", ">=", "<", "<="]),
              numbers),
    st.builds(lambda a, b: Condition("between", (a, b)), numbers, numbers))


@st.composite
def rules(draw) -> Rule:
    kind = draw(st.sampled_from(sorted(RULE_TYPES)))
    n_params, wants = RULE_TYPES[kind]
    params = tuple(draw(st.text(max_size=10)) for _ in range(n_params))
    condition = None
    if wants:
        condition = draw(value_conditions() if kind == "ColumnValues" else numeric_conditions())
    where = None if kind in ("ColumnCount", "ColumnExists", "CustomSql") else draw(
        st.none() | st.text(max_size=10))
    threshold = draw(st.none() | thresholds) if kind in ("ColumnValues", "ColumnLength") \
        else None
    return Rule(kind, params, condition, where, threshold)


nodes = st.recursive(rules(), lambda inner: st.builds(
    composite, st.sampled_from(["and", "or"]), st.lists(inner, min_size=2, max_size=3)),
    max_leaves=5)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(nodes, max_size=4))
def test_a_rendered_ruleset_parses_back_to_itself(rs) -> None:
    ruleset = Ruleset(tuple(rs))
    assert parse(render(ruleset)) == ruleset
    for rule in rs:
        assert parse(f"Rules=[{render(rule)}]").rules == (rule,)


POSITION = re.compile(r"at line \d+, column \d+")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=60))
def test_any_text_parses_or_fails_naming_the_position(text) -> None:
    try:
        parse(text)
    except (DQDLError, UnsupportedLocally) as exc:
        assert str(exc).startswith("cdclab: DQDL") and POSITION.search(str(exc)), exc


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(nodes, min_size=1, max_size=3), st.data())
def test_a_cut_ruleset_fails_naming_the_position(rs, data) -> None:
    text = render(Ruleset(tuple(rs)))
    cut = data.draw(st.integers(0, len(text) - 1))
    try:
        parse(text[:cut])
    except (DQDLError, UnsupportedLocally) as exc:  # a cut rule type is another type
        assert POSITION.search(str(exc)), exc
    else:
        raise AssertionError(f"{text[:cut]!r} parsed")


def test_what_glue_studio_writes_parses() -> None:
    got = parse('''
    # Example rules: Completeness "colA" between 0.4 and 0.8, ColumnCount > 10
    Rules = [
        RowCount between 2 and 100,
        IsComplete "order_id",
        ColumnValues "country" in ["DE", "FR"] with threshold > 0.9,
        ColumnValues "event_time" matches "^2019.*$",
        (IsUnique "order_id") and (ColumnLength "customer" <= 20),
        Mean "amount" > 1 where "country = 'DE'",
        CustomSql "select count(*) from primary" >= 1
    ]
''')
    assert [type(r).__name__ for r in got.rules] == ["Rule"] * 4 + ["Composite", "Rule", "Rule"]
    assert got.rules[0] == Rule("RowCount", (), Condition(
        "between", (Value("number", "2"), Value("number", "100"))))
    assert got.rules[2].threshold == Condition(">", (Value("number", "0.9"),))
    assert got.rules[5].where == "country = 'DE'"
    assert render(got.rules[4]) == '(IsUnique "order_id") and (ColumnLength "customer" <= 20)'
    assert parse("Rules = []").rules == ()
    nested = parse('Rules = [ ((RowCount > 1) and (RowCount < 9)) and (IsComplete "a"), '
                   '((RowCount > 1) or (RowCount < 9)) and (IsComplete "a") ]').rules
    assert [render(r) for r in nested] == [  # same operator flattened, as AWS prints it
        '(RowCount > 1) and (RowCount < 9) and (IsComplete "a")',
        '((RowCount > 1) or (RowCount < 9)) and (IsComplete "a")']


@pytest.mark.parametrize("text, message", [
    ('Rules = [ DataFreshness "t" <= 24 hours ]', "cdclab: DQDL rule DataFreshness is not "
     "supported locally (at line 1, column 11)"),
    ('Rules = [\n  IsComplete "a",\n  ReferentialIntegrity "a" "b.c" = 1.0 ]',
     "cdclab: DQDL rule ReferentialIntegrity is not supported locally (at line 3, column 3)"),
    ('Rules = [ CustomSql "select id from primary where id > 1" ]', "cdclab: DQDL rule "
     "CustomSql without a condition (row-level SQL) is not supported locally (at line 1, "
     "column 11)"),
])
def test_other_rule_types_fail_by_name(text, message) -> None:
    with pytest.raises(UnsupportedLocally) as err:
        parse(text)
    assert str(err.value).startswith(message)


@pytest.mark.parametrize("text, message", [
    ("Rules = [ RowCount > 1", "expected ',' or ']' at line 1, column 23, found the end"),
    ('Rules = [ IsComplete ]', "expected 1 quoted parameter(s) for IsComplete, got 0 at "
     "line 1, column 22"),
    ('Rules = [ Mean "a" > "x" ]', "expected a number at line 1, column 22"),
    ('Rules = [ RowCount > 1 where "x > 1" with threshold > 0.5 ]',
     "expected no 'with threshold' on RowCount at line 1, column 38"),
    ('Rules = [ (RowCount > 1) and (IsComplete "a") or (RowCount > 2) ]',
     "expected 'and' (mixing and/or needs parentheses around each side) at line 1, column 47"),
    ('Rules = [ IsComplete "a ]', "unexpected an unterminated string at line 1, column 22"),
    ("Ruls = []", "expected 'Rules = [' at line 1, column 1, found 'Ruls'"),
])
def test_errors_name_what_was_expected_and_where(text, message) -> None:
    with pytest.raises(DQDLError) as err:
        parse(text)
    assert message in str(err.value)
