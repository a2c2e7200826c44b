"""I/O adapter: publication, slot + exported snapshot, full-load read, pgoutput streaming."""

from __future__ import annotations

import re
import select
import time
from collections.abc import Callable, Iterator, Sequence

import psycopg
from psycopg import pq, sql
from psycopg.adapt import AdaptersMap
from psycopg.types.string import StrDumperUnknown, TextLoader

from dms_emitter import pgoutput as pg
from pipeline_contract.dms_format.source_types import PgType, SourceColumn, builtin

INTERVAL_STYLES = ("postgres", "postgres_verbose", "sql_standard", "iso_8601")


def session_options(time_zone: str = "UTC", interval_style: str = "postgres") -> str:
    """Output functions depend on these settings: they are pinned on every connection
    whose text the emitter renders (the walsender's pgoutput and the full-load reader),
    so both print the same forms whatever the server's or role's defaults are."""
    if not re.fullmatch(r"[A-Za-z0-9_+\-/]+", time_zone):
        raise ReplicationError(f"time zone {time_zone!r} is not a zone name")
    if interval_style not in INTERVAL_STYLES:
        raise ReplicationError(f"interval style {interval_style!r}: expected one of "
                               f"{INTERVAL_STYLES}")
    return (f"-c TimeZone={time_zone} -c DateStyle=ISO,MDY -c IntervalStyle={interval_style} "
            "-c extra_float_digits=1 -c bytea_output=hex -c lc_monetary=C")


def raw_text_adapters() -> AdaptersMap:
    """Every column as the type's own output-function text (what pgoutput sends), not
    psycopg's Python objects and not a ::text cast (which differs: bool, inet)."""
    adapters = AdaptersMap(psycopg.adapters)
    for info in psycopg.adapters.types:  # unknown OIDs load as text already
        for oid in (info.oid, info.array_oid):
            if oid:
                adapters.register_loader(oid, TextLoader)
    # parameters go untyped: the server infers each from its context (a key column)
    adapters.register_dumper(str, StrDumperUnknown)
    return adapters


class ReplicationError(RuntimeError):
    pass


class LookupGone(ReplicationError):
    """The row's table or column is no longer there to look a value up in."""


class ReplicationLost(ReplicationError):
    """The connection or stream went away (server restart, network): worth a retry."""


def inserts_publication(publication: str) -> str:
    """The publication for tables without a primary key: inserts only, so the source's
    own UPDATE and DELETE keep working (they fail on a table without a replica identity
    in a publication that publishes them). DMS keeps such tables in an inserts-only
    replication set too, and "ignores DELETE and UPDATE record operations" for them."""
    return f"{publication}_inserts"


def ensure_publication(conn: psycopg.Connection, publication: str, schema: str,
                       table: str, inserts_only: bool = False,
                       log: Callable[[str], None] = lambda _m: None) -> bool:
    """The table is in `publication` (or its inserts-only twin), and only there; both
    publications exist. True when the table had to be added (it was not published)."""
    wanted = inserts_publication(publication) if inserts_only else publication
    other = publication if inserts_only else inserts_publication(publication)
    for name, inserts in ((publication, False), (inserts_publication(publication), True)):
        row = conn.execute("SELECT puballtables, pubinsert, pubupdate, pubdelete, "
                           "pubviaroot FROM pg_publication WHERE pubname = %s",
                           (name,)).fetchone()
        if row is None:
            # via the partition root: a partitioned table's changes arrive under its
            # own name, not its partitions' (DMS writes one folder per table too)
            publish = "publish = 'insert', " if inserts else ""
            conn.execute(sql.SQL("CREATE PUBLICATION {} WITH ({}"
                                 "publish_via_partition_root = true)").format(
                sql.Identifier(name), sql.SQL(publish)))
            log(f"created publication {name}" + (" (inserts only)" if inserts else ""))
            continue
        if row[0]:
            raise ReplicationError(
                f"publication {name} is FOR ALL TABLES: the emitter needs one it manages "
                f"table by table; drop it or set [source].publication to another name")
        if inserts and (row[2] or row[3]):
            raise ReplicationError(f"publication {name} publishes updates or deletes; it "
                                   "must publish inserts only (drop it to let it be recreated)")
        if not row[4]:
            conn.execute(sql.SQL("ALTER PUBLICATION {} SET (publish_via_partition_root = "
                                 "true)").format(sql.Identifier(name)))
    members = set(publications_of(conn, schema, table))
    if other in members:
        conn.execute(sql.SQL("ALTER PUBLICATION {} DROP TABLE {}.{}").format(
            sql.Identifier(other), sql.Identifier(schema), sql.Identifier(table)))
        log(f"removed {schema}.{table} from publication {other}")
    if wanted in members:
        return False
    conn.execute(sql.SQL("ALTER PUBLICATION {} ADD TABLE {}.{}").format(
        sql.Identifier(wanted), sql.Identifier(schema), sql.Identifier(table)))
    log(f"added {schema}.{table} to publication {wanted}")
    return True


def publications_of(conn: psycopg.Connection, schema: str, table: str) -> list[str]:
    """The publications the table itself was added to (pg_publication_rel: for a
    partitioned table that is the root, where pg_publication_tables lists partitions)."""
    rows = conn.execute(
        "SELECT p.pubname FROM pg_publication_rel r JOIN pg_publication p ON p.oid = r.prpubid "
        "JOIN pg_class c ON c.oid = r.prrelid JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE n.nspname = %s AND c.relname = %s", (schema, table)).fetchall()
    return [r[0] for r in rows]


def list_tables(conn: psycopg.Connection) -> list[tuple[str, str]]:
    """(schema, table) of every ordinary and partitioned table outside the system
    schemas: what selection rules choose from."""
    rows = conn.execute(
        "SELECT n.nspname, c.relname FROM pg_class c "
        "JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE c.relkind IN ('r', 'p') AND NOT c.relispartition "
        "AND n.nspname NOT IN ('pg_catalog', 'information_schema') "
        "AND n.nspname NOT LIKE 'pg\\_%' ORDER BY 1, 2").fetchall()
    return [(r[0], r[1]) for r in rows]


def prune_publications(conn: psycopg.Connection, publication: str,
                       keep: set[tuple[str, str]],
                       log: Callable[[str], None] = lambda _m: None) -> None:
    """Tables no longer selected leave the emitter's publications (their WAL is then
    not decoded at all)."""
    for name in (publication, inserts_publication(publication)):
        rows = conn.execute(
            "SELECT n.nspname, c.relname FROM pg_publication_rel r "
            "JOIN pg_publication p ON p.oid = r.prpubid JOIN pg_class c ON c.oid = r.prrelid "
            "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE p.pubname = %s",
            (name,)).fetchall()
        for schema, table in rows:
            if (schema, table) not in keep:
                conn.execute(sql.SQL("ALTER PUBLICATION {} DROP TABLE {}.{}").format(
                    sql.Identifier(name), sql.Identifier(schema), sql.Identifier(table)))
                log(f"removed {schema}.{table} from publication {name}: no longer selected")


def unique_keys(conn: psycopg.Connection, schema: str, table: str) -> list[tuple[str, ...]]:
    """Column lists of the table's unique, non-partial, column-only indexes (PK first)."""
    rows = conn.execute(
        "SELECT i.indisprimary, array_agg(a.attname ORDER BY k.ord) "
        "FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid "
        "JOIN pg_namespace n ON n.oid = c.relnamespace "
        "CROSS JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS k(attnum, ord) "
        "JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = k.attnum "
        "WHERE n.nspname = %s AND c.relname = %s AND i.indisunique "
        "AND i.indpred IS NULL AND i.indexprs IS NULL "
        "GROUP BY i.indexrelid, i.indisprimary ORDER BY i.indisprimary DESC",
        (schema, table)).fetchall()
    return [tuple(cols) for _, cols in rows]


def slot_confirmed_lsn(conn: psycopg.Connection, slot: str) -> int | None:
    """The slot's confirmed flush LSN, or None if there is no such slot."""
    row = conn.execute("SELECT confirmed_flush_lsn::text FROM pg_replication_slots "
                       "WHERE slot_name = %s", (slot,)).fetchone()
    if row is None:
        return None
    return pg.parse_lsn(row[0]) if row[0] else 0


def slot_wal_status(conn: psycopg.Connection, slot: str) -> str | None:
    """`reserved`/`extended`/`unreserved`/`lost` (invalidated), None if no such slot."""
    row = conn.execute("SELECT wal_status FROM pg_replication_slots WHERE slot_name = %s",
                       (slot,)).fetchone()
    return row[0] if row else None


def wait_slot_released(conn: psycopg.Connection, slot: str, timeout: float = 30.0) -> None:
    """A crashed emitter's walsender may hold the slot for a moment after the crash."""
    deadline = time.monotonic() + timeout
    while True:
        row = conn.execute("SELECT active_pid FROM pg_replication_slots WHERE slot_name = %s",
                           (slot,)).fetchone()
        if row is None or row[0] is None:
            return
        if time.monotonic() > deadline:
            raise ReplicationLost(f"slot {slot!r} is still in use by PID {row[0]} after "
                                   f"{timeout:.0f}s: is another emitter running?")
        time.sleep(0.2)


def drop_slot(conn: psycopg.Connection, slot: str) -> None:
    conn.execute("SELECT pg_drop_replication_slot(%s)", (slot,))


def table_columns(conn: psycopg.Connection, schema: str, table: str) -> list[SourceColumn]:
    """The table's columns in order, with their types and primary-key membership."""
    rows = conn.execute(
        "SELECT a.attname, a.atttypid, a.atttypmod, "
        "  COALESCE(a.attnum = ANY(i.indkey), false) "
        "FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid "
        "JOIN pg_namespace n ON n.oid = c.relnamespace "
        "LEFT JOIN pg_index i ON i.indrelid = c.oid AND i.indisprimary "
        "WHERE n.nspname = %s AND c.relname = %s AND a.attnum > 0 AND NOT a.attisdropped "
        "ORDER BY a.attnum",
        (schema, table)).fetchall()
    if not rows:
        raise ReplicationError(f"source table {schema}.{table} not found (or has no columns)")
    types = describe_types(conn, [(oid, typmod) for _, oid, typmod, _ in rows])
    return [SourceColumn(name, types[(oid, typmod)], bool(pk))
            for name, oid, typmod, pk in rows]


def describe_types(conn: psycopg.Connection,
                   wanted: list[tuple[int, int]]) -> dict[tuple[int, int], PgType]:
    """(type OID, typmod) -> PgType; domains resolve to their base type (and typmod)."""
    out: dict[tuple[int, int], PgType] = {}
    for oid, typmod in wanted:
        current, mod = oid, typmod
        for _ in range(32):  # domains over domains; a cycle is impossible, a bound is cheap
            known = builtin(current, mod)
            if known is not None:
                break
            row = conn.execute(
                "SELECT typname, typcategory, typtype, typbasetype, typtypmod "
                "FROM pg_type WHERE oid = %s::oid", (str(current),)).fetchone()
            if row is None:
                known = PgType(f"oid {current}", "X", mod, current)
                break
            name, category, kind, base, base_mod = (row[0], row[1], row[2], int(row[3]),
                                                     int(row[4]))
            if kind != "d":
                known = PgType(name, category, mod, current)
                break
            current, mod = base, (mod if mod >= 0 else base_mod)
        assert known is not None
        out[(oid, typmod)] = known
    return out


def snapshot_rows(dsn: str, snapshot: str, schema: str, table: str, columns: list[str],
                  order_by: Sequence[str], session: str = "",
                  ) -> Iterator[tuple[str | None, ...]]:
    """All rows as of the exported snapshot, each value its output-function text (the
    same text pgoutput sends for it)."""
    with psycopg.connect(dsn, autocommit=True, options=session or session_options(),
                         context=raw_text_adapters()) as conn:
        conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        conn.execute(sql.SQL("SET TRANSACTION SNAPSHOT {}").format(sql.Literal(snapshot)))
        # by key when there is one (stable LOAD files); a keyless table unordered, as
        # DMS reads it (json or point columns could not be sorted anyway)
        order = (sql.SQL(" ORDER BY {}").format(
            sql.SQL(", ").join(sql.Identifier(c) for c in order_by)) if order_by
            else sql.SQL(""))
        query = sql.SQL("SELECT {} FROM {}.{}{}").format(
            sql.SQL(", ").join(sql.Identifier(c) for c in columns),
            sql.Identifier(schema), sql.Identifier(table), order)
        yield from stream_rows(conn, query)
        conn.execute("COMMIT")


# Rows fetched per libpq result while streaming a snapshot: one result a row cost ~15% of
# a full load's CPU (libpq 17's chunked rows mode; older libpq streams row by row)
STREAM_CHUNK_ROWS = 1000


def stream_rows(conn: psycopg.Connection, query: sql.Composable) -> Iterator[tuple]:
    """The query's rows, streamed in chunks where libpq can (17+), else one by one."""
    size = STREAM_CHUNK_ROWS if pq.version() >= 170000 else 1
    yield from conn.cursor().stream(query, size=size)


class SourceReader:
    """The stream's side connection to the source: type descriptions for Relation
    messages and the current row by key (the lookup of unchanged TOAST values)."""

    def __init__(self, dsn: str, session: str = "") -> None:
        self.conn = psycopg.connect(dsn, autocommit=True,
                                    options=session or session_options(),
                                    context=raw_text_adapters())
        self._types: dict[tuple[int, int], PgType] = {}

    def close(self) -> None:
        self.conn.close()

    def types(self, wanted: list[tuple[int, int]]) -> dict[tuple[int, int], PgType]:
        unknown = [w for w in wanted if w not in self._types]
        if unknown:
            self._types.update(describe_types(self.conn, unknown))
        return {w: self._types[w] for w in wanted}

    def lookup(self, schema: str, table: str, key: dict[str, str | None],
               columns: list[str]) -> dict[str, str | None] | None:
        query = sql.SQL("SELECT {} FROM {}.{} WHERE {}").format(
            sql.SQL(", ").join(sql.Identifier(c) for c in columns),
            sql.Identifier(schema), sql.Identifier(table),
            sql.SQL(" AND ").join(sql.SQL("{} = %s").format(sql.Identifier(k)) for k in key))
        try:
            row = self.conn.execute(query, list(key.values())).fetchone()
        except (psycopg.errors.UndefinedColumn, psycopg.errors.UndefinedTable,
                psycopg.errors.DataError) as exc:
            # dropped or renamed since the change (the emitter lags): the value is gone
            raise LookupGone(f"{schema}.{table}: {exc}".strip()) from None
        return None if row is None else dict(zip(columns, row, strict=True))


# pgoutput's protocol version 2 and its `streaming` option (PostgreSQL 14 release notes)
STREAMING_SINCE = 140000


class ReplicationConnection:
    """A `replication=database` connection: slot creation and the pgoutput stream."""

    def __init__(self, dsn: str, session: str = "") -> None:
        self.conn = psycopg.connect(dsn, autocommit=True, replication="database",
                                    options=session or session_options())
        self.pgconn = self.conn.pgconn

    def close(self) -> None:
        self.conn.close()

    def identify_system(self) -> str:
        """The source cluster's system identifier: a rebuilt or restored-elsewhere
        database has a new one, and its LSNs mean nothing to the old state."""
        row = self.conn.execute("IDENTIFY_SYSTEM").fetchone()
        assert row is not None
        return str(row[0])

    def create_slot(self, slot: str) -> tuple[int, str]:
        """(consistent point LSN, exported snapshot name). Import the snapshot elsewhere
        before sending anything else on this connection: that invalidates it."""
        row = self.conn.execute(
            f"CREATE_REPLICATION_SLOT {_ident(slot)} LOGICAL pgoutput EXPORT_SNAPSHOT"
        ).fetchone()
        assert row is not None
        return pg.parse_lsn(row[1]), row[2]

    def start(self, slot: str, publications: list[str], start_lsn: int = 0,
              streaming: bool = False) -> bool:
        """Start the pgoutput stream. `streaming`: ask for large in-progress transactions
        too (protocol 2, PostgreSQL 14+); returns whether the server was asked."""
        names = ",".join('"' + _ident(p) + '"' for p in publications)
        streaming = streaming and self.pgconn.server_version >= STREAMING_SINCE
        options = (f"proto_version '2', publication_names '{names}', streaming 'on'"
                   if streaming else f"proto_version '1', publication_names '{names}'")
        query = (f"START_REPLICATION SLOT {_ident(slot)} LOGICAL {pg.format_lsn(start_lsn)} "
                 f"({options})")
        self.pgconn.send_query(query.encode())
        res = self.pgconn.get_result()
        if res is None or res.status != pq.ExecStatus.COPY_BOTH:
            err = res.error_message.decode(errors="replace") if res else "no result"
            raise ReplicationLost(f"START_REPLICATION on slot {slot!r} failed: {err}")
        return streaming

    def read(self, timeout: float, limit: int = 5000) -> list[pg.XLogData | pg.Keepalive]:
        """Up to `limit` messages; waits at most `timeout` seconds for the first one."""
        out: list[pg.XLogData | pg.Keepalive] = []
        waited = False
        while len(out) < limit:
            n, data = self.pgconn.get_copy_data(1)
            if n > 0:
                out.append(pg.decode_copy_data(data))
                continue
            if n < 0:
                res = self.pgconn.get_result()
                err = res.error_message.decode(errors="replace") if res else ""
                raise ReplicationLost(f"replication stream ended: {err or 'server closed it'}")
            if out or waited:
                break
            readable, _, _ = select.select([self.pgconn.socket], [], [], timeout)
            waited = True
            if readable:
                self.pgconn.consume_input()
        return out

    def send_status(self, flush_lsn: int, reply: bool = False) -> None:
        now = pg.to_pg_timestamp_now()
        if self.pgconn.put_copy_data(pg.standby_status(flush_lsn, now, reply)) != 1:
            raise ReplicationLost("could not send standby status update: "
                                   + self.pgconn.error_message.decode(errors="replace"))
        while self.pgconn.flush() == 1:
            time.sleep(0.01)


def _ident(name: str) -> str:
    if not name.replace("_", "").isalnum() or not name.isascii():
        raise ReplicationError(f"slot or publication name {name!r} must be [A-Za-z0-9_]")
    return name
