"""The local Glue API's SigV4 check: what botocore signs passes, anything altered fails."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import boto3
import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from hypothesis import given
from hypothesis import strategies as st

from glue_local import sigv4
from glue_local.server import running_server

NOW = datetime(2026, 11, 24, 12, 0, 0, tzinfo=UTC)
SECRETS = {"AKIDCLIENT": "s3cr3t-key", "AKIDOTHER": "another-secret"}
keys = st.sampled_from(sorted(SECRETS))
bodies = st.dictionaries(st.text(max_size=10), st.text(max_size=30), max_size=5)


def signed(access: str, secret: str, body: bytes, *, region: str = "us-east-1",
           when: datetime = NOW, service: str = "glue") -> dict[str, str]:
    """Headers of a POST botocore signed at `when`, as the server receives them."""
    request = AWSRequest(method="POST", url="http://127.0.0.1:8090/", data=body, headers={
        "X-Amz-Target": "AWSGlue.GetJobs", "Content-Type": "application/x-amz-json-1.1"})
    signer = SigV4Auth(Credentials(access, secret), service, region)
    request.context["timestamp"] = when.strftime(sigv4.AMZ_DATE)
    request.headers["X-Amz-Date"] = request.context["timestamp"]
    canonical = signer.canonical_request(request)
    signature = signer.signature(signer.string_to_sign(request, canonical), request)
    signer._inject_signature_to_request(request, signature)
    return {"Host": "127.0.0.1:8090", **dict(request.headers.items())}


def check(headers: dict[str, str], body: bytes, now: datetime = NOW) -> str:
    return sigv4.verify("POST", "/", headers, body, SECRETS, now=now)


def refused(headers: dict[str, str], body: bytes, now: datetime = NOW) -> sigv4.SignatureError:
    with pytest.raises(sigv4.SignatureError) as info:
        check(headers, body, now)
    return info.value


@given(access=keys, body=bodies, region=st.sampled_from(["us-east-1", "eu-west-3"]),
       skew=st.integers(-14 * 60, 14 * 60))
def test_what_botocore_signs_is_accepted(access, body, region, skew) -> None:
    data = json.dumps(body).encode()
    headers = signed(access, SECRETS[access], data, region=region)
    assert check(headers, data, NOW + timedelta(seconds=skew)) == access


@given(access=keys, body=bodies, flip=st.integers(0, 10_000))
def test_a_changed_body_or_header_fails(access, body, flip) -> None:
    data = json.dumps(body).encode()
    headers = signed(access, SECRETS[access], data)
    tampered = data + b" " if flip % 2 else data[:-1] + b"]"
    assert refused(headers, tampered).code == "InvalidSignatureException"
    other = {**headers, "X-Amz-Target": "AWSGlue.DeleteJob"}
    assert refused(other, data).code == "InvalidSignatureException"


@given(access=keys, wrong=st.text(min_size=1, max_size=40))
def test_a_wrong_secret_fails_and_an_unknown_key_is_unrecognized(access, wrong) -> None:
    if wrong == SECRETS[access]:
        return
    err = refused(signed(access, wrong, b"{}"), b"{}")
    assert (err.code, err.status) == ("InvalidSignatureException", 403)
    err = refused(signed("AKIDSTRANGER", SECRETS[access], b"{}"), b"{}")
    assert (err.code, err.status) == ("UnrecognizedClientException", 403)


def test_unsigned_malformed_expired_and_other_service_requests_fail() -> None:
    err = refused({"Host": "h", "X-Amz-Target": "AWSGlue.GetJobs"}, b"{}")
    assert (err.code, err.status) == ("MissingAuthenticationTokenException", 403)
    headers = signed("AKIDCLIENT", SECRETS["AKIDCLIENT"], b"{}")
    bad = {**headers, "Authorization": "AWS4-HMAC-SHA256 Credential=AKIDCLIENT"}
    assert refused(bad, b"{}").code == "IncompleteSignatureException"
    late = refused(headers, b"{}", NOW + timedelta(minutes=16))
    assert late.code == "InvalidSignatureException" and "expired" in late.message
    s3 = signed("AKIDCLIENT", SECRETS["AKIDCLIENT"], b"{}", service="s3")
    assert refused(s3, b"{}").code == "IncompleteSignatureException"


def test_the_server_refuses_strangers_in_the_aws_error_shape(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("CDCLAB_GLUE_API_CLIENTS", "admin:AKIDCLIENT:s3cr3t-key")
    with running_server(tmp_path, quiet=True) as server:
        assert "CDCLAB_GLUE_API_CLIENTS" not in server.ctx.env  # job runs never see it

        def client(access: str, secret: str):
            return boto3.client("glue", endpoint_url=server.endpoint, region_name="us-east-1",
                                aws_access_key_id=access, aws_secret_access_key=secret)

        assert client("AKIDCLIENT", "s3cr3t-key").get_jobs()["Jobs"] == []
        stranger = client("AKIDSTRANGER", "s3cr3t-key")
        with pytest.raises(stranger.exceptions.ClientError) as info:
            stranger.get_jobs()
        assert info.value.response["Error"]["Code"] == "UnrecognizedClientException"
        assert info.value.response["ResponseMetadata"]["HTTPStatusCode"] == 403
        forger = client("AKIDCLIENT", "guessed")
        with pytest.raises(forger.exceptions.ClientError) as info:
            forger.get_jobs()
        assert info.value.response["Error"]["Code"] == "InvalidSignatureException"
