"""Pure: pgoutput messages of one table -> DMS CSV rows, grouped by transaction."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from dms_emitter import pgoutput as pg
from dms_emitter.batching import Transaction
from dms_emitter.change_seq import change_seq
from dms_emitter.dms_csv import (
    OP_DELETE,
    OP_INSERT,
    OP_UPDATE,
    CsvFormat,
    encode_line,
    format_ts,
)


class ChangeError(RuntimeError):
    """A change the emitter cannot turn into a DMS row; the message says what to do."""


@dataclass
class _Open:
    final_lsn: int
    commit_ts: int
    lines: list[str] = field(default_factory=list)
    ts_text: str | None = None  # commit time as DMS writes it: shared by every row


class ChangeBuilder:
    """Feed decoded pgoutput messages in order; `feed` returns a Transaction at each Commit."""

    def __init__(
        self, schema: str, table: str, key: Sequence[str], fmt: CsvFormat | None = None,
        warn: Callable[[str], None] = lambda _msg: None,
    ) -> None:
        self.schema, self.table, self.fmt, self.warn = schema, table, fmt or CsvFormat(), warn
        self.key_columns = tuple(key)
        self.columns: tuple[str, ...] | None = None
        self._key: list[int] = []
        self._oid: int | None = None
        self._txn: _Open | None = None

    @property
    def in_transaction(self) -> bool:
        return self._txn is not None

    def feed(self, msg: pg.PgOutputMessage) -> Transaction | None:
        if isinstance(msg, pg.Relation):
            self._relation(msg)
        elif isinstance(msg, pg.Begin):
            self._txn = _Open(msg.final_lsn, msg.commit_ts)
        elif isinstance(msg, pg.Commit):
            txn, self._txn = self._require_txn("Commit"), None
            return Transaction.of(msg.commit_lsn, msg.end_lsn, txn.lines)
        elif isinstance(msg, pg.Insert | pg.Update | pg.Delete) and msg.relation_oid == self._oid:
            self._change(msg)
        elif isinstance(msg, pg.Truncate) and self._oid in msg.relation_oids:
            self.warn(f"TRUNCATE of {self.schema}.{self.table} ignored (AWS DMS does not "
                      "replicate it from PostgreSQL either)")
        return None

    def _require_txn(self, what: str) -> _Open:
        if self._txn is None:
            raise ChangeError(f"pgoutput {what} outside a transaction (no Begin seen)")
        return self._txn

    def _relation(self, rel: pg.Relation) -> None:
        if (rel.namespace, rel.name) != (self.schema, self.table):
            return
        columns = tuple(c.name for c in rel.columns)
        if self.columns is not None and columns != self.columns:
            raise ChangeError(
                f"columns of {self.schema}.{self.table} changed from {self.columns} to "
                f"{columns}; schema changes are not supported, re-run the full load"
            )
        self.columns, self._oid = columns, rel.oid
        # The primary key, not the relation's key flags: REPLICA IDENTITY FULL flags all.
        missing = [k for k in self.key_columns if k not in columns]
        if missing:
            raise ChangeError(f"key column(s) {missing} not in {self.schema}.{self.table} "
                              f"columns {columns}")
        self._key = [columns.index(k) for k in self.key_columns]

    def _change(self, msg: pg.Insert | pg.Update | pg.Delete) -> None:
        if isinstance(msg, pg.Insert):
            self._emit(OP_INSERT, self._values(msg.new, None, "INSERT"))
        elif isinstance(msg, pg.Delete):
            self._emit(OP_DELETE, self._values(msg.old, None, "DELETE", allow_unchanged=True))
        else:
            old = msg.old if msg.old_kind == "O" else None
            new = self._values(msg.new, old, "UPDATE")
            if msg.old is not None and self._key_of(msg.old) != self._key_of(new):
                # The key changed: the old row is gone and a new one exists.
                self._emit(OP_DELETE, self._values(msg.old, None, "UPDATE", True))
                self._emit(OP_INSERT, new)
            else:
                self._emit(OP_UPDATE, new)

    def _key_of(self, values: tuple) -> tuple:
        return tuple(values[i] for i in self._key)

    def _values(
        self, new: pg.TupleData, old: pg.TupleData | None, what: str,
        allow_unchanged: bool = False,
    ) -> tuple[str | None, ...]:
        out: list[str | None] = []
        for i, v in enumerate(new):
            if v is pg.UNCHANGED_TOAST:
                if old is not None and isinstance(old[i], str | type(None)):
                    v = old[i]
                elif allow_unchanged:
                    v = None
                else:
                    assert self.columns is not None
                    raise ChangeError(
                        f"{what} on {self.schema}.{self.table} left TOASTed column "
                        f"{self.columns[i]!r} unchanged and the old value was not sent: run "
                        f"ALTER TABLE {self.schema}.{self.table} REPLICA IDENTITY FULL"
                    )
            if isinstance(v, bytes):
                raise ChangeError(f"binary value in column {i} of {what}: use text format")
            out.append(v)  # type: ignore[arg-type]
        return tuple(out)

    def _emit(self, op: str, values: tuple[str | None, ...]) -> None:
        txn = self._require_txn(op)
        if txn.ts_text is None:
            txn.ts_text = format_ts(pg.pg_timestamp(txn.commit_ts))
        seq = change_seq(txn.final_lsn, len(txn.lines) + 1)
        txn.lines.append(encode_line((op, txn.ts_text, *values, seq), self.fmt))
