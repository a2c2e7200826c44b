"""DMS's flaw and its fix on the real stack (the shipped job, local Glue API, MinIO,
Iceberg REST): a primary-key UPDATE is one U row with the new key. Without the
add-before-image-columns rule the old key stays in silver (reconcile names it an orphan);
with it (BI_id, as the lab's default mappings write it) the job deletes the old key and
silver equals the source, whatever order the files come in and however often replayed."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta
from pathlib import Path

import boto3
import pytest

from cdclab.merge_model import Change, apply_batch, apply_in_order
from cdclab.reconcile import compare, expected_silver
from cdclab.services.base import StackContext
from cdclab.services.glue_api import register_job
from cdclab.tables_sync import publish
from glue_local.launcher import GlueApiService
from pipeline_contract import settings
from pipeline_contract.settings import load_pipeline
from tests.integration.test_job import HEADER, Tables, ch, field, run_job
from tests.resources.launch import launch
from tests.resources.specs import hosts_spec

pytestmark = [pytest.mark.integration, pytest.mark.job_semantics]


# commit times of yesterday: the job's upkeep prunes tombstones older than
# [maintenance] tombstone_retention_days, and these must stay for the checks
BASE = datetime.now(UTC).replace(tzinfo=None, microsecond=123456) - timedelta(days=1)


def change(op: str, id_: int, lsn: int, pos: int, name: str | None = None) -> Change:
    return dataclasses.replace(ch(op, id_, lsn, pos, name),
                               last_updated_ts=BASE + timedelta(seconds=lsn))


def moved(old: int, new: int, lsn: int, pos: int, name: str) -> Change:
    """DMS's row of `UPDATE … SET id = new WHERE id = old`: the after image, and the old
    key in the before-image column."""
    return dataclasses.replace(change("U", new, lsn, pos, name), before_id=old)


FULL_LOAD = [change("I", i, 0, i, f"host {i}") for i in (1, 2, 3, 4)]
CDC_1 = [  # lsn 100
    change("U", 1, 100, 1, "host 1 v2"),  # the key unchanged: the before image is empty
    moved(2, 20, 100, 2, "host 2"), change("I", 5, 100, 3, "host 5"),
]
CDC_2 = [  # lsn 200, delivered BEFORE CDC_1: a chain 20 -> 21 -> 22, and 2 taken again
    moved(20, 21, 200, 1, "host 2"), moved(21, 22, 200, 2, "host 2"),
    moved(3, 30, 200, 3, "host 3"), change("I", 2, 200, 4, "a new host 2"),
]
CDC_3 = [change("D", 30, 300, 1), moved(4, 40, 300, 2, "host 4")]  # lsn 300
SOURCE_KEYS = {1, 2, 5, 22, 40}  # what PostgreSQL holds after all of it


def bronze(changes: list[Change], before_image: bool) -> str:
    """A DMS CSV file as the emitter writes it: with the rule, BI_id last (empty on
    I, D and full-load rows and on a U that kept its key)."""
    lines = [HEADER + (",BI_id" if before_image else "")]
    for c in changes:
        values = [c.op, c.last_updated_ts, c.id, c.url, c.name,
                  c.since.isoformat() if c.since else None, c.location, c.response_time,
                  c.response_rate, c.change_seq]
        lines.append(",".join(field(v) for v in values)
                     + (f",{c.before_id or ''}" if before_image else ""))
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("before_image", [False, True], ids=["dms-flaw", "before-image"])
def test_a_primary_key_update_leaves_the_old_key_unless_the_before_image_is_read(
        iceberg_rest: dict, fresh_lake, tmp_path: Path, before_image: bool) -> None:
    p = settings.load_pipeline()
    env = dict(iceberg_rest["env"])
    ctx = StackContext(pipeline=load_pipeline(), state_dir=tmp_path / "state", env=dict(env))
    glue_service = launch(GlueApiService(warm=False), ctx, mounts=(tmp_path,))
    # what DMS writes: without the rule no U carries its old key
    seen = [c if before_image else dataclasses.replace(c, before_id=None)
            for c in FULL_LOAD + CDC_1 + CDC_2 + CDC_3]
    load, cdc_1, cdc_2, cdc_3 = (seen[:4], seen[4:7], seen[7:11], seen[11:])
    try:
        endpoint = ctx.env[settings.ENV_GLUE_ENDPOINT]
        keys = {"aws_access_key_id": env[settings.ENV_ACCESS_KEY],
                "aws_secret_access_key": env[settings.ENV_SECRET_KEY],
                "region_name": settings.DEFAULT_REGION}
        glue = boto3.client("glue", endpoint_url=endpoint, **keys)
        s3 = boto3.client("s3", endpoint_url=env[settings.ENV_S3_ENDPOINT], **keys)
        spec = hosts_spec(p, before_image=before_image)
        assert [c["name"] for c in spec["bronze_columns"]][-1] == (
            "bi_id" if before_image else "change_seq")
        publish(ctx.env, p, [spec])
        register_job(glue, p)
        job = p.glue_job.name
        tables = Tables(glue, endpoint, tmp_path)

        def upload(name: str, changes: list[Change]) -> None:
            s3.put_object(Bucket=p.lake.bronze_bucket, Key=f"{p.bronze_prefix}/{name}",
                          Body=bronze(changes, before_image).encode())

        # run 1: the full load and the LATER file (the chain, and old key 2 taken again)
        upload("LOAD00000001.csv", load)
        upload("20260105-090320000.csv", cdc_2)
        run_job(glue, endpoint, job)
        silver, tombs = apply_batch({}, {}, load + cdc_2)
        assert tables.read()[:2] == (silver, tombs)

        # run 2: the EARLIER file arrives late: its move 2 -> 20 must neither bring 20
        # back (tombstoned by the move 20 -> 21) nor delete the new host 2
        upload("20260105-090140000.csv", cdc_1)
        run_job(glue, endpoint, job)
        silver, tombs = apply_batch(silver, tombs, cdc_1)
        assert tables.read()[:2] == (silver, tombs)

        # run 3: everything replayed (bookmark reset): nothing changes
        glue.reset_job_bookmark(JobName=job)
        m3 = run_job(glue, endpoint, job)
        assert (m3["inserted"], m3["updated"], m3["deleted"]) == (0, 0, 0)
        assert tables.read()[:2] == (silver, tombs)

        # run 4: a delete and one more move
        upload("20260105-090500000.csv", cdc_3)
        m4 = run_job(glue, endpoint, job)
        assert m4["deleted"] == (2 if before_image else 1)  # 30, and the old key 4
        assert m4["old_keys_deleted"] == (1 if before_image else 0)
        silver, tombs = apply_batch(silver, tombs, cdc_3)
        got_silver, got_tombs, quarantine = tables.read()
        assert (got_silver, got_tombs) == (silver, tombs) and quarantine == []
        assert silver == apply_in_order(seen)

        # against the source: equal with the before image; without it, the old keys of
        # the moves stay, and reconcile names them
        source = apply_in_order(FULL_LOAD + CDC_1 + CDC_2 + CDC_3)
        assert set(source) == SOURCE_KEYS

        def records(rows: dict) -> dict:
            return expected_silver([{"id": r.id, "url": r.url, "name": r.name,
                                     "since": r.since, "location": ", ".join(
                                         x for x in (r.location_city, r.location_country)
                                         if x is not None) or None,
                                     "response_time": r.response_time,
                                     "response_rate": r.response_rate}
                                    for r in rows.values()])

        result = compare(records(source), records(got_silver))
        if before_image:
            assert got_silver == source and result.equal
            assert tombs.keys() >= {20, 21, 3, 4, 30}  # the old keys stay deleted
        else:
            assert set(got_silver) - SOURCE_KEYS == {3, 4, 20, 21}
            assert not result.equal and result.orphan_keys == [3, 4, 20, 21]
            assert result.missing_in_silver == 0

        # run 5: a batch of one record, a move (with the rule: the old key's delete too)
        move = moved(40, 41, 500, 1, "host 4")
        cdc_5 = [move if before_image else dataclasses.replace(move, before_id=None)]
        upload("20260105-090600000.csv", cdc_5)
        m5 = run_job(glue, endpoint, job)
        assert (m5["inserted"], m5["deleted"]) == (1, 1 if before_image else 0)
        assert m5["old_keys_deleted"] == (1 if before_image else 0)
        silver, tombs = apply_batch(silver, tombs, cdc_5)
        assert tables.read()[:2] == (silver, tombs)
    finally:
        glue_service.stop()

