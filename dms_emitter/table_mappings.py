"""Pure: DMS table mappings (the JSON a replication task takes) -> which tables, and how.

Implements the rules users commonly write (CHAP_Tasks.CustomizingTasks.TableMapping):
selection rules (include / exclude / explicit, `%` wildcards) and transformation rules
rename, convert-lowercase / convert-uppercase, add-prefix / add-suffix (schema, table,
column), remove-column, and add-column with a header or metadata expression. Anything
else fails with a MappingError naming the rule, never silently ignored.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

CHANGE_SEQ_EXPRESSION = "$AR_H_CHANGE_SEQ"
# add-column expressions the emitter evaluates; the metadata names are DMS's
# ("Adding metadata to a target table using expressions")
EXPRESSIONS = (CHANGE_SEQ_EXPRESSION, "$AR_M_SOURCE_SCHEMA", "$AR_M_SOURCE_TABLE_NAME")
_LITERAL = re.compile(r"^'((?:[^']|'')*)'$")
_TARGETS = ("schema", "table", "column")
_ACTIONS = ("rename", "convert-lowercase", "convert-uppercase", "add-prefix", "add-suffix",
            "remove-column", "add-column")


class MappingError(ValueError):
    """A table mapping the emitter cannot apply; the message names the rule."""


def _like(pattern: str, name: str, wildcards: bool = True) -> bool:
    if not wildcards:
        return pattern == name
    regex = ".*".join(re.escape(part) for part in pattern.split("%"))
    return re.fullmatch(regex, name, flags=re.DOTALL) is not None


@dataclass(frozen=True)
class Rule:
    rule_id: str
    rule_type: str
    action: str
    schema: str
    table: str
    column: str | None = None
    target: str | None = None
    value: str | None = None
    old_value: str | None = None
    expression: str | None = None

    @property
    def label(self) -> str:
        return f"table-mapping rule {self.rule_id!r} ({self.rule_type} {self.action})"

    def matches(self, schema: str, table: str) -> bool:
        exact = self.action == "explicit"
        return _like(self.schema, schema, not exact) and _like(self.table, table, not exact)


@dataclass(frozen=True)
class AddedColumn:
    name: str
    expression: str  # one of EXPRESSIONS, or a quoted literal

    @property
    def literal(self) -> str | None:
        m = _LITERAL.match(self.expression)
        return None if m is None else m.group(1).replace("''", "'")

    def value(self, change_seq: str, schema: str, table: str) -> str:
        if self.expression == CHANGE_SEQ_EXPRESSION:
            return change_seq
        if self.expression == "$AR_M_SOURCE_SCHEMA":
            return schema
        if self.expression == "$AR_M_SOURCE_TABLE_NAME":
            return table
        literal = self.literal
        assert literal is not None  # checked when parsed
        return literal


@dataclass(frozen=True)
class TablePlan:
    """One selected table: where its files go and how its columns are written."""

    schema: str
    table: str
    target_schema: str
    target_table: str
    column_rules: tuple[Rule, ...] = ()
    added: tuple[AddedColumn, ...] = ()

    @property
    def qualified(self) -> str:
        return f"{self.schema}.{self.table}"

    @property
    def folder(self) -> str:
        """<schema>/<table> under the bucket folder, as DMS names it on S3."""
        return f"{self.target_schema}/{self.target_table}"

    def kept(self, columns: Sequence[str]) -> list[int]:
        """Indexes of the source columns written (remove-column drops the others)."""
        return [i for i, c in enumerate(columns)
                if not any(r.action == "remove-column" and _column_hit(r, c)
                           for r in self.column_rules)]

    def header(self, columns: Sequence[str]) -> tuple[str, ...]:
        """The written column names: kept columns renamed, then the added columns."""
        return (*(self.column_name(columns[i]) for i in self.kept(columns)),
                *(a.name for a in self.added))

    def column_name(self, column: str) -> str:
        name = column
        for rule in self.column_rules:
            if rule.action != "remove-column" and _column_hit(rule, column):
                name = _rename(rule, name)
        return name

    def row(self, kept: Sequence[int], values: Sequence[str | None],
            change_seq: str) -> tuple[str | None, ...]:
        added = self.added
        if len(added) == 1 and added[0].expression == CHANGE_SEQ_EXPRESSION:
            return (*(values[i] for i in kept), change_seq)  # the common case, per change
        return (*(values[i] for i in kept),
                *(a.value(change_seq, self.schema, self.table) for a in self.added))


def _column_hit(rule: Rule, column: str) -> bool:
    return rule.column is not None and _like(rule.column, column)


def _rename(rule: Rule, name: str) -> str:
    if rule.action == "rename":
        return rule.value or name
    if rule.action == "convert-lowercase":
        return name.lower()
    if rule.action == "convert-uppercase":
        return name.upper()
    if rule.action == "add-prefix":
        return f"{rule.value}{name}"
    if rule.action == "add-suffix":
        return f"{name}{rule.value}"
    return name


@dataclass(frozen=True)
class TableMappings:
    selections: tuple[Rule, ...]
    transformations: tuple[Rule, ...] = field(default=())

    @classmethod
    def parse(cls, doc: str | dict[str, Any], source: str = "table mappings") -> TableMappings:
        if isinstance(doc, str):
            try:
                doc = json.loads(doc)
            except json.JSONDecodeError as exc:
                raise MappingError(f"{source}: not JSON ({exc})") from None
        if not isinstance(doc, dict) or not isinstance(doc.get("rules"), list):
            raise MappingError(f'{source}: expected {{"rules": [...]}}')
        selections, transformations = [], []
        for raw in doc["rules"]:
            rule = _parse_rule(raw, source)
            (selections if rule.rule_type == "selection" else transformations).append(rule)
        if not any(r.action in ("include", "explicit") for r in selections):
            raise MappingError(f"{source}: no selection rule includes a table")
        return cls(tuple(selections), tuple(transformations))

    def selects(self, schema: str, table: str) -> bool:
        hits = [r for r in self.selections if r.matches(schema, table)]
        return bool(hits) and not any(r.action == "exclude" for r in hits)

    def plan(self, schema: str, table: str) -> TablePlan:
        target_schema, target_table = schema, table
        column_rules: list[Rule] = []
        added: list[AddedColumn] = []
        for rule in self.transformations:
            if not rule.matches(schema, table):
                continue
            if rule.target == "schema":
                target_schema = _rename(rule, target_schema)
            elif rule.target == "table":
                target_table = _rename(rule, target_table)
            elif rule.action == "add-column":
                assert rule.value is not None and rule.expression is not None
                added.append(AddedColumn(rule.value, rule.expression))
            else:
                column_rules.append(rule)
        return TablePlan(schema, table, target_schema, target_table, tuple(column_rules),
                         tuple(added))

    def select(self, tables: Sequence[tuple[str, str]]) -> list[TablePlan]:
        """Plans of the selected tables among `tables` (schema, name), in that order."""
        return [self.plan(s, t) for s, t in tables if self.selects(s, t)]


def _parse_rule(raw: Any, source: str) -> Rule:
    if not isinstance(raw, dict):
        raise MappingError(f"{source}: a rule is not an object: {raw!r}")
    rule_id = str(raw.get("rule-id", "?"))
    where = f"{source}: rule {rule_id!r}"
    rule_type, action = raw.get("rule-type"), raw.get("rule-action")
    locator = raw.get("object-locator")
    if not isinstance(locator, dict) or "schema-name" not in locator:
        raise MappingError(f"{where}: object-locator with schema-name is required")
    if rule_type == "selection":
        if action not in ("include", "exclude", "explicit"):
            raise MappingError(f"{where}: selection rule-action {action!r} is not supported "
                               "locally (include, exclude, explicit)")
        for unsupported in ("filters", "load-order", "parallel-load"):
            if raw.get(unsupported):
                raise MappingError(f"{where}: {unsupported!r} is not supported locally")
        return Rule(rule_id, "selection", action, str(locator["schema-name"]),
                    str(locator.get("table-name", "%")))
    if rule_type != "transformation":
        raise MappingError(f"{where}: rule-type {rule_type!r} is not supported locally "
                           "(selection, transformation)")
    target = raw.get("rule-target")
    if target not in _TARGETS or action not in _ACTIONS:
        raise MappingError(f"{where}: transformation {action!r} on {target!r} is not "
                           f"supported locally (actions {_ACTIONS} on {_TARGETS})")
    value, expression = raw.get("value"), raw.get("expression")
    if action in ("rename", "add-prefix", "add-suffix", "add-column") and not value:
        raise MappingError(f"{where}: {action} needs a value")
    if action in ("add-column", "remove-column") and target != "column":
        raise MappingError(f"{where}: {action} needs rule-target column")
    if action == "add-column":
        if not expression:
            raise MappingError(f"{where}: add-column needs an expression")
        if expression not in EXPRESSIONS and not _LITERAL.match(expression):
            raise MappingError(f"{where}: expression {expression!r} is not supported "
                               f"locally (supported: {', '.join(EXPRESSIONS)}, 'literal')")
    column = locator.get("column-name")
    if target == "column" and action != "add-column" and not column:
        raise MappingError(f"{where}: a column rule needs object-locator column-name")
    return Rule(rule_id, "transformation", action, str(locator["schema-name"]),
                str(locator.get("table-name", "%")), column, target, value,
                raw.get("old-value"), expression)


def default_mappings(schema: str, table: str, change_seq_column: str) -> dict[str, Any]:
    """One table, plus the change-sequence column the Glue job dedups by."""
    locator = {"schema-name": schema, "table-name": table}
    return {
        "rules": [
            {"rule-type": "selection", "rule-id": "1", "rule-name": "include-source-table",
             "object-locator": locator, "rule-action": "include"},
            {"rule-type": "transformation", "rule-id": "2", "rule-name": "add-change-seq",
             "rule-target": "column", "object-locator": locator,
             "rule-action": "add-column", "value": change_seq_column,
             "expression": CHANGE_SEQ_EXPRESSION,
             # AR_H_CHANGE_SEQ is a 35-character numeric string
             "data-type": {"type": "string", "length": 50}},
        ]
    }
