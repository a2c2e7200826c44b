"""The Lambda's handling of hostile objects, on moto's in-process S3 and Glue: a key too
long to quarantine under its own name, an object gone before it is read or moved, an
object S3 will not copy. The others always get their run."""

from __future__ import annotations

import gzip
import json

import boto3
import pytest
from botocore.exceptions import ClientError
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from moto import mock_aws

from lambda_shim import lambda_function
from lambda_shim.function_env import gate_limits
from lambda_shim.object_gate import REASON_SUFFIX, S3_MAX_KEY_BYTES
from lambda_shim.s3_events import S3Object, s3_event

BUCKET, JOB, PREFIX = "bronze", "Bronze_to_Silver", "dms/airbnb_db/public/hosts_demo"
GOOD = f"{PREFIX}/20261122-101500123.csv"
FOLDER = PREFIX + "/" + "/".join(["f" * 250] * 3) + "/"
LONG = FOLDER + "x" * (1016 - len(FOLDER) - 4) + ".txt"  # the finding: 1016 bytes


@pytest.fixture()
def aws(monkeypatch):
    for name, value in {"AWS_ACCESS_KEY_ID": "t", "AWS_SECRET_ACCESS_KEY": "t",
                        "AWS_DEFAULT_REGION": "us-east-1", "GLUE_JOB_NAME": JOB,
                        "QUARANTINE_PREFIX": "quarantine"}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("GLUE_JOB_NAMES", raising=False)
    monkeypatch.delenv("BACKLOG_MARKER_PREFIX", raising=False)
    with mock_aws():
        s3 = boto3.client("s3")
        s3.create_bucket(Bucket=BUCKET)
        boto3.client("glue").create_job(Name=JOB, Role="r", Command={
            "Name": "glueetl", "ScriptLocation": "s3://x/y.py"})
        yield s3


def event(s3, *keys: str) -> dict:
    objs = []
    for key in keys:
        try:
            head = s3.head_object(Bucket=BUCKET, Key=key)
            objs.append(S3Object(BUCKET, key, head["ContentLength"], head["ETag"].strip('"'),
                                 head["LastModified"]))
        except ClientError:  # gone already: the event still names it
            from datetime import UTC, datetime
            objs.append(S3Object(BUCKET, key, 1, "e", datetime.now(UTC)))
    return s3_event(objs, region="us-east-1")


def test_a_1016_byte_key_is_quarantined_under_a_bounded_name_and_the_rest_runs(aws) -> None:
    s3 = aws
    s3.put_object(Bucket=BUCKET, Key=GOOD, Body=b"Op,id\nI,1\n")
    s3.put_object(Bucket=BUCKET, Key=LONG, Body=b"hello\n")
    out = lambda_function.lambda_handler(event(s3, GOOD, LONG), None)
    assert out["JobRunId"] and [q["key"] for q in out["Quarantined"]] == [LONG]
    reasons = [o["Key"] for o in s3.list_objects_v2(Bucket=BUCKET, Prefix="quarantine/")
               ["Contents"] if o["Key"].endswith(REASON_SUFFIX)]
    assert len(reasons) == 1 and len(reasons[0].encode()) <= S3_MAX_KEY_BYTES
    reason = json.loads(s3.get_object(Bucket=BUCKET, Key=reasons[0])["Body"].read())
    assert reason["key"] == LONG and "not a DMS file" in reason["reason"]
    assert s3.get_object(Bucket=BUCKET, Key=reason["quarantined_key"])["Body"].read() == (
        b"hello\n")
    with pytest.raises(ClientError):
        s3.head_object(Bucket=BUCKET, Key=LONG)


def test_objects_gone_before_they_are_read_or_moved_are_forgotten(aws) -> None:
    s3 = aws
    s3.put_object(Bucket=BUCKET, Key=GOOD, Body=b"Op,id\nI,1\n")
    gone_csv, gone_txt = f"{PREFIX}/20261122-101500999.csv", f"{PREFIX}/stray.txt"
    out = lambda_function.lambda_handler(event(s3, GOOD, gone_csv, LONG, gone_txt), None)
    assert set(out["Gone"]) == {gone_csv, LONG, gone_txt} and out["JobRunId"]
    out = lambda_function.lambda_handler(event(s3, gone_csv), None)  # only gone: no run
    assert out["Gone"] == [gone_csv] and out["JobRunId"] is None


def test_an_object_deleted_while_it_is_quarantined_is_forgotten(aws, monkeypatch) -> None:
    s3 = aws
    bad = f"{PREFIX}/20261122-101500124.csv.gz"
    s3.put_object(Bucket=BUCKET, Key=bad, Body=b"not gzip")
    real_copy = lambda_function.quarantine

    def deleted_first(s3c, bucket, key, *args):
        s3c.delete_object(Bucket=bucket, Key=key)
        return real_copy(s3c, bucket, key, *args)

    monkeypatch.setattr(lambda_function, "quarantine", deleted_first)
    out = lambda_function.lambda_handler(event(s3, bad), None)
    assert out["Gone"] == [bad] and out["Quarantined"] == []


def test_an_object_that_cannot_be_moved_fails_the_invocation_naming_it(aws, monkeypatch):
    s3 = aws
    s3.put_object(Bucket=BUCKET, Key=GOOD, Body=b"Op,id\nI,1\n")
    bad = f"{PREFIX}/20261122-101500124.csv.gz"
    s3.put_object(Bucket=BUCKET, Key=bad, Body=b"not gzip")

    def refuse(code: str, status: int):
        def quarantine(*_args):
            raise ClientError({"Error": {"Code": code, "Message": "no"},
                               "ResponseMetadata": {"HTTPStatusCode": status}}, "CopyObject")
        return quarantine

    monkeypatch.setattr(lambda_function, "quarantine", refuse("AccessDenied", 403))
    with pytest.raises(lambda_function.ObjectHandlingError) as e:
        lambda_function.lambda_handler(event(s3, GOOD, bad), None)
    assert list(e.value.failures) == [bad] and "AccessDenied" in e.value.failures[bad]
    # S3 in trouble is nobody's object's fault: the plain error, for a whole retry
    monkeypatch.setattr(lambda_function, "quarantine", refuse("SlowDown", 503))
    with pytest.raises(ClientError):
        lambda_function.lambda_handler(event(s3, GOOD, bad), None)


def test_the_hostile_gzip_is_quarantined_with_its_record(aws) -> None:
    s3 = aws
    key = f"{PREFIX}/20261122-101500125.csv.gz"
    s3.put_object(Bucket=BUCKET, Key=key, Body=gzip.compress(
        b"Op,id,name\nI,1," + b"x" * (3 * 1024 * 1024) + b"\n", 1)[:-100])
    out = lambda_function.lambda_handler(event(s3, key), None)
    assert out["Quarantined"][0]["reason"].startswith("field 3 is over 1048576 characters")
    assert "(record 2, line 2)" in out["Quarantined"][0]["reason"]


def test_limits_from_the_environment_are_checked(aws, monkeypatch) -> None:
    monkeypatch.setenv("GATE_MAX_FIELD_CHARS", "lots")
    with pytest.raises(ValueError, match="GATE_MAX_FIELD_CHARS='lots'"):
        lambda_function.gate_limits()
    monkeypatch.setenv("GATE_MAX_FIELD_CHARS", "10")
    assert lambda_function.gate_limits().max_field_chars == 10
    monkeypatch.setenv("DMS_CSV_DELIMITER", ",,")
    with pytest.raises(ValueError, match="DMS_CSV_DELIMITER"):
        lambda_function.csv_layout()


def test_the_pipelines_default_limits_are_the_gates_defaults(monkeypatch) -> None:
    from lambda_shim.object_gate import Limits
    from pipeline_contract import settings

    for name, value in gate_limits(settings.load_pipeline().dms).items():
        monkeypatch.setenv(name, str(value))
    assert lambda_function.gate_limits() == Limits()


def test_parquet_is_read_by_ranges_of_one_version(aws) -> None:
    from tests.unit.test_gate_hostile import REAL

    s3 = aws
    good, bad = f"{PREFIX}/20261122-101500126.parquet", f"{PREFIX}/20261122-101500127.parquet"
    s3.put_object(Bucket=BUCKET, Key=good, Body=REAL)
    s3.put_object(Bucket=BUCKET, Key=bad, Body=REAL[:4] + b"\0" * 200 + REAL[204:])
    out = lambda_function.lambda_handler(event(s3, good, bad), None)
    assert out["JobRunId"] and [q["key"] for q in out["Quarantined"]] == [bad]
    assert "not readable Parquet" in out["Quarantined"][0]["reason"]
    # overwritten while it was read: S3 refuses the stale ranges, the invocation retries
    source = lambda_function.S3Source(s3, BUCKET, good, len(REAL), '"stale"')
    with pytest.raises(ClientError) as e:
        b"".join(source.read(0, 8))
    assert lambda_function.transient(e.value)


def test_a_retried_invocation_reads_only_objects_not_found_good_before(aws, monkeypatch):
    """A warm environment keeps its verdicts by version: the retry (a run was going)
    heads every object but reads none it passed; one written again under its key is read
    again, and quarantined when it is bad now."""
    s3 = aws
    other = f"{PREFIX}/20261122-101500124.csv"
    s3.put_object(Bucket=BUCKET, Key=GOOD, Body=b"Op,id\nI,1\n")
    s3.put_object(Bucket=BUCKET, Key=other, Body=b"Op,id\nI,2\n")
    reads: list[str] = []
    real_read = lambda_function.S3Source.read

    def counted(self, start, end):
        reads.append(self.key)
        return real_read(self, start, end)

    monkeypatch.setattr(lambda_function.S3Source, "read", counted)
    assert lambda_function.lambda_handler(event(s3, GOOD, other), None)["JobRunId"]
    assert sorted(reads) == sorted([GOOD, other])
    reads.clear()
    s3.put_object(Bucket=BUCKET, Key=other, Body=b"Op,id\nI,2,3\n")  # a new version, bad
    out = lambda_function.lambda_handler(event(s3, GOOD, other), None)
    assert reads == [other] and [q["key"] for q in out["Quarantined"]] == [other]


bodies = st.one_of(
    st.sampled_from([b"Op,id\nI,1\n", b"Op,id\nI,1,2\n", b"Op,id\n\"I,1\n", b"\xff\xfe",
                     b"", b"Op,id\nD,7\nU,8\n"]),
    st.binary(max_size=40))


@settings(max_examples=25, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(versions=st.lists(bodies, min_size=1, max_size=6))
def test_kept_verdicts_agree_with_a_cold_check_of_every_version(aws, versions) -> None:
    """Whatever is written under one key, one version after another, a warm environment
    gives each version the verdict a cold one gives it."""
    s3 = aws
    key = f"{PREFIX}/20261122-101500125.csv"
    layout, limits = lambda_function.csv_layout(), lambda_function.gate_limits()
    warm = type(lambda_function._passed)()
    for body in versions:
        s3.put_object(Bucket=BUCKET, Key=key, Body=body)
        for _ in range(2):  # the retry meets the kept verdict
            lambda_function._passed = warm
            got = lambda_function.check_object(s3, BUCKET, key, layout, limits)
            lambda_function._passed = type(warm)()
            assert got == lambda_function.check_object(s3, BUCKET, key, layout, limits)
