"""MinIO's bucket notifications as the watcher's S3 events, on the real MinIO with the
watcher's own user: each object created under the watched prefix is announced with its
exact key ('+' and '%' included: the stream sends keys as stored), size and ETag as the
listing reports them, whatever its name; names Glue's readers skip and keys outside the
prefix are not; a user without the grant cannot listen."""

from __future__ import annotations

import time
import uuid

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from minio.error import S3Error

from cdclab.services.minio import s3_client
from lambda_shim.bucket_events import BucketEventFeed
from lambda_shim.object_gate import is_hidden
from lambda_shim.watcher import list_objects
from pipeline_contract import minio_users
from pipeline_contract import settings as cdclab_settings

pytestmark = pytest.mark.integration


def feed_as(minio: dict, service: str, prefix: str) -> BucketEventFeed:
    keys = minio_users.service_keys(minio["env"], service)
    return BucketEventFeed(minio["endpoint"], keys[cdclab_settings.ENV_ACCESS_KEY],
                           keys[cdclab_settings.ENV_SECRET_KEY],
                           cdclab_settings.DEFAULT_REGION,
                           cdclab_settings.load_pipeline().lake.bronze_bucket, prefix)


@pytest.fixture(scope="module")
def watched(minio: dict):
    """A feed with the watcher's user on the watched prefix, connected."""
    p = cdclab_settings.load_pipeline()
    feed = feed_as(minio, "watcher", p.watched_prefix + "/").start()
    deadline = time.monotonic() + 20
    while not feed.connected:
        assert time.monotonic() < deadline, "no notification stream"
        time.sleep(0.05)
    time.sleep(0.3)  # MinIO registers the listener as the stream opens
    yield p, feed
    feed.stop()


def announced(feed: BucketEventFeed, keys: set[str], timeout: float = 10.0) -> dict:
    got: dict = {}
    deadline = time.monotonic() + timeout
    while not keys <= got.keys() and time.monotonic() < deadline:
        feed.arrived.wait(0.1)
        got.update({o.key: o for o in feed.take()})
    return got


# what a careless or hostile writer names an object: any printable text, folders too
NAME = st.text(st.characters(categories=("L", "N", "P", "S", "Zs")), min_size=1,
               max_size=30).filter(lambda n: all(part.strip(" .") for part in n.split("/")))


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@example(names=["+", "a b+c", "%41%2B", "x%"])  # S3 would encode these; MinIO's stream not
@given(names=st.lists(NAME, min_size=1, max_size=4, unique=True))
def test_every_created_object_is_announced_as_the_listing_shows_it(minio: dict, watched,
                                                                   names) -> None:
    p, feed = watched
    bucket = p.lake.bronze_bucket
    s3 = s3_client(minio["env"])
    folder = f"{p.bronze_prefix}/{uuid.uuid4().hex[:8]}"
    keys = {f"{folder}/{name}" for name in names}
    for key in keys:
        s3.put_object(Bucket=bucket, Key=key, Body=key.encode() * 3)
    visible = {k for k in keys if not is_hidden(k)}
    got = announced(feed, visible, timeout=10 if visible else 1)
    listed = {o.key: o for o in list_objects(s3, bucket, folder + "/", None)}
    assert got.keys() == visible  # exactly the readable ones, each as written
    for key in visible:
        assert (got[key].size, got[key].etag) == (listed[key].size, listed[key].etag)
        assert abs((got[key].last_modified - listed[key].last_modified).total_seconds()) < 2


def test_objects_outside_the_prefix_are_not_announced(minio: dict, watched) -> None:
    p, feed = watched
    s3 = s3_client(minio["env"])
    outside = f"{p.lake.quarantine_prefix}/{uuid.uuid4().hex}.csv"
    inside = f"{p.bronze_prefix}/{uuid.uuid4().hex}.csv"
    s3.put_object(Bucket=p.lake.bronze_bucket, Key=outside, Body=b"x")
    s3.put_object(Bucket=p.lake.bronze_bucket, Key=inside, Body=b"y")
    got = announced(feed, {inside})
    assert inside in got and outside not in got


def test_only_the_watcher_may_listen(minio: dict) -> None:
    p = cdclab_settings.load_pipeline()
    feed = feed_as(minio, "emitter", p.watched_prefix + "/")
    with pytest.raises(S3Error) as denied:
        next(iter(feed._client().listen_bucket_notification(
            p.lake.bronze_bucket, prefix=p.watched_prefix + "/",
            events=("s3:ObjectCreated:*",))))
    assert denied.value.code == "AccessDenied"
