"""The watcher's reading of MinIO's notification records (S3's event format; on the
listen stream the key comes as stored, not URL-encoded), pure: the key as written,
whatever its characters ('+' and '%41' included); only created objects of the watched
bucket and prefix, and none of the names Glue's readers skip."""

from __future__ import annotations

from datetime import UTC, datetime

from hypothesis import given
from hypothesis import strategies as st

from lambda_shim.bucket_events import created_objects, event_time
from lambda_shim.object_gate import is_hidden

PREFIX = "dms/db/public/t/"


def record(key: str, name: str = "s3:ObjectCreated:Put", bucket: str = "bronze") -> dict:
    return {"eventName": name, "eventTime": "2026-11-29T16:53:10.683Z",
            "s3": {"bucket": {"name": bucket},
                   "object": {"key": key, "size": 42, "eTag": "abc"}}}


@given(st.text(min_size=1, max_size=60) | st.sampled_from(["+", "a b+c", "%41", "%2B+"]))
def test_a_created_key_reads_back_as_written(name: str) -> None:
    key = PREFIX + name
    got = created_objects({"Records": [record(key)]}, "bronze", PREFIX)
    assert [o.key for o in got] == ([] if is_hidden(key) else [key])
    for o in got:
        assert (o.bucket, o.size, o.etag) == ("bronze", 42, "abc")
        assert o.last_modified == datetime(2026, 11, 29, 16, 53, 10, 683000, tzinfo=UTC)


def test_other_events_buckets_and_prefixes_are_left_out() -> None:
    events = {"Records": [record(PREFIX + "a.csv", name="s3:ObjectRemoved:Delete"),
                          record(PREFIX + "b.csv", bucket="other"),
                          record("quarantine/c.csv"),
                          record(PREFIX + "_SUCCESS"),
                          record(PREFIX + "d.csv", name="s3:ObjectCreated:Copy")]}
    assert [o.key for o in created_objects(events, "bronze", PREFIX)] == [PREFIX + "d.csv"]
    assert created_objects({"Records": None}, "bronze", PREFIX) == []  # MinIO's ping


def test_an_unreadable_event_time_is_now() -> None:
    before = datetime.now(UTC)
    assert event_time("yesterday") >= before
