"""Least privilege on the real MinIO: each service's user reaches its own buckets and
prefixes only (pipeline_contract.minio_users), and setting them up again changes nothing."""

from __future__ import annotations

import uuid

import pytest
from botocore.exceptions import ClientError

from cdclab.services.minio import s3_client
from pipeline_contract import minio_users, settings

pytestmark = pytest.mark.integration


def _as(minio: dict, service: str):
    keys = minio_users.service_keys(minio["env"], service)
    assert keys and keys[settings.ENV_ACCESS_KEY] != minio["access_key"]
    return s3_client({**minio["env"], **keys})


def _denied(call, *args, **kwargs) -> bool:
    try:
        call(*args, **kwargs)
    except ClientError as exc:
        return exc.response["Error"]["Code"] == "AccessDenied"
    return False


@pytest.fixture(scope="module")
def lake():
    p = settings.load_pipeline()
    return p, p.lake


def _key(prefix: str, name: str = "") -> str:
    return f"{prefix.strip('/')}/{name or uuid.uuid4().hex}.csv"


def test_every_service_has_its_own_user_and_policy(minio: dict) -> None:
    admin = minio_users.admin_client(minio["endpoint"], minio["access_key"],
                                     minio["secret_key"])
    for service in minio_users.SERVICES:
        access = minio_users.service_keys(minio["env"], service)[settings.ENV_ACCESS_KEY]
        assert f'"{minio_users.POLICY_PREFIX}{service}"' in admin.user_info(access)
    # run again (every MinIO start does): same users, same policies, no error
    again = minio_users.ensure_users(minio["env"], settings.load_pipeline())
    assert again == list(minio_users.SERVICES)


def test_the_emitter_writes_its_dms_folder_and_nothing_else(minio: dict, lake) -> None:
    p, lk = lake
    s3 = _as(minio, "emitter")
    key = _key(p.bronze_prefix)
    s3.put_object(Bucket=lk.bronze_bucket, Key=key, Body=b"a,b\n")
    assert s3.get_object(Bucket=lk.bronze_bucket, Key=key)["Body"].read() == b"a,b\n"
    listed = s3.list_objects_v2(Bucket=lk.bronze_bucket, Prefix=p.bronze_prefix + "/")
    assert key in [o["Key"] for o in listed.get("Contents", [])]
    # a multipart upload (large LOAD files) and its abort
    upload = s3.create_multipart_upload(Bucket=lk.bronze_bucket, Key=key + ".big")
    s3.abort_multipart_upload(Bucket=lk.bronze_bucket, Key=key + ".big",
                              UploadId=upload["UploadId"])
    s3.delete_object(Bucket=lk.bronze_bucket, Key=key)  # stale LOAD files
    assert _denied(s3.put_object, Bucket=lk.silver_bucket, Key="warehouse/x", Body=b"x")
    assert _denied(s3.put_object, Bucket=lk.scripts_bucket, Key="jobs/x.py", Body=b"x")
    assert _denied(s3.put_object, Bucket=lk.bronze_bucket, Key=_key(lk.quarantine_prefix),
                   Body=b"x")
    assert _denied(s3.list_objects_v2, Bucket=lk.bronze_bucket)
    assert _denied(s3.list_objects_v2, Bucket=lk.silver_bucket)
    assert _denied(s3.create_bucket, Bucket="cdclab-other")


def test_the_watcher_reads_and_quarantines_but_never_writes_bronze(minio: dict, lake) -> None:
    p, lk = lake
    bad = _key(p.watched_prefix)
    minio["s3"].put_object(Bucket=lk.bronze_bucket, Key=bad, Body=b"not gzip")
    s3 = _as(minio, "watcher")
    listed = s3.list_objects_v2(Bucket=lk.bronze_bucket, Prefix=p.watched_prefix + "/")
    assert bad in [o["Key"] for o in listed.get("Contents", [])]
    # the Lambda's move to quarantine: copy, reason, delete
    target = f"{lk.quarantine_prefix}/{bad}"
    s3.copy({"Bucket": lk.bronze_bucket, "Key": bad}, lk.bronze_bucket, target)
    s3.put_object(Bucket=lk.bronze_bucket, Key=target + ".reason.json", Body=b"{}")
    s3.delete_object(Bucket=lk.bronze_bucket, Key=bad)
    assert _denied(s3.put_object, Bucket=lk.bronze_bucket, Key=_key(p.watched_prefix),
                   Body=b"x")
    assert _denied(s3.get_object, Bucket=lk.bronze_bucket, Key=target)  # written, not read
    for key in (target, target + ".reason.json"):  # the session's MinIO is shared
        minio["s3"].delete_object(Bucket=lk.bronze_bucket, Key=key)
    assert _denied(s3.put_object, Bucket=lk.silver_bucket, Key="warehouse/x", Body=b"x")
    assert _denied(s3.list_objects_v2, Bucket=lk.silver_bucket)


def test_the_glue_jobs_read_bronze_and_scripts_and_write_silver(minio: dict, lake) -> None:
    p, lk = lake
    root = minio["s3"]
    src = _key(p.bronze_prefix)
    root.put_object(Bucket=lk.bronze_bucket, Key=src, Body=b"1")
    spec_key = p.tables_config.removeprefix(f"s3://{lk.scripts_bucket}/")
    root.put_object(Bucket=lk.scripts_bucket, Key=spec_key, Body=b"[]")
    s3 = _as(minio, "glue")
    assert s3.get_object(Bucket=lk.bronze_bucket, Key=src)["Body"].read() == b"1"
    assert s3.get_object(Bucket=lk.scripts_bucket, Key=spec_key)["Body"].read() == b"[]"
    out = f"{lk.warehouse_prefix}/{uuid.uuid4().hex}/data.parquet"
    s3.put_object(Bucket=lk.silver_bucket, Key=out, Body=b"x")
    s3.delete_object(Bucket=lk.silver_bucket, Key=out)  # orphan-file cleanup
    temp = f"{minio_users.SCRIPTS_TEMP}/{uuid.uuid4().hex}"
    s3.put_object(Bucket=lk.scripts_bucket, Key=temp, Body=b"x")
    s3.delete_object(Bucket=lk.scripts_bucket, Key=temp)
    assert _denied(s3.put_object, Bucket=lk.bronze_bucket, Key=_key(p.bronze_prefix), Body=b"x")
    assert _denied(s3.delete_object, Bucket=lk.bronze_bucket, Key=src)
    assert _denied(s3.put_object, Bucket=lk.scripts_bucket, Key=spec_key, Body=b"{}")


def test_the_rest_catalog_owns_the_warehouse_only(minio: dict, lake) -> None:
    p, lk = lake
    s3 = _as(minio, "iceberg-rest")
    meta = f"{lk.warehouse_prefix}/{uuid.uuid4().hex}/metadata/00000.metadata.json"
    s3.put_object(Bucket=lk.silver_bucket, Key=meta, Body=b"{}")
    assert s3.get_object(Bucket=lk.silver_bucket, Key=meta)["Body"].read() == b"{}"
    s3.delete_object(Bucket=lk.silver_bucket, Key=meta)
    assert _denied(s3.put_object, Bucket=lk.silver_bucket, Key="elsewhere/x", Body=b"x")
    assert _denied(s3.get_object, Bucket=lk.bronze_bucket, Key=_key(p.bronze_prefix))
    assert _denied(s3.list_objects_v2, Bucket=lk.bronze_bucket)
