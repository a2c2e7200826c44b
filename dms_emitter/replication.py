"""I/O adapter: publication, slot + exported snapshot, full-load read, pgoutput streaming."""

from __future__ import annotations

import select
import time
from collections.abc import Iterator

import psycopg
from psycopg import pq, sql

from dms_emitter import pgoutput as pg


class ReplicationError(RuntimeError):
    pass


class ReplicationLost(ReplicationError):
    """The connection or stream went away (server restart, network): worth a retry."""


def ensure_publication(conn: psycopg.Connection, publication: str, schema: str,
                       table: str) -> None:
    if conn.execute("SELECT 1 FROM pg_publication WHERE pubname = %s",
                    (publication,)).fetchone():
        return
    conn.execute(sql.SQL("CREATE PUBLICATION {} FOR TABLE {}.{}").format(
        sql.Identifier(publication), sql.Identifier(schema), sql.Identifier(table)))


def slot_confirmed_lsn(conn: psycopg.Connection, slot: str) -> int | None:
    """The slot's confirmed flush LSN, or None if there is no such slot."""
    row = conn.execute("SELECT confirmed_flush_lsn::text FROM pg_replication_slots "
                       "WHERE slot_name = %s", (slot,)).fetchone()
    if row is None:
        return None
    return pg.parse_lsn(row[0]) if row[0] else 0


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


def table_columns(conn: psycopg.Connection, schema: str, table: str) -> list[str]:
    rows = conn.execute(
        "SELECT a.attname FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid "
        "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = %s AND "
        "c.relname = %s AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum",
        (schema, table)).fetchall()
    if not rows:
        raise ReplicationError(f"source table {schema}.{table} not found (or has no columns)")
    return [r[0] for r in rows]


def snapshot_rows(dsn: str, snapshot: str, schema: str, table: str, columns: list[str],
                  key: str) -> Iterator[tuple[str | None, ...]]:
    """All rows as of the exported snapshot, text form (same output functions as pgoutput)."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        conn.execute(sql.SQL("SET TRANSACTION SNAPSHOT {}").format(sql.Literal(snapshot)))
        query = sql.SQL("SELECT {} FROM {}.{} ORDER BY {}").format(
            sql.SQL(", ").join(sql.SQL("{}::text").format(sql.Identifier(c)) for c in columns),
            sql.Identifier(schema), sql.Identifier(table), sql.Identifier(key))
        yield from conn.cursor().stream(query)
        conn.execute("COMMIT")


class ReplicationConnection:
    """A `replication=database` connection: slot creation and the pgoutput stream."""

    def __init__(self, dsn: str) -> None:
        self.conn = psycopg.connect(dsn, autocommit=True, replication="database")
        self.pgconn = self.conn.pgconn

    def close(self) -> None:
        self.conn.close()

    def create_slot(self, slot: str) -> tuple[int, str]:
        """(consistent point LSN, exported snapshot name). Import the snapshot elsewhere
        before sending anything else on this connection: that invalidates it."""
        row = self.conn.execute(
            f"CREATE_REPLICATION_SLOT {_ident(slot)} LOGICAL pgoutput EXPORT_SNAPSHOT"
        ).fetchone()
        assert row is not None
        return pg.parse_lsn(row[1]), row[2]

    def start(self, slot: str, publication: str, start_lsn: int = 0) -> None:
        query = (f"START_REPLICATION SLOT {_ident(slot)} LOGICAL {pg.format_lsn(start_lsn)} "
                 f"(proto_version '1', publication_names '{publication}')")
        self.pgconn.send_query(query.encode())
        res = self.pgconn.get_result()
        if res is None or res.status != pq.ExecStatus.COPY_BOTH:
            err = res.error_message.decode(errors="replace") if res else "no result"
            raise ReplicationLost(f"START_REPLICATION on slot {slot!r} failed: {err}")

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
    if not name.replace("_", "").isalnum():
        raise ReplicationError(f"replication slot name {name!r} must be [A-Za-z0-9_]")
    return name
