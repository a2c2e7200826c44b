"""Deterministic, realistic Airbnb hosts — with the awkward text CSV pipelines get wrong.

Names with commas, double quotes, apostrophes, the odd newline, accents, CJK and emoji;
NULLs in every nullable column and empty strings (which must stay distinct from NULL).
"""

from __future__ import annotations

import random
from datetime import date, timedelta

import psycopg
from psycopg import sql

from pipeline_contract import settings

COLUMNS = ("id", "url", "name", "since", "location", "response_time", "response_rate")
Host = tuple[int, str | None, str | None, date | None, str | None, str | None, str | None]

FIRST = ["Anna", "José", "Zoë", "François", "Søren", "Łukasz", "Ngozi", "Mei", "Ahmed", "Olga",
         "Chloé", "Björn", "Ines", "Raj", "Yuki", "Seán", "Émile", "Dmitri", "Ana María", "Kai",
         "山田", "李", "김민준", "Αλέξανδρος", "Мария", "O'Brien", "D'Angelo"]
LAST = ["Smith", "García", "Müller", "Rossi", "Dubois", "Novák", "Kowalski", "Silva", "Nguyen",
        "Jensen", "Ó Ceallaigh", "太郎", "小明", "Öztürk", "Žák", "Van der Berg"]
DECOR = [" & Co.", " 🏠", " ✨", ", Superhost", ' "The Host"', " (family), ltd", "'s place", ""]
PLACES = [("Paris", "France"), ("Lyon", "France"), ("Köln", "Germany"), ("München", "Germany"),
          ("São Paulo", "Brazil"), ("Reykjavík", "Iceland"), ("Zürich", "Switzerland"),
          ("Kraków", "Poland"), ("Malmö", "Sweden"), ("東京", "Japan"), ("Québec", "Canada"),
          ("Málaga", "Spain"), ("New York", "United States"), ("Cape Town", "South Africa"),
          ("İstanbul", "Türkiye"), ("Hà Nội", "Vietnam"), ("Sydney", "Australia")]
RESPONSE_TIMES = ["within an hour", "within a few hours", "within a day", "a few days or more"]


def _maybe(rng: random.Random, value: str | date, p_null: float = 0.04,
           p_empty: float = 0.03) -> str | date | None:
    roll = rng.random()
    if roll < p_null:
        return None
    if roll < p_null + p_empty and isinstance(value, str):
        return ""
    return value


def host_name(rng: random.Random) -> str:
    name = f"{rng.choice(FIRST)} {rng.choice(LAST)}"
    if rng.random() < 0.35:
        name += rng.choice(DECOR)
    if rng.random() < 0.02:
        name += "\nsecond line"  # hosts do paste multi-line names
    return name


def host(rng: random.Random, host_id: int) -> Host:
    city, country = rng.choice(PLACES)
    since = date(2008, 8, 1) + timedelta(days=rng.randrange(0, 6000))
    return (
        host_id,
        _maybe(rng, f"https://www.airbnb.com/users/show/{host_id}", p_empty=0.01),  # type: ignore
        _maybe(rng, host_name(rng)),  # type: ignore
        _maybe(rng, since, p_empty=0),  # type: ignore
        _maybe(rng, f"{city}, {country}"),  # type: ignore
        _maybe(rng, rng.choice(RESPONSE_TIMES), p_null=0.1),  # type: ignore
        _maybe(rng, f"{rng.choice([100, 100, 99, 97, 95, 90, 80, 67, 50, 0])}%", p_null=0.1),  # type: ignore
    )


def hosts(n: int, seed: int = 0, start_id: int = 1) -> list[Host]:
    """n hosts with ids start_id..start_id+n-1; the same seed gives the same rows."""
    rng = random.Random(seed)
    return [host(rng, start_id + i) for i in range(n)]


def insert_hosts(conn: psycopg.Connection, p: settings.PipelineSettings, rows: list[Host]) -> None:
    src = p.source
    query = sql.SQL("COPY {}.{} ({}) FROM STDIN").format(
        sql.Identifier(src.schema), sql.Identifier(src.table),
        sql.SQL(", ").join(map(sql.Identifier, COLUMNS)))
    with conn.cursor() as cur, cur.copy(query) as copy:
        for row in rows:
            copy.write_row(row)


def seed(conn: psycopg.Connection, p: settings.PipelineSettings, n: int,
         seed: int | None = 0) -> int:
    """Insert n sample hosts after the current max id (COPY); returns the count inserted."""
    src = p.source
    start = conn.execute(sql.SQL("SELECT coalesce(max({}), 0) + 1 FROM {}.{}").format(
        sql.Identifier(src.primary_key), sql.Identifier(src.schema),
        sql.Identifier(src.table))).fetchone()[0]  # type: ignore[index]
    insert_hosts(conn, p, hosts(n, seed if seed is not None else random.randrange(2**31), start))
    if not conn.autocommit:
        conn.commit()
    return n
