"""The job script's pure parts: RFC 4180 parsing, validation, per-record quarantine."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "jobs" / "bronze_to_silver.py"
_spec = importlib.util.spec_from_file_location("bronze_to_silver", SCRIPT)
job = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(job)

HEADER = "Op,last_updated_ts,id,url,name,since,location,response_time,response_rate,change_seq\n"
SEQ = "0" * 20 + "0" * 14 + "1"
GOOD = (
    f'I,2026-11-22 10:15:00.123456,1,http://x,"Anna, ""A""",2020-01-02,"Paris, France",,"",{SEQ}\n'
)


def records(text: str) -> list:
    return list(job.parse_csv(text))


def test_null_is_unquoted_empty_and_empty_string_is_quoted() -> None:
    [(_, _, fields, error, _)] = records('a,,"",\n')
    assert error is None
    assert fields == ["a", None, "", None]


def test_quoted_fields_hold_commas_quotes_and_newlines() -> None:
    text = 'x,"multi\nline, ""q""",y\r\nnext,row,3\n'
    recs = records(text)
    assert recs[0][2] == ["x", 'multi\nline, "q"', "y"]
    assert (recs[1][0], recs[1][1], recs[1][2]) == (2, 3, ["next", "row", "3"])


def test_unterminated_quote_and_stray_quote_are_errors() -> None:
    recs = records('ok,1\nbad"x,2\nfine,3\n"open,4\n')
    assert [r[3] for r in recs] == [None, "unexpected quote", None, "unterminated quoted field"]
    assert recs[2][2] == ["fine", "3"]
    assert recs[1][4] == 'bad"x,2'


def test_parse_file_skips_header_and_maps_columns() -> None:
    [row] = list(job.parse_file("s3://b/f.csv", (HEADER + GOOD).encode()))
    assert row[:5] == ("s3://b/f.csv", 2, 2, None, None)
    values = dict(zip(job.BRONZE_COLUMNS, row[5:], strict=True))
    assert values["name"] == 'Anna, "A"'
    assert values["response_time"] is None and values["response_rate"] == ""
    assert values["change_seq"] == SEQ


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        (GOOD.replace("I,", "X,", 1), "bad Op"),
        (GOOD.replace(",1,", ",one,", 1), "id is not an INT"),
        (GOOD.replace(",1,", ",99999999999,", 1), "id is not an INT"),
        (GOOD.replace(SEQ, "123"), "change_seq is not 35 digits"),
        (GOOD.replace(SEQ, ""), "change_seq is not 35 digits"),
        (GOOD.replace("2026-11-22 10:15:00.123456", "yesterday"), "unparseable last_updated_ts"),
        (GOOD.replace("2020-01-02", "2020-02-30"), "unparseable since"),
        (GOOD.replace(f",{SEQ}", ""), "9 columns, header has 10"),
    ],
)
def test_malformed_rows_are_quarantined_with_a_reason(line: str, reason: str) -> None:
    rows = list(job.parse_file("f.csv", (HEADER + GOOD + line + GOOD).encode()))
    assert [r[3] is None for r in rows] == [True, False, True]
    assert rows[1][1] == 3 and reason in rows[1][3]
    assert rows[1][4] == line.rstrip("\n")


def test_full_load_rows_without_change_seq_come_first_cdc_rows_without_it_are_bad() -> None:
    """AWS DMS leaves $AR_H_CHANGE_SEQ empty on full-load rows (LOAD files)."""
    no_seq = GOOD.replace(f",{SEQ}\n", ",\n")
    body = (HEADER + no_seq + no_seq.replace(",1,", ",2,", 1)).encode()
    rows = list(job.parse_file("s3://b/dms/LOAD00000001.csv", body))
    seqs = [dict(zip(job.BRONZE_COLUMNS, r[5:], strict=True))["change_seq"] for r in rows]
    assert [r[3] for r in rows] == [None, None]  # valid
    assert seqs == ["0" * 20 + f"{2:015d}", "0" * 20 + f"{3:015d}"]  # by record number
    [cdc] = list(job.parse_file("s3://b/dms/20261122-101500123.csv", (HEADER + no_seq).encode()))
    assert "change_seq is not 35 digits" in cdc[3]


def test_bad_header_quarantines_every_row() -> None:
    rows = list(job.parse_file("f.csv", ("Op,id\n" + GOOD).encode()))
    assert len(rows) == 1 and rows[0][3].startswith("bad header")


def test_not_utf8_is_one_quarantine_row() -> None:
    [row] = list(job.parse_file("f.csv", b"\xff\xfe"))
    assert "not UTF-8" in row[3]


def test_percentiles_nearest_rank() -> None:
    p = job.percentiles([float(i) for i in range(1, 101)])
    assert (p["count"], p["p50"], p["p95"], p["max"]) == (100, 50.0, 95.0, 100.0)
    assert job.percentiles([])["count"] == 0


def columns_of(ddl: str) -> list[tuple[str, str]]:
    body = ddl.split("(", 1)[1].split(")\nUSING", 1)[0]
    body = "\n".join(line.split("--")[0] for line in body.splitlines())
    return [tuple(col.split()[:2]) for col in body.split(",") if col.strip()]


@pytest.mark.parametrize(
    ("embedded", "sql_file"),
    [("SILVER_DDL", "hosts_silver.sql"), ("TOMBSTONE_DDL", "hosts_silver_tombstones.sql"),
     ("QUARANTINE_DDL", "hosts_quarantine.sql")],
)
def test_embedded_ddl_matches_the_documentation_copy(embedded: str, sql_file: str) -> None:
    doc = (SCRIPT.parent / "ddl" / sql_file).read_text()
    doc = doc[doc.index("CREATE TABLE"):]
    assert columns_of(getattr(job, embedded)) == columns_of(doc)
    assert ("merge-on-read" in getattr(job, embedded)) == ("merge-on-read" in doc)
