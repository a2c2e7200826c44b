"""Prove silver equals source, row for row, for every table the job merges (DESIGN.md
invariant 6).

Per table (its spec, pipeline_contract.table_specs), the expected silver rows are computed from the
source as the pipeline carries them: each value rendered by the emitter's own DMS
renderer (the text in the bronze files), read back as Glue's CSV reader returns it
(NULL vs ''), cast to the silver type, and the named transforms applied (the demo
table's `location` split into city/country). They are compared on the business columns,
keyed by the table's key; CDC bookkeeping columns (change_seq, the DMS timestamp) are
not part of the source and are left out.

Where AWS's pipeline itself changes a value, the expectation follows it and the result
names the rule and how many values it touched (`normalisations`), so "equal" never hides
it: with DMS's unquoted empty strings (quote_empty_strings = false, AWS's behaviour) a
source '' is an empty field, which the catalog's CSV reader returns as NULL (EMPTY_AS_NULL).

Keys silver holds that the source no longer has are named as orphans, with the likely
cause (`orphan_hint`): DMS writes a primary-key UPDATE as one U row with the new key, so
without the before-image columns the old key stays (docs/dms-fidelity.md).
"""

from __future__ import annotations

import logging
import math
import re
import struct
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, date, datetime, timedelta
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from cdclab.merge_model import clean_location
from pipeline_contract import settings
from pipeline_contract.dms_format.parquet_types import ColumnType, ParquetValueError, converter
from pipeline_contract.dms_format.values import RenderOptions, RowRenderer
from pipeline_contract.table_overrides import TRANSFORM_SPLIT

BUSINESS_COLUMNS = (
    "id", "url", "name", "since", "location_city", "location_country",
    "response_time", "response_rate",
)
SOURCE_COLUMNS = ("id", "url", "name", "since", "location", "response_time", "response_rate")
MAX_REPORTED_KEYS = 20
# The normalisations the expectation applies (docs/dms-fidelity.md, "Empty strings")
EMPTY_AS_NULL = ("source '' expected as NULL: DMS writes '' as an empty field like NULL "
                 "(quote_empty_strings = false), read back as NULL")
# Why silver holds keys the source does not (CHAP_Source.PostgreSQL: "AWS DMS ignores an
# attempt to update a primary key segment"; CHAP_Target.Kinesis: add-before-image-columns)
ORPHANS_WITHOUT_BEFORE_IMAGE = (
    "orphan keys: silver holds keys the source no longer has. A primary-key UPDATE leaves "
    "its old key: DMS writes it as one U row with the new key only, and this table's files "
    "carry no before image of the key. Set dms.before_image_columns = true (or give the "
    "table mappings an add-before-image-columns rule, column-filter pk-only), then "
    "`cdclab resync {table}` clears them")
ORPHANS_WITH_BEFORE_IMAGE = (
    "orphan keys: silver holds keys the source no longer has. The job deletes the old key "
    "of a primary-key UPDATE by its before-image columns, so these are likely keys changed "
    "before the add-before-image-columns rule was on (their U rows carry no old key), or "
    "deletes silver never got: `cdclab resync {table}` clears them")

Record = tuple[Any, ...]


@dataclass
class ReconcileResult:
    equal: bool
    source_rows: int
    silver_rows: int
    table: str = ""  # the source table; "" for the sum over every table (see `tables`)
    missing_in_silver: int = 0
    extra_in_silver: int = 0
    different: int = 0
    mismatching_keys: list[int] = field(default_factory=list)  # first MAX_REPORTED_KEYS
    examples: list[dict] = field(default_factory=list)  # a few side-by-side diffs
    # ids silver holds more than once (a keyed comparison alone would hide them)
    duplicate_ids: list[int] = field(default_factory=list)  # first MAX_REPORTED_KEYS
    duplicate_rows: int = 0  # rows beyond the first of each duplicated id
    tables: dict[str, dict] = field(default_factory=dict)  # per table, when summed
    # keys silver holds that the source does not (first MAX_REPORTED_KEYS), and why
    orphan_keys: list = field(default_factory=list)
    hints: list[str] = field(default_factory=list)
    # what the expectation changed as AWS's pipeline does: rule -> values touched
    normalisations: dict[str, int] = field(default_factory=dict)
    quarantine_expected: int = 0  # source rows the job's validation refuses

    def to_json(self) -> dict:
        return asdict(self)


def expected_silver(source_rows: Iterable[Mapping[str, Any]]) -> dict[int, Record]:
    """Source rows -> the silver rows the pipeline must produce (keyed by id)."""
    expected = {}
    for row in source_rows:
        city, country = clean_location(row["location"])
        expected[row["id"]] = (
            row["id"], row["url"], row["name"], row["since"], city, country,
            row["response_time"], row["response_rate"],
        )
    return expected


def compare(expected: Mapping[Any, Record], actual: Mapping[Any, Record],
            duplicates: Mapping[Any, int] | None = None,
            columns: tuple[str, ...] = BUSINESS_COLUMNS) -> ReconcileResult:
    """`duplicates`: id -> how many rows silver holds for it, for ids held twice or more."""
    missing = sorted(expected.keys() - actual.keys())
    extra = sorted(actual.keys() - expected.keys())
    different = sorted(k for k in expected.keys() & actual.keys() if expected[k] != actual[k])
    return _result(len(expected), len(actual), missing, extra, different, expected, actual,
                   duplicates or {}, columns)


def fingerprint(record: Record) -> int:
    """A record's 64-bit fingerprint. Records that fingerprint alike are taken as equal
    (two different ones do so by chance about once in 2**64); those that do not are
    compared as they are, so values equal across types (1 and 1.0) still match. Each
    value is hashed with its type, an int as its bytes, a float as its exact hex: Python
    hashes -1 and -2, 2**61 and 2**62 - 1, 2.0**61 and 1.0, b'a' and 'a' alike."""
    try:
        return hash(tuple(_fingerprinted(v) for v in record))
    except TypeError:  # a list or dict value (an array or map column)
        return hash(repr(record))


def _fingerprinted(value: Any) -> Any:
    kind = type(value)
    if kind is int:  # its bytes: Python hashes ints modulo 2**61 - 1
        return value.to_bytes(value.bit_length() // 8 + 1, "little", signed=True)
    if kind is float:
        return value.hex()
    if kind is Decimal:
        return ("Decimal", str(value))
    return (kind.__name__, value)


GONE = object()  # a key the second read did not find


def compare_fingerprints(
        expected: Mapping[Any, int], actual: Mapping[Any, int], duplicates: Mapping[Any, int],
        records: Callable[[set], tuple[Mapping[Any, Record], Mapping[Any, Record]]],
        columns: tuple[str, ...] = BUSINESS_COLUMNS) -> ReconcileResult:
    """`compare` over fingerprints (a big table's records need not all be held at once).
    `records(keys)` reads both sides again and keeps those keys' records: the keys whose
    fingerprints differ, compared as they are, and the first keys shown as examples. A
    key gone from a side by then (the source or silver moved on) counts as different."""
    missing = sorted(expected.keys() - actual.keys())
    extra = sorted(actual.keys() - expected.keys())
    suspects = {k for k, fp in expected.items() if k in actual and actual[k] != fp}
    source, silver = records(suspects | set(sorted([*missing[:3], *extra[:3]])[:3]))
    different = sorted(k for k in suspects if source.get(k, GONE) != silver.get(k, GONE))
    return _result(len(expected), len(actual), missing, extra, different, source, silver,
                   duplicates, columns)


def _result(expected_rows: int, actual_rows: int, missing: list, extra: list,
            different: list, expected: Mapping[Any, Record], actual: Mapping[Any, Record],
            duplicates: Mapping[Any, int], columns: tuple[str, ...]) -> ReconcileResult:
    """The verdict; `expected`, `actual` hold at least the first three keys' records."""
    keys = sorted({*missing, *extra, *different})
    examples = [
        {
            "id": k,
            "source": _as_dict(expected.get(k), columns),
            "silver": _as_dict(actual.get(k), columns),
        }
        for k in keys[:3]
    ]
    extra_rows = sum(n - 1 for n in duplicates.values())
    return ReconcileResult(
        equal=not keys and not duplicates,
        source_rows=expected_rows,
        silver_rows=actual_rows + extra_rows,
        missing_in_silver=len(missing),
        extra_in_silver=len(extra),
        different=len(different),
        mismatching_keys=keys[:MAX_REPORTED_KEYS],
        examples=examples,
        duplicate_ids=sorted(duplicates)[:MAX_REPORTED_KEYS],
        duplicate_rows=extra_rows,
        orphan_keys=extra[:MAX_REPORTED_KEYS],
    )


def orphan_hint(spec: Mapping[str, Any]) -> str:
    """Why a table's silver holds orphan keys: a primary-key UPDATE without the key's
    before image (DMS's documented behaviour), or with it, key changes from before."""
    imaged = {c.get("before_image_of") for c in spec["bronze_columns"]
              if c["role"] == "before_image"}
    told = set(spec["keys"]) <= imaged  # the job's before_image_keys rule
    return (ORPHANS_WITH_BEFORE_IMAGE if told else ORPHANS_WITHOUT_BEFORE_IMAGE).format(
        table=spec["name"])


def _as_dict(record: Record | None, columns: tuple[str, ...] = BUSINESS_COLUMNS) -> dict | None:
    if record is None:
        return None
    return {c: (v.isoformat() if hasattr(v, "isoformat") else v)
            for c, v in zip(columns, record, strict=True)}


# --- any table, from its spec (pure) ----------------------------------------------
class Unconvertible(ValueError):
    """A value the job's validation refuses (its row is quarantined, not in silver)."""

def typed(sql_type: str, text: str | None) -> Any:
    """The value Spark's cast of DMS text gives in silver (NaN as the text 'NaN', so two
    NaNs compare equal)."""
    if text is None or sql_type == "string":
        return text
    try:
        if sql_type in ("smallint", "int", "bigint"):
            return int(text)
        if sql_type.startswith("decimal"):
            scale = int(sql_type.rstrip(")").split(",")[1])
            return Decimal(text).quantize(Decimal(1).scaleb(-scale), rounding=ROUND_HALF_UP)
        if sql_type in ("float", "double"):
            value = float(text)
            if sql_type == "float":
                value = struct.unpack("f", struct.pack("f", value))[0]
            return "NaN" if math.isnan(value) else value
        if sql_type == "boolean":
            return {"true": True, "false": False}[text]
        if sql_type == "date":
            return date.fromisoformat(text)
        if sql_type == "timestamp":
            return datetime.strptime(text.replace("T", " "), "%Y-%m-%d %H:%M:%S.%f")
    except (ValueError, KeyError, ArithmeticError, OverflowError) as exc:
        raise Unconvertible(f"{text!r} is not a {sql_type}") from exc
    raise Unconvertible(f"no conversion to {sql_type}")


def parquet_typed(column: Mapping[str, Any], text: str | None, bytea_format: str = "hex",
                  millis: bool = False) -> Any:
    """The value the silver cast of a DMS Parquet value gives: the value as the emitter
    writes it into the file (pipeline_contract.dms_format.parquet_types), read back as
    pyiceberg returns silver. A value the Parquet type cannot hold is written NULL."""

    if text is None:
        return None
    kind, _, rest = column.get("parquet_type", "string").partition("(")
    if kind == "decimal":
        precision, scale = (int(x) for x in rest.rstrip(")").split(","))
        col = ColumnType(kind, precision, scale)
    else:
        col = ColumnType(kind)
    convert = converter(col, RenderOptions(bytea_format=bytea_format), millis)
    try:
        value = text if convert is None else convert(text)
    except (ParquetValueError, ValueError):
        return None
    if kind == "date32":
        return date(1970, 1, 1) + timedelta(days=value)
    if kind == "timestamp":
        return datetime(1970, 1, 1) + timedelta(microseconds=value * (1000 if millis else 1))
    if kind in ("float", "double"):
        return typed(kind, "NaN" if math.isnan(value) else repr(value))
    if kind == "string" and column["type"] != "string":
        return typed(column["type"], value)  # a STRING DMS writes (BOOLEAN's true/false)
    return value


def as_read(text: str | None, null_value: str = "", quote_empty: bool = False,
            normalised: Counter[str] | None = None) -> str | None:
    """A bronze value as Glue's CSV reader returns it: NULL is written as CsvNullValue
    (read back as NULL when that is the empty field); '' is an empty field too unless
    quoted (the lab's quote_empty), so it reads as NULL (counted in `normalised`)."""
    if text is None:
        return None if null_value == "" else null_value
    if text == "" and not quote_empty:
        if normalised is not None:
            normalised[EMPTY_AS_NULL] += 1
        return None
    return text


def empties_quoted(dms: settings.DmsSettings) -> bool:
    """'' is written "" and so kept apart from NULL: the lab's quote_empty_strings, which
    needs RFC 4180 quoting."""
    return dms.quote_empty_strings and dms.rfc4180


def source_text_in_silver(text: str | None, dms: settings.DmsSettings) -> str | None:
    """A source text column's value as silver holds it. In CSV bronze '' is an empty
    field like NULL (CsvNullValue ""), so Glue reads it as NULL; Parquet keeps both."""
    if dms.data_format == "parquet":
        return text
    return as_read(text, dms.csv_null_value, empties_quoted(dms))


def business_columns(spec: Mapping[str, Any]) -> tuple[str, ...]:
    """Silver columns that come from the source (not the CDC bookkeeping)."""
    meta = {c["name"] for c in spec["bronze_columns"] if c["role"] in ("timestamp", "change_seq")}
    return tuple(c["name"] for c in spec["silver_columns"] if c["from"] not in meta)


REFUSED = "rows"  # expected_records' count of the rows the job would quarantine


def expected_rows(spec: Mapping[str, Any], data_rows: Iterable[Sequence[str | None]],
                  null_value: str = "", quote_empty: bool = False, bytea_format: str = "hex",
                  parquet_millis: bool = False, normalised: Counter[str] | None = None,
                  ) -> tuple[dict[tuple, Record], int]:
    """(key -> expected business record, rows the job would quarantine). `data_rows`:
    each source row's bronze data fields (source columns, then added columns), as the
    emitter renders them (text; Parquet files hold that text converted to their types).
    `normalised` counts the values changed as AWS's pipeline changes them."""
    refused: Counter[str] = Counter()
    out = dict(expected_records(spec, data_rows, null_value, quote_empty, bytea_format,
                                parquet_millis, normalised, refused))
    return out, refused[REFUSED]


def expected_records(spec: Mapping[str, Any], data_rows: Iterable[Sequence[str | None]],
                     null_value: str = "", quote_empty: bool = False,
                     bytea_format: str = "hex", parquet_millis: bool = False,
                     normalised: Counter[str] | None = None,
                     refused: Counter[str] | None = None) -> Iterator[tuple[tuple, Record]]:
    """`expected_rows` one (key, record) at a time; `refused[REFUSED]` counts the rows
    the job would quarantine."""
    data = [c for c in spec["bronze_columns"] if c["role"] in ("data", "change_seq")]
    parquet = spec.get("bronze_format") == "parquet"
    keep = business_columns(spec)
    silver = [c for c in spec["silver_columns"] if c["name"] in keep]
    refused = Counter() if refused is None else refused
    for row in data_rows:
        try:
            if parquet:
                cast = {c["name"]: parquet_typed(c, v, bytea_format, parquet_millis)
                        for c, v in zip(data, row, strict=False)}
            else:
                cast = {c["name"]: typed(c["type"], as_read(
                            v, null_value, quote_empty,
                            normalised if c["role"] == "data" else None))  # not the seq
                        for c, v in zip(data, row, strict=False)}
        except Unconvertible:
            refused[REFUSED] += 1
            continue
        if any(cast[k] is None for k in spec["keys"]):  # a '' key read as NULL
            refused[REFUSED] += 1
            continue
        yield tuple(cast[k] for k in spec["keys"]), tuple(_silver_value(c, cast) for c in silver)


def _silver_value(column: Mapping[str, Any], cast: Mapping[str, Any]) -> Any:
    value = cast[column["from"]]
    if column.get("transform") != TRANSFORM_SPLIT:
        return value
    if value is None:
        return None
    parts = re.split(column["pattern"], value, maxsplit=1)
    return parts[column["part"]] if column["part"] < len(parts) else None


def silver_record(spec: Mapping[str, Any], row: Mapping[str, Any]) -> tuple[tuple, Record]:
    """(key, business record) of a silver row as pyiceberg returns it (timestamps in
    UTC without a zone, like the expected ones; NaN as 'NaN')."""
    def norm(v: Any) -> Any:
        if isinstance(v, datetime) and v.tzinfo is not None:
            return v.astimezone(UTC).replace(tzinfo=None)
        if isinstance(v, float) and math.isnan(v):
            return "NaN"
        return v
    return (tuple(norm(row[k]) for k in spec["keys"]),
            tuple(norm(row[c]) for c in business_columns(spec)))


def total(results: Mapping[str, ReconcileResult]) -> ReconcileResult:
    """One verdict over every table: equal only if each is."""
    prefixed = [f"{name}:{k}" for name, r in results.items() for k in r.mismatching_keys]
    return ReconcileResult(
        equal=all(r.equal for r in results.values()),
        source_rows=sum(r.source_rows for r in results.values()),
        silver_rows=sum(r.silver_rows for r in results.values()),
        missing_in_silver=sum(r.missing_in_silver for r in results.values()),
        extra_in_silver=sum(r.extra_in_silver for r in results.values()),
        different=sum(r.different for r in results.values()),
        mismatching_keys=prefixed[:MAX_REPORTED_KEYS],
        examples=[{"table": name, **e} for name, r in results.items() for e in r.examples][:3],
        duplicate_ids=[f"{name}:{k}" for name, r in results.items()
                       for k in r.duplicate_ids][:MAX_REPORTED_KEYS],
        duplicate_rows=sum(r.duplicate_rows for r in results.values()),
        tables={name: r.to_json() for name, r in results.items()},
        orphan_keys=[f"{name}:{k}" for name, r in results.items()
                     for k in r.orphan_keys][:MAX_REPORTED_KEYS],
        hints=[f"{name}: {h}" for name, r in results.items() for h in r.hints],
        normalisations=dict(sum((Counter(r.normalisations) for r in results.values()),
                                Counter())),
        quarantine_expected=sum(r.quarantine_expected for r in results.values()),
    )


# --- I/O adapters ---------------------------------------------------------------------
def source_data_rows(dsn: str, spec: Mapping[str, Any],
                     p: settings.PipelineSettings) -> Iterator[tuple[str | None, ...]]:
    """The source table's rows as the emitter writes their data fields: the same
    mappings plan and DMS renderer (LOBs cut at LobMaxSize included)."""
    import psycopg
    from psycopg import sql

    from cdclab.tables_sync import table_mappings
    from dms_emitter import replication as repl

    d = p.dms
    schema, table = spec["name"].split(".", 1)
    plan = table_mappings(p).plan(schema, table)
    options = RenderOptions.from_settings(d)
    with psycopg.connect(dsn, autocommit=True) as admin:
        columns = repl.table_columns(admin, schema, table)
    with psycopg.connect(dsn, autocommit=True,
                         options=repl.session_options(d.timestamptz_time_zone,
                                                      d.interval_style),
                         context=repl.raw_text_adapters()) as conn:  # output-function text
        names = [c.name for c in columns]
        kept, renderer = plan.kept(names), RowRenderer(columns, options)
        query = sql.SQL("SELECT {} FROM {}.{}").format(
            sql.SQL(", ").join(sql.Identifier(c) for c in names),
            sql.Identifier(schema), sql.Identifier(table))
        for values in conn.cursor().stream(query):
            yield plan.row(kept, renderer.row(values), "")


def read_source(dsn: str, src: settings.SourceSettings) -> list[dict]:
    """The demo table's rows (notebooks show them beside silver)."""
    import psycopg
    from psycopg.rows import dict_row

    with psycopg.connect(dsn, row_factory=dict_row) as conn:
        cols = ", ".join(SOURCE_COLUMNS)
        return conn.execute(f'SELECT {cols} FROM "{src.schema}"."{src.table}"').fetchall()


class AlreadyGone(logging.Filter):
    """Drops pyiceberg's "Failed to delete … file" warning when the file was already gone:
    after a commit (resync empties silver) pyiceberg deletes old metadata files that the
    Glue job's own upkeep may have removed first. Any other failure is still logged."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        return not (record.getMessage().startswith("Failed to delete")
                    and isinstance(exc, FileNotFoundError))


def silver_catalog(env: Mapping[str, str]):
    """A pyiceberg client of the stack's REST catalog (reads the warehouse in MinIO)."""
    from pyiceberg.catalog.rest import RestCatalog

    pyiceberg_log = logging.getLogger("pyiceberg.catalog")
    if not any(isinstance(f, AlreadyGone) for f in pyiceberg_log.filters):
        pyiceberg_log.addFilter(AlreadyGone())

    return RestCatalog(
        "cdclab",
        uri=env[settings.ENV_CATALOG_URI],
        **({"token": env[settings.ENV_CATALOG_TOKEN]} if env.get(settings.ENV_CATALOG_TOKEN)
           else {}),
        **{
            "s3.endpoint": env[settings.ENV_S3_ENDPOINT],
            "s3.access-key-id": env[settings.ENV_ACCESS_KEY],
            "s3.secret-access-key": env[settings.ENV_SECRET_KEY],
            "s3.region": env.get(settings.ENV_REGION, settings.DEFAULT_REGION),
            "s3.path-style-access": "true",
        },
    )


def keyed(rows: Iterable[Any], key_of=lambda row: row[0], record_of=lambda row: row,
          ) -> tuple[dict[Any, Any], dict[Any, int]]:
    """Silver rows by key (the first of each), and the keys held more than once with how
    many rows hold them."""
    by_key: dict[Any, Any] = {}
    again: Counter[Any] = Counter()
    for row in rows:
        key = key_of(row)
        if key in by_key:
            again[key] += 1
        else:
            by_key[key] = record_of(row)
    return by_key, {k: n + 1 for k, n in again.items()}


def silver_table(env: Mapping[str, str], spec: Mapping[str, Any]):
    """The spec's silver table through the stack's catalog; None before the first run."""
    from pyiceberg.exceptions import NoSuchTableError

    _catalog, namespace, name = spec["silver_table"].split(".", 2)
    try:
        return silver_catalog(env).load_table(f"{namespace}.{name}")
    except NoSuchTableError:
        return None


def read_silver_rows(table, spec: Mapping[str, Any]) -> Iterator[tuple]:
    """(key, business record) of every row of `table` (None: no rows) as of its snapshot
    when loaded (both of reconcile's reads see the same one), a file's Arrow batches at
    a time."""
    if table is None:
        return
    columns = (*spec["keys"], *business_columns(spec))
    scan = table.scan(selected_fields=tuple(dict.fromkeys(columns)))
    for batch in scan.to_arrow_batch_reader():
        yield from (silver_record(spec, row) for row in batch.to_pylist())


def reconcile_table(env: Mapping[str, str], spec: Mapping[str, Any],
                    p: settings.PipelineSettings) -> ReconcileResult:
    """Both sides read as fingerprints (a 10M-row table's records held ~18 GB), then the
    keys that differ read again in full (compare_fingerprints)."""
    normalised: Counter[str] = Counter()
    refused: Counter[str] = Counter()

    def one(key: tuple) -> Any:  # a one-column key reads as its value (ids as ids)
        return key[0] if len(key) == 1 else key

    def source(normalised: Counter[str], refused: Counter[str]) -> Iterator[tuple]:
        return expected_records(
            spec, source_data_rows(env[settings.ENV_PG_DSN], spec, p),
            p.dms.csv_null_value, empties_quoted(p.dms), p.dms.bytea_format,
            p.dms.parquet_timestamp_in_millisecond, normalised, refused)

    def records(keys: set) -> tuple[dict, dict]:
        if not keys:
            return {}, {}
        expected = {one(k): r for k, r in source(Counter(), Counter()) if one(k) in keys}
        actual, _ = keyed((kr for kr in read_silver_rows(silver, spec)
                           if one(kr[0]) in keys), lambda kr: one(kr[0]), lambda kr: kr[1])
        return expected, actual

    silver = silver_table(env, spec)
    expected = {one(k): fingerprint(r) for k, r in source(normalised, refused)}
    actual, duplicates = keyed(read_silver_rows(silver, spec), lambda kr: one(kr[0]),
                               lambda kr: fingerprint(kr[1]))
    result = compare_fingerprints(expected, actual, duplicates, records,
                                  business_columns(spec))
    result.table = spec["name"]
    result.normalisations, result.quarantine_expected = dict(normalised), refused[REFUSED]
    if result.extra_in_silver:
        result.hints.append(orphan_hint(spec))
    return result


def reconcile(env: Mapping[str, str], p: settings.PipelineSettings,
              table: str | None = None) -> ReconcileResult:
    """Silver vs source for every table the job merges (the published specs), or one."""
    from cdclab.tables_sync import build_specs, published_specs, source_tables

    specs = published_specs(env, p) or build_specs(
        source_tables(env[settings.ENV_PG_DSN], p), p).specs
    if table is not None:
        specs = [s for s in specs if s["name"] == table]
        if not specs:
            raise ValueError(f"{table}: not a table the job merges (cdclab tables)")
        return reconcile_table(env, specs[0], p)
    results = {s["name"]: reconcile_table(env, s, p) for s in specs}
    if len(results) == 1:
        return next(iter(results.values()))
    return total(results)
