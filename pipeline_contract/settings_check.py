"""Pure: how a setting is checked, and the one error a bad setting gives.

Each section of pipeline.toml is a frozen dataclass (pipeline_contract.settings) with a `RULES`
table: for every key, what it allows. The check runs when the file is loaded, so every
command that reads the settings (the lab, the emitter, `cdclab deploy`) refuses the same
values with the same error: a SettingsError naming the file, the key, the value and what
is allowed. The DMS
table-mapping JSON raises a subclass of it
(pipeline_contract.dms_format.table_mappings.MappingError).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import MISSING as MISSING_FIELD
from dataclasses import dataclass, fields
from typing import Any, ClassVar


class _Sentinel:
    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


MISSING = _Sentinel("MISSING")  # the key is not there
UNSHOWN = _Sentinel("UNSHOWN")  # the problem is not one value (a document, a pair of keys)
WHERE = "pipeline.toml"  # a section built in code; loading names the real file


def show(value: Any, limit: int = 120) -> str:
    """A value as the file spells it (TOML and JSON agree on strings, numbers, lists)."""
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


class SettingsError(ValueError):
    """A setting the pipeline cannot run with: where (file), key, value, what is allowed."""

    def __init__(self, where: str, key: str, value: Any, allowed: str) -> None:
        self.where, self.key, self.value, self.allowed = where, key, value, allowed
        if not key:
            text = f"{where}: {allowed}"
        elif value is MISSING:
            text = f"{where}: {key} is missing: {allowed}"
        elif value is UNSHOWN:
            text = f"{where}: {key}: {allowed}"
        else:
            text = f"{where}: {key} = {show(value)}: {allowed}"
        super().__init__(text)

    def at(self, where: str) -> SettingsError:
        """The same error, found in `where` (the loaded file, an environment variable)."""
        return type(self)(where, self.key, self.value, self.allowed)


# --- rules ------------------------------------------------------------------------------
@dataclass(frozen=True)
class Rule:
    """What one key allows. `kind` is the TOML type (int keys take no bool, float keys
    take int); lo/hi/choices are kept so tests and docs can read the bounds."""

    kind: type
    allowed: str
    test: Callable[[Any], bool] = lambda _v: True
    optional: bool = False  # None (a key left unset) is allowed
    lo: float | None = None
    hi: float | None = None
    choices: tuple[str, ...] = ()

    def accepts(self, value: Any) -> bool:
        if value is None:
            return self.optional
        if self.kind is float:
            typed = type(value) in (int, float) and math.isfinite(value)
        else:
            typed = type(value) is self.kind
        return typed and self.test(value)


def flag() -> Rule:
    return Rule(bool, "true or false")


def _num(v: float) -> str:
    return str(int(v)) if float(v).is_integer() else str(v)


def _bounds(lo: float | None, hi: float | None) -> str:
    if lo is not None and hi is not None:
        return f"from {_num(lo)} to {_num(hi)}"
    if lo is not None:
        return f">= {_num(lo)}"
    return f"<= {_num(hi)}" if hi is not None else "any"


def _within(lo: float | None, hi: float | None) -> Callable[[Any], bool]:
    return lambda v: (lo is None or v >= lo) and (hi is None or v <= hi)


def whole(lo: int | None = None, hi: int | None = None, why: str = "",
          optional: bool = False) -> Rule:
    unset = ", or unset" if optional else ""
    return Rule(int, f"a whole number {_bounds(lo, hi)}{unset}{why}", _within(lo, hi),
                optional, lo, hi)


def number(lo: float | None = None, hi: float | None = None, why: str = "") -> Rule:
    return Rule(float, f"a number {_bounds(lo, hi)}{why}", _within(lo, hi), False, lo, hi)


def one_of(*choices: str, fold: bool = False, why: str = "") -> Rule:
    """One of `choices` (ignoring case if `fold`, as the DMS API does for some)."""
    folded = {c.casefold() for c in choices}
    test = (lambda v: v.casefold() in folded) if fold else (lambda v: v in choices)
    case = " (any case)" if fold else ""
    return Rule(str, f"one of {', '.join(choices)}{case}{why}", test, choices=choices)


def text(pattern: str, allowed: str, max_bytes: int | None = None,
         test: Callable[[str], bool] = lambda _v: True) -> Rule:
    """A string matching `pattern` (whole), at most `max_bytes` bytes in UTF-8."""
    regex = re.compile(pattern, re.DOTALL)
    return Rule(str, allowed, lambda v: regex.fullmatch(v) is not None and (
        max_bytes is None or len(v.encode("utf-8", "surrogatepass")) <= max_bytes)
        and test(v))


# Names the job's Spark SQL uses unquoted, and Glue lower-cases (1..255: Glue's Name)
GLUE_NAME = text(r"[a-z0-9_]{1,255}", "1 to 255 lower-case letters, digits or '_' (Glue "
                 "lower-cases catalog names, and the job's Spark SQL uses them unquoted)")
# Object key prefixes: S3's "safe characters" for key names (Creating object key names),
# without '*', which Hadoop reads as a glob; no empty, '.' or '..' segment
_SAFE = r"[A-Za-z0-9!_.'()-]+"
KEY_SEGMENTS = re.compile(rf"{_SAFE}(/{_SAFE})*")


def no_dot_segments(v: str) -> bool:
    return not any(part in (".", "..") for part in v.split("/"))


S3_PREFIX = text(KEY_SEGMENTS.pattern, "a key prefix of S3's safe characters (letters, digits, "
                 "! - _ . ' ( )) in '/'-separated folders, without a leading or trailing "
                 "'/', '*' or a '.' or '..' folder, at most 512 bytes", 512, no_dot_segments)


# --- sections ---------------------------------------------------------------------------
class Section:
    """A pipeline.toml section: a frozen dataclass whose RULES name every field. `build`
    makes one from its TOML table and checks every field, then `check_together` (rules
    across keys). Code may derive a section with dataclasses.replace (an AWS stack's
    names) unchecked: what the user writes is what is checked."""

    SECTION: ClassVar[str]
    RULES: ClassVar[Mapping[str, Rule]]

    def check(self, where: str = WHERE) -> None:
        try:
            for f in fields(self):  # type: ignore[arg-type]
                value, rule = getattr(self, f.name), self.RULES[f.name]
                if not rule.accepts(value):
                    raise SettingsError(where, self.key(f.name), value, rule.allowed)
            self.check_together()
        except SettingsError as exc:
            raise exc.at(where) from None

    def check_together(self) -> None:
        """Rules that span keys; raise SettingsError naming one of them."""

    @classmethod
    def key(cls, name: str) -> str:
        return f"{cls.SECTION}.{name}"

    @classmethod
    def build(cls, raw: Any, where: str = WHERE) -> Any:
        """The section from its TOML table: unknown or missing keys refused, then every
        value checked (the error names `where`)."""
        if not isinstance(raw, dict):
            raise SettingsError(where, f"[{cls.SECTION}]", raw, "a table of keys "
                                f"({', '.join(cls.RULES)})")
        known = {f.name: f for f in fields(cls)}  # type: ignore[arg-type]
        for name, value in raw.items():
            if name not in known:
                raise SettingsError(where, cls.key(name), value, f"not a key of "
                                    f"[{cls.SECTION}] (its keys: {', '.join(known)})")
        for name, f in known.items():
            required = f.default is MISSING_FIELD and f.default_factory is MISSING_FIELD
            if required and name not in raw:
                raise SettingsError(where, cls.key(name), MISSING, cls.RULES[name].allowed)
        section = cls(**raw)
        section.check(where)
        return section
