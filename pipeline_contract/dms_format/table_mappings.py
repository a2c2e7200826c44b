"""Pure: DMS table mappings (the JSON a replication task takes) -> which tables, and how.

Implements the rules users commonly write (CHAP_Tasks.CustomizingTasks.TableMapping):
selection rules (include / exclude / explicit, `%` wildcards) and transformation rules
rename, convert-lowercase / convert-uppercase, add-prefix / add-suffix (schema, table,
column), remove-column, add-column with a header or metadata expression, and
add-before-image-columns (the old values of an UPDATE beside the new ones). Anything
else fails with a MappingError naming the file, the rule and key, the value and what is
allowed, never silently ignored.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pipeline_contract.dms_format.source_types import SourceColumn
from pipeline_contract.dms_format.values import is_lob
from pipeline_contract.settings_check import MISSING, UNSHOWN, SettingsError

CHANGE_SEQ_EXPRESSION = "$AR_H_CHANGE_SEQ"
# add-column expressions the emitter evaluates; the metadata names are DMS's
# ("Adding metadata to a target table using expressions")
EXPRESSIONS = (CHANGE_SEQ_EXPRESSION, "$AR_M_SOURCE_SCHEMA", "$AR_M_SOURCE_TABLE_NAME")
_LITERAL = re.compile(r"^'((?:[^']|'')*)'$")
_TARGETS = ("schema", "table", "column")
BEFORE_IMAGE_ACTION = "add-before-image-columns"
_ACTIONS = ("rename", "convert-lowercase", "convert-uppercase", "add-prefix", "add-suffix",
            "remove-column", "add-column", BEFORE_IMAGE_ACTION)
_RULE_TYPES = ("selection", "transformation")
_SELECTION_ACTIONS = ("include", "exclude", "explicit")
# The keys DMS documents for selection and transformation rules ("Selection rules and
# actions", "Transformation rules and actions"); any other is a typo, refused.
_RULE_KEYS = ("rule-type", "rule-id", "rule-name", "rule-action", "rule-target",
              "object-locator", "value", "old-value", "expression", "data-type", "filters",
              "load-order", "parallel-load", "primary-key-def", "before-image-def")
_LOCATOR_KEYS = ("schema-name", "table-name", "table-type", "column-name", "data-type",
                 "table-tablespace-name", "index-tablespace-name")
# documented, but not implemented by the emitter: refused when set
_UNSUPPORTED = ("filters", "load-order", "parallel-load", "primary-key-def")
# before-image-def (CHAP_Target.Kinesis, "Using a before image transformation rule"):
# column-prefix defaults to BI_, column-suffix to empty, and the filter chooses the columns
BI_PREFIX, BI_SUFFIX = "BI_", ""
BI_PK_ONLY, BI_NON_LOB, BI_ALL = "pk-only", "non-lob", "all"
BI_FILTERS = (BI_PK_ONLY, BI_NON_LOB, BI_ALL)
_BI_KEYS = ("column-prefix", "column-suffix", "column-filter")


class MappingError(SettingsError):
    """A table mapping the emitter cannot apply: the file, the rule and key, the value
    and what is allowed (a SettingsError, as a bad pipeline.toml setting)."""


def _like(pattern: str, name: str, wildcards: bool = True) -> bool:
    if not wildcards:
        return pattern == name
    regex = ".*".join(re.escape(part) for part in pattern.split("%"))
    return re.fullmatch(regex, name, flags=re.DOTALL) is not None


@dataclass(frozen=True)
class BeforeImage:
    """An add-before-image-columns rule's before-image-def: on an UPDATE, the values the
    source logged before it, in columns named prefix + column + suffix."""

    prefix: str = BI_PREFIX
    suffix: str = BI_SUFFIX
    column_filter: str = BI_PK_ONLY
    rule_id: str = ""

    def name(self, column: str) -> str:
        return f"{self.prefix}{column}{self.suffix}"

    def wants(self, column: SourceColumn, key: Collection[str]) -> bool:
        """pk-only: "columns that are part of table primary keys"; non-lob: "columns
        that are not of LOB type"; all: "any column that has a before-image value"."""
        if self.column_filter == BI_PK_ONLY:
            return column.name in key
        return self.column_filter == BI_ALL or not is_lob(column.type)


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
    before_image: BeforeImage | None = None

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
    before_image: BeforeImage | None = None

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

    def before(self, columns: Sequence[SourceColumn], key: Collection[str]) -> list[int]:
        """Indexes of the source columns that get a before-image column: kept columns
        the rule's filter takes, in column order (none without the rule). `key`: the
        table's primary-key column names."""
        bi = self.before_image
        if bi is None:
            return []
        names = [c.name for c in columns]
        return [i for i in self.kept(names) if bi.wants(columns[i], key)]

    def header(self, columns: Sequence[str], before: Sequence[int] = ()) -> tuple[str, ...]:
        """The written column names: kept columns renamed, the added columns, then a
        before-image column for each of `before` (named after the column as written)."""
        bi = self.before_image
        return (*(self.column_name(columns[i]) for i in self.kept(columns)),
                *(a.name for a in self.added),
                *(bi.name(self.column_name(columns[i])) for i in before if bi is not None))

    def column_name(self, column: str) -> str:
        name = column
        for rule in self.column_rules:
            if rule.action != "remove-column" and _column_hit(rule, column):
                name = _rename(rule, name)
        return name

    def row(self, kept: Sequence[int], values: Sequence[str | None], change_seq: str,
            before: Sequence[str | None] = ()) -> tuple[str | None, ...]:
        """A row's written fields; `before`: its before-image values (one per column of
        `self.before`, NULL where the source logged none)."""
        added = self.added
        if len(added) == 1 and added[0].expression == CHANGE_SEQ_EXPRESSION:
            # the common case, per change
            return (*(values[i] for i in kept), change_seq, *before)
        return (*(values[i] for i in kept),
                *(a.value(change_seq, self.schema, self.table) for a in self.added), *before)


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
    source: str = field(default="table mappings", compare=False)  # the file, for errors

    @classmethod
    def parse(cls, doc: str | dict[str, Any], source: str = "table mappings") -> TableMappings:
        if isinstance(doc, str):
            try:
                doc = json.loads(doc)
            except json.JSONDecodeError as exc:
                raise MappingError(source, "", UNSHOWN, f"not JSON ({exc})") from None
        if not isinstance(doc, dict):
            raise MappingError(source, "", UNSHOWN, 'expected a JSON object {"rules": [...]}')
        for key, value in doc.items():
            if key != "rules":
                raise MappingError(source, key, value, 'not a key of a table mapping (its '
                                   'one key: "rules")')
        rules = doc.get("rules", MISSING)
        if not isinstance(rules, list):
            raise MappingError(source, "rules", rules, "a list of rules")
        selections, transformations = [], []
        for i, raw in enumerate(rules):
            rule = _parse_rule(raw, source, i)
            (selections if rule.rule_type == "selection" else transformations).append(rule)
        if not any(r.action in ("include", "explicit") for r in selections):
            raise MappingError(source, "rules", UNSHOWN, "no selection rule includes a table "
                               "(add a selection rule with rule-action include)")
        return cls(tuple(selections), tuple(transformations), source)

    def selects(self, schema: str, table: str) -> bool:
        hits = [r for r in self.selections if r.matches(schema, table)]
        return bool(hits) and not any(r.action == "exclude" for r in hits)

    def plan(self, schema: str, table: str) -> TablePlan:
        target_schema, target_table = schema, table
        column_rules: list[Rule] = []
        added: list[AddedColumn] = []
        before: BeforeImage | None = None
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
            elif rule.before_image is not None:
                if before is not None:  # "more than one transformation rule action
                    # against the same object" is a documented limitation
                    raise MappingError(
                        self.source, f"rule-id {rule.rule_id!r}", UNSHOWN,
                        f"a second {BEFORE_IMAGE_ACTION} rule for {schema}.{table} (rule-id "
                        f"{before.rule_id!r} is the first): one per table")
                before = rule.before_image
            else:
                column_rules.append(rule)
        return TablePlan(schema, table, target_schema, target_table, tuple(column_rules),
                         tuple(added), before)

    def select(self, tables: Sequence[tuple[str, str]]) -> list[TablePlan]:
        """Plans of the selected tables among `tables` (schema, name), in that order."""
        return [self.plan(s, t) for s, t in tables if self.selects(s, t)]


def _parse_rule(raw: Any, source: str, index: int) -> Rule:
    at = f"rules[{index}]"
    if not isinstance(raw, dict):
        raise MappingError(source, at, raw, "a rule: a JSON object")
    rule_id = raw.get("rule-id", MISSING)
    if type(rule_id) not in (str, int) or rule_id == "":
        raise MappingError(source, f"{at}.rule-id", rule_id, "the rule's number (a string "
                           "or number)")
    at = f"{at} (rule-id {str(rule_id)!r})"

    def fail(key: str, value: Any, allowed: str) -> MappingError:
        return MappingError(source, f"{at}.{key}" if key else at, value, allowed)

    _known(raw, _RULE_KEYS, fail, "rule")
    for key in ("rule-name", "rule-type", "rule-action", "rule-target", "value", "expression",
                "old-value"):
        if raw.get(key) is not None and type(raw[key]) is not str:
            raise fail(key, raw[key], "a string")
    rule_type, action = raw.get("rule-type", MISSING), raw.get("rule-action", MISSING)
    locator = raw.get("object-locator", MISSING)
    if not isinstance(locator, dict):
        raise fail("object-locator", locator, 'an object: {"schema-name": ..., '
                   '"table-name": ...}')
    _known(locator, _LOCATOR_KEYS, lambda k, v, a: fail(f"object-locator.{k}", v, a),
           "object-locator")
    for key in ("schema-name", "table-name", "column-name", "table-type"):
        if key in locator and type(locator[key]) is not str:
            raise fail(f"object-locator.{key}", locator[key], "a string")
    if "schema-name" not in locator:
        raise fail("object-locator.schema-name", MISSING, "the schema, % for any")
    if locator.get("table-type", "table") != "table":
        raise fail("object-locator.table-type", locator["table-type"], "table (the "
                   "emitter replicates tables, not views)")
    for unsupported in _UNSUPPORTED:
        if raw.get(unsupported):
            raise fail(unsupported, raw[unsupported], "not supported locally: leave it out")
    if rule_type not in _RULE_TYPES:
        raise fail("rule-type", rule_type, f"one of {', '.join(_RULE_TYPES)} (what the "
                   "emitter implements)")
    if rule_type == "selection":
        if action not in _SELECTION_ACTIONS:
            raise fail("rule-action", action, f"one of {', '.join(_SELECTION_ACTIONS)} "
                       "(selection rules the emitter implements)")
        return Rule(str(rule_id), "selection", action, locator["schema-name"],
                    locator.get("table-name", "%"))
    target = raw.get("rule-target", MISSING)
    if target not in _TARGETS:
        raise fail("rule-target", target, f"one of {', '.join(_TARGETS)}")
    if action not in _ACTIONS:
        raise fail("rule-action", action, f"one of {', '.join(_ACTIONS)} (transformations "
                   "the emitter implements)")
    value, expression = raw.get("value"), raw.get("expression")
    if action in ("rename", "add-prefix", "add-suffix", "add-column") and not value:
        raise fail("value", value if value is not None else MISSING, f"{action} needs a "
                   "value: the new name, prefix or suffix")
    if action in ("add-column", "remove-column") and target != "column":
        raise fail("rule-target", target, f"column ({action} needs rule-target column)")
    if action == "add-column" and expression not in EXPRESSIONS \
            and not _LITERAL.match(expression or ""):
        raise fail("expression", expression if expression is not None else MISSING,
                   f"one of {', '.join(EXPRESSIONS)} or a quoted 'literal' (what the "
                   "emitter implements)")
    column = locator.get("column-name")
    before = None
    if action == BEFORE_IMAGE_ACTION:
        before = _before_image(raw, str(rule_id), target, fail)
        if column is not None:
            raise fail("object-locator.column-name", column, "left out: the rule applies "
                       "to whole tables, and its column-filter chooses the columns")
    elif target == "column" and action != "add-column" and not column:
        raise fail("object-locator.column-name", MISSING, "the column(s) the rule "
                   "applies to (% for any)")
    return Rule(str(rule_id), "transformation", action, locator["schema-name"],
                locator.get("table-name", "%"), column, target, value,
                raw.get("old-value"), expression, before)


def _before_image(raw: Mapping[str, Any], rule_id: str, target: str, fail: Any) -> BeforeImage:
    """The rule's before-image-def, checked ("must provide a before-image-def section";
    "Don't set both column-prefix and column-suffix to empty strings")."""
    if target != "column":
        raise fail("rule-target", target, f"column ({BEFORE_IMAGE_ACTION} needs "
                   "rule-target column)")
    for key in ("value", "expression", "old-value"):
        if raw.get(key) is not None:
            raise fail(key, raw[key], f"left out ({BEFORE_IMAGE_ACTION} takes its settings "
                       "from before-image-def)")
    spec = raw.get("before-image-def", MISSING)
    if not isinstance(spec, dict):
        raise fail("before-image-def", spec, 'an object: {"column-prefix": "BI_", '
                   '"column-suffix": "", "column-filter": "pk-only"}')
    _known(spec, _BI_KEYS, lambda k, v, a: fail(f"before-image-def.{k}", v, a),
           "before-image-def")
    prefix, suffix = spec.get("column-prefix", BI_PREFIX), spec.get("column-suffix", BI_SUFFIX)
    column_filter = spec.get("column-filter", BI_PK_ONLY)
    for key, value in (("column-prefix", prefix), ("column-suffix", suffix)):
        if type(value) is not str:
            raise fail(f"before-image-def.{key}", value, "a string")
    if column_filter not in BI_FILTERS:
        raise fail("before-image-def.column-filter", column_filter,
                   f"one of {', '.join(BI_FILTERS)}")
    if not prefix and not suffix:
        raise fail("before-image-def", spec, "a column-prefix or a column-suffix: not both "
                   "empty (the before-image columns would take the columns' own names)")
    return BeforeImage(prefix, suffix, column_filter, rule_id)


def _known(raw: Mapping[str, Any], keys: tuple[str, ...], fail: Any, what: str) -> None:
    for key, value in raw.items():
        if key not in keys:
            raise fail(key, value, f"not a key of a {what} (its keys: {', '.join(keys)})")


def read_document(path: Path | str) -> dict[str, Any]:
    """The table-mapping JSON of `path`, checked (a MappingError naming the file)."""
    try:
        text = Path(path).read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise MappingError(str(path), "", UNSHOWN, "cannot read the table mappings "
                           f"({getattr(exc, 'strerror', None) or exc}); pipeline.toml "
                           "[source] table_mappings names this file") from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise MappingError(str(path), "", UNSHOWN, f"not JSON ({exc})") from None
    TableMappings.parse(doc, str(path))
    return doc


def folder_conflicts(plans: Iterable[TablePlan]) -> list[str]:
    """Selected tables DMS would mix: two written to one folder (S3 keys are
    case-sensitive: the same folder exactly), or two whose names differ only in case,
    which DMS does not support for a PostgreSQL source ("Replication of multiple tables
    with the same name where each name has a different case ... AWS DMS doesn't support",
    CHAP_Source.PostgreSQL limitations). One message per pair, naming both."""
    out: list[str] = []
    by_folder: dict[str, str] = {}
    by_name: dict[str, str] = {}
    for plan in plans:
        other = by_folder.setdefault(plan.folder, plan.qualified)
        if other != plan.qualified:
            out.append(f"{other} and {plan.qualified} are both written to the folder "
                       f"{plan.folder!r}: give one another target name with a "
                       "table-mapping rename rule")
        other = by_name.setdefault(plan.qualified.casefold(), plan.qualified)
        if other != plan.qualified:
            out.append(f"{other} and {plan.qualified} differ only in case, which AWS DMS "
                       "does not replicate (CHAP_Source.PostgreSQL limitations): exclude "
                       "one with a selection rule")
    return out


def default_mappings(schema: str, table: str, change_seq_column: str,
                     before_image: bool = True) -> dict[str, Any]:
    """One table, plus the change-sequence column the Glue job dedups by and (unless
    `before_image` is false) the primary key's before image, by which the job deletes
    the old key of a primary-key change (DMS writes it as one U row with the new key)."""
    locator = {"schema-name": schema, "table-name": table}
    rules: list[dict[str, Any]] = [
        {"rule-type": "selection", "rule-id": "1", "rule-name": "include-source-table",
         "object-locator": locator, "rule-action": "include"},
        {"rule-type": "transformation", "rule-id": "2", "rule-name": "add-change-seq",
         "rule-target": "column", "object-locator": locator,
         "rule-action": "add-column", "value": change_seq_column,
         "expression": CHANGE_SEQ_EXPRESSION,
         # AR_H_CHANGE_SEQ is a 35-character numeric string
         "data-type": {"type": "string", "length": 50}},
    ]
    if before_image:
        rules.append(
            {"rule-type": "transformation", "rule-id": "3", "rule-name": "add-before-image",
             "rule-target": "column", "object-locator": locator,
             "rule-action": BEFORE_IMAGE_ACTION,
             "before-image-def": {"column-prefix": BI_PREFIX, "column-suffix": BI_SUFFIX,
                                  "column-filter": BI_PK_ONLY}})
    return {"rules": rules}
