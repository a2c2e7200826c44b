"""State files: atomic and durable (write, fsync, rename, fsync the folder)."""

from __future__ import annotations

import json
import os
import stat

import pytest

from pipeline_contract import atomic
from pipeline_contract.atomic import write_json


def test_write_json_fsyncs_the_file_then_the_folder(tmp_path, monkeypatch) -> None:
    synced: list[str] = []
    real = os.fsync

    def spy(fd: int) -> None:
        kind = "dir" if stat.S_ISDIR(os.fstat(fd).st_mode) else "file"
        synced.append(kind)
        real(fd)

    monkeypatch.setattr(atomic.os, "fsync", spy)
    path = tmp_path / "state" / "s.json"
    atomic.write_json(path, {"a": 1})
    atomic.write_json(path, {"a": 2})
    assert json.loads(path.read_text()) == {"a": 2}
    assert synced == ["file", "dir", "file", "dir"]
    assert sorted(p.name for p in path.parent.iterdir()) == ["s.json"]  # no temp left


def test_a_write_on_a_full_disk_leaves_the_old_file_and_no_temp_file(tmp_path, monkeypatch):
    import errno

    path = tmp_path / "state.json"
    write_json(path, {"v": 1})
    assert stat.S_IMODE(path.stat().st_mode) == 0o600  # state: its owner's only

    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(OSError):
        write_json(path, {"v": 2})
    assert json.loads(path.read_text()) == {"v": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["state.json"]
