"""GetPartitions `Expression`: parse once, evaluate against each partition's values.

Pure logic, no I/O. The grammar is the one botocore's Glue model documents for
GetPartitionsRequest.Expression: a SQL WHERE-like filter with `=`, `<>`, `>`, `<`, `>=`,
`<=`, `AND`, `OR`, `NOT`, `IN`, `BETWEEN`, `LIKE`, `IS NULL`, over partition keys of type
string, date, timestamp, int, bigint, long, tinyint, smallint or decimal ("if a type is
encountered that is not valid, an exception is thrown"). Glue parses it with JSQLParser;
cdclab's parser accepts that documented subset (plus `!=`) and nothing else.

A key's value is compared as the key's type: the literal on the other side is converted to
it (`year > 2020` and `year > '2020'` agree on an int key). A stored value that does not
convert (an int key holding 'x') is NULL here, so no comparison matches it; SQL's
three-valued logic then applies (NOT of unknown is unknown).
"""

from __future__ import annotations

import datetime as dt
import operator
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

INT_TYPES = {"int", "integer", "bigint", "long", "tinyint", "smallint"}


class ExpressionError(ValueError):
    """The expression does not parse, names no key, or uses a key type Glue refuses."""


@dataclass(frozen=True)
class Key:
    name: str


@dataclass(frozen=True)
class Lit:
    value: object  # str, int or Decimal as written


@dataclass(frozen=True)
class Cmp:
    op: str  # = <> < > <= >=
    left: object
    right: object


@dataclass(frozen=True)
class In:
    operand: object
    items: tuple
    negated: bool


@dataclass(frozen=True)
class Between:
    operand: object
    low: object
    high: object
    negated: bool


@dataclass(frozen=True)
class Like:
    operand: object
    pattern: object
    negated: bool


@dataclass(frozen=True)
class IsNull:
    operand: object
    negated: bool


@dataclass(frozen=True)
class Not:
    inner: object


@dataclass(frozen=True)
class BoolOp:
    op: str  # AND / OR
    left: object
    right: object


_TOKEN = re.compile(r"""\s*(?:
    (?P<str>'(?:[^']|'')*')
  | (?P<num>[+-]?\d+(?:\.\d+)?)
  | (?P<qid>`(?:[^`]|``)+`|"(?:[^"]|"")+")
  | (?P<id>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<op><>|!=|<=|>=|=|<|>|\(|\)|,)
)""", re.VERBOSE)
_KEYWORDS = {"AND", "OR", "NOT", "IN", "BETWEEN", "LIKE", "IS", "NULL", "DATE", "TIMESTAMP"}


def _tokens(text: str) -> list[tuple[str, object]]:
    out: list[tuple[str, object]] = []
    pos = 0
    text = text.rstrip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m or m.end() == pos:
            raise ExpressionError(f"cannot parse the expression at {text[pos:pos + 20]!r}")
        pos = m.end()
        kind = m.lastgroup
        raw = m.group(kind)
        if kind == "str":
            out.append(("lit", raw[1:-1].replace("''", "'")))
        elif kind == "num":
            out.append(("lit", Decimal(raw) if "." in raw else int(raw)))
        elif kind == "qid":
            q = raw[0]
            out.append(("key", raw[1:-1].replace(q + q, q)))
        elif kind == "id" and raw.upper() in _KEYWORDS:
            out.append(("kw", raw.upper()))
        elif kind == "id":
            out.append(("key", raw))
        else:
            out.append(("op", raw))
    return out


class _Parser:
    def __init__(self, text: str) -> None:
        self.toks = _tokens(text)
        self.i = 0

    def peek(self, kind: str, value: object = None) -> bool:
        if self.i >= len(self.toks):
            return False
        k, v = self.toks[self.i]
        return k == kind and (value is None or v == value)

    def take(self, kind: str, value: object = None):
        if not self.peek(kind, value):
            got = self.toks[self.i][1] if self.i < len(self.toks) else "the end"
            raise ExpressionError(f"expected {value or kind}, found {got!r}")
        self.i += 1
        return self.toks[self.i - 1][1]

    def parse(self):
        node = self.disjunction()
        if self.i != len(self.toks):
            raise ExpressionError(f"unexpected {self.toks[self.i][1]!r}")
        return node

    def disjunction(self):
        node = self.conjunction()
        while self.peek("kw", "OR"):
            self.i += 1
            node = BoolOp("OR", node, self.conjunction())
        return node

    def conjunction(self):
        node = self.negation()
        while self.peek("kw", "AND"):
            self.i += 1
            node = BoolOp("AND", node, self.negation())
        return node

    def negation(self):
        if self.peek("kw", "NOT"):
            self.i += 1
            return Not(self.negation())
        return self.predicate()

    def operand(self):
        if self.peek("key"):
            return Key(self.take("key"))
        if self.peek("kw", "DATE") or self.peek("kw", "TIMESTAMP"):
            self.i += 1  # DATE '2024-01-02': the key's type decides the conversion
            if not (self.peek("lit") and isinstance(self.toks[self.i][1], str)):
                raise ExpressionError("DATE and TIMESTAMP take a quoted literal")
        if self.peek("lit"):
            return Lit(self.take("lit"))
        got = self.toks[self.i][1] if self.i < len(self.toks) else "the end"
        raise ExpressionError(f"expected a partition key or a literal, found {got!r}")

    def predicate(self):
        if self.peek("op", "("):
            self.i += 1
            node = self.disjunction()
            self.take("op", ")")
            return node
        left = self.operand()
        if self.peek("op") and self.toks[self.i][1] in ("=", "<>", "!=", "<", ">", "<=", ">="):
            op = self.take("op")
            return Cmp("<>" if op == "!=" else op, left, self.operand())
        if self.peek("kw", "IS"):
            self.i += 1
            negated = self.peek("kw", "NOT") and bool(self.take("kw", "NOT"))
            self.take("kw", "NULL")
            return IsNull(left, negated)
        negated = self.peek("kw", "NOT") and bool(self.take("kw", "NOT"))
        if self.peek("kw", "IN"):
            self.i += 1
            self.take("op", "(")
            items = [self.operand()]
            while self.peek("op", ","):
                self.i += 1
                items.append(self.operand())
            self.take("op", ")")
            return In(left, tuple(items), negated)
        if self.peek("kw", "BETWEEN"):
            self.i += 1
            low = self.operand()
            self.take("kw", "AND")
            return Between(left, low, self.operand(), negated)
        if self.peek("kw", "LIKE"):
            self.i += 1
            return Like(left, self.operand(), negated)
        raise ExpressionError("expected a comparison, IN, BETWEEN, LIKE or IS NULL")


def _converter(hive_type: str) -> Callable[[object], object]:
    t = hive_type.strip().lower()
    if t in INT_TYPES:
        return lambda v: int(str(v).strip())
    if t.startswith("decimal"):
        return lambda v: Decimal(str(v).strip())
    if t == "date":
        return lambda v: dt.date.fromisoformat(str(v).strip())
    if t == "timestamp":
        return lambda v: dt.datetime.fromisoformat(str(v).strip())
    if t == "string" or t.startswith(("varchar", "char")):
        return str
    raise ExpressionError(f"partition key type {hive_type} is not supported in an expression")


def _convert(convert: Callable[[object], object], value: object) -> object:
    try:
        return convert(value)
    except (ValueError, InvalidOperation, TypeError):
        return None


def _like(value: object, pattern: object) -> bool:
    regex = "".join(".*" if c == "%" else "." if c == "_" else re.escape(c)
                    for c in str(pattern))
    return re.fullmatch(regex, str(value), re.DOTALL) is not None


class Predicate:
    """A parsed Expression bound to the table's partition keys (name -> Hive type)."""

    def __init__(self, expression: str, key_types: Mapping[str, str]) -> None:
        self.tree = _Parser(expression).parse()
        self.keys = [k.lower() for k in key_types]
        self.types = {k.lower(): t for k, t in key_types.items()}
        self._check(self.tree)

    def _check(self, node) -> None:
        if isinstance(node, Key):
            if node.name.lower() not in self.types:
                raise ExpressionError(f"{node.name} is not a partition key "
                                      f"(keys: {', '.join(self.keys)})")
            _converter(self.types[node.name.lower()])  # refuses an unsupported type
        elif isinstance(node, tuple):
            for item in node:
                self._check(item)
        elif not isinstance(node, Lit):
            for value in vars(node).values():
                if not isinstance(value, str | bool):
                    self._check(value)

    def matches(self, values: list[str]) -> bool:
        """True when the partition with these values (in key order) satisfies it."""
        return self._eval(self.tree, dict(zip(self.keys, values, strict=True))) is True

    def _typed(self, node, other, row: dict) -> object:
        """A node's value, typed by the key on either side of the comparison."""
        key = node if isinstance(node, Key) else other if isinstance(other, Key) else None
        raw = row[node.name.lower()] if isinstance(node, Key) else node.value
        if key is None:
            return raw
        return _convert(_converter(self.types[key.name.lower()]), raw)

    def _eval(self, node, row: dict) -> bool | None:
        if isinstance(node, BoolOp):
            a, b = self._eval(node.left, row), self._eval(node.right, row)
            if node.op == "AND":
                return False if a is False or b is False else None if None in (a, b) else True
            return True if a is True or b is True else None if None in (a, b) else False
        if isinstance(node, Not):
            inner = self._eval(node.inner, row)
            return None if inner is None else not inner
        if isinstance(node, IsNull):
            return (self._typed(node.operand, None, row) is None) != node.negated
        if isinstance(node, Cmp):
            a = self._typed(node.left, node.right, row)
            b = self._typed(node.right, node.left, row)
            return _compare(node.op, a, b)
        if isinstance(node, In):
            a = self._typed(node.operand, None, row)
            results = [_compare("=", a, self._typed(i, node.operand, row)) for i in node.items]
            found = True if True in results else None if None in results else False
            return None if found is None else found != node.negated
        if isinstance(node, Between):
            a = self._typed(node.operand, None, row)
            low = _compare(">=", a, self._typed(node.low, node.operand, row))
            high = _compare("<=", a, self._typed(node.high, node.operand, row))
            both = False if False in (low, high) else None if None in (low, high) else True
            return None if both is None else both != node.negated
        if isinstance(node, Like):
            a = self._typed(node.operand, None, row)
            p = self._typed(node.pattern, None, row)
            return None if a is None or p is None else _like(a, p) != node.negated
        raise ExpressionError(f"not a condition: {node}")


_OPS: dict[str, Callable[[object, object], bool]] = {
    "=": operator.eq, "<>": operator.ne, "<": operator.lt, ">": operator.gt,
    "<=": operator.le, ">=": operator.ge}


def _compare(op: str, a: object, b: object) -> bool | None:
    if a is None or b is None:
        return None
    try:
        return _OPS[op](a, b)
    except TypeError as e:  # two literals of different kinds: 1 < 'a'
        raise ExpressionError(f"cannot compare {a!r} {op} {b!r}") from e
