"""Prove silver equals source, row for row (DESIGN.md invariant 6).

The expected silver table is computed from the source with the documented cleaning
(`since` as DATE, `location` split into city/country, see cdclab.merge_model) and
compared on the business columns; CDC bookkeeping columns (change_seq,
last_updated_ts) are not part of the source and are left out.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from cdclab import settings
from cdclab.merge_model import clean_location

BUSINESS_COLUMNS = (
    "id", "url", "name", "since", "location_city", "location_country",
    "response_time", "response_rate",
)
SOURCE_COLUMNS = ("id", "url", "name", "since", "location", "response_time", "response_rate")
MAX_REPORTED_KEYS = 20

Record = tuple[Any, ...]


@dataclass
class ReconcileResult:
    equal: bool
    source_rows: int
    silver_rows: int
    missing_in_silver: int = 0
    extra_in_silver: int = 0
    different: int = 0
    mismatching_keys: list[int] = field(default_factory=list)  # first MAX_REPORTED_KEYS
    examples: list[dict] = field(default_factory=list)  # a few side-by-side diffs
    # ids silver holds more than once (a keyed comparison alone would hide them)
    duplicate_ids: list[int] = field(default_factory=list)  # first MAX_REPORTED_KEYS
    duplicate_rows: int = 0  # rows beyond the first of each duplicated id

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


def compare(expected: Mapping[int, Record], actual: Mapping[int, Record],
            duplicates: Mapping[int, int] | None = None) -> ReconcileResult:
    """`duplicates`: id -> how many rows silver holds for it, for ids held twice or more."""
    duplicates = duplicates or {}
    missing = sorted(set(expected) - set(actual))
    extra = sorted(set(actual) - set(expected))
    different = sorted(k for k in set(expected) & set(actual) if expected[k] != actual[k])
    keys = sorted(set(missing) | set(extra) | set(different))
    examples = [
        {
            "id": k,
            "source": _as_dict(expected.get(k)),
            "silver": _as_dict(actual.get(k)),
        }
        for k in keys[:3]
    ]
    extra_rows = sum(n - 1 for n in duplicates.values())
    return ReconcileResult(
        equal=not keys and not duplicates,
        source_rows=len(expected),
        silver_rows=len(actual) + extra_rows,
        missing_in_silver=len(missing),
        extra_in_silver=len(extra),
        different=len(different),
        mismatching_keys=keys[:MAX_REPORTED_KEYS],
        examples=examples,
        duplicate_ids=sorted(duplicates)[:MAX_REPORTED_KEYS],
        duplicate_rows=extra_rows,
    )


def _as_dict(record: Record | None) -> dict | None:
    if record is None:
        return None
    return {c: (v.isoformat() if hasattr(v, "isoformat") else v)
            for c, v in zip(BUSINESS_COLUMNS, record, strict=True)}


# --- I/O adapters ---------------------------------------------------------------------
def read_source(dsn: str) -> list[dict]:
    import psycopg
    from psycopg.rows import dict_row

    src = settings.load_pipeline().source
    with psycopg.connect(dsn, row_factory=dict_row) as conn:
        cols = ", ".join(SOURCE_COLUMNS)
        return conn.execute(f'SELECT {cols} FROM "{src.schema}"."{src.table}"').fetchall()


def silver_catalog(env: Mapping[str, str]):
    """A pyiceberg client of the stack's REST catalog (reads the warehouse in MinIO)."""
    from pyiceberg.catalog.rest import RestCatalog

    return RestCatalog(
        "cdclab",
        uri=env[settings.ENV_CATALOG_URI],
        **{
            "s3.endpoint": env[settings.ENV_S3_ENDPOINT],
            "s3.access-key-id": env[settings.ENV_ACCESS_KEY],
            "s3.secret-access-key": env[settings.ENV_SECRET_KEY],
            "s3.region": env.get(settings.ENV_REGION, settings.DEFAULT_REGION),
            "s3.path-style-access": "true",
        },
    )


def keyed(rows: Iterable[Record]) -> tuple[dict[int, Record], dict[int, int]]:
    """Silver rows by id (the first of each), and the ids held more than once."""
    by_id: dict[int, Record] = {}
    counts: Counter[int] = Counter()
    for row in rows:
        counts[row[0]] += 1
        by_id.setdefault(row[0], row)
    return by_id, {k: n for k, n in counts.items() if n > 1}


def read_silver_rows(env: Mapping[str, str]) -> list[Record]:
    from pyiceberg.exceptions import NoSuchTableError

    lake = settings.load_pipeline().lake
    try:
        table = silver_catalog(env).load_table(f"{lake.glue_database}.{lake.silver_table}")
    except NoSuchTableError:
        return []
    arrow = table.scan(selected_fields=BUSINESS_COLUMNS).to_arrow()
    return [tuple(row[c] for c in BUSINESS_COLUMNS) for row in arrow.to_pylist()]


def read_silver(env: Mapping[str, str]) -> dict[int, Record]:
    return keyed(read_silver_rows(env))[0]


def reconcile(env: Mapping[str, str]) -> ReconcileResult:
    expected = expected_silver(read_source(env[settings.ENV_PG_DSN]))
    actual, duplicates = keyed(read_silver_rows(env))
    return compare(expected, actual, duplicates)
