"""Which objects of a DMS target a replay copies, of which table, in which order."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cdclab.replay_files import ReplayError, classify, plan, target_key


def test_dms_names_full_load_cdc_and_date_folders() -> None:
    load = classify("dms/public/orders/LOAD00000001.csv", 10)
    assert (load.schema, load.table, load.kind, load.data_format) == (
        "public", "orders", "load", "csv")
    cdc = classify("dms/public/orders/2024/06/12/20240612-103125108.csv.gz", 5)
    assert (cdc.table, cdc.kind, cdc.below_table) == (
        "orders", "cdc", "2024/06/12/20240612-103125108.csv.gz")
    assert classify("public/t/LOAD0000000A.parquet", 1).data_format == "parquet"
    assert "not a DMS file" in classify("public/t/notes.txt", 1)
    assert "schema>/<table" in classify("LOAD00000001.csv", 1)
    # a table folder made of digits is a table, not a date, when nothing else is above
    assert classify("2024/06/20240612-103125108.csv", 1).table == "06"


def test_full_loads_first_then_changes_by_time_across_tables() -> None:
    listing = [("public/b/20240612-103127367.csv", 1), ("public/a/20240612-103125108.csv", 1),
               ("public/b/LOAD00000002.csv", 1), ("public/b/LOAD00000001.csv", 1),
               ("public/a/LOAD00000001.csv", 1), ("public/a/README", 1)]
    p = plan(listing)
    assert [f.key for f in p.files] == [
        "public/a/LOAD00000001.csv", "public/b/LOAD00000001.csv", "public/b/LOAD00000002.csv",
        "public/a/20240612-103125108.csv", "public/b/20240612-103127367.csv"]
    assert list(p.skipped) == ["public/a/README"]
    assert [f.key for f in plan(listing, ["public.a"]).files] == [
        "public/a/LOAD00000001.csv", "public/a/20240612-103125108.csv"]
    with pytest.raises(ReplayError, match="public.c"):
        plan(listing, ["public.c"])
    with pytest.raises(ReplayError, match="more than one format"):
        plan([("s/t/LOAD00000001.csv", 1), ("s/t/LOAD00000002.parquet", 1)])


names = st.from_regex(r"[a-z_]{1,8}", fullmatch=True)
stamps = st.from_regex(r"20\d{6}-\d{9}", fullmatch=True)


@given(st.lists(st.tuples(names, st.one_of(stamps, st.integers(1, 99).map(
    lambda n: f"LOAD{n:08d}"))), min_size=1, max_size=30, unique=True))
def test_every_table_s_load_precedes_its_changes_and_changes_keep_time_order(files) -> None:
    listing = [(f"s/{t}/{n}.csv", 1) for t, n in files]
    p = plan(listing)
    assert sorted(f.key for f in p.files) == sorted(k for k, _ in listing)
    seen_cdc: set[str] = set()
    last = ""
    for f in p.files:
        if f.kind == "load":
            assert f.table not in seen_cdc
        else:
            seen_cdc.add(f.table)
            assert f.order >= last
            last = f.order
        assert target_key("replay/x/", f) == f"replay/x/s/{f.table}/{f.below_table}"


def test_the_scratch_role_s_password_is_sent_as_its_scram_verifier() -> None:
    """The form PostgreSQL stores (RFC 7677): checked against an independent derivation."""
    import base64
    import hashlib
    import hmac

    from cdclab.replay import scram_verifier

    text = scram_verifier("pw-123")
    head, keys = text.rsplit("$", 1)
    algo, params = head.split("$", 1)
    iterations, salt = params.split(":")
    stored, server = (base64.b64decode(k) for k in keys.split(":"))
    salted = hashlib.pbkdf2_hmac("sha256", b"pw-123", base64.b64decode(salt), int(iterations))
    assert algo == "SCRAM-SHA-256" and "pw-123" not in text
    assert stored == hashlib.sha256(hmac.new(salted, b"Client Key", "sha256").digest()).digest()
    assert server == hmac.new(salted, b"Server Key", "sha256").digest()
