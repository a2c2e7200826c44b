"""The watcher as it runs (listing, invoking the real Lambda handler, persisting), on
moto's in-process S3 and Glue: the hostile objects of the findings are handled and the
others get their runs, poll after poll."""

from __future__ import annotations

import gzip
import json
import time
import zlib
from datetime import UTC, datetime, timedelta
from pathlib import Path

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws

from lambda_shim import lambda_function, watcher
from lambda_shim import watch_logic as logic
from lambda_shim.bucket_events import BucketEventFeed
from lambda_shim.s3_events import S3Object
from lambda_shim.watcher import Watcher

BUCKET, JOB, PREFIX = "bronze", "Bronze_to_Silver", "dms/airbnb_db/public/hosts_demo"
HEADER = b"Op,id\n"


def cdc_key(at: datetime, suffix: str = ".csv") -> str:
    return f"{PREFIX}/{at:%Y%m%d-%H%M%S}{at.microsecond // 1000:03d}{suffix}"


@pytest.fixture()
def stack(monkeypatch, tmp_path: Path):
    for name, value in {"AWS_ACCESS_KEY_ID": "t", "AWS_SECRET_ACCESS_KEY": "t",
                        "AWS_DEFAULT_REGION": "us-east-1", "GLUE_JOB_NAME": JOB,
                        "QUARANTINE_PREFIX": "quarantine"}.items():
        monkeypatch.setenv(name, value)
    for name in ("GLUE_JOB_NAMES", "BACKLOG_MARKER_PREFIX"):
        monkeypatch.delenv(name, raising=False)
    with mock_aws():
        s3 = boto3.client("s3")
        s3.create_bucket(Bucket=BUCKET)
        boto3.client("glue").create_job(
            Name=JOB, Role="r", Command={"Name": "glueetl", "ScriptLocation": "s3://x/y.py"},
            ExecutionProperty={"MaxConcurrentRuns": 1000})
        calls: list[dict] = []

        def handler(event, context):
            out = lambda_function.lambda_handler(event, context)
            calls.append(out)
            return out

        w = Watcher(s3, BUCKET, PREFIX + "/", tmp_path / "state.json", handler,
                    region="us-east-1", full_scan_seconds=3600, deep_scan_seconds=3600)
        yield s3, w, calls


def keys_left(s3) -> set[str]:
    return {o["Key"] for o in s3.list_objects_v2(Bucket=BUCKET, Prefix=PREFIX + "/")
            .get("Contents", [])}


def test_the_findings_objects_are_handled_and_the_others_run(stack) -> None:
    s3, w, calls = stack
    now = datetime.now(UTC)
    good = cdc_key(now - timedelta(seconds=5))
    folder = PREFIX + "/" + "/".join(["f" * 250] * 3) + "/"
    long_txt = folder + "x" * (1016 - len(folder) - 4) + ".txt"
    future = f"{PREFIX}/20991231-235959999.csv"
    bomb = cdc_key(now - timedelta(seconds=4), ".csv.gz")
    s3.put_object(Bucket=BUCKET, Key=good, Body=HEADER + b"I,1\n")
    s3.put_object(Bucket=BUCKET, Key=long_txt, Body=b"hello\n")
    s3.put_object(Bucket=BUCKET, Key=future, Body=HEADER + b"I,2\n")
    c = zlib.compressobj(9, zlib.DEFLATED, 31)
    s3.put_object(Bucket=BUCKET, Key=bomb, Body=c.compress(
        HEADER + b"I," + b"0" * (64 * 1024 * 1024)) + c.flush())
    w.poll_once()
    assert not w.state.pending and calls[-1]["JobRunId"]
    assert {q["key"] for q in calls[-1]["Quarantined"]} == {long_txt, bomb}
    assert keys_left(s3) == {good, future}
    assert w.state.cursors[PREFIX] in (good, bomb)  # the future name does not move it

    # the future-named object goes; a new file is found by the next incremental listing
    s3.delete_object(Bucket=BUCKET, Key=future)
    later = cdc_key(datetime.now(UTC))
    s3.put_object(Bucket=BUCKET, Key=later, Body=HEADER + b"I,3\n")
    w.poll_once()
    assert not w.state.pending and calls[-1]["Keys"] == [later]
    assert json.loads(w.state_file.read_text())["cursors"] == {PREFIX: later}


def test_an_object_deleted_after_listing_is_forgotten(stack) -> None:
    s3, w, calls = stack
    a, b = cdc_key(datetime.now(UTC) - timedelta(seconds=2)), cdc_key(datetime.now(UTC))
    for key in (a, b):
        s3.put_object(Bucket=BUCKET, Key=key, Body=HEADER + b"I,1\n")
    real = w.handler

    def deletes_first(event, context):
        s3.delete_object(Bucket=BUCKET, Key=b)  # gone between the listing and the Lambda
        return real(event, context)

    w.handler = deletes_first
    w.poll_once()
    assert calls[-1]["Gone"] == [b] and calls[-1]["JobRunId"]
    assert not w.state.pending and [o.key for o in next(iter(w.state.in_flight.values()))] == [a]
    w.poll_once()
    assert len(calls) == 1  # not retried


def test_an_object_that_cannot_be_moved_is_parked_and_the_rest_flows(stack, monkeypatch):
    s3, w, calls = stack
    now = datetime.now(UTC)
    bad = cdc_key(now - timedelta(seconds=3), ".csv.gz")
    s3.put_object(Bucket=BUCKET, Key=bad, Body=b"not gzip")
    s3.put_object(Bucket=BUCKET, Key=cdc_key(now - timedelta(seconds=2)), Body=HEADER)
    real = lambda_function.quarantine

    def refuses(s3c, bucket, key, *args):
        if key == bad:
            raise ClientError({"Error": {"Code": "AccessDenied", "Message": "no"},
                               "ResponseMetadata": {"HTTPStatusCode": 403}}, "CopyObject")
        return real(s3c, bucket, key, *args)

    monkeypatch.setattr(lambda_function, "quarantine", refuses)
    w.poll_once()
    assert not calls and w.state.failing[bad]["failures"] == 1
    w.poll_once()  # the other object at once, without the bad one
    assert calls[-1]["JobRunId"] and set(w.state.pending) == {bad}
    for _ in range(40):
        if bad in w.state.parked:
            break
        time.sleep(0.2)
        w.poll_once()
    assert bad in w.state.parked and "AccessDenied" in w.state.parked[bad]["error"]
    assert not w.state.pending and bad in keys_left(s3)  # still there: parked, reported
    late = cdc_key(datetime.now(UTC))
    s3.put_object(Bucket=BUCKET, Key=late, Body=HEADER)
    w.poll_once()
    assert calls[-1]["Keys"] == [late]  # flowing on
    state = json.loads(w.state_file.read_text())
    assert state["parked"][bad]["failures"] == logic.MAX_OBJECT_FAILURES


def test_a_failed_read_keeps_the_event_pending(stack, monkeypatch) -> None:
    s3, w, calls = stack
    s3.put_object(Bucket=BUCKET, Key=cdc_key(datetime.now(UTC)), Body=gzip.compress(HEADER))

    def down(*_a, **_k):
        raise ClientError({"Error": {"Code": "ServiceUnavailable", "Message": "down"},
                           "ResponseMetadata": {"HTTPStatusCode": 503}}, "HeadObject")

    monkeypatch.setattr(lambda_function, "check_object", down)
    w.poll_once()
    assert w.state.pending and not w.state.failing and w.state.attempts == 1


def feed_by_hand(w: Watcher) -> BucketEventFeed:
    """The real feed, not started: the test announces objects as MinIO's stream would."""
    w.events = feed = BucketEventFeed("http://127.0.0.1:9", "k", "s", "us-east-1",
                                      BUCKET, PREFIX + "/")
    feed.connected, feed.streams = True, 1
    return feed


def stored(s3, key: str, body: bytes = HEADER + b"I,1\n") -> S3Object:
    """Put `key`; the object as MinIO's record of it describes it."""
    s3.put_object(Bucket=BUCKET, Key=key, Body=body)
    head = s3.head_object(Bucket=BUCKET, Key=key)
    return S3Object(BUCKET, key, head["ContentLength"], head["ETag"].strip('"'),
                    head["LastModified"])


def test_an_announced_object_outlives_a_failed_listing(stack, monkeypatch) -> None:
    """A key sorting before the cursor is only in MinIO's notification (the incremental
    listing starts after the cursor); a poll whose listing fails keeps it for the next,
    and a newer record of the key announced meanwhile wins."""
    s3, w, calls = stack
    first = cdc_key(datetime.now(UTC))
    s3.put_object(Bucket=BUCKET, Key=first, Body=HEADER + b"I,1\n")
    w.poll_once()
    assert w.state.cursors[PREFIX] == first
    feed = feed_by_hand(w)
    w.catch_up_seconds = 0.0  # every poll lists
    stray = f"{PREFIX}/20261122-000000001.csv"
    feed.announce([stored(s3, stray)])
    real = watcher.list_objects

    def down(*_a, **_k):
        raise ClientError({"Error": {"Code": "ServiceUnavailable", "Message": "down"},
                           "ResponseMetadata": {"HTTPStatusCode": 503}}, "ListObjectsV2")

    monkeypatch.setattr(watcher, "list_objects", down)
    w.poll_once()
    assert len(calls) == 1 and not feed.arrived.is_set()  # held, not re-announced
    newer = stored(s3, stray, HEADER + b"I,2\n")  # overwritten while S3 listings fail
    feed.announce([newer])
    w.poll_once()
    monkeypatch.setattr(watcher, "list_objects", real)
    w.poll_once()
    assert calls[-1]["Keys"] == [stray] and w.state.seen[stray] == newer.etag


def test_while_minio_announces_objects_the_listing_only_catches_up(stack, monkeypatch) -> None:
    """With the notification stream up, an announced object is handled without a listing;
    the listing comes every catch_up_seconds, at once when a stream (re)opened (objects
    stored while none was open) and on every poll while none is open."""
    s3, w, calls = stack
    feed = feed_by_hand(w)
    w.catch_up_seconds = 3600
    listings: list[str | None] = []
    real = watcher.list_objects

    def counted(s3c, bucket, prefix, after, stop):
        listings.append(after)
        return real(s3c, bucket, prefix, after, stop)

    monkeypatch.setattr(watcher, "list_objects", counted)
    w.poll_once()  # the first poll is a full listing
    assert listings
    listings.clear()
    w.poll_once()
    assert not listings
    announced = stored(s3, cdc_key(datetime.now(UTC)))
    feed.announce([announced])
    w.poll_once()
    assert not listings and calls[-1]["Keys"] == [announced.key]
    missed = stored(s3, cdc_key(datetime.now(UTC) + timedelta(seconds=1)))  # while down
    feed.streams = 2
    w.poll_once()
    assert listings and calls[-1]["Keys"] == [missed.key]
    listings.clear()
    w.poll_once()
    assert not listings
    feed.connected = False
    w.poll_once()
    w.poll_once()
    assert len(listings) >= 2
    feed.connected = True
    w.poll_once()  # listed while no stream was open: once more now one is
    listings.clear()
    w.poll_once()
    assert not listings
    w.catch_up_seconds = 0.0
    w.poll_once()
    assert listings


def test_a_record_the_stream_missed_is_found_by_the_next_catch_up_listing(stack) -> None:
    """MinIO misses a record (a slow listener's dropped event) and announces a later key:
    the announcement moves no cursor, so the catch-up listing still starts below the
    missed key and finds it, long before the next full listing."""
    s3, w, calls = stack
    feed = feed_by_hand(w)
    w.catch_up_seconds = 3600
    base = datetime.now(UTC)
    stored(s3, cdc_key(base))
    w.poll_once()  # the full listing: the cursor at the first key
    missed = stored(s3, cdc_key(base + timedelta(seconds=1)))
    later = stored(s3, cdc_key(base + timedelta(seconds=2)))
    feed.announce([later])
    w.poll_once()
    assert calls[-1]["Keys"] == [later.key] and w.state.cursors[PREFIX] < missed.key
    w.catch_up_seconds = 0.0
    w.poll_once()
    assert calls[-1]["Keys"] == [missed.key]
    assert w.state.cursors[PREFIX] == later.key  # the listing moves it past the announced
