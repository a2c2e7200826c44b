"""DQDL evaluation over rows (spark/glue_local/stand_ins/awsgluedq/evaluate.py): metrics,
outcomes and row-level results as AWS Glue Data Quality reports them, each expected value
worked out here by hand from the rows."""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

sys.path.append(str(Path(__file__).resolve().parents[2] / "spark/glue_local/stand_ins"))

from awsgluedq.dqdl import parse  # noqa: E402
from awsgluedq.evaluate import InvalidWhere, evaluate, java_double, row_results  # noqa: E402

COLUMNS = ["id", "name", "amount", "country"]
ROWS = [
    {"id": 1, "name": "Ann", "amount": 5.0, "country": "DE"},
    {"id": 2, "name": "Bob", "amount": 25.5, "country": "FR"},
    {"id": 2, "name": None, "amount": 99.0, "country": "DE"},
    {"id": 4, "name": "Cyrus", "amount": None, "country": ""},
]


def one(rule: str, rows=ROWS, where=None, sql=None):
    [got] = evaluate(parse(f"Rules = [ {rule} ]"), COLUMNS, rows, where, sql)
    return got


def where_country_de(clause: str) -> list[bool]:
    assert clause == "country = 'DE'"
    return [r["country"] == "DE" for r in ROWS]


@pytest.mark.parametrize("rule, outcome, metrics, reason", [
    ("RowCount = 4", "Passed", {"Dataset.*.RowCount": 4.0}, None),
    ("RowCount between 1 and 4", "Failed", {"Dataset.*.RowCount": 4.0},  # both ends excluded
     "Value: 4.0 does not meet the constraint requirement!"),
    ("RowCount > 1 where \"country = 'DE'\"", "Passed", {"Dataset.*.RowCount": 2.0}, None),
    ("ColumnCount = 4", "Passed", {"Dataset.*.ColumnCount": 4.0}, None),
    ('ColumnExists "name"', "Passed", {}, None),
    ('ColumnExists "nope"', "Failed", {}, "Value: 0.0 does not meet the constraint requirement!"),
    ('IsComplete "id"', "Passed", {"Column.id.Completeness": 1.0}, None),
    ('IsComplete "name"', "Failed", {"Column.name.Completeness": 0.75},
     "Value: 0.75 does not meet the constraint requirement!"),
    ('Completeness "name" >= 0.75', "Passed", {"Column.name.Completeness": 0.75}, None),
    ('IsUnique "id"', "Failed", {"Column.id.Uniqueness": 0.5},  # 1 and 4 of 1, 2, 2, 4
     "Value: 0.5 does not meet the constraint requirement!"),
    ('Uniqueness "name" = 1.0', "Passed", {"Column.name.Uniqueness": 1.0}, None),  # nulls left out
    ('IsPrimaryKey "name"', "Failed", {"Column.name.Completeness": 0.75,
                                       "Column.name.Uniqueness": 1.0},
     "Value: 0.75 does not meet the constraint requirement!"),
    ('DistinctValuesCount "country" = 3', "Passed", {"Column.country.DistinctValuesCount": 3.0},
     None),
    ('Mean "amount" between 43 and 44', "Passed", {"Column.amount.Mean": 43.166666666666664},
     None),
    ('Sum "amount" = 129.5', "Passed", {"Column.amount.Sum": 129.5}, None),
    ('StandardDeviation "amount" between 40 and 41', "Passed",
     {"Column.amount.StandardDeviation": statistics.pstdev([5.0, 25.5, 99.0])}, None),
    ('Mean "name" > 1', "Failed", {}, "cdclab: column name holds str values, not numbers"),
    ('Mean "nope" > 1', "Failed", {}, "Input data does not include column nope!"),
    ('ColumnValues "name" > 1', "Failed", {}, "cdclab: column name holds str values, not "
     "numbers"),
    ('ColumnValues "name" in [1, 2]', "Failed", {}, "cdclab: column name holds str values, "
     "not numbers"),
    ('ColumnLength "name" <= 3', "Failed", {"Column.name.MaximumLength": 5.0},
     "Value: 5.0 does not meet the constraint requirement!"),
    ('ColumnLength "name" between 2 and 5', "Failed", {"Column.name.MinimumLength": 3.0,
                                                      "Column.name.MaximumLength": 5.0},
     "Value: 5.0 does not meet the constraint requirement!"),  # 5 is not below 5
    ('ColumnLength "country" in [0, 2]', "Passed", {"Column.country.LengthCompliance": 1.0},
     None),
    ('ColumnValues "amount" > 1', "Failed", {"Column.amount.Minimum": 5.0},
     "Value: NULL does not meet the constraint requirement!"),  # the null row fails
    ('ColumnValues "amount" <= 50', "Failed", {"Column.amount.Maximum": 99.0},
     "Value: 99.0 does not meet the constraint requirement!\n"
     "Value: NULL does not meet the constraint requirement!"),
    ('ColumnValues "country" in ["DE", "FR", EMPTY]', "Passed",
     {"Column.country.ColumnValues.Compliance": 1.0}, None),
    ('ColumnValues "country" = "DE"', "Failed", {"Column.country.ColumnValues.Compliance": 0.5},
     "Value: 0.5 does not meet the constraint requirement!"),
    ('ColumnValues "country" in ["DE", "FR"] with threshold >= 0.75', "Passed",
     {"Column.country.ColumnValues.Compliance": 0.75}, None),
    ('ColumnValues "name" matches "[A-Z][a-z]+"', "Failed",
     {"Column.name.PatternMatch": 0.75},
     "Value: 0.75 does not meet the constraint requirement!"),
    ('ColumnValues "name" matches "[A-"', "Failed", {}, "cdclab: matches pattern '[A-' is "
     "not a regular expression: unterminated character set at position 0"),
    ('ColumnValues "amount" != 7', "Passed", {"Column.amount.ColumnValues.Compliance": 1.0},
     None),
    ("CustomSql \"select count(*) from primary\" = 4", "Passed", {"Dataset.*.CustomSQL": 4.0},
     None),
    ('(IsComplete "id") and (IsComplete "name")', "Failed",
     {"Column.id.Completeness": 1.0, "Column.name.Completeness": 0.75},
     "Value: 0.75 does not meet the constraint requirement!"),
    ('(IsComplete "name") or (RowCount = 4)', "Passed",  # the failed part's reason stays
     {"Column.name.Completeness": 0.75, "Dataset.*.RowCount": 4.0},
     "Value: 0.75 does not meet the constraint requirement!"),
    ('(IsComplete "name") and (RowCount = 3)', "Failed",
     {"Column.name.Completeness": 0.75, "Dataset.*.RowCount": 4.0},
     "Value: 0.75 does not meet the constraint requirement!\n"
     "Value: 4.0 does not meet the constraint requirement!"),
    ('ColumnValues "amount" >= 6', "Failed", {"Column.amount.Minimum": 5.0},
     "Value: 5.0 does not meet the constraint requirement!\n"
     "Value: NULL does not meet the constraint requirement!"),
])
def test_rule_outcomes(rule, outcome, metrics, reason) -> None:
    got = one(rule, where=where_country_de, sql=lambda s: 4.0)
    assert (got.outcome, got.failure_reason) == (outcome, reason)
    assert got.metrics == pytest.approx(metrics) and got.metrics.keys() == metrics.keys()


def test_the_rule_column_is_the_rule_as_dqdl() -> None:
    got = one('ColumnValues  "country"   in ["DE","FR"]   with threshold>0.5')
    assert got.rule == 'ColumnValues "country" in ["DE","FR"] with threshold > 0.5'


def test_row_level_results_list_each_rule_per_row() -> None:
    ruleset = parse('Rules = [ IsComplete "name", RowCount > 0, ColumnValues "amount" < 50, '
                    "IsUnique \"id\" where \"country = 'DE'\" ]")
    outcomes = evaluate(ruleset, COLUMNS, ROWS, where_country_de)
    got = row_results(outcomes, len(ROWS))
    complete, count, values, unique = (o.rule for o in outcomes)
    assert [(r.passed, r.failed, r.skipped, r.result) for r in got] == [
        ([complete, values, unique], [], [count], "Passed"),
        # FR is outside the where clause: the rule passes on it (Deequ's FilteredRowOutcome)
        ([complete, values, unique], [], [count], "Passed"),
        ([unique], [complete, values], [count], "Failed"),
        ([complete, unique], [values], [count], "Failed"),  # a null amount fails < 50
    ]


def test_null_rows_in_row_level_results() -> None:
    rows = [{"id": None, "name": None, "amount": 1, "country": "DE"},
            {"id": None, "name": "Al", "amount": 2, "country": "DE"},
            {"id": 7, "name": "Bea", "amount": 3, "country": "DE"}]
    unique, length, both = evaluate(parse(
        'Rules = [ IsUnique "id", ColumnLength "name" > 2, '
        '(ColumnLength "name" > 2) or (IsUnique "id") ]'), COLUMNS, rows)
    # two nulls count as one repeated value; only 7 occurs once among non-null values
    assert unique.rows == [False, False, True] and unique.metrics == {"Column.id.Uniqueness": 1.0}
    assert length.rows == [None, False, True]  # a null has no length: skipped on that row
    assert both.rows == [None, False, True]  # SQL's null or false
    got = row_results([unique, length], 3)
    assert (got[0].passed, got[0].failed, got[0].skipped) == ([], [unique.rule], [length.rule])


def test_a_where_clause_filters_the_metric() -> None:
    got = one("IsUnique \"id\" where \"country = 'DE'\"", where=where_country_de)
    assert got.outcome == "Passed" and got.metrics == {"Column.id.Uniqueness": 1.0}


def test_an_invalid_where_clause_fails_its_rule() -> None:
    def refuse(clause: str) -> list[bool]:
        raise InvalidWhere(clause)
    got = one('RowCount > 0 where "no such column > 1"', where=refuse)
    assert (got.outcome, got.failure_reason) == ("Failed", "The provided where clause is "
                                                 "invalid")


def test_custom_sql_errors_are_the_failure_reason() -> None:
    def broken(statement: str) -> float:
        raise ValueError("no such table")
    got = one('CustomSql "select 1 from nowhere" > 0', sql=broken)
    assert (got.outcome, got.failure_reason) == ("Failed", "cdclab: CustomSql failed: "
                                                 "no such table")


@pytest.mark.parametrize("x, text", [(4, "4.0"), (0.75, "0.75"), (1e7, "1.0E7"),
                                     (12345678.9, "1.23456789E7"), (1.5e-5, "1.5E-5"),
                                     (-2e10, "-2.0E10"), (0, "0.0")])
def test_numbers_print_as_java_doubles(x, text) -> None:
    assert java_double(x) == text


@settings(max_examples=60, deadline=None)
@given(st.lists(st.one_of(st.none(), st.integers(-5, 5)), max_size=8),
       st.integers(-6, 6), st.integers(-6, 6))
def test_column_values_outcome_is_every_row_passing(values, low, high) -> None:
    rows = [{"id": v, "name": None, "amount": None, "country": None} for v in values]
    for rule in (f'ColumnValues "id" between {low} and {high}', f'ColumnValues "id" > {low}',
                 f'ColumnValues "id" in [{low}, {high}]', f'ColumnValues "id" != {low}'):
        got = one(rule, rows)
        assert (got.outcome == "Passed") == all(got.rows)
        expected = {
            "between": [v is not None and low < v < high for v in values],
            ">": [v is not None and v > low for v in values],
            "in": [v in (low, high) for v in values],
            "!=": [v is None or v != low for v in values],
        }[rule.split()[2]]
        assert got.rows == expected, rule
