"""Read a Glue Data Catalog table the way Glue does: resolve, list files, parse per SerDe.

Pure helpers (SerDe -> Spark CSV options, file filtering) are separate from the I/O
(boto3 Glue/S3 clients, Spark) so they can be unit-tested.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

OPEN_CSV_SERDE = "org.apache.hadoop.hive.serde2.OpenCSVSerde"
LAZY_SIMPLE_SERDE = "org.apache.hadoop.hive.serde2.lazy.LazySimpleSerDe"


@dataclass(frozen=True)
class SourceFile:
    path: str  # what Spark reads: s3://bucket/key or a local path
    key: str  # bookmark identity (the S3 key, or the local path)
    etag: str
    size: int


class CatalogReadError(RuntimeError):
    """The catalog table cannot be read; the message names the table and the reason."""


def csv_options(table: dict) -> dict[str, str]:
    """Spark CSV reader options equivalent to the table's SerDe and parameters."""
    sd = table.get("StorageDescriptor", {})
    serde = sd.get("SerdeInfo", {})
    lib = serde.get("SerializationLibrary", "")
    params = serde.get("Parameters", {})
    name = f"{table.get('DatabaseName', '?')}.{table.get('Name', '?')}"
    skip = {**table.get("Parameters", {}), **params}.get("skip.header.line.count", "0")
    if skip not in ("0", "1"):
        raise CatalogReadError(f"{name}: skip.header.line.count={skip} is not supported")
    opts = {"header": str(skip == "1").lower(), "multiLine": "true", "mode": "PERMISSIVE"}
    if lib == OPEN_CSV_SERDE:
        opts |= {"sep": params.get("separatorChar", ","), "quote": params.get("quoteChar", '"'),
                 "escape": params.get("escapeChar", "\\")}
    elif lib == LAZY_SIMPLE_SERDE:
        opts |= {"sep": params.get("field.delim", params.get("serialization.format", ","))}
    else:
        raise CatalogReadError(f"{name}: SerDe {lib!r} is not supported by the local awsglue")
    return opts


def columns(table: dict) -> list[str]:
    return [c["Name"] for c in table.get("StorageDescriptor", {}).get("Columns", [])]


def is_data_file(key: str) -> bool:
    """Hive/Glue skip directory markers and hidden files (_SUCCESS, .crc...)."""
    base = key.rstrip("/").rsplit("/", 1)[-1]
    return not key.endswith("/") and not base.startswith(("_", "."))


def list_files(location: str, s3_client_factory=None) -> list[SourceFile]:
    """Data files under the table location, sorted by key."""
    url = urlparse(location)
    if url.scheme in ("s3", "s3a"):
        import boto3

        s3 = (s3_client_factory or (lambda: boto3.client("s3")))()
        prefix = url.path.lstrip("/")
        out = []
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket=url.netloc,
                                                                 Prefix=prefix):
            for obj in page.get("Contents", []):
                if is_data_file(obj["Key"]):
                    out.append(SourceFile(f"s3://{url.netloc}/{obj['Key']}", obj["Key"],
                                          obj["ETag"].strip('"'), int(obj["Size"])))
        return sorted(out, key=lambda f: f.key)
    root = Path(url.path if url.scheme == "file" else location)
    out = []
    for dirpath, _dirs, names in os.walk(root):
        for n in names:
            p = Path(dirpath) / n
            if is_data_file(str(p)):
                st = p.stat()
                out.append(SourceFile(str(p), str(p), str(st.st_mtime_ns), st.st_size))
    return sorted(out, key=lambda f: f.key)


def unprocessed(files: Iterable[SourceFile], done: dict[str, dict]) -> list[SourceFile]:
    from glue_local.bookmarks import is_processed

    return [f for f in files if not is_processed(done, f.key, f.etag, f.size)]
