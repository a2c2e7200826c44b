"""Where DMS files go: the bronze bucket/prefix (boto3), or a local dir behind the same API."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO, Protocol

from pipeline_contract import settings


class Sink(Protocol):
    def put(self, name: str, body: bytes) -> None:
        """Store one file durably; returns only once it is stored."""

    def names(self, startswith: str = "") -> list[str]: ...

    def delete(self, name: str) -> None: ...

    def describe(self, name: str) -> str: ...

    def child(self, folder: str) -> Sink:
        """The same store one folder down (a table's <schema>/<table>)."""

    def writer(self, name: str) -> contextlib.AbstractContextManager[BinaryIO]:
        """A file written piece by piece (a full load's files can be large): stored
        durably when the block ends without an error, never partly."""


def content_type(name: str) -> str:
    if name.endswith(".parquet"):
        return "application/vnd.apache.parquet"
    return "application/gzip" if name.endswith(".gz") else "text/csv"


class S3Sink:
    """Files under s3://<bucket>/<prefix>/; endpoint from AWS_ENDPOINT_URL_S3 (boto3 reads it)."""

    def __init__(self, bucket: str, prefix: str, client=None) -> None:
        import boto3

        self.bucket = bucket
        self.prefix = prefix.strip("/")
        self.client = client or boto3.client("s3")

    def key(self, name: str) -> str:
        return f"{self.prefix}/{name}"

    def put(self, name: str, body: bytes) -> None:
        self.client.put_object(Bucket=self.bucket, Key=self.key(name), Body=body,
                               ContentType=content_type(name))

    def names(self, startswith: str = "") -> list[str]:
        out: list[str] = []
        pages = self.client.get_paginator("list_objects_v2").paginate(
            Bucket=self.bucket, Prefix=self.key(startswith))
        for page in pages:
            out += [o["Key"][len(self.prefix) + 1 :] for o in page.get("Contents", [])]
        return sorted(n for n in out if "/" not in n)

    def delete(self, name: str) -> None:
        self.client.delete_object(Bucket=self.bucket, Key=self.key(name))

    def describe(self, name: str) -> str:
        return f"s3://{self.bucket}/{self.key(name)}"

    def child(self, folder: str) -> S3Sink:
        return S3Sink(self.bucket, f"{self.prefix}/{folder.strip('/')}", self.client)

    @contextmanager
    def writer(self, name: str) -> Iterator[BinaryIO]:
        """Spooled to a local temporary file, then uploaded in parts: memory stays
        bounded by the part size, whatever the file's."""
        from boto3.s3.transfer import TransferConfig

        with spool_file() as (spool, path):
            yield spool
            spool.flush()
            # from the path: parts are read from disk one at a time (a file object's
            # parts would be buffered in memory, up to ten of them)
            self.client.upload_file(
                path, self.bucket, self.key(name),
                ExtraArgs={"ContentType": content_type(name)},
                Config=TransferConfig(max_concurrency=2, multipart_chunksize=8 << 20))


@contextmanager
def spool_file() -> Iterator[tuple[BinaryIO, str]]:
    """A temporary file and a path that opens it. On Linux the file has no name
    (/proc/self/fd reopens it), so an emitter killed mid-file (kill -9, OOM) leaves
    nothing behind in /tmp; elsewhere a named one, removed on a clean exit."""
    if Path("/proc/self/fd").is_dir():
        with tempfile.TemporaryFile(prefix="cdclab-emitter-") as spool:
            yield spool, f"/proc/self/fd/{spool.fileno()}"  # type: ignore[misc]
    else:
        with tempfile.NamedTemporaryFile(prefix="cdclab-emitter-") as spool:
            yield spool, spool.name  # type: ignore[misc]


class LocalDirSink:
    """Same interface on a local directory (development without an S3 server)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)

    def put(self, name: str, body: bytes) -> None:
        with self.writer(name) as f:
            f.write(body)

    def names(self, startswith: str = "") -> list[str]:
        return sorted(p.name for p in self.root.glob(f"{startswith}*") if p.is_file()
                      and not p.name.startswith("."))

    def delete(self, name: str) -> None:
        (self.root / name).unlink(missing_ok=True)

    def describe(self, name: str) -> str:
        return str(self.root / name)

    def child(self, folder: str) -> LocalDirSink:
        return LocalDirSink(self.root / folder)

    @contextmanager
    def writer(self, name: str) -> Iterator[BinaryIO]:
        tmp = self.root / f".{name}.tmp"
        try:
            with open(tmp, "wb") as f:
                yield f
                f.flush()
                os.fsync(f.fileno())
            tmp.replace(self.root / name)
        finally:
            tmp.unlink(missing_ok=True)


def bronze_sink(pipeline: settings.PipelineSettings) -> S3Sink:
    """The DMS bucket folder; each table's files go to <schema>/<table> below it."""
    return S3Sink(pipeline.lake.bronze_bucket, pipeline.dms.bucket_folder)
