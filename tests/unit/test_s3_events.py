"""S3 ObjectCreated event records: shape as S3 sends them, key encoding round trip."""

from __future__ import annotations

from datetime import UTC, datetime

from hypothesis import given
from hypothesis import strategies as st

from lambda_shim import lambda_function
from lambda_shim.s3_events import (
    S3Object,
    decode_key,
    encode_key,
    object_created_record,
    parse_records,
    s3_event,
)

WHEN = datetime(2026, 11, 22, 10, 15, 0, 123456, tzinfo=UTC)


def obj(key: str) -> S3Object:
    return S3Object("cdclab-bronze", key, 42, "9b2cf535f27731c974343645a3985328", WHEN)


def test_record_has_the_shape_s3_sends():
    rec = object_created_record(obj("dms/airbnb_db/public/hosts_demo/LOAD00000001.csv"),
                                region="eu-west-1")
    assert rec["eventVersion"] == "2.1"
    assert rec["eventSource"] == "aws:s3"
    assert rec["awsRegion"] == "eu-west-1"
    assert rec["eventName"] == "ObjectCreated:Put"
    assert rec["eventTime"] == "2026-11-22T10:15:00.123Z"
    assert rec["s3"]["s3SchemaVersion"] == "1.0"
    assert rec["s3"]["bucket"] == {"name": "cdclab-bronze", "arn": "arn:aws:s3:::cdclab-bronze",
                                   "ownerIdentity": {"principalId": "cdclab-local"}}
    o = rec["s3"]["object"]
    assert o["key"] == "dms/airbnb_db/public/hosts_demo/LOAD00000001.csv"
    assert o["size"] == 42 and o["eTag"] == "9b2cf535f27731c974343645a3985328"
    assert int(o["sequencer"], 16) > 0


def test_key_encoding_matches_s3():
    assert encode_key("dir/my file+v2.csv") == "dir/my+file%2Bv2.csv"
    assert encode_key("a=b/ü.csv") == "a%3Db/%C3%BC.csv"


def test_sequencer_grows_with_time():
    later = S3Object("b", "k", 1, "e", WHEN.replace(second=1))
    a = object_created_record(obj("k"), region="r")["s3"]["object"]["sequencer"]
    b = object_created_record(later, region="r")["s3"]["object"]["sequencer"]
    assert int(b, 16) > int(a, 16)


keys = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=80)


@given(keys)
def test_any_key_round_trips_through_the_encoding(key):
    assert decode_key(encode_key(key)) == key


@given(st.lists(keys, min_size=1, max_size=5))
def test_event_parses_back_and_handler_decodes_the_same(key_list):
    event = s3_event([obj(k) for k in key_list], region="us-east-1")
    assert parse_records(event) == [("cdclab-bronze", k) for k in key_list]
    assert lambda_function.object_keys(event) == key_list
    for rec in event["Records"]:
        assert " " not in rec["s3"]["object"]["key"]


def test_parse_rejects_non_s3_records():
    try:
        parse_records({"Records": [{"eventSource": "aws:sqs"}]})
    except ValueError as e:
        assert "record 0" in str(e)
    else:
        raise AssertionError("expected ValueError")
