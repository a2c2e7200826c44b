"""Pure: pgoutput messages of the selected tables -> DMS CSV rows, grouped by transaction.

Each table is written as its TablePlan says (table mappings: folder, column renames,
removed and added columns). A schema change never stops it: pgoutput sends a new
Relation message before the first change after an ALTER TABLE, and the rows from there
on carry the new column list (the writer starts a new file with the new header).
Lookups of unchanged TOAST values are the caller's I/O, passed in as a function.
A transaction PostgreSQL streams while in progress (pgoutput protocol 2) is rendered as
it comes and kept (dms_emitter.streamed) until Stream Commit hands its rows out, in the
order and with the change numbers a whole transaction would have had.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from dms_emitter import pgoutput as pg
from dms_emitter.batching import Batch, Transaction
from dms_emitter.change_seq import (
    LAYOUT_DMS,
    LAYOUTS,
    change_seq,
    dms_change_seq,
    dms_time_prefix,
)
from dms_emitter.date_partition import DatePartitioning
from dms_emitter.dms_csv import (
    OP_DELETE,
    OP_INSERT,
    OP_UPDATE,
    CsvFormat,
    encode_fields,
    encode_line,
    format_ts,
)
from dms_emitter.schema_change import SchemaChange, Shape, shape_of
from dms_emitter.streamed import DEFAULT_MEMORY_BYTES, StreamedTransaction
from pipeline_contract.dms_format.parquet_types import STRING_COLUMN, ColumnType, column_type
from pipeline_contract.dms_format.source_types import PgType, SourceColumn, builtin
from pipeline_contract.dms_format.table_mappings import (
    CHANGE_SEQ_EXPRESSION,
    TableMappings,
    TablePlan,
    default_mappings,
)
from pipeline_contract.dms_format.values import RenderError, RenderOptions, RowRenderer

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

# (folder, header, CSV line, Parquet column types or (), date folder or "")
RowSink = Callable[[str, tuple[str, ...], str, tuple[ColumnType, ...], str], None]
TypeResolver = Callable[[list[tuple[int, int]]], Mapping[tuple[int, int], PgType]]
# (table, key column -> text value, wanted columns) -> {column: text} of the row now
Lookup = Callable[[TablePlan, dict[str, str | None], list[str]],
                  dict[str, str | None] | None]


@dataclass(frozen=True)
class TableSpec:
    """A selected table: how it is written, its key, the shape its files have now."""

    plan: TablePlan
    key: tuple[str, ...]  # primary key (or the unique key of a table without one)
    known_shape: Shape | None = None


class ChangeError(RuntimeError):
    """A change the emitter cannot turn into a DMS row; the message says what to do."""


def builtin_types(wanted: list[tuple[int, int]]) -> dict[tuple[int, int], PgType]:
    """A resolver that needs no database: built-in types, anything else as unknown text."""
    return {(oid, mod): builtin(oid, mod) or PgType(f"oid {oid}", "X", mod, oid)
            for oid, mod in wanted}


@dataclass
class _Table:
    """What the last Relation message said of one table."""

    spec: TableSpec
    source: tuple[SourceColumn, ...]
    shape: Shape
    renderer: RowRenderer
    kept: list[int]
    header: tuple[str, ...]
    key: list[int]
    folder: str = ""
    plain: bool = False  # all columns kept and only the change sequence added
    seq_only: bool = False  # the change sequence is the only column added
    types: tuple[ColumnType, ...] = ()  # Parquet: every written column's, Op included
    before: list[int] = field(default_factory=list)  # columns with a before-image column

    @property
    def names(self) -> list[str]:
        return [c.name for c in self.source]


@dataclass
class _Open:
    final_lsn: int
    commit_ts: int
    rows: Batch = field(default_factory=Batch)  # when no on_row takes them as they come
    count: int = 0
    number: int = -1  # the last change number given (DMS layout)
    time_prefix: str = ""  # DMS layout: the commit time part, the same for every row
    prefixes: dict[str, tuple[str, ...]] = field(default_factory=dict)  # by Op
    encoded_prefixes: dict[str, str] = field(default_factory=dict)  # by Op, streamed rows
    partition: str | None = None  # the commit date's folder (DatePartitionEnabled)


_TUPLE, _ENCODED = 0, 1  # a streamed row kept as its values, or as its encoded parts


@dataclass
class _Pending:
    """A streamed change's text values still missing unchanged TOAST values: they are
    looked up at the commit, when the source shows what the transaction wrote."""

    texts: list[str | None]
    missing: list[int]
    what: str


class ChangeBuilder:
    """Feed decoded pgoutput messages in order; `feed` returns a Transaction at each
    Commit and Stream Commit."""

    def __init__(
        self, tables: Sequence[TableSpec], fmt: CsvFormat | None = None,
        warn: Callable[[str], None] = lambda _msg: None, *,
        types: TypeResolver = builtin_types, options: RenderOptions | None = None,
        pk_update: str = PK_UPDATE_AS_UPDATE, unchanged_toast: str = TOAST_LOOKUP,
        lookup: Lookup | None = None,
        on_schema_change: Callable[[SchemaChange], None] = lambda _c: None,
        fail_on_lob_truncation: bool = False,
        on_row: RowSink | None = None,
        seq_layout: str = LAYOUT_DMS,
        partitions: DatePartitioning | None = None,
        stream_memory_bytes: int = DEFAULT_MEMORY_BYTES,
    ) -> None:
        if pk_update not in PK_UPDATE_MODES:
            raise ValueError(f"pk_update {pk_update!r}: expected one of {PK_UPDATE_MODES}")
        if unchanged_toast not in TOAST_MODES:
            raise ValueError(f"unchanged_toast {unchanged_toast!r}: expected one of "
                             f"{TOAST_MODES}")
        self.specs = {(t.plan.schema, t.plan.table): t for t in tables}
        if seq_layout not in LAYOUTS:
            raise ValueError(f"change_seq_layout {seq_layout!r}: expected one of {LAYOUTS}")
        self.fmt, self.warn = fmt or CsvFormat(), warn
        self._line_fmt = self.fmt.line_format
        self.partitions = partitions or DatePartitioning()
        self.dms_layout = seq_layout == LAYOUT_DMS
        self._lsn: int | None = None  # WAL position of the change being fed
        self._fallback = 0  # change numbers when no WAL positions are given
        self._ops, self._op_column = self.fmt.cdc_ops, self.fmt.cdc_op_column
        self.types, self.options = types, options or RenderOptions()
        self.pk_update, self.unchanged_toast, self.lookup = pk_update, unchanged_toast, lookup
        self.on_schema_change = on_schema_change
        self.fail_on_lob_truncation = fail_on_lob_truncation
        # rows handed out as they come (the emitter's batcher: memory stays bounded by
        # its file size, not a transaction's); without it, the Transaction holds them
        self.on_row = on_row
        self.truncations: dict[str, int] = {}  # schema.table.column -> values cut
        # folder -> (commit LSN, commit time) of the newest change handed out
        self.last_change: dict[str, tuple[int, int]] = {}
        self._shapes: dict[str, Shape | None] = {
            t.plan.qualified: t.known_shape for t in tables}
        self._tables: dict[int, _Table] = {}  # by relation OID
        self._txn: _Open | None = None
        self.stream_memory_bytes = stream_memory_bytes
        self._streams: dict[int, StreamedTransaction] = {}  # in progress, by xid
        self._stream: StreamedTransaction | None = None  # the block being read
        self._subxid = 0  # the (sub)transaction of the streamed change being fed
        self._size = 0  # its message's bytes

    def columns(self, qualified: str) -> tuple[str, ...] | None:
        """The source columns of a table as the last Relation message gave them."""
        for t in self._tables.values():
            if t.spec.plan.qualified == qualified:
                return tuple(t.names)
        return None

    @property
    def in_transaction(self) -> bool:
        return self._txn is not None

    @property
    def streamed_in_progress(self) -> int:
        """Transactions streamed in part and not yet committed or aborted."""
        return len(self._streams)

    def feed(self, msg: pg.PgOutputMessage, lsn: int | None = None,
             size: int = 0) -> Transaction | None:
        """`lsn`: the message's WAL position (XLogData's start), which numbers the change
        in DMS's layout; without it, the transaction's commit position and the count.
        `size`: the message's bytes (what a streamed transaction holds in memory)."""
        self._lsn = lsn
        if self._stream is not None and isinstance(msg, pg.Insert | pg.Update | pg.Delete):
            table = self._tables.get(msg.relation_oid)
            if table is not None:
                self._subxid, self._size = msg.xid or self._stream.xid, size
                self._change(table, msg)
            return None
        if isinstance(msg, pg.StreamStart | pg.StreamStop | pg.StreamAbort | pg.StreamCommit):
            return self._streamed(msg)
        if isinstance(msg, pg.Relation):
            self._relation(msg)
        elif isinstance(msg, pg.Begin):
            self._txn = _Open(msg.final_lsn, msg.commit_ts)
        elif isinstance(msg, pg.Commit):
            txn, self._txn = self._require_txn("Commit"), None
            return Transaction.of_segments(msg.commit_lsn, msg.end_lsn, txn.rows.files())
        elif isinstance(msg, pg.Insert | pg.Update | pg.Delete):
            table = self._tables.get(msg.relation_oid)
            if table is not None:
                self._change(table, msg)
        elif isinstance(msg, pg.Truncate):
            for oid in msg.relation_oids:
                if oid in self._tables:
                    self.warn(f"TRUNCATE of {self._tables[oid].spec.plan.qualified} ignored "
                              "(AWS DMS does not replicate it from PostgreSQL either)")
        return None

    def _streamed(self, msg: pg.StreamStart | pg.StreamStop | pg.StreamAbort
                  | pg.StreamCommit) -> Transaction | None:
        if isinstance(msg, pg.StreamStart):
            if self._txn is not None:
                raise ChangeError(f"pgoutput Stream Start of xid {msg.xid} inside a "
                                  "transaction (no Commit seen)")
            streamed = self._streams.get(msg.xid)
            if streamed is None:
                if not msg.first:
                    raise ChangeError(f"pgoutput Stream Start of xid {msg.xid}: a later "
                                      "block of a transaction whose first was not seen")
                streamed = self._streams[msg.xid] = StreamedTransaction(
                    msg.xid, self.stream_memory_bytes)
            self._stream = streamed
        elif isinstance(msg, pg.StreamStop):
            self._stream = None
        elif isinstance(msg, pg.StreamAbort):
            streamed = self._streams.get(msg.xid)
            if streamed is not None and msg.subxid == msg.xid:
                del self._streams[msg.xid]
                streamed.close()
            elif streamed is not None:
                streamed.abort(msg.subxid)
        else:
            return self._commit_streamed(msg)
        return None

    def _commit_streamed(self, msg: pg.StreamCommit) -> Transaction:
        streamed = self._streams.pop(msg.xid, None)
        if streamed is None:
            raise ChangeError(f"pgoutput Stream Commit of xid {msg.xid}, never streamed")
        txn = self._txn = _Open(msg.commit_lsn, msg.commit_ts)
        d, end = self._line_fmt.delimiter, self._line_fmt.row_delimiter
        time_prefix = dms_time_prefix(msg.commit_ts)
        try:
            for kind, at, op, values, before, position in streamed.committed_rows():
                table = streamed.deref(at)
                if kind == _ENCODED:  # the rest of its line is known now
                    prefix = self._prefix(txn, op)
                    seq = dms_change_seq(msg.commit_ts, position, time_prefix)
                    line = (f"{prefix}{values}{d}{seq}{end}" if before is None
                            else f"{prefix}{values}{d}{seq}{d}{before}{end}")
                    self._hand_out(table, line, txn)
                    continue
                if isinstance(values, _Pending):
                    values = self._finish(table, values)
                self._lsn = position
                self._emit(table, op, values, before)
        finally:
            self._txn = None
        return Transaction.of_segments(msg.commit_lsn, msg.end_lsn, txn.rows.files())

    def _next_number(self, last: int) -> int:
        """DMS's layout: the change's number, its WAL position (or the next one after
        `last`: one WAL record, several rows)."""
        if self._lsn:
            position = self._lsn
        else:  # fed without WAL positions (unit tests, benchmarks): stream order
            self._fallback += 1
            position = self._fallback
        return max(position, last + 1)

    def _op_prefix(self, txn: _Open, op: str) -> tuple[str, ...]:
        """The fields before a row's values (Op, commit time): the same for every row of
        the transaction with that Op."""
        prefix = txn.prefixes.get(op)
        if prefix is None:
            ts = format_ts(pg.pg_timestamp(txn.commit_ts))
            prefix = txn.prefixes[op] = tuple(self.fmt.fields(
                op if self._op_column else None, ts, ()))
        return prefix

    def _prefix(self, txn: _Open, op: str) -> str:
        """The encoded fields before a row's values (Op, commit time), delimiter included."""
        prefix = txn.encoded_prefixes.get(op)
        if prefix is None:
            fields = self._op_prefix(txn, op)
            prefix = txn.encoded_prefixes[op] = (
                encode_fields(fields, self._line_fmt) + self._line_fmt.delimiter
                if fields else "")
        return prefix

    def _keep_streamed(self, stream: StreamedTransaction, table: _Table, op: str,
                       values: tuple[str | None, ...] | _Pending,
                       before: tuple[str | None, ...] | None) -> None:
        """A streamed change, kept until its commit: encoded now, but for the commit's
        time and the change sequence's, when DMS's layout numbers it by its WAL position
        (the lsn layout numbers it by its commit and count: it is encoded then)."""
        if (not self.dms_layout or not table.seq_only or isinstance(values, _Pending)):
            stream.add(self._subxid, (_TUPLE, stream.ref(table), op, values, before,
                                      self._lsn), self._size)
            return
        if op not in self._ops:
            return  # CdcInsertsOnly / CdcInsertsAndUpdates: never numbered
        stream.number = self._next_number(stream.number)
        fmt = self._line_fmt
        left = encode_fields(values if table.plain else [values[i] for i in table.kept], fmt)
        right = (encode_fields(before or (None,) * len(table.before), fmt)
                 if table.before else None)
        stream.add(self._subxid, (_ENCODED, stream.ref(table), op, left, right,
                                  stream.number), self._size)

    def _require_txn(self, what: str) -> _Open:
        if self._txn is None:
            raise ChangeError(f"pgoutput {what} outside a transaction (no Begin seen)")
        return self._txn

    def _relation(self, rel: pg.Relation) -> None:
        known = self._tables.get(rel.oid)
        spec = known.spec if known else self.specs.get((rel.namespace, rel.name))
        if spec is None:
            return  # published, but not selected (or no longer)
        qualified = spec.plan.qualified
        types = self.types([(c.type_oid, c.type_modifier) for c in rel.columns])
        source = tuple(SourceColumn(c.name, types[(c.type_oid, c.type_modifier)],
                                    bool(c.flags & 1)) for c in rel.columns)
        shape = shape_of(source)
        before = self._shapes.get(qualified)
        if before is not None and shape != before:
            lsn = self._txn.final_lsn if self._txn else (self._lsn or 0)
            self.on_schema_change(SchemaChange(qualified, lsn, before, shape))
        self._shapes[qualified] = shape
        names = [c.name for c in source]
        if all(k in names for k in spec.key):
            key = [names.index(k) for k in spec.key]
        else:
            # The key column was renamed or dropped: DMS does not follow primary-key
            # definition changes either. Fall back to the replica identity's key.
            key = ([i for i, c in enumerate(source) if c.in_key]
                   if rel.replica_identity in ("d", "i") else [])
            self.warn(f"key column(s) {list(spec.key)} no longer in {qualified} {names}; "
                      f"key changes are detected by {[names[i] for i in key] or 'nothing'} "
                      "from here on")
        kept = spec.plan.kept(names)
        renderer = RowRenderer(source, self.options, lob_truncated(
            qualified, self.options.lob_max_size_kb, self.truncations, self.warn,
            self.fail_on_lob_truncation))
        added = spec.plan.added
        # pk-only before images: the primary key as the catalog has it (the Relation
        # message flags every column under REPLICA IDENTITY FULL)
        before = spec.plan.before(source, spec.key)
        plain = (kept == list(range(len(names))) and len(added) == 1
                 and added[0].expression == CHANGE_SEQ_EXPRESSION and not before)
        types: tuple[ColumnType, ...] = ()
        if self.fmt.parquet is not None:  # Op and timestamp columns, then the header's
            prefix = len(self.fmt.fields("I" if self._op_column else None, "", ()))
            types = (*(STRING_COLUMN,) * prefix,
                     *(column_type(source[i].type, self.options) for i in kept),
                     *(STRING_COLUMN,) * len(added),
                     *(column_type(source[i].type, self.options) for i in before))
        seq_only = len(added) == 1 and added[0].expression == CHANGE_SEQ_EXPRESSION
        self._tables[rel.oid] = _Table(spec, source, shape, renderer, kept,
                                       spec.plan.header(names, before), key,
                                       spec.plan.folder, plain, seq_only, types, before)

    def _change(self, table: _Table, msg: pg.Insert | pg.Update | pg.Delete) -> None:
        if isinstance(msg, pg.Insert):
            self._emit(table, OP_INSERT, self._values(table, msg.new, None, "INSERT"))
        elif isinstance(msg, pg.Delete):
            self._emit(table, OP_DELETE,
                       self._values(table, msg.old, None, "DELETE", filled=False))
        else:
            old = msg.old if msg.old_kind == "O" else None
            new = self._values(table, msg.new, old, "UPDATE")
            # raw text on both sides (rendering changes it); an old tuple of another
            # replica identity index has NULLs where the key is: no verdict from it
            old_key = _pick(msg.old, table.key) if msg.old is not None else ()
            key_changed = (bool(old_key) and None not in old_key
                           and old_key != _pick(msg.new, table.key))
            if key_changed and self.pk_update == PK_UPDATE_AS_DELETE_INSERT:
                self._emit(table, OP_DELETE,
                           self._values(table, msg.old, None, "UPDATE", filled=False))
                self._emit(table, OP_INSERT, new)
            else:
                self._emit(table, OP_UPDATE, new, self._before(table, msg))

    def _before(self, table: _Table, msg: pg.Update) -> tuple[str | None, ...]:
        """The before-image values of an UPDATE: what PostgreSQL logged of the old row,
        rendered as new values are. Under REPLICA IDENTITY DEFAULT that is the key, and
        only when a key column changed; under FULL, every column. NULL elsewhere."""
        if not table.before:
            return ()
        if msg.old is None:
            return (None,) * len(table.before)
        old = self._values(table, msg.old, None, "UPDATE (before image)", filled=False)
        return tuple(old[i] for i in table.before)

    def _values(
        self, table: _Table, new: pg.TupleData, old: pg.TupleData | None, what: str,
        filled: bool = True,
    ) -> tuple[str | None, ...]:
        """Text values of a tuple. `filled`: unchanged TOAST values must be found (an
        INSERT or UPDATE image); a DELETE's key-only old tuple keeps them NULL."""
        qualified = table.spec.plan.qualified
        out: list[str | None] = []
        missing: list[int] = []
        for i, v in enumerate(new):
            if v is pg.UNCHANGED_TOAST:
                if old is not None and isinstance(old[i], str | type(None)):
                    v = old[i]
                elif old is not None and isinstance(old[i], memoryview):
                    v = table.renderer.text(i, old[i])  # type: ignore[arg-type]
                else:
                    missing.append(i)
                    v = None
            elif isinstance(v, bytes):
                raise ChangeError(f"binary value in column {table.names[i]!r} of "
                                  f"{what} on {qualified}: use text format")
            elif isinstance(v, memoryview):
                try:  # a big value, cut before it is decoded
                    v = table.renderer.text(i, v)
                except UnicodeDecodeError as exc:
                    raise ChangeError(f"invalid UTF-8 in column {table.names[i]!r} of "
                                      f"{what} on {qualified}: {exc.reason}") from None
            out.append(v)  # type: ignore[arg-type]
        if missing and filled and self.unchanged_toast == TOAST_LOOKUP:
            if self._stream is not None:  # the source shows the values at the commit
                return _Pending(out, missing, what)  # type: ignore[return-value]
            self._look_up(table, out, missing, what)
        return self._render(table, out, what)

    def _render(self, table: _Table, texts: list[str | None],
                what: str) -> tuple[str | None, ...]:
        try:
            return table.renderer.row(texts)
        except RenderError as exc:
            raise ChangeError(f"{what} on {table.spec.plan.qualified}: {exc}") from None

    def _finish(self, table: _Table, pending: _Pending) -> tuple[str | None, ...]:
        self._look_up(table, pending.texts, pending.missing, pending.what)
        return self._render(table, pending.texts, pending.what)

    def _look_up(self, table: _Table, out: list[str | None], missing: list[int],
                 what: str) -> None:
        qualified = table.spec.plan.qualified
        names = [table.names[i] for i in missing]
        if self.lookup is None or not table.key:
            self.warn(f"{what} on {qualified}: unchanged TOAST value(s) of {names} "
                      "cannot be looked up (no key): written as NULL")
            return
        key = {table.names[i]: out[i] for i in table.key}
        row = self.lookup(table.spec.plan, key, names)
        if row is None:
            self.warn(f"{what} on {qualified}: row {key} is gone from the source; "
                      f"unchanged TOAST value(s) of {names} written as NULL")
            return
        for i, name in zip(missing, names, strict=True):
            out[i] = row[name]

    def _emit(self, table: _Table, op: str, values: tuple[str | None, ...],
              before: tuple[str | None, ...] | None = None) -> None:
        """`before`: the row's before-image values; None: NULL in each (I and D rows)."""
        stream = self._stream
        if stream is not None:
            self._keep_streamed(stream, table, op, values, before)
            return
        txn = self._require_txn(op)
        txn.count += 1  # counts every change, written or not: the sequence stays stable
        if op not in self._ops:
            return  # CdcInsertsOnly / CdcInsertsAndUpdates
        prefix = self._op_prefix(txn, op)
        if self.dms_layout:
            txn.number = self._next_number(txn.number)
            if not txn.time_prefix:
                txn.time_prefix = dms_time_prefix(txn.commit_ts)
            seq = dms_change_seq(txn.commit_ts, txn.number, txn.time_prefix)
        else:
            seq = change_seq(txn.final_lsn, txn.count)
        if table.plain:  # every column kept, the change sequence added: the usual case
            row = (*prefix, *values, seq)
        else:
            if before is None:
                before = (None,) * len(table.before)
            row = (*prefix, *table.spec.plan.row(table.kept, values, seq, before))
        self._hand_out(table, encode_line(row, self._line_fmt), txn)

    def _hand_out(self, table: _Table, line: str, txn: _Open) -> None:
        self.last_change[table.folder] = (txn.final_lsn, txn.commit_ts)
        if txn.partition is None:  # "based on transaction commit dates"
            txn.partition = self.partitions.folder(pg.pg_timestamp(txn.commit_ts))
        if self.on_row is not None:
            self.on_row(table.folder, table.header, line, table.types, txn.partition)
        else:
            txn.rows.add(table.folder, table.header, line, 0, table.types, txn.partition)


def lob_truncated(qualified: str, max_kb: int, counts: dict[str, int],
                  warn: Callable[[str], None], fail: bool) -> Callable[[str, int], None]:
    """What happens when a LOB value is cut at LobMaxSize: a warning (the first time per
    column, then every 1000th), or, with FailTasksOnLobTruncation, an error."""
    def truncated(column: str, size: int) -> None:
        where = f"{qualified}.{column}"
        if fail:
            raise ChangeError(f"LOB value of {where} (length {size}) is larger than "
                              f"LobMaxSize {max_kb} KB and fail_tasks_on_lob_truncation "
                              "is set")
        counts[where] = n = counts.get(where, 0) + 1
        if n == 1 or n % 1000 == 0:
            warn(f"WARNING: LOB value of {where} (length {size}) truncated to "
                 f"LobMaxSize {max_kb} KB, like DMS's limited LOB mode ({n} so far)")
    return truncated


def _pick(values: Sequence[object], indexes: list[int]) -> tuple:
    return tuple(values[i] for i in indexes)


def one_table(schema: str, table: str, key: Sequence[str], fmt: CsvFormat | None = None,
              *, change_seq_column: str = "change_seq",
              known_shape: Shape | None = None, before_image: bool = False,
              lookup: Callable[[dict[str, str | None], list[str]],
                               dict[str, str | None] | None] | None = None,
              **options: object) -> ChangeBuilder:
    """A builder for one table with the default mappings' change_seq column (last), and
    their before image of the key after it when `before_image` is true."""
    mappings = TableMappings.parse(default_mappings(schema, table, change_seq_column,
                                                    before_image))
    spec = TableSpec(mappings.plan(schema, table), tuple(key), known_shape)
    wrapped: Lookup | None = None
    if lookup is not None:
        def wrapped(_plan: TablePlan, k: dict[str, str | None], cols: list[str]):
            return lookup(k, cols)
    return ChangeBuilder([spec], fmt, lookup=wrapped, **options)  # type: ignore[arg-type]
