"""Pure: one PostgreSQL value, as its output function prints it, -> the text DMS writes.

Full load and CDC both hand this module the type's output-function text (the session
settings are pinned by replication.session_options), so the same value always renders
the same way. Each rule follows DMS's PostgreSQL type mapping (docs/dms-fidelity.md has
the table and its sources); where AWS does not document the text, the choice is a
setting in RenderOptions.
"""

from __future__ import annotations

import base64
import math
import re
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation, localcontext
from typing import TYPE_CHECKING

from pipeline_contract.dms_format.source_types import PgType, SourceColumn

if TYPE_CHECKING:
    from pipeline_contract.settings import DmsSettings

BYTEA_HEX, BYTEA_BASE64, BYTEA_POSTGRES = "hex", "base64", "postgres"
BYTEA_FORMATS = (BYTEA_HEX, BYTEA_BASE64, BYTEA_POSTGRES)

# DMS maps NUMERIC without precision to NUMERIC(28,6) (CHAP_Source.PostgreSQL).
UNBOUNDED_NUMERIC = (28, 6)
MONEY_SCALE = 4  # MONEY -> NUMERIC(38,4)
# "Positive and negative infinity values are truncated to '9999-12-31 23:59:59' and
# '4713-01-01 00:00:00 BC' respectively." (CHAP_Source.PostgreSQL, TIMESTAMP)
TIMESTAMP_INFINITY = "9999-12-31 23:59:59.000000"
TIMESTAMP_MINUS_INFINITY = "4713-01-01 00:00:00.000000 BC"
DATE_INFINITY, DATE_MINUS_INFINITY = "9999-12-31", "4713-01-01 BC"

Render = Callable[[str], str]
# Types DMS maps to LOBs (NCLOB, CLOB, BLOB) for a PostgreSQL source; with the S3 target
# only limited LOB mode exists ("Full LOB mode is not supported"), so they are cut at
# LobMaxSize. Arrays (A) and composite types (C) are NCLOB too.
LOB_TYPES = frozenset({"text", "citext", "bytea", "json", "jsonb", "xml", "tsvector",
                       "tsquery", "path", "polygon", "hstore"})
LOB_CATEGORIES = frozenset({"A", "C"})
DEFAULT_LOB_MAX_SIZE_KB = 32  # the task settings' LobMaxSize default


def text_of(value: memoryview, max_bytes: int | None = None) -> str:
    """A big text value decoded, whole or its first `max_bytes` bytes (never half a
    character)."""
    if max_bytes is None or len(value) <= max_bytes:
        return str(value, "utf-8")
    return bytes(value[:max_bytes]).decode("utf-8", "ignore")


def is_lob(pg_type: PgType) -> bool:
    return pg_type.name in LOB_TYPES or pg_type.category in LOB_CATEGORIES


class RenderError(ValueError):
    """A value this renderer cannot turn into DMS text; the message names it."""


@dataclass(frozen=True)
class RenderOptions:
    # PostgreSQL source endpoint setting TrimSpaceInChar (default true): char(n) padding
    # is trimmed.
    trim_space_in_char: bool = True
    # PostgreSQL source endpoint setting MapUnboundedNumericAsString (default false):
    # plain NUMERIC as its full text instead of NUMERIC(28,6).
    map_unbounded_numeric_as_string: bool = False
    # Not documented by AWS: how BYTEA (a BLOB) is written in CSV.
    bytea_format: str = BYTEA_HEX
    # Not documented by AWS: the zone TIMESTAMP WITH TIME ZONE values are written in
    # (DMS's DATETIME has none). The source sessions print timestamptz in this zone.
    time_zone: str = "UTC"
    # Task setting LobMaxSize (KB): longer LOB values are truncated. The unit DMS counts
    # in is not documented; the lab counts UTF-8 bytes (bytea: binary bytes).
    lob_max_size_kb: int = DEFAULT_LOB_MAX_SIZE_KB
    # Not documented by AWS: how INTERVAL (a STRING(128)) is spelled. PostgreSQL's
    # IntervalStyle prints it: postgres | postgres_verbose | sql_standard | iso_8601.
    interval_style: str = "postgres"
    # PostgreSQL source endpoint setting MapBooleanAsBoolean (default false): BOOLEAN
    # stays a boolean (Parquet BOOLEAN) instead of CHAR(5). Its CSV text is not
    # documented: `true` / `false` either way.
    map_boolean_as_boolean: bool = False

    @classmethod
    def from_settings(cls, d: DmsSettings) -> RenderOptions:
        """The renderer's part of the checked pipeline.toml [dms] settings (the emitter
        and `cdclab reconcile` render alike)."""
        return cls(d.trim_space_in_char, d.map_unbounded_numeric_as_string, d.bytea_format,
                   d.timestamptz_time_zone, d.lob_max_size_kb, d.interval_style,
                   d.map_boolean_as_boolean)

    def __post_init__(self) -> None:
        if self.bytea_format not in BYTEA_FORMATS:
            raise ValueError(f"bytea format {self.bytea_format!r}: expected one of "
                             f"{BYTEA_FORMATS}")


def render_bool(text: str) -> str:
    # BOOLEAN -> CHAR(5) "false or true"
    if text == "t":
        return "true"
    if text == "f":
        return "false"
    raise RenderError(f"boolean {text!r}: expected 't' or 'f'")


_F32, _U32 = struct.Struct("<f"), struct.Struct("<I")
_MIN_SUBNORMAL32 = 2.0 ** -149


def float32_of(text: str) -> float:
    """The float32 a real's text stands for (strtof): PostgreSQL prints it shortest, and
    rounding its double again is exact except when the double lies on a float32 midpoint
    (double rounding), which the exact decimal decides."""
    d = float(text)
    f = _F32.unpack(_F32.pack(d))[0]
    if f == d or not math.isfinite(f):
        return f
    if f == 0.0:
        other = math.copysign(_MIN_SUBNORMAL32, d)
    else:  # the float32 next to f, on d's side
        bits = _U32.unpack(_F32.pack(f))[0]
        other = _F32.unpack(_U32.pack(bits + (1 if (d > f) == (f > 0) else -1)))[0]
    if (f + other) / 2 != d:  # exact: two neighbouring float32 sum within 25 bits
        return f
    exact = Decimal(text)
    return other if abs(Decimal(other) - exact) < abs(Decimal(f) - exact) else f


def render_real(text: str) -> str:
    """REAL4 as DMS writes it: C's %+.8e of the float32 (`+3.23800011e+01`; NaN and
    ±Infinity as glibc prints them, `+nan`, `+inf`, `-inf`: not seen in real output)."""
    try:
        return f"{float32_of(text):+.8e}"
    except ValueError:
        raise RenderError(f"real {text!r} is not a number") from None


def render_double(text: str) -> str:
    """REAL8 as DMS writes it: C's %+.16e (`+2.1804858784530072e+04`), 17 significant
    digits, which give back every double."""
    try:
        return f"{float(text):+.16e}"
    except ValueError:
        raise RenderError(f"double precision {text!r} is not a number") from None


def _fixed(value: Decimal, scale: int) -> str:
    quantum = Decimal(1).scaleb(-scale)
    with localcontext() as ctx:
        ctx.prec = 100  # money and NUMERIC(28,6) values fit; rounding up never overflows
        return format(value.quantize(quantum, rounding=ROUND_HALF_UP), "f")


def render_unbounded_numeric(text: str) -> str:
    """NUMERIC(28,6): rounded to 6 decimals. NaN, ±Infinity and integer parts wider than
    22 digits do not fit it (DMS's result is not documented): written as the source has
    them, never silently changed."""
    try:
        value = Decimal(text)
    except InvalidOperation:
        raise RenderError(f"numeric {text!r} is not a number") from None
    if not value.is_finite():
        return text
    precision, scale = UNBOUNDED_NUMERIC
    if value.adjusted() >= precision - scale:
        return text
    return _fixed(value, scale)


_MONEY_JUNK = re.compile(r"[^0-9.\-]")


def render_money(text: str) -> str:
    """MONEY -> NUMERIC(38,4): '-$1,234.5' -> '-1234.5000' (lc_monetary is pinned to C)."""
    negative = text.startswith("-") or text.startswith("(")
    digits = _MONEY_JUNK.sub("", text).lstrip("-")
    try:
        value = Decimal(digits)
    except InvalidOperation:
        raise RenderError(f"money {text!r} is not an amount") from None
    return _fixed(-value if negative else value, MONEY_SCALE)


# ISO DateStyle output: date, time, optional fraction, optional offset, optional " BC".
_TIMESTAMP = re.compile(
    r"^(?P<date>\d{4,}-\d{2}-\d{2}) (?P<time>\d{2}:\d{2}:\d{2})(?:\.(?P<frac>\d{1,6}))?"
    r"(?P<offset>[+-]\d{2}(?::\d{2}){0,2})?(?P<bc> BC)?$"
)


def render_timestamp(text: str) -> str:
    """DATETIME with microseconds: '2024-01-02 03:04:05' -> '2024-01-02 03:04:05.000000'.
    timestamptz arrives in the session time zone (pinned), its offset is dropped."""
    if text == "infinity":
        return TIMESTAMP_INFINITY
    if text == "-infinity":
        return TIMESTAMP_MINUS_INFINITY
    m = _TIMESTAMP.match(text)
    if m is None:
        raise RenderError(f"timestamp {text!r} is not in ISO format")
    frac = (m["frac"] or "").ljust(6, "0")
    return f"{m['date']} {m['time']}.{frac}{m['bc'] or ''}"


def render_date(text: str) -> str:
    if text == "infinity":
        return DATE_INFINITY
    if text == "-infinity":
        return DATE_MINUS_INFINITY
    return text


_TIMETZ = re.compile(
    r"^(?P<h>\d{2}):(?P<m>\d{2}):(?P<s>\d{2})(?P<frac>\.\d{1,6})?"
    r"(?P<sign>[+-])(?P<oh>\d{2})(?::(?P<om>\d{2}))?(?::(?P<os>\d{2}))?$"
)


def render_timetz(text: str) -> str:
    """TIME WITH TIME ZONE -> TIME: the wall time moved to UTC, offset dropped."""
    m = _TIMETZ.match(text)
    if m is None:
        raise RenderError(f"timetz {text!r} is not in ISO format")
    if text.startswith("24:00:00"):  # timetz allows 24:00:00 (end of day): keep it
        return text[: m.start("sign")]
    seconds = int(m["h"]) * 3600 + int(m["m"]) * 60 + int(m["s"])
    offset = int(m["oh"]) * 3600 + int(m["om"] or 0) * 60 + int(m["os"] or 0)
    seconds = (seconds - offset if m["sign"] == "+" else seconds + offset) % 86_400
    h, rest = divmod(seconds, 3600)
    return f"{h:02d}:{rest // 60:02d}:{rest % 60:02d}{m['frac'] or ''}"


def render_bpchar(text: str) -> str:
    return text.rstrip(" ")


def bytea_renderer(fmt: str) -> Render | None:
    if fmt == BYTEA_POSTGRES:
        return None

    def render(text: str) -> str:
        if not text.startswith("\\x"):
            raise RenderError(f"bytea {text[:20]!r}: expected hex output (bytea_output=hex)")
        if fmt == BYTEA_HEX:
            return text[2:]
        return base64.b64encode(bytes.fromhex(text[2:])).decode("ascii")
    return render


def renderer_for(pg_type: PgType, options: RenderOptions = RenderOptions()) -> Render | None:
    """The rule for one column type; None when DMS writes the PostgreSQL text as it is
    (integers, bounded numerics, strings, uuid, json, arrays, network, enum...)."""
    name = pg_type.name
    if name == "bool":
        return render_bool
    if name == "float4":
        return render_real
    if name == "float8":
        return render_double
    if name == "numeric":
        unbounded = pg_type.numeric_precision_scale is None
        if unbounded and not options.map_unbounded_numeric_as_string:
            return render_unbounded_numeric
        return None  # numeric(p,s) prints s decimals already; p > 38 is a STRING
    if name == "money":
        return render_money
    if name in ("timestamp", "timestamptz"):
        return render_timestamp
    if name == "date":
        return render_date
    if name == "timetz":
        return render_timetz
    if name == "bpchar" and options.trim_space_in_char:
        return render_bpchar
    if name == "bytea":
        return bytea_renderer(options.bytea_format)
    return None


def truncate_lob(text: str, max_bytes: int, binary: bool = False) -> str | None:
    """`text` cut to `max_bytes` (UTF-8, never inside a character; bytea's hex output:
    binary bytes), or None when it fits."""
    if binary:
        return text[: 2 + 2 * max_bytes] if len(text) > 2 + 2 * max_bytes else None
    if len(text) * 4 <= max_bytes:
        return None
    data = text.encode("utf-8")
    if len(data) <= max_bytes:
        return None
    return data[:max_bytes].decode("utf-8", "ignore")


Truncated = Callable[[str, int], None]  # (column, original length in characters)


class RowRenderer:
    """Renders whole rows for one column list; identity columns cost nothing. LOB
    columns are cut at LobMaxSize first, reported through `on_truncate`."""

    def __init__(self, columns: Sequence[SourceColumn],
                 options: RenderOptions = RenderOptions(),
                 on_truncate: Truncated = lambda _column, _size: None) -> None:
        self.columns = tuple(columns)
        self.on_truncate = on_truncate
        self.max_bytes = options.lob_max_size_kb * 1024
        self._rules: list[tuple[int, Render]] = []
        self._lobs: list[int] = []  # LOB columns with no other rule: a length check only
        self._binary = {i for i, c in enumerate(columns) if c.type.name == "bytea"}
        for i, c in enumerate(columns):
            rule = renderer_for(c.type, options)
            if is_lob(c.type):
                if rule is None and c.type.name != "bytea":
                    self._lobs.append(i)
                    continue
                rule = self._lob_rule(c.name, rule, c.type.name == "bytea")
            if rule is not None:
                self._rules.append((i, rule))
        self._quick = self.max_bytes // 4  # shorter text always fits (4 bytes a char)

    def _lob_rule(self, column: str, render: Render | None, binary: bool) -> Render:
        def rule(text: str) -> str:
            cut = truncate_lob(text, self.max_bytes, binary)
            if cut is not None:
                self.on_truncate(column, len(text))
                text = cut
            return text if render is None else render(text)
        return rule

    def text(self, index: int, value: memoryview) -> str:
        """A big value left encoded by the decoder: a LOB is cut before decoding, so a
        64 MB value never becomes a 64 MB string; anything else is decoded whole."""
        if index in self._lobs or index in self._binary:
            # bytea arrives as hex (\x + two characters a byte)
            limit = 2 + 2 * self.max_bytes if index in self._binary else self.max_bytes
            if len(value) > limit:
                self.on_truncate(self.columns[index].name, len(value))
            return text_of(value, limit)
        return text_of(value)

    def row(self, values: Sequence[str | None]) -> tuple[str | None, ...]:
        out: list[str | None] | None = None
        quick = self._quick
        for i in self._lobs:  # the hot path: most values are short
            v = values[i]
            if v is not None and len(v) > quick:
                cut = truncate_lob(v, self.max_bytes)
                if cut is not None:
                    if out is None:
                        out = list(values)
                    self.on_truncate(self.columns[i].name, len(v))
                    out[i] = cut
        if not self._rules:
            return tuple(values) if out is None else tuple(out)
        if out is None:
            out = list(values)
        for i, rule in self._rules:
            v = out[i]
            if v is not None:
                try:
                    out[i] = rule(v)
                except RenderError as exc:
                    raise RenderError(f"column {self.columns[i].name!r}: {exc}") from None
        return tuple(out)
