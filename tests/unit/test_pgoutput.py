"""pgoutput decoder: byte-for-byte encode -> decode round trips, malformed input, changes."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dms_emitter import pgoutput as pg
from dms_emitter.changes import ChangeBuilder, one_table
from dms_emitter.dms_csv import parse_dms_csv
from pipeline_contract.dms_format.values import text_of

# --- a tiny pure encoder, written from the protocol docs --------------------------------


def s(text: str) -> bytes:
    return text.encode() + b"\0"


def tup(values: tuple) -> bytes:
    out = struct.pack(">h", len(values))
    for v in values:
        if v is None:
            out += b"n"
        elif v is pg.UNCHANGED_TOAST:
            out += b"u"
        else:
            raw = v.encode()
            out += b"t" + struct.pack(">i", len(raw)) + raw
    return out


def encode(m: pg.PgOutputMessage) -> bytes:
    """The message's bytes; one with an xid as a streamed block has it (protocol 2)."""
    xid = getattr(m, "xid", None)
    if xid is not None and not isinstance(m, pg.Begin | pg.StreamStart | pg.StreamCommit
                                          | pg.StreamAbort):
        whole = _encode(m)
        return whole[:1] + struct.pack(">I", xid) + whole[1:]
    return _encode(m)


def _encode(m: pg.PgOutputMessage) -> bytes:
    if isinstance(m, pg.StreamStart):
        return b"S" + struct.pack(">IB", m.xid, int(m.first))
    if isinstance(m, pg.StreamStop):
        return b"E"
    if isinstance(m, pg.StreamCommit):
        return b"c" + struct.pack(">IBQQq", m.xid, m.flags, m.commit_lsn, m.end_lsn,
                                  m.commit_ts)
    if isinstance(m, pg.StreamAbort):
        return b"A" + struct.pack(">II", m.xid, m.subxid)
    if isinstance(m, pg.Begin):
        return b"B" + struct.pack(">QqI", m.final_lsn, m.commit_ts, m.xid)
    if isinstance(m, pg.Commit):
        return b"C" + struct.pack(">BQQq", m.flags, m.commit_lsn, m.end_lsn, m.commit_ts)
    if isinstance(m, pg.Origin):
        return b"O" + struct.pack(">Q", m.commit_lsn) + s(m.name)
    if isinstance(m, pg.Relation):
        out = b"R" + struct.pack(">I", m.oid) + s(m.namespace) + s(m.name)
        out += m.replica_identity.encode() + struct.pack(">h", len(m.columns))
        for c in m.columns:
            out += bytes([c.flags]) + s(c.name) + struct.pack(">Ii", c.type_oid, c.type_modifier)
        return out
    if isinstance(m, pg.Type):
        return b"Y" + struct.pack(">I", m.oid) + s(m.namespace) + s(m.name)
    if isinstance(m, pg.Insert):
        return b"I" + struct.pack(">I", m.relation_oid) + b"N" + tup(m.new)
    if isinstance(m, pg.Update):
        old = m.old_kind.encode() + tup(m.old) if m.old_kind else b""
        return b"U" + struct.pack(">I", m.relation_oid) + old + b"N" + tup(m.new)
    if isinstance(m, pg.Delete):
        return b"D" + struct.pack(">I", m.relation_oid) + m.old_kind.encode() + tup(m.old)
    if isinstance(m, pg.Truncate):
        return (b"T" + struct.pack(">IB", len(m.relation_oids), m.options)
                + b"".join(struct.pack(">I", o) for o in m.relation_oids))
    assert isinstance(m, pg.Message)
    return (b"M" + struct.pack(">BQ", m.flags, m.lsn) + s(m.prefix)
            + struct.pack(">I", len(m.content)) + m.content)


u64 = st.integers(0, 2**64 - 1)
u32 = st.integers(0, 2**32 - 1)
i64 = st.integers(-(2**63), 2**63 - 1)
name = st.text(st.characters(blacklist_categories=["Cs"], blacklist_characters="\0"), max_size=20)
value = st.one_of(st.none(), st.just(pg.UNCHANGED_TOAST),
                  st.text(st.characters(blacklist_categories=["Cs"]), max_size=30))
values = st.lists(value, max_size=8).map(tuple)
column = st.builds(pg.Column, st.integers(0, 1), name, u32, st.integers(-(2**31), 2**31 - 1))
messages = st.one_of(
    st.builds(pg.Begin, u64, i64, u32),
    st.builds(pg.Commit, st.integers(0, 255), u64, u64, i64),
    st.builds(pg.Origin, u64, name),
    st.builds(pg.Relation, u32, name, name, st.sampled_from("dnfi"),
              st.lists(column, max_size=6).map(tuple)),
    st.builds(pg.Type, u32, name, name),
    st.builds(pg.Insert, u32, values),
    st.builds(pg.Update, u32, st.none(), st.none(), values),
    values.flatmap(lambda old: st.builds(pg.Update, u32, st.sampled_from("KO"), st.just(old),
                                         values)),
    st.builds(pg.Delete, u32, st.sampled_from("KO"), values),
    st.builds(pg.Truncate, st.integers(0, 3), st.lists(u32, max_size=5).map(tuple)),
    st.builds(pg.Message, st.integers(0, 1), u64, name, st.binary(max_size=40)),
    st.builds(pg.StreamStart, u32, st.booleans()),
    st.just(pg.StreamStop()),
    st.builds(pg.StreamCommit, u32, st.just(0), u64, u64, i64),
    st.builds(pg.StreamAbort, u32, u32),
)
# inside a streamed block: the change messages with their (sub)transaction's xid
streamed_messages = st.one_of(
    st.builds(pg.Relation, u32, name, name, st.sampled_from("dnfi"),
              st.lists(column, max_size=6).map(tuple), u32),
    st.builds(pg.Type, u32, name, name, u32),
    st.builds(pg.Insert, u32, values, u32),
    values.flatmap(lambda old: st.builds(pg.Update, u32, st.sampled_from("KO"), st.just(old),
                                         values, u32)),
    st.builds(pg.Delete, u32, st.sampled_from("KO"), values, u32),
    st.builds(pg.Truncate, st.integers(0, 3), st.lists(u32, max_size=5).map(tuple), u32),
    st.builds(pg.Message, st.integers(0, 1), u64, name, st.binary(max_size=40), u32),
)


@given(messages)
def test_round_trip(msg: pg.PgOutputMessage) -> None:
    assert pg.decode(encode(msg)) == msg


@given(streamed_messages)
def test_round_trip_inside_a_streamed_block(msg: pg.PgOutputMessage) -> None:
    decoder = pg.Decoder()
    assert decoder.decode(encode(pg.StreamStart(9, True))) == pg.StreamStart(9, True)
    assert decoder.decode(encode(msg)) == msg
    assert decoder.decode(b"E") == pg.StreamStop()
    plain = pg.decode(_encode(msg))  # after the block: no xid is read
    assert decoder.decode(_encode(msg)) == plain and getattr(plain, "xid", None) is None


def test_streamed_blocks_must_pair() -> None:
    decoder = pg.Decoder()
    with pytest.raises(pg.DecodeError, match="Stream Stop outside a streamed block"):
        decoder.decode(b"E")
    decoder.decode(encode(pg.StreamStart(5, True)))
    with pytest.raises(pg.DecodeError, match="Stream Start of xid 6 inside"):
        decoder.decode(encode(pg.StreamStart(6, False)))


@given(messages, st.data())
def test_truncated_bytes_fail_clearly(msg: pg.PgOutputMessage, data: st.DataObject) -> None:
    raw = encode(msg)
    cut = data.draw(st.integers(1, len(raw) - 1)) if len(raw) > 1 else None
    if cut is None:
        return
    try:
        pg.decode(raw[:cut])
    except pg.DecodeError as exc:
        assert "byte offset" in str(exc) and "malformed" in str(exc)
    # some prefixes are themselves valid messages (e.g. a shorter tuple): that is fine


def test_error_names_type_and_offset() -> None:
    raw = encode(pg.Insert(16384, ("1", "x")))
    with pytest.raises(pg.DecodeError, match=r"Insert message at byte offset \d+"):
        pg.decode(raw[:-1])
    with pytest.raises(pg.DecodeError, match="unknown message type 'Z'"):
        pg.decode(b"Z123")
    with pytest.raises(pg.DecodeError, match="unknown tuple value kind 'x'"):
        pg.decode(b"I" + struct.pack(">I", 1) + b"N" + struct.pack(">h", 1) + b"x")
    with pytest.raises(pg.DecodeError, match="trailing bytes"):
        pg.decode(raw + b"!")


def test_copy_data_envelope_and_status() -> None:
    payload = encode(pg.Begin(5, 6, 7))
    x = pg.decode_copy_data(b"w" + struct.pack(">QQq", 1, 2, 3) + payload)
    assert x == pg.XLogData(1, 2, 3, payload)
    k = pg.decode_copy_data(b"k" + struct.pack(">QqB", 9, 10, 1))
    assert k == pg.Keepalive(9, 10, True)
    status = pg.standby_status(0x1234, 99)
    assert status[:1] == b"r" and struct.unpack(">QQQqB", status[1:]) == (0x1234,) * 3 + (99, 0)
    assert pg.parse_lsn(pg.format_lsn(0x1_0000_00AB)) == 0x1_0000_00AB


# --- pgoutput messages -> DMS rows -------------------------------------------------------
REL = pg.Relation(7, "public", "hosts_demo", "f", tuple(
    pg.Column(1, c, 25, -1) for c in ("id", "url", "name", "since", "location",
                                      "response_time", "response_rate")))
ROW = ("1", "u", "A, \"B\"", "2020-01-01", "Paris, France", "", None)


def builder() -> ChangeBuilder:
    b = one_table("public", "hosts_demo", ["id"])
    b.feed(REL)
    return b


def rows_of(b: ChangeBuilder, *msgs: pg.PgOutputMessage) -> list[dict]:
    b.feed(pg.Begin(500, 0, 1))
    for m in msgs:
        assert b.feed(m) is None
    txn = b.feed(pg.Commit(0, 500, 520, 0))
    assert txn is not None and txn.end_lsn == 520
    header = ("Op,last_updated_ts,id,url,name,since,location,response_time,response_rate,"
              "change_seq\n")
    return parse_dms_csv(header + "".join(txn.lines))


def test_changes_in_one_transaction_keep_order_and_values() -> None:
    new = ("1", "u", "A, \"B\"", "2020-01-01", "Lyon, France", "", None)
    rows = rows_of(builder(), pg.Insert(7, ROW), pg.Update(7, "O", ROW, new),
                   pg.Delete(7, "O", new), pg.Insert(99, ("x",)))
    assert [r["Op"] for r in rows] == ["I", "U", "D"]
    # '' and NULL: both an empty field, as DMS writes them (quote_empty_strings false)
    assert rows[1]["location"] == "Lyon, France" and rows[1]["response_time"] is None
    assert rows[1]["response_rate"] is None
    assert [r["change_seq"] for r in rows] == sorted(r["change_seq"] for r in rows)
    assert rows[0]["last_updated_ts"] == "2000-01-01 00:00:00.000000"


def test_unchanged_toast_is_filled_from_old_tuple_or_looked_up_by_key() -> None:
    new = (*ROW[:2], pg.UNCHANGED_TOAST, *ROW[3:])
    assert rows_of(builder(), pg.Update(7, "O", ROW, new))[0]["name"] == ROW[2]
    asked: list[tuple[dict, list]] = []

    def lookup(key: dict, cols: list) -> dict | None:
        asked.append((key, cols))
        return {"name": "now"}
    b = one_table("public", "hosts_demo", ["id"], lookup=lookup)
    b.feed(REL)
    assert rows_of(b, pg.Update(7, None, None, new))[0]["name"] == "now"
    assert asked == [({"id": "1"}, ["name"])]
    warned: list[str] = []
    gone = one_table("public", "hosts_demo", ["id"], lookup=lambda k, c: None,
                         warn=warned.append)
    gone.feed(REL)
    assert rows_of(gone, pg.Update(7, None, None, new))[0]["name"] is None
    assert "gone from the source" in warned[0]
    as_null = one_table("public", "hosts_demo", ["id"], unchanged_toast="null",
                            lookup=lookup)
    as_null.feed(REL)
    assert rows_of(as_null, pg.Update(7, None, None, new))[0]["name"] is None
    assert len(asked) == 1


def test_key_change_is_one_update_like_dms_or_delete_then_insert() -> None:
    new = ("2", *ROW[1:])
    rows = rows_of(builder(), pg.Update(7, "O", ROW, new))
    assert [(r["Op"], r["id"]) for r in rows] == [("U", "2")]
    b = one_table("public", "hosts_demo", ["id"], pk_update="delete-insert")
    b.feed(REL)
    rows = rows_of(b, pg.Update(7, "O", ROW, new))
    assert [(r["Op"], r["id"]) for r in rows] == [("D", "1"), ("I", "2")]


def test_a_big_text_value_stays_encoded_until_the_builder_cuts_it() -> None:
    big = "x" * (pg.BIG_VALUE + 10)
    wire = encode(pg.Insert(7, ("1", big, "a", None, None, None, None)))
    msg = pg.decode(pg.decode_copy_data(b"w" + struct.pack(">QQq", 1, 2, 3) + wire).payload)
    assert isinstance(msg, pg.Insert) and isinstance(msg.new[1], memoryview)
    assert text_of(msg.new[1], 5) == "xxxxx" and text_of(msg.new[1]) == big
    rows = rows_of(builder(), msg)
    assert rows[0]["url"] == "x" * (32 * 1024)  # text is a LOB: cut at LobMaxSize
