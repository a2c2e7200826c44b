"""Pure: a source table's column list changed (ALTER TABLE), described for logs and status.

pgoutput's Relation message has names and types, not attribute numbers, so a rename is
recognised by position: same count, a name swapped at one place, same type there (a
drop plus an add of another type reads as just that).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pipeline_contract.dms_format.source_types import SourceColumn

Shape = tuple[tuple[str, str], ...]  # (column name, type as DDL spells it), in order


def shape_of(columns: Sequence[SourceColumn]) -> Shape:
    return tuple((c.name, c.type.describe()) for c in columns)


@dataclass(frozen=True)
class SchemaChange:
    table: str  # schema.table
    lsn: int  # the transaction's LSN where the new shape was first seen (0: outside one)
    before: Shape
    after: Shape

    def changes(self) -> list[str]:
        before, after = dict(self.before), dict(self.after)
        out: list[str] = []
        renamed: set[str] = set()
        if len(self.before) == len(self.after):
            for (old, old_type), (new, new_type) in zip(self.before, self.after, strict=True):
                if (old != new and old_type == new_type and old not in after
                        and new not in before):
                    out.append(f"renamed {old} to {new}")
                    renamed |= {old, new}
        out += [f"dropped {name}" for name in before if name not in after
                and name not in renamed]
        out += [f"added {name} {kind}" for name, kind in self.after if name not in before
                and name not in renamed]
        out += [f"{name} type {before[name]} -> {kind}" for name, kind in self.after
                if name in before and before[name] != kind]
        if not out and [n for n, _ in self.before] != [n for n, _ in self.after]:
            out.append("columns reordered")
        return out

    def summary(self) -> str:
        return f"{self.table}: " + "; ".join(self.changes() or ["no visible change"])

    def to_json(self) -> dict:
        return {"table": self.table, "lsn": self.lsn, "changes": self.changes(),
                "columns": [name for name, _ in self.after]}
