"""The object gate as an attacker meets it: every object gets a verdict, in bounded memory
and time, whatever its name, size or bytes. Huge inputs are produced lazily, a piece at
a time, so the peak measured is the gate's own (tracemalloc)."""

from __future__ import annotations

import csv
import io
import random
import struct
import tracemalloc
import zlib
from collections.abc import Callable, Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lambda_shim.object_gate import (
    REASON_SUFFIX,
    S3_MAX_KEY_BYTES,
    BytesSource,
    CsvLayout,
    Defect,
    Limits,
    content_defect,
    csv_defect,
    inspect,
    quarantine_key,
)

MiB = 1024 * 1024
GATE_PEAK_BYTES = 8 * MiB  # the gate's own memory, whatever it is given
KEY = "dms/airbnb_db/public/hosts/20261122-101500123.csv"


def peak(fn: Callable[[], object]) -> tuple[object, int]:
    tracemalloc.start()
    try:
        out = fn()
        return out, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def repeated(piece: bytes, total: int, head: bytes = b"", tail: bytes = b"") -> Iterator[bytes]:
    """`head`, then `piece` over and over up to `total` bytes, then `tail`: never whole."""
    yield head
    block = piece * max(1, MiB // max(1, len(piece)))
    sent = 0
    while sent < total:
        part = block[:total - sent]
        sent += len(part)
        yield part
    yield tail


def gzipped(chunks: Iterator[bytes], level: int = 9) -> Iterator[bytes]:
    c = zlib.compressobj(level, zlib.DEFLATED, 31)
    for chunk in chunks:
        if out := c.compress(chunk):
            yield out
    yield c.flush()


def truncated(chunks: Iterator[bytes], keep: int) -> Iterator[bytes]:
    for chunk in chunks:
        if keep <= 0:
            return
        yield chunk[:keep]
        keep -= len(chunk)


HEADER = b"Op,id,name\n"


# --- the findings, as reproduced -------------------------------------------------------
def sparse(total: int, every: int = 360, seed: int = 22) -> Iterator[bytes]:
    """Mostly one letter: ~120:1 under gzip -6, so 557 KB inflate to 66 MiB."""
    rnd = random.Random(seed)
    for _ in range(0, total, MiB):
        block = bytearray(b"x" * MiB)
        for i in range(0, MiB, every):
            block[i] = rnd.randrange(97, 123)
        yield bytes(block)


def test_a_truncated_gzip_whose_first_record_is_70_mib_is_refused_in_little_memory() -> None:
    """The finding: 557 KB that inflate past the old gate's 64 MiB "too large to check"."""
    body = iter([HEADER + b"I,1,", *sparse(70 * MiB)])
    verdict, used = peak(lambda: inspect(KEY + ".gz", truncated(gzipped(body, 6), 557_000)))
    assert isinstance(verdict, Defect) and verdict.record == 2 and verdict.line == 2
    assert "field 3 is over 1048576 characters" in verdict.reason
    assert used < GATE_PEAK_BYTES


@pytest.mark.parametrize(("fill", "words"), [
    (b"\0", "NUL"),  # gzip -9 of zeros: 255 KB for 256 MB
    (b"a", "field 3 is over"),
    (b"a,", "more than 20480 fields"),
    (b'"a\n', "not CSV"),  # quoted lines that close wrongly
])
def test_a_gzip_bomb_is_refused_at_once_in_little_memory(fill, words) -> None:
    bomb = b"".join(gzipped(repeated(fill, 256 * MiB, HEADER + b"I,1,")))
    assert len(bomb) < 1.5 * MiB
    verdict, used = peak(lambda: inspect(KEY + ".gz", BytesSource(bomb)))
    assert isinstance(verdict, Defect) and words in verdict.reason, verdict
    assert used < GATE_PEAK_BYTES


def test_a_bomb_of_good_records_stops_at_the_size_limit() -> None:
    limits = Limits(max_object_bytes=8 * MiB)
    bomb = gzipped(repeated(b"I,1,a\n", 64 * MiB, HEADER))
    verdict, used = peak(lambda: inspect(KEY + ".gz", bomb, limits=limits))
    assert "decompresses to more than 8388608 bytes" in verdict.reason
    assert used < GATE_PEAK_BYTES
    plain = BytesSource(b"x" * (8 * MiB + 1))
    assert "more than" in inspect(KEY, plain, limits=limits).reason  # refused by size


@pytest.mark.parametrize(("body", "words"), [
    # very many small fields in one record
    (repeated(b"a,", 64 * MiB, HEADER + b"I,"), "more than 20480 fields"),
    # one quoted field over very many lines
    (repeated(b"a\n", 64 * MiB, HEADER + b'I,1,"'), "field 3 is over"),
    # one record over very many quoted fields: the record limit
    (repeated(b'"' + b"y" * 1000 + b'",', 64 * MiB, HEADER + b"I,"), "the record is over"),
    # many records, each too wide
    (repeated(b"I,1,a,b\n", 64 * MiB, HEADER), "4 fields where the header has 3"),
])
def test_records_that_would_cost_memory_are_refused_in_little(body, words) -> None:
    verdict, used = peak(lambda: inspect(KEY, body))
    assert isinstance(verdict, Defect) and words in verdict.reason, verdict
    assert used < GATE_PEAK_BYTES


def test_the_record_limit_holds_for_records_of_many_fields_under_the_field_limit() -> None:
    limits = Limits(max_field_chars=100, max_record_chars=1000, max_columns=10**6)
    body = HEADER.replace(b"\n", b"," + b",".join(b"c%d" % i for i in range(200)) + b"\n")
    body += b",".join([b"x" * 50] * 203) + b"\n"
    verdict = inspect(KEY, [body], limits=limits)
    assert "the record is over 1000 characters" in verdict.reason and verdict.record == 2


@pytest.mark.parametrize("quoted", [False, True])
def test_a_long_line_after_good_ones_is_named_by_its_record(quoted) -> None:
    limits = Limits(max_field_chars=10, max_record_chars=100)
    good = b'I,"a,b",c\n' if quoted else b"I,ab,c\n"
    body = HEADER + good * 5 + b"I," + b"x" * 20 + b",c\n" + good
    verdict = inspect(KEY, [body], limits=limits)
    assert "field 2 is over 10 characters" in verdict.reason
    assert (verdict.record, verdict.line) == (7, 7)
    assert inspect(KEY, [HEADER + good * 50], limits=limits) is None


# --- against Python's csv module: same records, same verdicts --------------------------
def reference(text: str) -> tuple[str, int] | None:
    """What the gate did before (csv.reader, strict): None, or (kind, record)."""
    width, record = None, 0
    try:
        for row in csv.reader(io.StringIO(text, newline=""), strict=True):
            record += 1
            n = len(row) or 1
            if width is None:
                width = n
            elif n != width:
                return "fields", record
    except csv.Error:
        return "csv", record + 1
    return None


@settings(max_examples=400, deadline=None)
@given(text=st.text(st.sampled_from(['a', ',', '"', "\n"]), max_size=60),
       cuts=st.lists(st.integers(0, 60), max_size=4))
def test_the_scan_counts_records_as_the_csv_module_does(text, cuts) -> None:
    data = text.encode()
    points = sorted({0, len(data), *(c % (len(data) + 1) for c in cuts)})
    chunks = [data[a:b] for a, b in zip(points, points[1:], strict=False)]
    got = csv_defect(chunks, CsvLayout(header=False))
    want = reference(text)
    assert (got is None) == (want is None), (got, want)
    if want is not None and want[0] == "fields":
        assert got.record == want[1] and "fields where record 1 has" in got.reason


@settings(max_examples=150, deadline=None)
@given(rows=st.lists(st.lists(st.text(st.sampled_from('ab,"\n'), max_size=6), min_size=3,
                              max_size=3), max_size=40),
       gz=st.booleans(), cuts=st.lists(st.integers(0, 10**4), max_size=6))
def test_quoted_records_pass_through_every_path_however_cut(rows, gz, cuts) -> None:
    """Records on one line go through the block count, the others through the walk; both
    agree with the writer."""
    out = io.StringIO(newline="")
    csv.writer(out, lineterminator="\n").writerows([["Op", "id", "name"], *rows])
    data = out.getvalue().encode()
    if gz:
        data = b"".join(gzipped(iter([data])))
    points = sorted({0, len(data), *(c % (len(data) + 1) for c in cuts)})
    chunks = [data[a:b] for a, b in zip(points, points[1:], strict=False)]
    assert inspect(KEY + (".gz" if gz else ""), chunks) is None


# --- whatever arrives: a verdict, never an exception --------------------------------------
keys = st.one_of(
    st.text(max_size=40).map(lambda s: "dms/t/" + s),
    st.sampled_from(["a.csv", "a.csv.gz", "a.parquet"]).map(lambda s: "dms/t/" + s),
)
small = Limits(max_field_chars=64, max_record_chars=256, max_columns=16,
               max_object_bytes=4096, max_parquet_footer_bytes=512,
               max_row_group_rows=100, max_parquet_read_bytes=4096)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(key=keys, data=st.binary(max_size=600), gz=st.booleans(), cut=st.integers(0, 700),
       header=st.booleans(), quoting=st.booleans(), delimiter=st.sampled_from([",", "|", "\t"]),
       tight=st.booleans())
def test_any_bytes_under_any_name_get_a_verdict(key, data, gz, cut, header, quoting, delimiter,
                                                tight) -> None:
    if gz:
        data = b"".join(gzipped(iter([data])))[:cut or None]
    layout = CsvLayout(header=header, delimiter=delimiter, quoting=quoting)
    verdict = inspect(key, [data[:7], data[7:]], layout, small if tight else Limits())
    assert verdict is None or isinstance(verdict, Defect)
    if verdict is not None:
        assert verdict.reason and not verdict.reason.startswith("the gate could not check")


@settings(max_examples=20, deadline=None)  # half of them over the 8 MiB bound, traced
@given(size=st.integers(1, 16), fill=st.sampled_from([b"x", b"\0", b"a,", b'"', b"\n", b"\xff",
                                                     b"\xe2\x82", b'"a"",']),
       gz=st.booleans(), cut=st.one_of(st.none(), st.integers(1, 10**6)))
def test_large_hostile_objects_stay_in_bounded_memory(size, fill, gz, cut) -> None:
    def run() -> object:
        body = repeated(fill, size * MiB, HEADER)
        if gz:
            body = gzipped(body, 1)
            if cut:
                body = truncated(body, cut)
        return inspect(KEY + (".gz" if gz else ""), body)

    verdict, used = peak(run)
    assert verdict is None or isinstance(verdict, Defect)
    assert used < GATE_PEAK_BYTES


def test_a_failed_read_is_not_a_verdict() -> None:
    """S3 went away mid-object: the caller sees the error (and retries or forgets)."""
    class Gone(Exception):
        pass

    def chunks() -> Iterator[bytes]:
        yield HEADER
        raise Gone("NoSuchKey")

    with pytest.raises(Gone):
        content_defect(KEY, chunks())
    with pytest.raises(Gone):
        content_defect("dms/t/a.parquet", chunks())


# --- Parquet whose metadata lies ----------------------------------------------------------
def varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def zz(n: int) -> bytes:
    return varint((n << 1) ^ (n >> 63))


I32, I64, BINARY, LIST, STRUCT = 5, 6, 8, 9, 12


def tstruct(*fields: tuple[int, int, bytes]) -> bytes:
    out, last = b"", 0
    for fid, kind, payload in fields:
        out += bytes([(fid - last) << 4 | kind]) + payload
        last = fid
    return out + b"\0"


def tlist(kind: int, items: list[bytes], declared: int | None = None) -> bytes:
    n = len(items) if declared is None else declared
    head = bytes([n << 4 | kind]) if n < 15 else bytes([0xF0 | kind]) + varint(n)
    return head + b"".join(items)


def parquet_with(footer: bytes, data: bytes = b"\0" * 64) -> bytes:
    return b"PAR1" + data + footer + struct.pack("<I", len(footer)) + b"PAR1"


def footer(rows: int = 10, chunk_size: int = 32, uncompressed: int = 32, values: int = 10,
           offset: int = 4, groups: int = 1, declared_groups: int | None = None) -> bytes:
    schema = tlist(STRUCT, [tstruct((4, BINARY, varint(1) + b"r"), (5, I32, zz(1))),
                            tstruct((1, I32, zz(1)), (4, BINARY, varint(1) + b"a"))])
    meta = tstruct((1, I32, zz(1)), (2, LIST, tlist(I32, [zz(0)])),
                   (3, LIST, tlist(BINARY, [varint(1) + b"a"])), (4, I32, zz(0)),
                   (5, I64, zz(values)), (6, I64, zz(uncompressed)), (7, I64, zz(chunk_size)),
                   (9, I64, zz(offset)))
    group = tstruct((1, LIST, tlist(STRUCT, [tstruct((2, I64, zz(offset)), (3, STRUCT, meta))])),
                    (2, I64, zz(uncompressed)), (3, I64, zz(rows)))
    return tstruct((1, I32, zz(1)), (2, LIST, schema), (3, I64, zz(rows)),
                   (4, LIST, tlist(STRUCT, [group] * groups, declared_groups)))


@pytest.mark.parametrize(("kwargs", "words"), [
    ({"rows": 2**40, "values": 2**40}, "declares 1099511627776 rows"),
    ({"uncompressed": 2**50}, "decompresses to more than"),
    ({"chunk_size": 2**40}, "does not fit"),
    ({"offset": 2}, "negative or missing"),
    ({"declared_groups": 2**30}, "a container of 1073741824 elements"),
    ({"groups": 3, "declared_groups": 40}, "row group 3 has no column chunks"),
])
def test_a_parquet_footer_that_lies_is_refused_before_anything_is_read(kwargs, words) -> None:
    data = parquet_with(footer(**kwargs))
    verdict, used = peak(lambda: inspect("dms/t/a.parquet", BytesSource(data)))
    assert isinstance(verdict, Defect) and words in verdict.reason, verdict
    assert used < GATE_PEAK_BYTES


def test_a_parquet_footer_too_large_or_too_deep_is_refused() -> None:
    big = parquet_with(b"\0" * (9 * MiB))
    assert "9437184-byte Parquet footer" in inspect("dms/t/a.parquet", BytesSource(big)).reason
    deep = b"\x1c" * 200 + b"\0" * 200  # struct in struct in struct...
    assert "nested too deeply" in inspect("dms/t/a.parquet",
                                          BytesSource(parquet_with(deep))).reason


def page_header(uncompressed: int, compressed: int, values: int = 10) -> bytes:
    return tstruct((1, I32, zz(0)), (2, I32, zz(uncompressed)), (3, I32, zz(compressed)),
                   (5, STRUCT, tstruct((1, I32, zz(values)))))


@pytest.mark.parametrize(("body", "words"), [
    (page_header(2**30, 8) + b"\0" * 8, "a page of 1073741824 bytes in a chunk of"),
    (page_header(16, 2**20), "passes the chunk's end"),
    (page_header(16, 4, values=11) + b"\0" * 4, "11 values in a row group of 10 rows"),
    (page_header(-1, 4) + b"\0" * 4, "negative size"),
    (b"\x15" * 40, "page header that does not end"),
    ((page_header(0, 0, values=0)) * 20, "more pages than its 10 values"),
])
def test_a_page_header_that_lies_is_refused_before_the_page_is_read(body, words) -> None:
    data = parquet_with(footer(chunk_size=len(body), uncompressed=4096), body)
    verdict = inspect("dms/t/a.parquet", BytesSource(data))
    assert isinstance(verdict, Defect) and words in verdict.reason, verdict


def real_parquet() -> bytes:
    from dms_emitter.parquet_file import write_file
    from pipeline_contract.dms_format import parquet_types as pt
    out = io.BytesIO()
    write_file(out, ["Op", "id", "name"],
               [pt.STRING_COLUMN, pt.ColumnType(pt.INT32), pt.STRING_COLUMN],
               [["I", str(i), f"n{i}"] for i in range(300)],
               pt.ParquetOptions(row_group_length=100, gzip=True))
    return out.getvalue()


REAL = real_parquet()


@settings(max_examples=300, deadline=None)
@given(at=st.integers(0, len(REAL) - 1), value=st.integers(0, 255),
       more=st.lists(st.tuples(st.integers(0, len(REAL) - 1), st.integers(0, 255)),
                     max_size=3))
def test_a_parquet_file_with_any_bytes_changed_gets_a_verdict(at, value, more) -> None:
    data = bytearray(REAL)
    for i, v in [(at, value), *more]:
        data[i] = v
    verdict = inspect("dms/t/2026/11/22/20261122-101500123.parquet", BytesSource(bytes(data)))
    assert verdict is None or isinstance(verdict, Defect)
    if verdict is not None:
        assert not verdict.reason.startswith("the gate could not check"), verdict


def test_the_real_parquet_passes_and_the_page_budget_is_enforced() -> None:
    assert inspect("dms/t/a.parquet", BytesSource(REAL)) is None
    verdict = inspect("dms/t/a.parquet", BytesSource(REAL),
                      limits=Limits(max_parquet_read_bytes=100))
    assert "largest pages add up to more than 100 bytes" in verdict.reason
    verdict = inspect("dms/t/a.parquet", BytesSource(REAL), limits=Limits(max_row_group_rows=50))
    assert "declares 100 rows" in verdict.reason


# --- quarantine names ---------------------------------------------------------------------
key_text = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=1200)


@settings(max_examples=300, deadline=None)
@given(key=key_text, prefix=st.sampled_from(["quarantine", "q/", "/x/y/z/"]),
       like_a_reason=st.booleans())
def test_a_quarantine_name_always_fits_s3_with_its_reason(key, prefix, like_a_reason) -> None:
    key = key + REASON_SUFFIX if like_a_reason else key
    target = quarantine_key(prefix, key)
    assert len((target + REASON_SUFFIX).encode()) <= S3_MAX_KEY_BYTES
    assert target == quarantine_key(prefix, key)  # retries land on one name
    assert target.startswith(prefix.strip("/") + "/")
    assert not target.endswith(REASON_SUFFIX)  # never read as another object's reason
    if (len(f"{prefix.strip('/')}/{key}{REASON_SUFFIX}~".encode()) <= S3_MAX_KEY_BYTES
            and not key.endswith(REASON_SUFFIX)):  # drawn text may end with it too
        assert target == f"{prefix.strip('/')}/{key}"


def test_the_1016_byte_key_gets_a_bounded_distinct_name() -> None:
    folder = "dms/airbnb_db/public/hosts_demo/" + "/".join(["f" * 250] * 3) + "/"
    a = folder + "x" * (1016 - len(folder) - 4) + ".txt"
    b = a[:-5] + "y.txt"
    assert len(a.encode()) == 1016
    ta, tb = quarantine_key("quarantine", a), quarantine_key("quarantine", b)
    assert ta != tb and ta.endswith(".txt") and len((ta + REASON_SUFFIX).encode()) <= 1024

