"""DQDL rules evaluated over rows (dicts), pure: the metrics, outcomes and row-level
results AWS Glue Data Quality gives (EvaluateDataQuality.apply's Rule, Outcome,
FailureReason, EvaluatedMetrics; process_rows' DataQualityRulesPass/Fail/Skip and
DataQualityEvaluationResult).

Semantics follow AWS's open-source DQDL evaluator (github.com/awslabs/deequ,
com.amazon.deequ.dqdl): `between` excludes both ends; metrics ignore nulls, except
Completeness (non-null rows / rows) and ColumnValues, whose comparisons fail a null row
unless the condition names NULL; rules without row-level results (RowCount, ColumnCount,
ColumnExists, Mean, Sum, StandardDeviation, DistinctValuesCount, CustomSql) are listed in
DataQualityRulesSkip on every row, a rule whose test of a row is null (ColumnLength of a
null) on that row; a row a `where` clause leaves out passes that rule.
SQL (`where`, CustomSql) is the caller's: `where(clause)` gives one bool per row,
`sql(statement)` the statement's single number.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal

from awsgluedq.dqdl import Composite, Condition, Node, Rule, Ruleset, Value, render

PASSED, FAILED = "Passed", "Failed"


class InvalidWhere(ValueError):
    """A where clause the SQL engine refused; the rule fails with Deequ's reason."""


@dataclass
class Outcome:
    rule: str
    outcome: str
    failure_reason: str | None
    metrics: dict[str, float] = field(default_factory=dict)
    # per row: passed, failed, or None (skipped on that row); None: no row-level results
    rows: list[bool | None] | None = None


@dataclass(frozen=True)
class RowResult:
    passed: list[str]
    failed: list[str]
    skipped: list[str]

    @property
    def result(self) -> str:
        return FAILED if self.failed else PASSED


def java_double(x: float) -> str:
    """A double as Glue's messages print it (Java's Double.toString: plain between 1e-3
    and 1e7, otherwise d.dddE<n>)."""
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    if x == 0 or 1e-3 <= abs(x) < 1e7:
        return repr(float(x))
    sign, digits, exp = Decimal(repr(float(x))).normalize().as_tuple()
    text = "".join(map(str, digits))
    return f"{'-' if sign else ''}{text[0]}.{text[1:] or '0'}E{exp + len(text) - 1}"


def not_met(x: float | None) -> str:
    return f"Value: {'NULL' if x is None else java_double(x)} does not meet the constraint " \
           "requirement!"


def number(v: object) -> float | None:
    if isinstance(v, bool) or v is None:
        return None
    if isinstance(v, int | float | Decimal):
        return float(v)
    return None


def holds(c: Condition, x: float) -> bool:
    """A numeric condition on a metric or value (AWS's NumberBasedCondition.evaluate)."""
    nums = [float(v.text) for v in c.values if v.kind == "number"]
    if c.op == "between":
        ok = nums[0] < x < nums[1]
        return (x <= nums[0] or x >= nums[1]) if c.negated else ok
    if c.op == "in":
        return (x in nums) != c.negated
    ok = {"=": x == nums[0], ">": x > nums[0], ">=": x >= nums[0], "<": x < nums[0],
          "<=": x <= nums[0]}[c.op]
    return ok != c.negated


def value_matches(v: Value, x: object) -> bool:
    if v.kind == "keyword":
        if v.text == "NULL":
            return x is None
        s = x if isinstance(x, str) else None
        return s == "" if v.text == "EMPTY" else bool(s) and not s.strip()
    if x is None:
        return False
    if v.kind == "number":
        n = number(x)
        return n is not None and n == float(v.text)
    return str(x) == v.text


def row_passes(c: Condition, x: object) -> bool:
    """ColumnValues' test of one value: a null fails unless the condition names NULL;
    a negated condition is the positive one's opposite."""
    if c.op == "matches":
        ok = x is not None and re.fullmatch(c.values[0].text, str(x)) is not None
    elif c.op in ("in", "=") and (c.values[0].kind != "number" or c.op == "in"):
        ok = any(value_matches(v, x) for v in c.values)
    else:
        n = number(x)
        if n is None:  # a null or non-number: fails a comparison, passes its negation
            return c.negated
        return holds(c, n)
    return ok != c.negated


class Evaluator:
    def __init__(self, columns: Sequence[str], rows: Sequence[dict],
                 where: Callable[[str], list[bool]] | None = None,
                 sql: Callable[[str], float] | None = None) -> None:
        self.columns, self.rows = list(columns), list(rows)
        self.where_fn, self.sql = where, sql

    def mask(self, rule: Rule) -> list[bool]:
        if rule.where is None:
            return [True] * len(self.rows)
        if self.where_fn is None:
            raise ValueError("cdclab: a where clause needs SQL; no where evaluator given")
        return self.where_fn(rule.where)

    def evaluate(self, node: Node) -> Outcome:
        if isinstance(node, Composite):
            return self.composite(node)
        text = render(node)
        column = node.params[0] if node.params and node.kind != "CustomSql" else None
        if column is not None and node.kind != "ColumnExists" and column not in self.columns:
            return Outcome(text, FAILED, f"Input data does not include column {column}!")
        try:
            mask = self.mask(node)
        except InvalidWhere:
            return Outcome(text, FAILED, "The provided where clause is invalid")
        values = [r.get(column) for r, m in zip(self.rows, mask, strict=True) if m] \
            if column else []
        n_rows = sum(mask)
        return getattr(self, f"rule_{node.kind}")(node, text, column, values, mask, n_rows)

    def composite(self, node: Composite) -> Outcome:
        parts = [self.evaluate(p) for p in node.parts]
        ok = [p.outcome == PASSED for p in parts]
        passed = all(ok) if node.op == "and" else any(ok)
        metrics = {k: v for p in parts for k, v in p.metrics.items()}
        reasons = [p.failure_reason for p in parts if p.failure_reason]
        rows = None
        if all(p.rows is not None for p in parts):
            rows = [sql_logic(node.op, bits) for bits in zip(*(p.rows for p in parts),
                                                             strict=True)]
        # Deequ's RuleOutcomeTranslator keeps every part's reason, even when the whole passes
        return Outcome(render(node), PASSED if passed else FAILED, "\n".join(reasons) or None,
                       metrics, rows)

    def metric_rule(self, text: str, name: str, value: float | None, cond: Condition,
                    rows: list[bool] | None = None) -> Outcome:
        metrics = {} if value is None else {name: value}
        if value is None:
            return Outcome(text, FAILED, f"cdclab: {name} has no value (no non-null values)",
                           metrics, rows)
        ok = holds(cond, value)
        return Outcome(text, PASSED if ok else FAILED, None if ok else not_met(value),
                       metrics, rows)

    def rule_RowCount(self, rule, text, column, values, mask, n):  # noqa: N802
        return self.metric_rule(text, "Dataset.*.RowCount", float(n), rule.condition)

    def rule_ColumnCount(self, rule, text, column, values, mask, n):  # noqa: N802
        return self.metric_rule(text, "Dataset.*.ColumnCount", float(len(self.columns)),
                                rule.condition)

    def rule_ColumnExists(self, rule, text, column, values, mask, n):  # noqa: N802
        if column in self.columns:  # Deequ's ColumnExists: 1.0 or 0.0, asserted to be 1.0
            return Outcome(text, PASSED, None)
        return Outcome(text, FAILED, not_met(0.0))

    def completeness(self, column: str, values: list, mask: list[bool], n: int):
        value = (sum(v is not None for v in values) / n) if n else None
        rows = [not m or r.get(column) is not None for r, m in zip(self.rows, mask, strict=True)]
        return value, rows

    def rule_Completeness(self, rule, text, column, values, mask, n):  # noqa: N802
        value, rows = self.completeness(column, values, mask, n)
        return self.metric_rule(text, f"Column.{column}.Completeness", value, rule.condition,
                                rows)

    def rule_IsComplete(self, rule, text, column, values, mask, n):  # noqa: N802
        value, rows = self.completeness(column, values, mask, n)
        return self.metric_rule(text, f"Column.{column}.Completeness", value,
                                Condition("=", (Value("number", "1.0"),)), rows)

    def uniqueness(self, column: str, values: list, mask: list[bool]):
        """Values occurring once / non-null values; per row, its value occurs once, nulls
        counted together (Deequ's Uniqueness: a window over the value)."""
        counts = Counter(hashable(v) for v in values)
        present = sum(c for v, c in counts.items() if v is not None)
        value = (sum(1 for v, c in counts.items() if v is not None and c == 1) / present) \
            if present else None
        rows = [not m or counts[hashable(r.get(column))] == 1
                for r, m in zip(self.rows, mask, strict=True)]
        return value, rows

    def rule_Uniqueness(self, rule, text, column, values, mask, n):  # noqa: N802
        value, rows = self.uniqueness(column, values, mask)
        return self.metric_rule(text, f"Column.{column}.Uniqueness", value, rule.condition,
                                rows)

    def rule_IsUnique(self, rule, text, column, values, mask, n):  # noqa: N802
        value, rows = self.uniqueness(column, values, mask)
        return self.metric_rule(text, f"Column.{column}.Uniqueness", value,
                                Condition("=", (Value("number", "1.0"),)), rows)

    def rule_IsPrimaryKey(self, rule, text, column, values, mask, n):  # noqa: N802
        one = Condition("=", (Value("number", "1.0"),))
        complete, c_rows = self.completeness(column, values, mask, n)
        unique, u_rows = self.uniqueness(column, values, mask)
        parts = [self.metric_rule(text, f"Column.{column}.Completeness", complete, one),
                 self.metric_rule(text, f"Column.{column}.Uniqueness", unique, one)]
        failed = [p.failure_reason for p in parts if p.outcome == FAILED]
        return Outcome(text, FAILED if failed else PASSED, "\n".join(failed) or None,
                       {**parts[0].metrics, **parts[1].metrics},
                       [a and b for a, b in zip(c_rows, u_rows, strict=True)])

    def numbers(self, column: str, values: list) -> list[float] | str:
        out = []
        for v in values:
            if v is None:
                continue
            n = number(v)
            if n is None:
                return (f"cdclab: column {column} holds {type(v).__name__} values, not "
                        "numbers")
            out.append(n)
        return out

    def statistic(self, rule, text, column, values, name, fn):
        nums = self.numbers(column, values)
        if isinstance(nums, str):
            return Outcome(text, FAILED, nums)
        return self.metric_rule(text, f"Column.{column}.{name}", fn(nums) if nums else None,
                                rule.condition)

    def rule_Mean(self, rule, text, column, values, mask, n):  # noqa: N802
        return self.statistic(rule, text, column, values, "Mean", lambda xs: sum(xs) / len(xs))

    def rule_Sum(self, rule, text, column, values, mask, n):  # noqa: N802
        return self.statistic(rule, text, column, values, "Sum", math.fsum)

    def rule_StandardDeviation(self, rule, text, column, values, mask, n):  # noqa: N802
        def pstdev(xs: list[float]) -> float:  # population, as Deequ's StandardDeviation
            mean = sum(xs) / len(xs)
            return math.sqrt(math.fsum((x - mean) ** 2 for x in xs) / len(xs))
        return self.statistic(rule, text, column, values, "StandardDeviation", pstdev)

    def rule_DistinctValuesCount(self, rule, text, column, values, mask, n):  # noqa: N802
        distinct = {hashable(v) for v in values if v is not None}
        return self.metric_rule(text, f"Column.{column}.DistinctValuesCount",
                                float(len(distinct)), rule.condition)

    def rule_CustomSql(self, rule, text, column, values, mask, n):  # noqa: N802
        if self.sql is None:
            raise ValueError("cdclab: CustomSql needs SQL; no SQL evaluator given")
        try:
            value = self.sql(rule.params[0])
        except Exception as exc:  # the statement's own error, shown as the reason
            return Outcome(text, FAILED, f"cdclab: CustomSql failed: {exc}")
        return self.metric_rule(text, "Dataset.*.CustomSQL", value, rule.condition)

    def row_level(self, rule: Rule, text: str, metric: str, mask: list[bool],
                  test: Callable[[object], bool | None], column: str,
                  ) -> tuple[list[bool | None], Outcome | None]:
        """Per-row results and, with `with threshold`, the outcome on the compliance."""
        rows = [not m or test(r.get(column)) for r, m in zip(self.rows, mask, strict=True)]
        if rule.threshold is None:
            return rows, None
        n = sum(mask)
        compliance = (sum(1 for ok, m in zip(rows, mask, strict=True) if m and ok is True) / n) \
            if n else None
        return rows, self.metric_rule(text, metric, compliance, rule.threshold, rows)

    def rule_ColumnValues(self, rule, text, column, values, mask, n):  # noqa: N802
        cond = rule.condition
        if cond.op == "matches":
            try:
                re.compile(cond.values[0].text)
            except re.error as exc:  # Python's re, close to but not Java's regex
                return Outcome(text, FAILED, f"cdclab: matches pattern "
                               f"{cond.values[0].text!r} is not a regular expression: {exc}")
        rows, outcome = self.row_level(rule, text, f"Column.{column}.ColumnValues.Compliance",
                                       mask, lambda x: row_passes(cond, x), column)
        if outcome:
            return outcome
        if cond.op != "matches" and all(v.kind == "number" for v in cond.values):
            nums = self.numbers(column, values)
            if isinstance(nums, str):  # Deequ's numeric checks need a numeric column
                return Outcome(text, FAILED, nums, {}, rows)
        numeric = cond.op in (">", ">=", "<", "<=") or (
            cond.op == "=" and not cond.negated and cond.values[0].kind == "number")
        passing = [row_passes(cond, v) for v in values]
        if numeric:  # Glue reports the extreme the comparison is about (Deequ hasMin/hasMax)
            nums = [x for v in values if (x := number(v)) is not None]
            metrics = {}
            if nums and cond.op in (">", ">=", "="):
                metrics[f"Column.{column}.Minimum"] = min(nums)
            if nums and cond.op in ("<", "<=", "="):
                metrics[f"Column.{column}.Maximum"] = max(nums)
            if all(passing):
                return Outcome(text, PASSED, None, metrics, rows)
            # one message per failed Deequ constraint (hasMin/hasMax, then isComplete)
            reasons = [not_met(m) for m in metrics.values() if not holds(cond, m)]
            if any(v is None for v in values):
                reasons.append(not_met(None))
            return Outcome(text, FAILED, "\n".join(reasons), metrics, rows)
        compliance = (sum(passing) / len(passing)) if passing else 1.0
        ok = all(passing)
        name = "PatternMatch" if cond.op == "matches" else "ColumnValues.Compliance"
        return Outcome(text, PASSED if ok else FAILED, None if ok else not_met(compliance),
                       {f"Column.{column}.{name}": compliance}, rows)

    def rule_ColumnLength(self, rule, text, column, values, mask, n):  # noqa: N802
        """Deequ's hasMinLength/hasMaxLength (nulls ignored: a null row is skipped) for
        comparisons; `in` is a compliance where a null has length 0."""
        cond = rule.condition

        def test(x: object) -> bool | None:
            if cond.op == "in":
                return holds(cond, 0.0 if x is None else float(len(str(x))))
            return None if x is None else holds(cond, float(len(str(x))))

        rows, outcome = self.row_level(rule, text, f"Column.{column}.LengthCompliance",
                                       mask, test, column)
        if outcome:
            return outcome
        if cond.op == "in":
            passing = [test(v) for v in values]
            compliance = sum(passing) / len(passing) if passing else 1.0
            ok = all(passing)
            return Outcome(text, PASSED if ok else FAILED, None if ok else not_met(compliance),
                           {f"Column.{column}.LengthCompliance": compliance}, rows)
        lengths = [float(len(str(v))) for v in values if v is not None]
        if not lengths:
            return Outcome(text, FAILED, f"cdclab: column {column} has no non-null values "
                           "to measure", {}, rows)
        low, high = min(lengths), max(lengths)
        checks = {">": [("Minimum", low)], ">=": [("Minimum", low)],
                  "<": [("Maximum", high)], "<=": [("Maximum", high)]}.get(
            cond.op, [("Minimum", low), ("Maximum", high)])
        metrics = {f"Column.{column}.{name}Length": x for name, x in checks}
        if cond.op == "between" and not cond.negated:  # min above the low end, max below the high
            lo, hi = (float(v.text) for v in cond.values)
            failing = [x for name, x in checks if not (x > lo if name == "Minimum" else x < hi)]
        else:
            failing = [x for _, x in checks if not holds(cond, x)]
        if not failing:
            return Outcome(text, PASSED, None, metrics, rows)
        return Outcome(text, FAILED, "\n".join(map(not_met, failing)), metrics, rows)


def sql_logic(op: str, bits: Sequence[bool | None]) -> bool | None:
    """SQL's three-valued and/or, as Spark combines a composite's row-level columns."""
    decisive = op == "or"
    if decisive in bits:
        return decisive
    return None if None in bits else not decisive


def hashable(v: object) -> object:
    if isinstance(v, dict):
        return tuple(sorted((k, hashable(x)) for k, x in v.items()))
    if isinstance(v, list):
        return tuple(hashable(x) for x in v)
    return v


def evaluate(ruleset: Ruleset, columns: Sequence[str], rows: Sequence[dict],
             where: Callable[[str], list[bool]] | None = None,
             sql: Callable[[str], float] | None = None) -> list[Outcome]:
    """One Outcome per top-level rule, in the ruleset's order."""
    ev = Evaluator(columns, rows, where, sql)
    return [ev.evaluate(r) for r in ruleset.rules]


def row_results(outcomes: Sequence[Outcome], n_rows: int) -> list[RowResult]:
    """process_rows' per-row lists: a rule without row-level results is skipped on every
    row, one whose test of the row is null on that row (Deequ's RowLevelResultHelper)."""
    out = []
    for i in range(n_rows):
        passed, failed, skipped = [], [], []
        for o in outcomes:
            bit = None if o.rows is None else o.rows[i]
            (skipped if bit is None else passed if bit else failed).append(o.rule)
        out.append(RowResult(passed, failed, skipped))
    return out
