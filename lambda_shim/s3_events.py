"""S3 `ObjectCreated` event records exactly as S3 sends them to Lambda (pure, no I/O).

S3 URL-encodes the object key in notifications form-style: spaces become '+', a literal
'+' becomes '%2B', '/' stays. Handlers must decode with `unquote_plus` (a classic bug).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from urllib.parse import quote_plus, unquote_plus

EVENT_NAME_PUT = "ObjectCreated:Put"
CONFIGURATION_ID = "cdclab-bronze-object-created"
PRINCIPAL = "cdclab-local"


@dataclass(frozen=True)
class S3Object:
    """One object as a listing reports it."""

    bucket: str
    key: str
    size: int
    etag: str  # without the quotes S3 puts around it in listings
    last_modified: datetime


def encode_key(key: str) -> str:
    return quote_plus(key, safe="/")


def decode_key(encoded: str) -> str:
    return unquote_plus(encoded)


def event_time(ts: datetime) -> str:
    """S3's eventTime format: ISO-8601 UTC with milliseconds and a 'Z'."""
    ts = ts.astimezone(UTC) if ts.tzinfo else ts.replace(tzinfo=UTC)
    return ts.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ts.microsecond // 1000:03d}Z"


def sequencer(ts: datetime) -> str:
    """Hex value that grows with time for one key, like S3's `sequencer` (compare as hex)."""
    ns = int(ts.timestamp() * 1_000_000_000)
    return f"{ns:016X}"


def object_created_record(
    obj: S3Object, *, region: str, event_name: str = EVENT_NAME_PUT
) -> dict:
    request_id = hashlib.sha1(f"{obj.bucket}/{obj.key}/{obj.etag}".encode()).hexdigest()
    return {
        "eventVersion": "2.1",
        "eventSource": "aws:s3",
        "awsRegion": region,
        "eventTime": event_time(obj.last_modified),
        "eventName": event_name,
        "userIdentity": {"principalId": PRINCIPAL},
        "requestParameters": {"sourceIPAddress": "127.0.0.1"},
        "responseElements": {
            "x-amz-request-id": request_id[:16].upper(),
            "x-amz-id-2": request_id,
        },
        "s3": {
            "s3SchemaVersion": "1.0",
            "configurationId": CONFIGURATION_ID,
            "bucket": {
                "name": obj.bucket,
                "ownerIdentity": {"principalId": PRINCIPAL},
                "arn": f"arn:aws:s3:::{obj.bucket}",
            },
            "object": {
                "key": encode_key(obj.key),
                "size": obj.size,
                "eTag": obj.etag,
                "sequencer": sequencer(obj.last_modified),
            },
        },
    }


def s3_event(objects: Iterable[S3Object], *, region: str) -> dict:
    """The Lambda event: {"Records": [...]}."""
    return {"Records": [object_created_record(o, region=region) for o in objects]}


def parse_records(event: Mapping) -> list[tuple[str, str]]:
    """(bucket, decoded key) of each S3 record of a Lambda event."""
    out = []
    for i, rec in enumerate(event.get("Records", [])):
        try:
            out.append((rec["s3"]["bucket"]["name"], decode_key(rec["s3"]["object"]["key"])))
        except (KeyError, TypeError) as e:
            raise ValueError(f"event record {i} is not an S3 record: missing {e}") from e
    return out
