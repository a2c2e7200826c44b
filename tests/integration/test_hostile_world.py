"""The pipeline under hostile objects, as an attacker or a careless user makes them: odd
and long names, names from the future, hidden names, gzip bombs, truncated gzip, a huge
record, random bytes, DMS-looking files with broken records, objects that vanish right
after they land. Hypothesis draws each wave; after it, while a live workload runs, data
keeps flowing: the pipeline drains, silver equals the source, and nothing is lost (every
object is where it was, or in the quarantine with its reason).

Bounded for CI (CDCLAB_HOSTILE_EXAMPLES waves, 3 by default); the pure parts (the gate, the
watcher's logic) have their own property tests with many more examples.
"""

from __future__ import annotations

import gzip
import json
import os
import random
import zlib
from functools import cache

import psycopg
import pytest
from botocore.exceptions import ClientError
from hypothesis import HealthCheck, given, reject, settings
from hypothesis import strategies as st

from cdclab.drain import current_wal_lsn, wait_for_drain
from cdclab.reconcile import reconcile
from cdclab.sample_data import seed
from cdclab.workload import run_workload
from lambda_shim.object_gate import REASON_SUFFIX
from pipeline_contract import settings as cdclab_settings
from pipeline_contract.settings import load_pipeline

pytestmark = [pytest.mark.integration, pytest.mark.slow]

EXAMPLES = int(os.environ.get("CDCLAB_HOSTILE_EXAMPLES", "3"))
SEED = int(os.environ.get("CDCLAB_TEST_SEED", random.randrange(1_000_000)))
HEADER = b"Op,last_updated_ts,id,url,name,since,location,response_time,response_rate,change_seq\n"


@cache
def gzip_bomb() -> bytes:
    """~255 KB that inflates to 256 MiB of one byte."""
    z = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    chunk = b"\0" * (1 << 20)
    return b"".join(z.compress(chunk) for _ in range(256)) + z.flush()


@cache
def huge_record_truncated() -> bytes:
    """The finding's object: a .csv.gz whose first record is 70 MiB, cut short."""
    whole = gzip.compress(HEADER + b"I,2026-11-25 00:00:00,1,\"" + b"x" * (70 << 20) + b"\"\n",
                          compresslevel=9)
    return whole[: len(whole) * 2 // 3]


def broken_records(rows: int) -> bytes:
    """A DMS-looking file whose every record the job must quarantine (no silver row)."""
    lines = [b"Z,2026-11-25 00:00:00,not-a-number,u,n,,x,,," + b"1" * 35] * rows
    return HEADER + b"\n".join(lines) + b"\n"


BODIES = st.one_of(
    st.binary(max_size=3000),
    st.just(b""),
    st.just(HEADER),
    st.integers(1, 50).map(broken_records),
    st.integers(1, 50).map(lambda n: gzip.compress(broken_records(n))[:-7]),
    st.binary(min_size=1, max_size=200).map(lambda b: HEADER + b"I,\xff\xfe," + b + b"\n"),
    st.just("bomb"), st.just("huge"),
)
SEGMENT = st.text(st.characters(codec="utf-8", exclude_characters="/\x00"), min_size=1,
                  max_size=250)
BASENAMES = st.one_of(
    st.sampled_from(["20991231-235959999.csv", "20261122-990000000.csv",
                     "LOAD99999999.csv", "_hidden.csv", ".dot.csv", "x.txt", "y.parquet",
                     "z.csv.gz", "a[1]{b,c}.csv", "sp ace.csv"]),
    SEGMENT.map(lambda s: s + ".csv"),
)


@st.composite
def hostile_objects(draw) -> list[tuple[str, object, bool]]:
    """(key below the table's folder, body or a cached kind, vanishes at once)."""
    out = []
    for _ in range(draw(st.integers(1, 3))):
        folders = draw(st.lists(SEGMENT, max_size=3))
        key = "/".join([*folders, draw(BASENAMES)])
        out.append((key, draw(BODIES), draw(st.booleans()) and draw(st.booleans())))
    return out


def body_of(kind: object) -> bytes:
    return {"bomb": gzip_bomb, "huge": huge_record_truncated}[kind]() \
        if isinstance(kind, str) else kind


@pytest.fixture(scope="module")
def flowing(stack):
    with psycopg.connect(stack.env[cdclab_settings.ENV_PG_DSN]) as conn:
        seed(conn, load_pipeline(), 300, seed=SEED)
    stack.start_pipeline()
    return stack


def drain_and_reconcile(env: dict[str, str]) -> None:
    target = current_wal_lsn(env[cdclab_settings.ENV_PG_DSN])
    wait_for_drain(env, load_pipeline(), target, timeout=420)
    result = reconcile(env, load_pipeline())
    assert result.equal, f"seed {SEED}: {result.to_json()}"


def quarantined_keys(s3, bucket: str, prefix: str) -> set[str]:
    keys = set()
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket,
                                                             Prefix=prefix + "/"):
        for o in page.get("Contents", []):
            if o["Key"].endswith(REASON_SUFFIX):
                reason = json.loads(s3.get_object(Bucket=bucket, Key=o["Key"])["Body"].read())
                keys.add(reason["key"])
    return keys


def test_hostile_objects_never_stop_the_pipeline_nor_lose_anything(flowing):
    from cdclab.services.minio import s3_client

    env = flowing.env
    p = cdclab_settings.load_pipeline()
    s3 = s3_client(env)
    bucket, folder = p.lake.bronze_bucket, p.bronze_prefix
    wave = [0]

    @settings(max_examples=EXAMPLES, deadline=None, database=None, derandomize=False,
              suppress_health_check=list(HealthCheck))
    @given(hostile_objects())
    def wave_of(objects):
        wave[0] += 1
        landed = []
        for key, kind, vanishes in objects:
            full = f"{folder}/{key}"
            if len(full.encode()) > 1024:
                reject()  # S3 refuses such a key itself
            try:
                s3.put_object(Bucket=bucket, Key=full, Body=body_of(kind))
            except ClientError:
                continue  # a name MinIO refuses (as S3 would some): nothing landed
            if vanishes:
                s3.delete_object(Bucket=bucket, Key=full)
            else:
                landed.append(full)
        run_workload(env[cdclab_settings.ENV_PG_DSN], load_pipeline(), transactions=40, rate=40,
                     seed=SEED + wave[0])
        drain_and_reconcile(env)
        moved = quarantined_keys(s3, bucket, p.lake.quarantine_prefix)
        for full in landed:  # nothing lost: where it was, or set aside with its reason
            try:
                s3.head_object(Bucket=bucket, Key=full)
            except ClientError:
                assert full in moved, f"seed {SEED}: {full!r} is gone and not in quarantine"

    print(f"workload seed {SEED}")
    wave_of()
