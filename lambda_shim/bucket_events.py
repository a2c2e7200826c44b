"""MinIO's own bucket notifications as the watcher's S3 events: every object created
under the watched prefix is announced the moment MinIO stores it, whatever its name.

On AWS, S3 sends the Lambda an event for each new object within about a second, so an
object that sorts before the day's files (a stray "20261122-…" name) is gated as fast
as any other. The watcher's incremental listing only sees keys after each table's
cursor; such a key would wait for the next full listing (FULL_SCAN_SECONDS), and a run
started for another object meanwhile reads it ungated. MinIO's ListenBucketNotification
API (a MinIO extension; the `minio` client speaks it) closes that gap and saves the
listing interval on every file. The listings stay: they are what catches up after the
stream drops (MinIO restarting), as S3's own delivery has no replay either.

Records are S3's event format, but the key comes as stored: MinIO URL-encodes it only
for its configured notification targets, not on this stream (cmd/event-notification.go
publishes `ToEvent(false)` to its listeners), so a '+' or '%41' in a name is that name.
The watcher hands the Lambda S3's encoding (s3_events.encode_key), as on AWS.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from urllib.parse import urlsplit

from lambda_shim.object_gate import is_hidden
from lambda_shim.s3_events import S3Object

log = logging.getLogger("lambda_shim.bucket_events")

CREATED = "s3:ObjectCreated:*"
RECONNECT_SECONDS = (0.5, 10.0)  # first wait after a dropped stream, and the cap
READ_TIMEOUT_SECONDS = 60.0  # MinIO sends a blank keep-alive line while idle


def created_objects(event: Mapping, bucket: str, prefix: str) -> list[S3Object]:
    """The objects an event announces as created in `bucket` under `prefix` (others, and
    names Glue's readers skip, are left out as the listing leaves them)."""
    out = []
    for record in event.get("Records") or []:
        if not str(record.get("eventName", "")).startswith("s3:ObjectCreated:"):
            continue
        s3 = record.get("s3") or {}
        if (s3.get("bucket") or {}).get("name") != bucket:
            continue
        obj = s3.get("object") or {}
        key = str(obj.get("key", ""))  # as stored (see above), never decoded
        if not key.startswith(prefix) or is_hidden(key):
            continue
        out.append(S3Object(bucket, key, int(obj.get("size") or 0),
                            str(obj.get("eTag", "")).strip('"'),
                            event_time(str(record.get("eventTime", "")))))
    return out


def event_time(text: str) -> datetime:
    """S3's eventTime ("2026-11-29T16:53:10.683Z"); now when it cannot be read."""
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC)
    except ValueError:
        return datetime.now(UTC)


class BucketEventFeed:
    """A daemon thread on MinIO's notification stream; `take()` hands the watcher what
    arrived since it last asked, `arrived` wakes it. A dropped or refused stream is
    retried, backing off; the watcher's listings cover the gap. `connected`: a stream
    was asked for and has not failed since; `streams` counts them. minio-py sends the
    request at the first read and reopens a stream that ended cleanly on its own, so a
    record can be missed around either without `streams` moving: the watcher's catch-up
    listing finds such an object within its period."""

    def __init__(self, endpoint: str, access_key: str, secret_key: str, region: str,
                 bucket: str, prefix: str) -> None:
        self.bucket, self.prefix = bucket, prefix
        self._client_args = (endpoint, access_key, secret_key, region)
        self._objects: queue.SimpleQueue[S3Object] = queue.SimpleQueue()
        self.arrived = threading.Event()
        self.connected = False
        self.streams = 0  # streams opened so far: a new one may follow a gap
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="bucket-events", daemon=True)

    def start(self) -> BucketEventFeed:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()

    def take(self) -> list[S3Object]:
        self.arrived.clear()
        out = []
        while True:
            try:
                out.append(self._objects.get_nowait())
            except queue.Empty:
                return out

    def announce(self, objects: Iterable[S3Object]) -> None:
        """Objects the stream announced: queued for the next `take()`, which is woken."""
        objects = list(objects)
        for obj in objects:
            self._objects.put(obj)
        if objects:
            self.arrived.set()

    def _client(self):
        import urllib3

        from minio import Minio

        endpoint, access_key, secret_key, region = self._client_args
        url = urlsplit(endpoint)
        http = urllib3.PoolManager(timeout=urllib3.Timeout(connect=5.0,
                                                           read=READ_TIMEOUT_SECONDS),
                                   retries=False)
        return Minio(url.netloc, access_key=access_key, secret_key=secret_key,
                     secure=url.scheme == "https", region=region, http_client=http)

    def _run(self) -> None:
        wait, failures = RECONNECT_SECONDS[0], 0
        while not self._stop.is_set():
            try:
                with self._client().listen_bucket_notification(
                        self.bucket, prefix=self.prefix, events=(CREATED,)) as events:
                    self.streams += 1
                    self.connected = True
                    if failures:
                        log.info("bucket notifications of s3://%s/%s: connected again",
                                 self.bucket, self.prefix)
                    wait, failures = RECONNECT_SECONDS[0], 0
                    self._feed(events)
            except Exception as e:  # MinIO restarting, refused, timed out: try again
                failures += 1
                if failures == 1:
                    log.warning("bucket notifications of s3://%s/%s: %s: %s (the listing "
                                "goes on; reconnecting)", self.bucket, self.prefix,
                                type(e).__name__, e)
            self.connected = False
            self._stop.wait(wait)
            wait = min(wait * 2, RECONNECT_SECONDS[1])

    def _feed(self, events: Iterable[Mapping]) -> None:
        for event in events:
            if self._stop.is_set():
                return
            self.announce(created_objects(event, self.bucket, self.prefix))
