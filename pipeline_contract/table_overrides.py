"""Pure: pipeline.toml `[tables."schema.table"]`, the per-table overrides of the generic
job (its names, its bookmark key, derived columns), checked as every setting is."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pipeline_contract.settings_check import (
    GLUE_NAME,
    MISSING,
    UNSHOWN,
    WHERE,
    Rule,
    SettingsError,
    one_of,
    text,
)

TRANSFORM_SPLIT = "split"  # the value split at the first match of `pattern`: part 0 or 1
TRANSFORMS = (TRANSFORM_SPLIT,)
# Java's \s (Spark's split) is ASCII whitespace: the default split of "City, Country".
DEFAULT_SPLIT_PATTERN = r",[ \t\n\x0B\f\r]*"


def _compiles(pattern: str) -> bool:
    try:
        re.compile(pattern)
    except re.error:
        return False
    return True


CONTEXT = text(r"[^\x00-\x1f\x7f]{1,255}", "1 to 255 characters without control "
               "characters (the job bookmark's key for the table's reads)")
NAME_RULES: dict[str, Rule] = {
    "bronze_table": GLUE_NAME, "silver_table": GLUE_NAME, "tombstone_table": GLUE_NAME,
    "quarantine_table": GLUE_NAME, "transformation_ctx": CONTEXT}
DERIVE = Rule(list, "a list of derived columns: [{ column = ..., into = [...] }]")
DERIVE_RULES: dict[str, Rule] = {
    "column": text(r"[^\x00]+", "the name of a column of the table"),
    "into": Rule(list, "one or two new column names: [first] or [first, rest]",
                 lambda v: 1 <= len(v) <= 2 and all(type(x) is str and x for x in v)),
    "transform": one_of(*TRANSFORMS),
    # `cdclab reconcile` splits with Python's re, the job with Java's regex
    "pattern": text(r"[^\x00]*", "a regular expression Python's re compiles (reconcile "
                    "splits with it, as the job does with Java's)", test=_compiles),
}
REQUIRED_DERIVE = ("column", "into")


@dataclass(frozen=True)
class Derived:
    """Silver columns computed from one source column, in its place (it is dropped)."""

    column: str
    into: tuple[str, ...]
    transform: str = TRANSFORM_SPLIT
    pattern: str = DEFAULT_SPLIT_PATTERN


@dataclass(frozen=True)
class TableOverrides:
    """pipeline.toml `[tables."schema.table"]`: everything optional."""

    bronze_table: str = ""
    silver_table: str = ""
    tombstone_table: str = ""
    quarantine_table: str = ""
    transformation_ctx: str = ""  # the job bookmark's key for this table's reads
    derive: tuple[Derived, ...] = ()

    @classmethod
    def parse(cls, name: str, raw: Any, where: str = WHERE) -> TableOverrides:
        """The overrides of source table `name`; a bad key or value is a SettingsError."""
        section = f'tables."{name}"'
        if "." not in name:
            raise SettingsError(where, f"[{section}]", UNSHOWN, 'name the source table '
                                'as "schema.table"')
        if not isinstance(raw, dict):
            raise SettingsError(where, f"[{section}]", raw, "a table of overrides "
                                f"({', '.join((*NAME_RULES, 'derive'))})")
        _check(where, section, raw, {**NAME_RULES, "derive": DERIVE}, ())
        derive = []
        for i, d in enumerate(raw.get("derive", [])):
            at = f"{section}.derive[{i}]"
            if not isinstance(d, dict):
                raise SettingsError(where, at, d, "a table: { column = ..., into = [...] }")
            _check(where, at, d, DERIVE_RULES, REQUIRED_DERIVE)
            derive.append(Derived(d["column"], tuple(d["into"]),
                                  d.get("transform", TRANSFORM_SPLIT),
                                  d.get("pattern", DEFAULT_SPLIT_PATTERN)))
        return cls(*(raw.get(k, "") for k in NAME_RULES), tuple(derive))


def _check(where: str, at: str, raw: Mapping[str, Any], rules: Mapping[str, Rule],
           required: tuple[str, ...]) -> None:
    for key, value in raw.items():
        rule = rules.get(key)
        if rule is None:
            raise SettingsError(where, f"{at}.{key}", value, f"not a key here (the keys: "
                                f"{', '.join(rules)})")
        if not rule.accepts(value):
            raise SettingsError(where, f"{at}.{key}", value, rule.allowed)
    for key in required:
        if key not in raw:
            raise SettingsError(where, f"{at}.{key}", MISSING, rules[key].allowed)
