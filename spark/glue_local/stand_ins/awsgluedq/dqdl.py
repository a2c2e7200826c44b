"""DQDL (AWS Glue Data Quality Definition Language) rulesets: parse and render, pure.

The grammar follows AWS's published one (github.com/awslabs/dqdl,
DataQualityDefinitionLanguage.g4): `Rules = [ rule, ... ]`, a rule being
`<RuleType> "<param>"... <condition>? (where "<sql>")? (with threshold <condition>)?`,
composites `(rule) and (rule)` / `(rule) or (rule)` (each part in parentheses, as
https://docs.aws.amazon.com/glue/latest/dg/dqdl.html requires), `#` comments. Rule types
outside RULE_TYPES fail by name (`cdclab: DQDL rule X is not supported locally`); any
other text that is not DQDL fails naming the line and column.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

# How many quoted parameters each supported rule type takes, and whether it takes a
# condition (AWS's rules-config.json in github.com/awslabs/dqdl).
RULE_TYPES: dict[str, tuple[int, bool]] = {
    "RowCount": (0, True), "ColumnCount": (0, True), "ColumnExists": (1, False),
    "IsComplete": (1, False), "Completeness": (1, True), "IsUnique": (1, False),
    "Uniqueness": (1, True), "IsPrimaryKey": (1, False), "ColumnValues": (1, True),
    "ColumnLength": (1, True), "Mean": (1, True), "Sum": (1, True),
    "StandardDeviation": (1, True), "DistinctValuesCount": (1, True), "CustomSql": (1, True),
}
NO_WHERE = {"ColumnCount", "ColumnExists", "CustomSql"}  # rules-config: where unsupported
WITH_THRESHOLD = {"ColumnValues", "ColumnLength"}
NUMERIC_OPS = (">=", "<=", "!=", "=", ">", "<")
KEYWORDS = ("NULL", "EMPTY", "WHITESPACES_ONLY")


class UnsupportedLocally(NotImplementedError):
    """A Glue feature cdclab does not implement, named."""


class DQDLError(ValueError):
    """A ruleset that is not DQDL; the message names the line and column."""


@dataclass(frozen=True)
class Value:
    kind: Literal["number", "string", "keyword"]
    text: str  # a number as written, a string unescaped, a keyword upper case


@dataclass(frozen=True)
class Condition:
    op: Literal["=", ">", ">=", "<", "<=", "between", "in", "matches"]
    values: tuple[Value, ...]
    negated: bool = False


@dataclass(frozen=True)
class Rule:
    kind: str
    params: tuple[str, ...] = ()
    condition: Condition | None = None
    where: str | None = None
    threshold: Condition | None = None


@dataclass(frozen=True)
class Composite:
    op: Literal["and", "or"]
    parts: tuple[Rule | Composite, ...]


Node = Rule | Composite


@dataclass(frozen=True)
class Ruleset:
    rules: tuple[Node, ...]


# ---------------------------------------------------------------- rendering

def quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def render_value(v: Value) -> str:
    return quote(v.text) if v.kind == "string" else v.text


def render_condition(c: Condition) -> str:
    vals = [render_value(v) for v in c.values]
    neg = "not " if c.negated else ""
    if c.op == "between":
        return f"{neg}between {vals[0]} and {vals[1]}"
    if c.op == "in":  # AWS's toString joins with a bare comma
        return f"{neg}in [{','.join(vals)}]"
    if c.op == "matches":
        return f"{neg}matches {vals[0]}"
    return f"{'!=' if c.negated else c.op} {vals[0]}"


def render(node: Node | Ruleset) -> str:
    """DQDL text for a rule (as Glue's Rule column shows it: AWS's DQRule.toString) or a
    whole ruleset."""
    if isinstance(node, Ruleset):
        return "Rules = [\n" + ",\n".join(f"    {render(r)}" for r in node.rules) + "\n]"
    if isinstance(node, Composite):
        return f" {node.op} ".join(f"({render(p)})" for p in node.parts)
    out = [node.kind, *(quote(p) for p in node.params)]
    if node.condition:
        out.append(render_condition(node.condition))
    if node.where is not None:
        out.append(f"where {quote(node.where)}")
    if node.threshold:
        out.append(f"with threshold {render_condition(node.threshold)}")
    return " ".join(out)


# ---------------------------------------------------------------- parsing

TOKEN = re.compile(r"""
    (?P<ws>[ \t\r\n]+|\#[^\n]*)
  | (?P<string>"(?:\\.|[^"\\])*")
  | (?P<number>-?[0-9]+(?:\.[0-9]+)?(?![A-Za-z0-9_.]))
  | (?P<op>>=|<=|!=|[=><\[\](),])
  | (?P<ident>[A-Za-z0-9_.]+)
""", re.VERBOSE | re.DOTALL)


@dataclass(frozen=True)
class Token:
    kind: str  # string, number, op, ident, end
    text: str
    pos: int


def where_at(text: str, pos: int) -> str:
    line = text.count("\n", 0, pos) + 1
    col = pos - (text.rfind("\n", 0, pos) + 1) + 1
    return f"line {line}, column {col}"


def tokenize(text: str) -> list[Token]:
    tokens, pos = [], 0
    while pos < len(text):
        m = TOKEN.match(text, pos)
        if not m:
            what = "an unterminated string" if text[pos] == '"' else repr(text[pos])
            raise DQDLError(f"cdclab: DQDL ruleset: unexpected {what} at {where_at(text, pos)}")
        if m.lastgroup != "ws":
            tokens.append(Token(m.lastgroup or "", m.group(), pos))
        pos = m.end()
    tokens.append(Token("end", "", len(text)))
    return tokens


def unquote(raw: str) -> str:
    return re.sub(r"\\(.)", r"\1", raw[1:-1], flags=re.DOTALL)


class Parser:
    def __init__(self, text: str) -> None:
        self.text, self.tokens, self.i = text, tokenize(text), 0

    @property
    def tok(self) -> Token:
        return self.tokens[self.i]

    def fail(self, expected: str, tok: Token | None = None) -> DQDLError:
        tok = tok or self.tok
        found = "the end of the ruleset" if tok.kind == "end" else repr(tok.text)
        return DQDLError(f"cdclab: DQDL ruleset: expected {expected} at "
                         f"{where_at(self.text, tok.pos)}, found {found}")

    def take(self, kind: str, text: str | None = None, expected: str | None = None) -> Token:
        tok = self.tok
        if tok.kind != kind or (text is not None and tok.text != text):
            raise self.fail(expected or (repr(text) if text else kind))
        self.i += 1
        return tok

    def at(self, kind: str, *texts: str) -> bool:
        return self.tok.kind == kind and (not texts or self.tok.text in texts)

    def ruleset(self) -> Ruleset:
        self.take("ident", "Rules", "'Rules = ['")
        self.take("op", "=", "'=' after Rules")
        self.take("op", "[", "'[' after 'Rules ='")
        rules: list[Node] = []
        if not self.at("op", "]"):
            rules.append(self.top())
            while self.at("op", ","):
                self.i += 1
                rules.append(self.top())
        self.take("op", "]", "',' or ']'")
        self.take("end", expected="the end of the ruleset after ']'")
        return Ruleset(tuple(rules))

    def top(self) -> Node:
        if not self.at("op", "("):
            return self.rule()
        first = self.group()
        if not self.at("ident", "and", "or", "AND", "OR"):
            return first
        op = self.tok.text.lower()
        parts = [first]
        while self.at("ident", "and", "or", "AND", "OR"):
            if self.tok.text.lower() != op:
                raise self.fail(f"'{op}' (mixing and/or needs parentheses around each side)")
            self.i += 1
            if not self.at("op", "("):
                raise self.fail(f"'(' (each part of an '{op}' is in parentheses)")
            parts.append(self.group())
        return composite(op, parts)  # type: ignore[arg-type]

    def group(self) -> Node:
        self.take("op", "(")
        node = self.top()
        self.take("op", ")", "')'")
        return node

    def rule(self) -> Rule:
        tok = self.tok
        if tok.kind != "ident":
            raise self.fail("a rule type")
        if tok.text not in RULE_TYPES:
            raise UnsupportedLocally(f"cdclab: DQDL rule {tok.text} is not supported locally "
                                     f"(at {where_at(self.text, tok.pos)}); supported: "
                                     + ", ".join(RULE_TYPES))
        self.i += 1
        n_params, wants_condition = RULE_TYPES[tok.text]
        params = []
        while self.at("string"):
            params.append(unquote(self.take("string").text))
        if len(params) != n_params:
            raise self.fail(f"{n_params} quoted parameter(s) for {tok.text}, got {len(params)}")
        condition = None
        if tok.text == "CustomSql" and not (self.at("ident", "not", "between", "in")
                                           or self.at("op", *NUMERIC_OPS)):
            raise UnsupportedLocally("cdclab: DQDL rule CustomSql without a condition "
                                     "(row-level SQL) is not supported locally (at "
                                     f"{where_at(self.text, tok.pos)})")
        if wants_condition:
            condition = self.condition(numeric=tok.text != "ColumnValues")
        where = threshold = None
        if self.at("ident", "where"):
            if tok.text in NO_WHERE:
                raise self.fail(f"no where clause on {tok.text}")
            self.i += 1
            where = unquote(self.take("string", expected="a quoted where clause").text)
        if self.at("ident", "with"):
            if tok.text not in WITH_THRESHOLD:
                raise self.fail(f"no 'with threshold' on {tok.text}")
            self.i += 1
            self.take("ident", "threshold", "'threshold' after 'with'")
            threshold = self.condition(numeric=True)
            if threshold.op in ("in", "matches") or threshold.negated:
                raise self.fail("a threshold of =, >, >=, <, <= or between",
                                self.tokens[self.i - 1])
        return Rule(tok.text, tuple(params), condition, where, threshold)

    def value(self, numeric: bool) -> Value:
        tok = self.tok
        if tok.kind == "number":
            self.i += 1
            return Value("number", tok.text)
        if not numeric and tok.kind == "string":
            self.i += 1
            return Value("string", unquote(tok.text))
        if not numeric and tok.kind == "ident" and tok.text.upper() in KEYWORDS:
            self.i += 1
            return Value("keyword", tok.text.upper())
        raise self.fail("a number" if numeric else "a number, a quoted string, NULL, EMPTY "
                        "or WHITESPACES_ONLY")

    def condition(self, numeric: bool) -> Condition:
        negated = self.at("ident", "not")
        if negated:
            self.i += 1
            if not self.at("ident", "between", "in", "matches"):
                raise self.fail("'between', 'in' or 'matches' after 'not'")
        if self.at("ident", "between"):
            self.i += 1
            low = self.value(True)
            if not self.at("ident", "and", "AND"):
                raise self.fail("'and' in 'between X and Y'")
            self.i += 1
            return Condition("between", (low, self.value(True)), negated)
        if self.at("ident", "in"):
            self.i += 1
            self.take("op", "[", "'[' after 'in'")
            vals = [self.value(numeric)]
            while self.at("op", ","):
                self.i += 1
                vals.append(self.value(numeric))
            self.take("op", "]", "',' or ']'")
            return Condition("in", tuple(vals), negated)
        if self.at("ident", "matches") and not numeric:
            self.i += 1
            return Condition("matches", (Value("string", unquote(
                self.take("string", expected="a quoted regular expression").text)),), negated)
        if self.at("op", *NUMERIC_OPS):
            op = self.take("op").text
            val = self.value(numeric or op not in ("=", "!="))
            return Condition("=" if op == "!=" else op, (val,), op == "!=")  # type: ignore[arg-type]
        raise self.fail("a condition (=, !=, >, >=, <, <=, between, in"
                        + ("" if numeric else ", matches") + ")")


def composite(op: Literal["and", "or"], parts: list[Node]) -> Composite:
    """A composite with same-operator parts flattened: `((A) and (B)) and (C)` is
    `(A) and (B) and (C)`, as AWS's DQRule.toString prints it."""
    flat: list[Node] = []
    for p in parts:
        flat.extend(p.parts if isinstance(p, Composite) and p.op == op else [p])
    return Composite(op, tuple(flat))


def parse(text: str) -> Ruleset:
    """The ruleset in `text`; DQDLError naming line and column if it is not DQDL,
    UnsupportedLocally naming a rule type cdclab does not evaluate."""
    if not isinstance(text, str):
        raise DQDLError(f"cdclab: DQDL ruleset must be a string, got {type(text).__name__}")
    return Parser(text).ruleset()
