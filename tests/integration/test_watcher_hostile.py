"""The watcher process and the real Lambda handler on a real MinIO, fed what an attacker
writes under the DMS folder with the emitter's keys: a 1016-byte `.txt` key, a gzip bomb,
a truncated `.csv.gz` whose first record is huge, an object deleted after it was listed,
a name from the future. The other objects get their run and nothing is lost."""

from __future__ import annotations

import json
import random
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from cdclab.services.base import StackContext
from glue_local.launcher import GlueApiService
from lambda_shim.launcher import WatcherService
from pipeline_contract import settings
from pipeline_contract.settings import load_pipeline
from tests.integration.test_watcher import JOB, glue_with_job, read_state, runs, wait_for
from tests.resources.launch import launch

pytestmark = pytest.mark.integration

MiB = 1024 * 1024
HEADER = b"Op,id\n"


@pytest.fixture()
def glue_api(empty_bronze, tmp_path: Path):
    """The local Glue API (no Spark) beside the test's MinIO (as in test_watcher)."""
    ctx = StackContext(pipeline=load_pipeline(), state_dir=tmp_path / "state",
                       env=dict(empty_bronze["env"]))
    running = launch(GlueApiService(warm=False), ctx, mounts=(tmp_path,))
    try:
        yield ctx
    finally:
        running.stop()


@dataclass
class Lab:
    """What each test here drives: the Glue API with the echo job, the bronze folder on
    MinIO, and a watcher it starts when its objects are in place."""
    glue: Any
    ctx: StackContext
    s3: Any
    bucket: str
    prefix: str
    job: str
    quarantine_prefix: str
    tmp_path: Path
    watcher: Any = None

    def start_watcher(self, full_scan_seconds: float) -> None:
        assert self.watcher is None, "one watcher per test: the fixture stops it"
        self.watcher = launch(WatcherService(interval=0.2, full_scan_seconds=full_scan_seconds),
                              self.ctx, mounts=(self.tmp_path,))

    def put(self, key: str, body: bytes) -> datetime:
        self.s3.put_object(Bucket=self.bucket, Key=key, Body=body)
        return datetime.now(UTC)

    def covered_after(self, at: datetime) -> bool:
        """A run started at or after `at` is going or has succeeded."""
        return any(r["StartedOn"] >= at and r["JobRunState"] in ("RUNNING", "SUCCEEDED")
                   for r in runs(self.glue, self.job))


@pytest.fixture()
def lab(empty_bronze, glue_api, tmp_path: Path) -> Iterator[Lab]:
    p = settings.load_pipeline()
    job = p.glue_job.name
    glue = glue_with_job(glue_api, job, tmp_path / "job.py", JOB)
    lab = Lab(glue=glue, ctx=glue_api, s3=empty_bronze["s3"], bucket=p.lake.bronze_bucket,
              prefix=p.bronze_prefix, job=job,
              quarantine_prefix=p.lake.quarantine_prefix + "/", tmp_path=tmp_path)
    try:
        yield lab
    finally:
        if lab.watcher is not None:
            lab.watcher.stop()


def now_name(offset: float = 0.0, suffix: str = ".csv") -> str:
    at = datetime.now(UTC) + timedelta(seconds=offset)
    return f"{at:%Y%m%d-%H%M%S}{at.microsecond // 1000:03d}{suffix}"


def sparse(total: int, every: int = 360, seed: int = 22) -> list[bytes]:
    """Mostly one letter: ~120:1 under gzip -6, so 557 KB inflate to 66 MiB."""
    rnd, out = random.Random(seed), []
    for _ in range(0, total, MiB):
        block = bytearray(b"x" * MiB)
        for i in range(0, MiB, every):
            block[i] = rnd.randrange(97, 123)
        out.append(bytes(block))
    return out


def deflate(*parts: bytes, level: int = 9) -> bytes:
    c = zlib.compressobj(level, zlib.DEFLATED, 31)
    return b"".join(c.compress(p) for p in parts) + c.flush()


def reasons(s3, bucket: str, prefix: str) -> dict[str, dict]:
    """The quarantine's reason files, by the original key."""
    out = {}
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        for o in page.get("Contents", []):
            if o["Key"].endswith(".reason.json"):
                r = json.loads(s3.get_object(Bucket=bucket, Key=o["Key"])["Body"].read())
                if "key" in r:  # another test's hand-made reason may have none
                    out[r["key"]] = r
    return out


def test_a_long_key_a_bomb_and_a_huge_record_are_set_aside_and_the_rest_runs(lab: Lab) -> None:
    folder = lab.prefix + "/" + "/".join(["f" * 250] * 3) + "/"
    long_txt = folder + "x" * (1016 - len(folder) - 4) + ".txt"
    bomb = f"{lab.prefix}/{now_name(-3, '.csv.gz')}"
    huge = f"{lab.prefix}/{now_name(-2, '.csv.gz')}"
    good = f"{lab.prefix}/{now_name(-1)}"
    body = {
        long_txt: b"hello\n",
        bomb: deflate(HEADER + b"I,1,", b"\0" * (256 * MiB)),  # ~255 KB -> 256 MB
        # the first record 70 MiB, cut at 557 KB (which inflate to 66 MiB)
        huge: deflate(HEADER + b"I,", *sparse(70 * MiB), level=6)[:557_000],
    }
    assert len(long_txt.encode()) == 1016 and len(body[bomb]) < 300_000
    for key, data in body.items():
        lab.put(key, data)
    landed = lab.put(good, HEADER + b"I,1\n")
    lab.start_watcher(full_scan_seconds=3)
    wait_for(lambda: lab.covered_after(landed), 60, "a run for the good object")
    found = wait_for(lambda: (r := reasons(lab.s3, lab.bucket, lab.quarantine_prefix))
                     and set(body) <= set(r) and r,
                     60, "the three objects quarantined with their reasons")
    assert "not a DMS file" in found[long_txt]["reason"]
    assert len(found[long_txt]["quarantined_key"].encode()) <= 1024 - len(".reason.json")
    assert "NUL" in found[bomb]["reason"] and found[bomb]["record"] == 2
    assert "field 2 is over" in found[huge]["reason"] and found[huge]["record"] == 2
    for key, data in body.items():  # nothing lost: every byte kept
        moved = found[key]["quarantined_key"]
        assert lab.s3.get_object(Bucket=lab.bucket, Key=moved)["Body"].read() == data
    left = {o["Key"] for o in lab.s3.list_objects_v2(Bucket=lab.bucket, Prefix=lab.prefix + "/")
            .get("Contents", [])}
    assert left == {good}
    wait_for(lambda: not read_state(lab.ctx)["pending"], 30, "nothing pending")
    assert not read_state(lab.ctx).get("parked")


def test_an_object_deleted_after_it_was_listed_is_forgotten(lab: Lab) -> None:
    lab.glue.start_job_run(JobName=lab.job, Arguments={"--sleep": "8"})  # holds the only slot
    lab.start_watcher(full_scan_seconds=3)
    kept, deleted = f"{lab.prefix}/{now_name(-1)}", f"{lab.prefix}/{now_name()}"
    landed = lab.put(kept, HEADER + b"I,1\n")
    lab.put(deleted, HEADER + b"I,2\n")
    # listed, announced, refused while the slot is held: both wait, pending
    wait_for(lambda: {kept, deleted} <= {o["key"] for o in read_state(lab.ctx)["pending"]}
             and read_state(lab.ctx).get("attempts", 0) >= 1, 20, "both objects pending")
    lab.s3.delete_object(Bucket=lab.bucket, Key=deleted)
    wait_for(lambda: lab.covered_after(landed), 60, "a run for the other object")
    wait_for(lambda: not read_state(lab.ctx)["pending"], 30, "nothing pending")
    state = read_state(lab.ctx)
    assert deleted not in state.get("parked", {}) and not state.get("failing")


def test_a_future_named_object_pins_no_cursor(lab: Lab) -> None:
    """With full listings two minutes apart, a new file after a stray future name (gone
    or not) is found by the next incremental listing."""
    future = f"{lab.prefix}/20991231-235959999.csv"
    lab.put(future, HEADER + b"I,1\n")
    landed = lab.put(f"{lab.prefix}/{now_name()}", HEADER + b"I,2\n")
    lab.start_watcher(full_scan_seconds=120)
    wait_for(lambda: lab.covered_after(landed), 60, "a run for both")
    wait_for(lambda: not read_state(lab.ctx)["pending"], 30, "nothing pending")
    assert future not in read_state(lab.ctx)["cursors"].values()
    wait_for(lambda: all(r["JobRunState"] == "SUCCEEDED" for r in runs(lab.glue, lab.job)), 30,
             "the run to end")
    lab.s3.delete_object(Bucket=lab.bucket, Key=future)
    later = lab.put(f"{lab.prefix}/{now_name()}", HEADER + b"I,3\n")
    wait_for(lambda: lab.covered_after(later), 20,
             "a run for the new file, well before the next full listing")


def test_a_key_sorting_before_the_cursor_is_announced_at_once(lab: Lab) -> None:
    """S3 notifies the Lambda of every new object, whatever its name. A key sorting before
    its table's cursor (a stray "20261122-..." name among the day's files) is not in the
    incremental listing, which starts after the cursor; MinIO's notification announces it
    at once, long before the next full listing (two minutes here), so the Lambda's gate
    sees it before any run reads it."""
    landed = lab.put(f"{lab.prefix}/{now_name()}", HEADER + b"I,1\n")
    lab.start_watcher(full_scan_seconds=120)
    wait_for(lambda: lab.covered_after(landed), 60, "a run for the first file")
    wait_for(lambda: read_state(lab.ctx)["cursors"] and not read_state(lab.ctx)["pending"], 30,
             "a cursor, nothing pending")
    wait_for(lambda: all(r["JobRunState"] == "SUCCEEDED" for r in runs(lab.glue, lab.job)), 30,
             "the run to end")
    stray = f"{lab.prefix}/20261122-000000001.csv"
    assert stray < min(read_state(lab.ctx)["cursors"].values())
    at = lab.put(stray, HEADER + b"I,2\n")
    wait_for(lambda: lab.covered_after(at), 20,
             "a run for the stray key, well before the next full listing")
