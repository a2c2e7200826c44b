"""Pure: pgoutput messages of one table -> DMS CSV rows, grouped by transaction.

A schema change never stops it: pgoutput sends a new Relation message before the first
change after an ALTER TABLE, and the rows from there on carry the new column list (the
writer starts a new file with the new header). Lookups of unchanged TOAST values are
the caller's I/O, passed in as a function.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from dms_emitter import pgoutput as pg
from dms_emitter.batching import Segment, Transaction
from dms_emitter.change_seq import change_seq
from dms_emitter.dms_csv import (
    OP_DELETE,
    OP_INSERT,
    OP_UPDATE,
    CsvFormat,
    encode_line,
    format_ts,
)
from dms_emitter.schema_change import SchemaChange, shape_of
from dms_emitter.source_types import PgType, SourceColumn, builtin
from dms_emitter.values import RenderError, RenderOptions, RowRenderer

# An UPDATE that changes the primary key. DMS "ignores an attempt to update a primary
# key segment" (CHAP_Source.PostgreSQL); on S3 that is one U row with the after image
# (the old key stays wherever the files are applied). The alternative writes D (old
# key) then I (new key), which keeps an applied copy exact.
PK_UPDATE_AS_UPDATE = "update"
PK_UPDATE_AS_DELETE_INSERT = "delete-insert"
PK_UPDATE_MODES = (PK_UPDATE_AS_UPDATE, PK_UPDATE_AS_DELETE_INSERT)

# An UPDATE that left an out-of-line TOAST value unchanged, and the old value was not
# sent (REPLICA IDENTITY DEFAULT). DMS "uses this key to look up LOB values in the
# source table" (CHAP_Tasks.LOBSupport): the value as the source has it now. "null"
# writes NULL, what the S3 target writes for a column the log did not supply.
TOAST_LOOKUP, TOAST_NULL = "lookup", "null"
TOAST_MODES = (TOAST_LOOKUP, TOAST_NULL)

TypeResolver = Callable[[list[tuple[int, int]]], Mapping[tuple[int, int], PgType]]
# (key column -> text value, wanted columns) -> {column: text} of the row now, or None
Lookup = Callable[[dict[str, str | None], list[str]], dict[str, str | None] | None]


class ChangeError(RuntimeError):
    """A change the emitter cannot turn into a DMS row; the message says what to do."""


def builtin_types(wanted: list[tuple[int, int]]) -> dict[tuple[int, int], PgType]:
    """A resolver that needs no database: built-in types, anything else as unknown text."""
    return {(oid, mod): builtin(oid, mod) or PgType(f"oid {oid}", "X", mod, oid)
            for oid, mod in wanted}


@dataclass
class _Open:
    final_lsn: int
    commit_ts: int
    segments: list[Segment] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)  # of the current header
    header: tuple[str, ...] = ()
    count: int = 0
    ts_text: str | None = None  # commit time as DMS writes it: shared by every row

    def cut(self) -> None:
        if self.lines:
            self.segments.append(Segment(self.header, tuple(self.lines)))
            self.lines = []


class ChangeBuilder:
    """Feed decoded pgoutput messages in order; `feed` returns a Transaction at each Commit."""

    def __init__(
        self, schema: str, table: str, key: Sequence[str], fmt: CsvFormat | None = None,
        warn: Callable[[str], None] = lambda _msg: None, *,
        types: TypeResolver = builtin_types, options: RenderOptions | None = None,
        pk_update: str = PK_UPDATE_AS_UPDATE, unchanged_toast: str = TOAST_LOOKUP,
        lookup: Lookup | None = None,
        on_schema_change: Callable[[SchemaChange], None] = lambda _c: None,
        known_shape: tuple[tuple[str, str], ...] | None = None,
    ) -> None:
        if pk_update not in PK_UPDATE_MODES:
            raise ValueError(f"pk_update {pk_update!r}: expected one of {PK_UPDATE_MODES}")
        if unchanged_toast not in TOAST_MODES:
            raise ValueError(f"unchanged_toast {unchanged_toast!r}: expected one of "
                             f"{TOAST_MODES}")
        self.schema, self.table, self.fmt, self.warn = schema, table, fmt or CsvFormat(), warn
        self.key_columns = tuple(key)
        self.types, self.options = types, options or RenderOptions()
        self.pk_update, self.unchanged_toast, self.lookup = pk_update, unchanged_toast, lookup
        self.on_schema_change = on_schema_change
        self.source: tuple[SourceColumn, ...] | None = None
        self.shape = known_shape  # (name, type) of the columns rows are written with
        self._renderer: RowRenderer | None = None
        self._key: list[int] = []
        self._oid: int | None = None
        self._txn: _Open | None = None

    @property
    def columns(self) -> tuple[str, ...] | None:
        return None if self.source is None else tuple(c.name for c in self.source)

    @property
    def in_transaction(self) -> bool:
        return self._txn is not None

    @property
    def qualified(self) -> str:
        return f"{self.schema}.{self.table}"

    def feed(self, msg: pg.PgOutputMessage) -> Transaction | None:
        if isinstance(msg, pg.Relation):
            self._relation(msg)
        elif isinstance(msg, pg.Begin):
            self._txn = _Open(msg.final_lsn, msg.commit_ts)
        elif isinstance(msg, pg.Commit):
            txn, self._txn = self._require_txn("Commit"), None
            txn.cut()
            return Transaction.of_segments(msg.commit_lsn, msg.end_lsn, txn.segments)
        elif isinstance(msg, pg.Insert | pg.Update | pg.Delete) and msg.relation_oid == self._oid:
            self._change(msg)
        elif isinstance(msg, pg.Truncate) and self._oid in msg.relation_oids:
            self.warn(f"TRUNCATE of {self.qualified} ignored (AWS DMS does not replicate it "
                      "from PostgreSQL either)")
        return None

    def _require_txn(self, what: str) -> _Open:
        if self._txn is None:
            raise ChangeError(f"pgoutput {what} outside a transaction (no Begin seen)")
        return self._txn

    def _relation(self, rel: pg.Relation) -> None:
        if (rel.namespace, rel.name) != (self.schema, self.table):
            return
        types = self.types([(c.type_oid, c.type_modifier) for c in rel.columns])
        source = tuple(SourceColumn(c.name, types[(c.type_oid, c.type_modifier)], bool(c.flags & 1))
                       for c in rel.columns)
        shape = shape_of(source)
        if self.shape is not None and shape != self.shape:
            lsn = self._txn.final_lsn if self._txn else 0
            self.on_schema_change(SchemaChange(self.qualified, lsn, self.shape, shape))
        self.source, self.shape, self._oid = source, shape, rel.oid
        self._renderer = RowRenderer(source, self.options)
        names = [c.name for c in source]
        if all(k in names for k in self.key_columns):
            self._key = [names.index(k) for k in self.key_columns]
        else:
            # The key column was renamed or dropped: DMS does not follow primary-key
            # definition changes either. Fall back to the replica identity's key.
            self._key = ([i for i, c in enumerate(source) if c.in_key]
                         if rel.replica_identity in ("d", "i") else [])
            self.warn(f"key column(s) {list(self.key_columns)} no longer in {self.qualified} "
                      f"{names}; key changes are detected by "
                      f"{[names[i] for i in self._key] or 'nothing'} from here on")

    def _change(self, msg: pg.Insert | pg.Update | pg.Delete) -> None:
        if isinstance(msg, pg.Insert):
            self._emit(OP_INSERT, self._values(msg.new, None, "INSERT"))
        elif isinstance(msg, pg.Delete):
            self._emit(OP_DELETE, self._values(msg.old, None, "DELETE", filled=False))
        else:
            old = msg.old if msg.old_kind == "O" else None
            new = self._values(msg.new, old, "UPDATE")
            key_changed = (self._key and msg.old is not None
                           and self._key_of(msg.old) != self._key_of(new))
            if key_changed and self.pk_update == PK_UPDATE_AS_DELETE_INSERT:
                self._emit(OP_DELETE, self._values(msg.old, None, "UPDATE", filled=False))
                self._emit(OP_INSERT, new)
            else:
                self._emit(OP_UPDATE, new)

    def _key_of(self, values: Sequence[object]) -> tuple:
        return tuple(values[i] for i in self._key)

    def _values(
        self, new: pg.TupleData, old: pg.TupleData | None, what: str, filled: bool = True,
    ) -> tuple[str | None, ...]:
        """Text values of a tuple. `filled`: unchanged TOAST values must be found (an
        INSERT or UPDATE image); a DELETE's key-only old tuple keeps them NULL."""
        assert self.source is not None
        out: list[str | None] = []
        missing: list[int] = []
        for i, v in enumerate(new):
            if v is pg.UNCHANGED_TOAST:
                if old is not None and isinstance(old[i], str | type(None)):
                    v = old[i]
                else:
                    missing.append(i)
                    v = None
            elif isinstance(v, bytes):
                raise ChangeError(f"binary value in column {self.source[i].name!r} of "
                                  f"{what} on {self.qualified}: use text format")
            out.append(v)  # type: ignore[arg-type]
        if missing and filled and self.unchanged_toast == TOAST_LOOKUP:
            self._look_up(out, missing, what)
        assert self._renderer is not None
        try:
            return self._renderer.row(out)
        except RenderError as exc:
            raise ChangeError(f"{what} on {self.qualified}: {exc}") from None

    def _look_up(self, out: list[str | None], missing: list[int], what: str) -> None:
        assert self.source is not None
        names = [self.source[i].name for i in missing]
        if self.lookup is None or not self._key:
            self.warn(f"{what} on {self.qualified}: unchanged TOAST value(s) of {names} "
                      "cannot be looked up (no key): written as NULL")
            return
        key = {self.source[i].name: out[i] for i in self._key}
        row = self.lookup(key, names)
        if row is None:
            self.warn(f"{what} on {self.qualified}: row {key} is gone from the source; "
                      f"unchanged TOAST value(s) of {names} written as NULL")
            return
        for i, name in zip(missing, names, strict=True):
            out[i] = row[name]

    def _emit(self, op: str, values: tuple[str | None, ...]) -> None:
        txn = self._require_txn(op)
        if txn.ts_text is None:
            txn.ts_text = format_ts(pg.pg_timestamp(txn.commit_ts))
        header = self.columns or ()
        if header != txn.header:
            txn.cut()
            txn.header = header
        txn.count += 1  # counts every change, written or not: the sequence stays stable
        if op not in self.fmt.cdc_ops:
            return  # CdcInsertsOnly / CdcInsertsAndUpdates
        seq = change_seq(txn.final_lsn, txn.count)
        shown = op if self.fmt.cdc_op_column else None
        txn.lines.append(encode_line(self.fmt.fields(shown, txn.ts_text, values, seq),
                                     self.fmt))
