"""Pure: no two tables the job merges share a name where their data lives.

Each table spec (pipeline_contract.table_specs) claims names in four namespaces; two claims of one
name merge two tables' rows (or lose one's bookmark), so the names are checked, never
merged:

- its bronze folder, exactly: S3 keys are case-sensitive;
- its catalog tables, ignoring case: the bronze catalog table and the silver, tombstone
  and quarantine Iceberg tables all live in one Glue database (on AWS the Iceberg catalog
  is the Glue Data Catalog), Glue lower-cases names and Spark resolves identifiers
  case-insensitively, so one table's silver name may be another's quarantine name;
- its bookmark key (transformation_ctx), ignoring case, to be safe;
- its source name, ignoring case: AWS DMS does not replicate tables whose names differ
  only in case (CHAP_Source.PostgreSQL, limitations).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pipeline_contract.table_specs import SpecError

FOLDER, CATALOG, BOOKMARK, SOURCE = "bronze folder", "catalog table", "bookmark key", "source"
# role -> (namespace, the [tables."schema.table"] key that renames it, its default suffix)
ROLES: dict[str, tuple[str, str, str]] = {
    "bronze folder": (FOLDER, "", ""),
    "bronze catalog table": (CATALOG, "bronze_table", "_bronze"),
    "silver table": (CATALOG, "silver_table", "_silver"),
    "tombstone table": (CATALOG, "tombstone_table", "_silver_tombstones"),
    "quarantine table": (CATALOG, "quarantine_table", "_quarantine"),
    "bookmark key": (BOOKMARK, "transformation_ctx", ""),
    "source name": (SOURCE, "", ""),
}
_JUNK = re.compile(r"[^a-z0-9_]+")


class NameCollision(SpecError):
    """Two tables the job merges would share a name; the message names both, the name
    and the override that keeps them apart."""


@dataclass(frozen=True)
class Claim:
    table: str  # the source table, schema.table
    role: str  # a key of ROLES
    name: str  # as the spec spells it

    @property
    def key(self) -> tuple[str, str]:
        namespace = ROLES[self.role][0]
        return namespace, self.name if namespace == FOLDER else self.name.casefold()


def _catalog_name(qualified: str) -> str:
    """database.table of catalog.database.table (the Glue database holds them all)."""
    return ".".join(qualified.split(".")[-2:])


def claims(spec: Mapping[str, Any]) -> list[Claim]:
    table = spec["name"]
    return [
        Claim(table, "bronze folder", spec["bronze_location"]),
        Claim(table, "bronze catalog table", f"{spec['bronze_database']}.{spec['bronze_table']}"),
        Claim(table, "silver table", _catalog_name(spec["silver_table"])),
        Claim(table, "tombstone table", _catalog_name(spec["tombstone_table"])),
        Claim(table, "quarantine table", _catalog_name(spec["quarantine_table"])),
        Claim(table, "bookmark key", spec["transformation_ctx"]),
        Claim(table, "source name", table),
    ]


def collisions(specs: Iterable[Mapping[str, Any]]) -> list[tuple[Claim, Claim]]:
    """(first claim, later claim) of every name claimed twice, in spec order."""
    first: dict[tuple[str, str], Claim] = {}
    out = []
    for spec in specs:
        for claim in claims(spec):
            earlier = first.setdefault(claim.key, claim)
            if earlier is not claim:
                out.append((earlier, claim))
    return out


def check_names(specs: Sequence[Mapping[str, Any]]) -> None:
    """Refuse specs that share a name: one NameCollision listing every collision."""
    found = collisions(specs)
    if not found:
        return
    # names differing only in case: DMS cannot replicate both, so no override would help
    unsupported = {(a.table, b.table) for a, b in found if a.role == "source name"}
    found = [(a, b) for a, b in found
             if a.role == "source name" or (a.table, b.table) not in unsupported]
    taken = {c.key for spec in specs for c in claims(spec)}  # suggestions avoid these
    lines = [_describe(a, b, taken) for a, b in found]
    raise NameCollision("tables the job merges would share a name, which would merge "
                        "their rows; nothing was changed:\n  " + "\n  ".join(lines))


def _describe(a: Claim, b: Claim, taken: set[tuple[str, str]]) -> str:
    if a.role == b.role:
        head = f"{a.table} and {b.table} share the {a.role} {b.name!r}"
    else:
        head = f"the {a.role} of {a.table} and the {b.role} of {b.table} are both {b.name!r}"
    namespace, key, suffix = ROLES[b.role]
    if namespace == FOLDER:
        return (f"{head}: give one another target name with a table-mapping rename rule "
                "([source] table_mappings)")
    if namespace == SOURCE:
        return (f"{head}, ignoring case: AWS DMS does not replicate tables whose names "
                "differ only in case (CHAP_Source.PostgreSQL limitations); exclude one "
                "with a selection rule")
    base = _JUNK.sub("_", b.table.lower()).strip("_") or "t"
    stem = f"bronze_{base}" if namespace == BOOKMARK else f"{base}{suffix}"
    database = b.name.split(".", 1)[0] + "." if namespace == CATALOG else ""
    new, n = stem, 2
    while (namespace, f"{database}{new}".casefold()) in taken:
        new, n = f"{stem}_{n}", n + 1
    taken.add((namespace, f"{database}{new}".casefold()))  # one suggestion per name
    return f'{head}: override one in pipeline.toml, e.g. [tables."{b.table}"] {key} = "{new}"'
