"""Glue partitions on the local Glue API, spoken to by real boto3 (botocore's Glue model
validates every request and parses every response), and the GetPartitions Expression
evaluator against a plain-Python oracle."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import boto3
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from glue_local.partition_expr import ExpressionError, Predicate
from glue_local.server import running_server

KEYS = [{"Name": "year", "Type": "int"}, {"Name": "region", "Type": "string"},
        {"Name": "day", "Type": "date"}]


def part(year: int, region: str, day: str, root: str = "s3://b/t") -> dict:
    return {"Values": [str(year), region, day],
            "StorageDescriptor": {"Location": f"{root}/year={year}/region={region}/day={day}",
                                  "Columns": [{"Name": "v", "Type": "string"}]},
            "Parameters": {"n": str(year)}}


@pytest.fixture()
def glue(tmp_path: Path):
    with running_server(tmp_path / "state", env={}, quiet=True) as server:
        client = boto3.client("glue", endpoint_url=server.endpoint, region_name="us-east-1",
                              aws_access_key_id="x", aws_secret_access_key="y")
        client.create_database(DatabaseInput={"Name": "db"})
        client.create_table(DatabaseName="db", TableInput={
            "Name": "events", "PartitionKeys": KEYS,
            "StorageDescriptor": {"Location": "s3://b/t",
                                  "Columns": [{"Name": "v", "Type": "string"}]}})
        yield client, server


def values(partitions: list[dict]) -> list[list[str]]:
    return sorted(p["Values"] for p in partitions)


def test_create_get_update_delete_one_partition(glue) -> None:
    client, _ = glue
    client.create_partition(DatabaseName="db", TableName="events",
                            PartitionInput=part(2024, "eu", "2024-01-02"))
    got = client.get_partition(DatabaseName="db", TableName="events",
                               PartitionValues=["2024", "eu", "2024-01-02"])["Partition"]
    assert got["DatabaseName"] == "db" and got["TableName"] == "events"
    assert got["StorageDescriptor"]["Location"].endswith("day=2024-01-02")
    assert isinstance(got["CreationTime"], dt.datetime)  # a Timestamp botocore parsed
    with pytest.raises(client.exceptions.AlreadyExistsException):
        client.create_partition(DatabaseName="db", TableName="events",
                                PartitionInput=part(2024, "eu", "2024-01-02"))
    with pytest.raises(client.exceptions.InvalidInputException, match="number of partition"):
        client.create_partition(DatabaseName="db", TableName="events",
                                PartitionInput={"Values": ["2024"]})
    with pytest.raises(client.exceptions.EntityNotFoundException):
        client.create_partition(DatabaseName="db", TableName="nope",
                                PartitionInput=part(2024, "eu", "2024-01-02"))

    moved = part(2024, "eu", "2024-01-02", root="s3://b/moved")
    client.update_partition(DatabaseName="db", TableName="events",
                            PartitionValueList=["2024", "eu", "2024-01-02"], PartitionInput=moved)
    again = client.get_partition(DatabaseName="db", TableName="events",
                                 PartitionValues=["2024", "eu", "2024-01-02"])["Partition"]
    assert again["StorageDescriptor"]["Location"].startswith("s3://b/moved/")
    assert again["CreationTime"] == got["CreationTime"]
    with pytest.raises(client.exceptions.InvalidInputException, match="cannot change"):
        client.update_partition(DatabaseName="db", TableName="events",
                                PartitionValueList=["2024", "eu", "2024-01-02"],
                                PartitionInput=part(2025, "eu", "2024-01-02"))

    client.delete_partition(DatabaseName="db", TableName="events",
                            PartitionValues=["2024", "eu", "2024-01-02"])
    for call in (client.get_partition, client.delete_partition):
        with pytest.raises(client.exceptions.EntityNotFoundException):
            call(DatabaseName="db", TableName="events",
                 PartitionValues=["2024", "eu", "2024-01-02"])


def test_batch_calls_report_per_partition_errors(glue) -> None:
    client, _ = glue
    first = client.batch_create_partition(
        DatabaseName="db", TableName="events",
        PartitionInputList=[part(2023, "eu", "2023-05-01"), part(2024, "us", "2024-02-03")])
    assert first["Errors"] == []
    second = client.batch_create_partition(
        DatabaseName="db", TableName="events",
        PartitionInputList=[part(2023, "eu", "2023-05-01"), part(2025, "us", "2025-01-01"),
                            {"Values": ["1"]}])
    codes = [(e["PartitionValues"], e["ErrorDetail"]["ErrorCode"]) for e in second["Errors"]]
    assert codes == [(["2023", "eu", "2023-05-01"], "AlreadyExistsException"),
                     (["1"], "InvalidInputException")]
    with pytest.raises(client.exceptions.InvalidInputException, match="at most 100"):
        client.batch_create_partition(
            DatabaseName="db", TableName="events",
            PartitionInputList=[part(1900 + i, "x", "2000-01-01") for i in range(101)])

    gone = client.batch_delete_partition(
        DatabaseName="db", TableName="events",
        PartitionsToDelete=[{"Values": ["2023", "eu", "2023-05-01"]},
                            {"Values": ["1999", "no", "1999-01-01"]}])
    assert [(e["PartitionValues"], e["ErrorDetail"]["ErrorCode"]) for e in gone["Errors"]] == [
        (["1999", "no", "1999-01-01"], "EntityNotFoundException")]
    left = client.get_partitions(DatabaseName="db", TableName="events")["Partitions"]
    assert values(left) == [["2024", "us", "2024-02-03"], ["2025", "us", "2025-01-01"]]


def test_get_partitions_filters_pages_segments_and_survives_restart(glue, tmp_path) -> None:
    client, _ = glue
    regions = ["eu", "us", "ap"]
    client.batch_create_partition(DatabaseName="db", TableName="events", PartitionInputList=[
        part(2020 + i % 6, regions[i % 3], f"202{i % 6}-0{1 + i % 9}-1{i % 10}")
        for i in range(30)])

    def get(expr: str, **kw) -> list[list[str]]:
        paginator = client.get_paginator("get_partitions")
        return values([p for page in paginator.paginate(
            DatabaseName="db", TableName="events", Expression=expr, **kw)
            for p in page["Partitions"]])

    everything = get("")
    assert len(everything) == 30
    assert get("year > 2023") == [v for v in everything if int(v[0]) > 2023]
    assert get("year >= '2024' AND region IN ('eu', 'ap')") == [
        v for v in everything if int(v[0]) >= 2024 and v[1] in ("eu", "ap")]
    assert get("day BETWEEN '2021-01-01' AND '2022-12-31' OR region LIKE 'u%'") == [
        v for v in everything if "2021-01-01" <= v[2] <= "2022-12-31" or v[1] == "us"]
    assert get("NOT (region = 'eu')", PaginationConfig={"PageSize": 4}) == [
        v for v in everything if v[1] != "eu"]
    segments = [get("", Segment={"SegmentNumber": n, "TotalSegments": 3}) for n in range(3)]
    assert sorted(v for s in segments for v in s) == everything  # disjoint, complete
    slim = client.get_partitions(DatabaseName="db", TableName="events", MaxResults=2,
                                 ExcludeColumnSchema=True)
    assert len(slim["Partitions"]) == 2 and "NextToken" in slim
    assert "Columns" not in slim["Partitions"][0]["StorageDescriptor"]
    with pytest.raises(client.exceptions.InvalidInputException, match="not a partition key"):
        client.get_partitions(DatabaseName="db", TableName="events", Expression="v = 'a'")
    with pytest.raises(client.exceptions.InvalidInputException, match="Expression"):
        client.get_partitions(DatabaseName="db", TableName="events", Expression="year >")

    # persisted: a new server over the same state dir sees them; DeleteTable drops them
    with running_server(tmp_path / "state", env={}, quiet=True) as server:
        other = boto3.client("glue", endpoint_url=server.endpoint, region_name="us-east-1",
                             aws_access_key_id="x", aws_secret_access_key="y")
        assert len(other.get_partitions(DatabaseName="db", TableName="events")["Partitions"]) == 30
    client.delete_table(DatabaseName="db", Name="events")
    client.create_table(DatabaseName="db", TableInput={"Name": "events", "PartitionKeys": KEYS})
    assert client.get_partitions(DatabaseName="db", TableName="events")["Partitions"] == []


# --- the evaluator against a plain-Python oracle -------------------------------------

TYPES = {"y": "int", "r": "string", "d": "date"}
ROWS = st.tuples(st.integers(1990, 2030), st.sampled_from(["a", "b", "ab", "b'c", ""]),
                 st.dates(dt.date(2000, 1, 1), dt.date(2030, 12, 31)))
OPS = {"=": lambda a, b: a == b, "<>": lambda a, b: a != b, "<": lambda a, b: a < b,
       ">": lambda a, b: a > b, "<=": lambda a, b: a <= b, ">=": lambda a, b: a >= b}


def _lit(key: str, value) -> tuple[str, object]:
    """(SQL text, Python value) of a literal for key."""
    if key == "y":
        return (str(value) if value % 2 else f"'{value}'"), value  # number or quoted number
    if key == "d":
        return f"'{value.isoformat()}'", value
    return "'" + value.replace("'", "''") + "'", value


@st.composite
def conditions(draw, depth: int = 0):
    """(expression text, oracle on (y, r, d)) over keys y int, r string, d date."""
    kind = draw(st.sampled_from(["cmp", "in", "between", "like", "not", "and", "or"]
                                if depth < 3 else ["cmp", "in", "between"]))
    index = {"y": 0, "r": 1, "d": 2}
    key = draw(st.sampled_from(["y", "r", "d"]))
    row_values = ROWS.map(lambda row, k=key: row[index[k]])
    if kind == "cmp":
        op = draw(st.sampled_from(sorted(OPS)))
        text, value = _lit(key, draw(row_values))
        return f"{key} {op} {text}", lambda row: OPS[op](row[index[key]], value)
    if kind == "in":
        items = [_lit(key, v) for v in draw(st.lists(row_values, min_size=1, max_size=3))]
        text = ", ".join(t for t, _ in items)
        return f"{key} IN ({text})", lambda row: row[index[key]] in [v for _, v in items]
    if kind == "between":
        (lo_text, lo), (hi_text, hi) = _lit(key, draw(row_values)), _lit(key, draw(row_values))
        return (f"{key} BETWEEN {lo_text} AND {hi_text}",
                lambda row: lo <= row[index[key]] <= hi)
    if kind == "like":
        prefix = draw(st.sampled_from(["", "a", "b"]))
        return f"r LIKE '{prefix}%'", lambda row: row[1].startswith(prefix)
    left_text, left = draw(conditions(depth + 1))
    if kind == "not":
        return f"NOT ({left_text})", lambda row: not left(row)
    right_text, right = draw(conditions(depth + 1))
    if kind == "and":
        return f"({left_text}) AND ({right_text})", lambda row: left(row) and right(row)
    return f"({left_text}) or ({right_text})", lambda row: left(row) or right(row)


@settings(max_examples=300, deadline=None)
@given(conditions(), st.lists(ROWS, min_size=1, max_size=8))
def test_expression_matches_the_oracle(condition, rows) -> None:
    text, oracle = condition
    predicate = Predicate(text, TYPES)
    for row in rows:
        stored = [str(row[0]), row[1], row[2].isoformat()]  # partitions hold strings
        assert predicate.matches(stored) == oracle(row), (text, row)


def test_expression_edge_cases() -> None:
    p = Predicate("y > 9 AND d = DATE '2024-01-02'", TYPES)
    assert p.matches(["10", "a", "2024-01-02"])  # int order, not string order ('10' < '9')
    assert not p.matches(["x", "a", "2024-01-02"])  # a value that is no int matches nothing
    assert Predicate("y IS NULL", TYPES).matches(["x", "a", "2024-01-02"])
    assert Predicate("`r` <> 'a' and r NOT IN ('b')", TYPES).matches(["1", "c", "2024-01-02"])
    for bad, message in [("y = ", "expected"), ("z = 1", "not a partition key"),
                         ("y = 1 1", "unexpected"), ("y ~ 1", "cannot parse")]:
        with pytest.raises(ExpressionError, match=message):
            Predicate(bad, TYPES)
    with pytest.raises(ExpressionError, match="not supported"):
        Predicate("f = 1", {"f": "double"})
