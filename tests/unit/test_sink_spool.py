"""The emitter's spool file: uploaded from a path that reads it, never left in the temp
dir (an emitter killed mid-file left one /tmp/cdclab-emitter-* per kill)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from dms_emitter.sink import S3Sink, spool_file


def spools() -> set[str]:
    return {n for n in os.listdir(tempfile.gettempdir()) if n.startswith("cdclab-emitter-")}


def test_the_spool_has_no_name_and_its_path_reads_it() -> None:
    before = spools()
    with spool_file() as (spool, path):
        spool.write(b"a,b\n" * 1000)
        spool.flush()
        assert spools() == before  # nothing to leave behind if we die here
        assert Path(path).read_bytes() == b"a,b\n" * 1000
        assert os.path.getsize(path) == 4000


class _Client:
    def __init__(self) -> None:
        self.got: dict[str, bytes] = {}

    def upload_file(self, path, bucket, key, ExtraArgs=None, Config=None) -> None:  # noqa: N803
        with open(path, "rb") as f:  # s3transfer opens the path once per part
            self.got[f"{bucket}/{key}"] = f.read()


def test_a_writer_uploads_what_was_written() -> None:
    client = _Client()
    sink = S3Sink("b", "p", client)
    with sink.writer("LOAD00000001.csv") as out:
        out.write(b"x\n")
    assert client.got == {"b/p/LOAD00000001.csv": b"x\n"}
