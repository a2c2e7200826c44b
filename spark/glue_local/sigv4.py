"""AWS Signature Version 4 on the local Glue API's requests, checked with botocore's signer.

The server knows the secret of every client it accepts (access key -> secret). For a
request it parses the Authorization header, rebuilds the request from exactly the headers
the client signed, lets botocore's own SigV4Auth compute the signature with the known
secret, and compares (constant time). Failures carry the code and HTTP status AWS's JSON
services answer with, so botocore raises `client.exceptions.<code>`:

| what | code | HTTP |
|---|---|---|
| no Authorization header | MissingAuthenticationTokenException | 403 |
| malformed header, unsigned host/x-amz-date, wrong service | IncompleteSignatureException | 400 |
| unknown access key | UnrecognizedClientException | 403 |
| wrong signature or scope date, more than 15 min of clock skew | InvalidSignatureException | 403 |
"""

from __future__ import annotations

import hmac
import re
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from hashlib import sha256

from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest, HTTPHeaders
from botocore.credentials import Credentials

ALGORITHM = "AWS4-HMAC-SHA256"
MAX_SKEW = timedelta(minutes=15)  # AWS: RequestExpired / "Signature expired" past this
AMZ_DATE = "%Y%m%dT%H%M%SZ"
_AUTH = re.compile(
    r"^AWS4-HMAC-SHA256 +Credential=(?P<cred>[^,\s]+) *, *SignedHeaders=(?P<signed>[^,\s]+)"
    r" *, *Signature=(?P<sig>[0-9a-f]{64})\s*$")


class _ExactHeaders(SigV4Auth):
    """botocore's signer over exactly the headers the client signed: other SDKs (the AWS
    SDK for Java, under the Glue JVM) also sign headers botocore never does (User-Agent)."""

    def headers_to_sign(self, request):
        header_map = HTTPHeaders()
        for name, value in request.headers.items():
            header_map[name.lower()] = value
        return header_map


class SignatureError(Exception):
    def __init__(self, code: str, message: str, status: int) -> None:
        super().__init__(message)
        self.code, self.message, self.status = code, message, status


def _incomplete(message: str) -> SignatureError:
    return SignatureError("IncompleteSignatureException", message, 400)


def _invalid(message: str) -> SignatureError:
    return SignatureError("InvalidSignatureException", message, 403)


def verify(method: str, path: str, headers: Mapping[str, str], body: bytes,
           secrets: Mapping[str, str], *, service: str = "glue",
           now: datetime | None = None) -> str:
    """The access key that signed this request, or SignatureError. `headers`: as received
    (any case); `secrets`: access key -> secret key of every accepted client."""
    lower = {k.lower(): v for k, v in headers.items()}
    auth = lower.get("authorization")
    if not auth:
        raise SignatureError("MissingAuthenticationTokenException",
                             "Missing Authentication Token", 403)
    m = _AUTH.match(auth)
    if not m:
        raise _incomplete(f"Authorization header requires {ALGORITHM} with Credential, "
                          "SignedHeaders and Signature")
    parts = m["cred"].split("/")
    if len(parts) != 5 or parts[4] != "aws4_request":
        raise _incomplete("Credential must be <key>/<date>/<region>/<service>/aws4_request")
    access_key, day, region, scope_service, _ = parts
    signed = m["signed"].split(";")
    if "host" not in signed or "x-amz-date" not in signed:
        raise _incomplete("SignedHeaders must include host and x-amz-date")
    if scope_service != service:
        raise _incomplete(f"Credential should be scoped to correct service: '{service}'")
    missing = [h for h in signed if h not in lower]
    if missing:
        raise _incomplete(f"signed header(s) not in the request: {', '.join(missing)}")
    amz_date = lower["x-amz-date"]
    try:
        when = datetime.strptime(amz_date, AMZ_DATE).replace(tzinfo=UTC)
    except ValueError as e:
        raise _incomplete(f"X-Amz-Date {amz_date!r} is not {AMZ_DATE}") from e
    if day != amz_date[:8]:
        raise _invalid("Credential should be scoped to a valid date (the X-Amz-Date's)")
    now = now or datetime.now(UTC)
    if abs(now - when) > MAX_SKEW:
        raise _invalid(f"Signature expired: {amz_date} is more than 15 minutes from now "
                       f"({now.strftime(AMZ_DATE)})")
    secret = secrets.get(access_key)
    if secret is None:
        raise SignatureError("UnrecognizedClientException",
                             "The security token included in the request is invalid.", 403)
    claimed = lower.get("x-amz-content-sha256")
    if claimed is not None and claimed != sha256(body).hexdigest():
        raise _invalid("X-Amz-Content-SHA256 does not match the body")
    request = AWSRequest(method=method, url=f"http://{lower['host']}{path}", data=body,
                         headers={h: lower[h] for h in signed})
    request.context["timestamp"] = amz_date
    signer = _ExactHeaders(Credentials(access_key, secret), scope_service, region)
    canonical = signer.canonical_request(request)
    expected = signer.signature(signer.string_to_sign(request, canonical), request)
    if not hmac.compare_digest(expected, m["sig"]):
        raise _invalid("The request signature we calculated does not match the signature "
                       "you provided. Check your AWS Secret Access Key and signing method.")
    return access_key
