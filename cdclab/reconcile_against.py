"""`cdclab reconcile --against FILE`: a silver table against an expected result.

FILE is a CSV with a header row naming silver columns (the expected rows, e.g. exported
from the production source at the time the replayed files end). Values are compared as
what they mean, not as text: numbers by value (a REAL within float32 precision), dates
and timestamps by instant, an empty field as NULL (as DMS's CSV carries it).
"""

from __future__ import annotations

import csv
import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

MAX_EXAMPLES = 10
FLOAT32_RELATIVE = 1e-6


@dataclass
class AgainstResult:
    table: str
    expected_rows: int
    silver_rows: int
    missing_in_silver: list[tuple] = field(default_factory=list)
    extra_in_silver: list[tuple] = field(default_factory=list)
    different: list[dict[str, Any]] = field(default_factory=list)
    duplicate_keys: list[tuple] = field(default_factory=list)

    @property
    def equal(self) -> bool:
        return not (self.missing_in_silver or self.extra_in_silver or self.different
                    or self.duplicate_keys)

    def to_json(self) -> dict[str, Any]:
        return {"table": self.table, "equal": self.equal, "expected_rows": self.expected_rows,
                "silver_rows": self.silver_rows,
                "missing_in_silver": [list(k) for k in self.missing_in_silver],
                "extra_in_silver": [list(k) for k in self.extra_in_silver],
                "different": self.different,
                "duplicate_keys": [list(k) for k in self.duplicate_keys]}


def same(expected: str | None, actual: Any) -> bool:
    """Whether an expected text means the silver value."""
    if expected is None or expected == "":
        return actual is None or actual == ""
    if actual is None:
        return False
    if isinstance(actual, bool):
        return expected.strip().lower() in (("t", "true", "1") if actual else ("f", "false", "0"))
    if isinstance(actual, (int, Decimal)):
        try:
            return Decimal(expected.strip()) == Decimal(actual)
        except InvalidOperation:
            return False
    if isinstance(actual, float):
        try:
            wanted = float(expected)
        except ValueError:
            return False
        if math.isnan(wanted) or math.isnan(actual):
            return math.isnan(wanted) and math.isnan(actual)
        return math.isclose(wanted, actual, rel_tol=FLOAT32_RELATIVE, abs_tol=1e-12)
    if isinstance(actual, datetime):
        try:
            parsed = datetime.fromisoformat(expected.strip().replace("Z", "+00:00"))
        except ValueError:
            return False
        if parsed.tzinfo is not None and actual.tzinfo is None:
            parsed = parsed.astimezone(UTC).replace(tzinfo=None)  # silver holds UTC
        return parsed == actual
    if isinstance(actual, date):
        return expected.strip() == actual.isoformat()
    if isinstance(actual, bytes):
        return expected in (actual.hex(), "\\x" + actual.hex(), actual.decode("utf-8", "replace"))
    return expected == str(actual)


def compare(table: str, keys: Sequence[str], expected: Iterable[Mapping[str, str | None]],
            silver: Iterable[Mapping[str, Any]]) -> AgainstResult:
    """Rows by key; every column the expected rows name is compared."""
    want: dict[tuple, Mapping[str, str | None]] = {}
    for row in expected:
        want[tuple((row.get(k) or "").strip() for k in keys)] = row
    have: dict[tuple, Mapping[str, Any]] = {}
    counts: Counter[tuple] = Counter()
    for row in silver:
        key = tuple("" if row.get(k) is None else str(row.get(k)) for k in keys)
        counts[key] += 1
        have.setdefault(key, row)
    result = AgainstResult(table, len(want), sum(counts.values()))
    result.duplicate_keys = sorted(k for k, n in counts.items() if n > 1)
    result.missing_in_silver = sorted(set(want) - set(have))
    result.extra_in_silver = sorted(set(have) - set(want))
    for key in sorted(set(want) & set(have)):
        columns = [c for c in want[key] if not same(want[key][c], have[key].get(c))]
        if columns:
            result.different.append({"key": list(key), "columns": {
                c: {"expected": want[key][c], "silver": str(have[key].get(c))}
                for c in columns}})
    return result


def read_expected(path: Path) -> tuple[list[str], list[dict[str, str | None]]]:
    with path.open(newline="") as f:
        reader = csv.DictReader(f)
        if not reader.fieldnames:
            raise ValueError(f"{path}: no header row naming the silver columns")
        return list(reader.fieldnames), list(reader)


def against(env: Mapping[str, str], silver_table: str, keys: Sequence[str],
            path: Path) -> AgainstResult:
    """The silver table (catalog.namespace.table or namespace.table) against FILE."""
    from pyiceberg.exceptions import NoSuchTableError

    from cdclab.reconcile import silver_catalog

    columns, rows = read_expected(path)
    unknown = [k for k in keys if k not in columns]
    if unknown:
        raise ValueError(f"{path}: the key columns {unknown} are not in its header {columns}")
    identifier = ".".join(silver_table.split(".")[-2:])
    try:
        table = silver_catalog(env).load_table(identifier)
    except NoSuchTableError:
        raise ValueError(f"{silver_table}: no such silver table") from None
    names = {f.name for f in table.schema().fields}
    missing = [c for c in columns if c not in names]
    if missing:
        raise ValueError(f"{path}: columns {missing} are not in {silver_table} "
                         f"({sorted(names)})")
    silver = table.scan(selected_fields=tuple(columns)).to_arrow().to_pylist()
    return compare(silver_table, keys, rows, silver)
