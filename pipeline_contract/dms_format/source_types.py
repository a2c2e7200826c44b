"""Pure: what the emitter knows of a source column's PostgreSQL type.

The same description comes from pg_attribute (full load) and from pgoutput Relation
messages (CDC), so both paths render a value the same way.
"""

from __future__ import annotations

from dataclasses import dataclass

# pg_type.typcategory values the renderer tells apart
CATEGORY_ARRAY = "A"
CATEGORY_BOOLEAN = "B"
CATEGORY_ENUM = "E"
CATEGORY_NETWORK = "I"
CATEGORY_NUMERIC = "N"
CATEGORY_STRING = "S"
CATEGORY_DATETIME = "D"
CATEGORY_TIMESPAN = "T"
CATEGORY_USER = "U"

VARHDRSZ = 4  # numeric's typmod is ((precision << 16) | scale) + VARHDRSZ


@dataclass(frozen=True)
class PgType:
    """A column's type with domains resolved to their base type."""

    name: str  # pg_type.typname of the base type: int4, numeric, timestamptz, _int4, mood
    category: str = CATEGORY_USER  # pg_type.typcategory
    typmod: int = -1  # atttypmod (the domain's typtypmod for a domain column)
    oid: int = 0

    @property
    def numeric_precision_scale(self) -> tuple[int, int] | None:
        """(precision, scale) of numeric(p,s); None when unbounded (plain `numeric`)."""
        if self.name != "numeric" or self.typmod < VARHDRSZ:
            return None
        mod = self.typmod - VARHDRSZ
        scale = mod & 0x7FF  # PostgreSQL 15+ allows negative scales: 11-bit two's complement
        if scale & 0x400:
            scale -= 0x800
        return (mod >> 16) & 0xFFFF, scale

    @property
    def length(self) -> int | None:
        """n of char(n)/varchar(n)/bit(n)/varbit(n); None when unbounded."""
        if self.typmod < 0:
            return None
        if self.name in ("bpchar", "varchar"):
            return self.typmod - VARHDRSZ
        if self.name in ("bit", "varbit"):
            return self.typmod
        return None

    @property
    def fractional_digits(self) -> int | None:
        """p of timestamp(p)/time(p)/interval(p); None when not given (6)."""
        if self.name in ("timestamp", "timestamptz", "time", "timetz") and self.typmod >= 0:
            return self.typmod
        return None

    def describe(self) -> str:
        """The type as a DDL would spell it (for logs and schema-change records)."""
        ps = self.numeric_precision_scale
        if ps is not None:
            return f"numeric({ps[0]},{ps[1]})"
        if self.length is not None:
            return f"{self.name}({self.length})"
        if self.fractional_digits is not None:
            return f"{self.name}({self.fractional_digits})"
        return self.name


@dataclass(frozen=True)
class SourceColumn:
    name: str
    type: PgType
    # part of the table's primary key (full load: pg_index; CDC: from the full load's
    # description, since pgoutput's key flag follows the replica identity, not the PK)
    in_key: bool = False


# Built-in types by OID (fixed across PostgreSQL versions): no catalog query needed for
# them. Enums, domains, arrays and other user types are looked up in pg_type.
BUILTIN: dict[int, tuple[str, str]] = {
    16: ("bool", "B"), 17: ("bytea", "U"), 18: ("char", "Z"), 19: ("name", "S"),
    20: ("int8", "N"), 21: ("int2", "N"), 23: ("int4", "N"), 25: ("text", "S"),
    26: ("oid", "N"), 114: ("json", "U"), 142: ("xml", "U"), 600: ("point", "G"),
    650: ("cidr", "I"), 700: ("float4", "N"), 701: ("float8", "N"), 774: ("macaddr8", "U"),
    790: ("money", "N"), 829: ("macaddr", "U"), 869: ("inet", "I"), 1042: ("bpchar", "S"),
    1043: ("varchar", "S"), 1082: ("date", "D"), 1083: ("time", "D"),
    1114: ("timestamp", "D"), 1184: ("timestamptz", "D"), 1186: ("interval", "T"),
    1266: ("timetz", "D"), 1560: ("bit", "V"), 1562: ("varbit", "V"), 1700: ("numeric", "N"),
    2950: ("uuid", "U"), 3614: ("tsvector", "U"), 3802: ("jsonb", "U"),
}


def builtin(oid: int, typmod: int = -1) -> PgType | None:
    known = BUILTIN.get(oid)
    return None if known is None else PgType(known[0], known[1], typmod, oid)
