"""State files: atomic and durable (write, fsync, rename, fsync the folder)."""

from __future__ import annotations

import json
import os
import stat

from cdclab import atomic


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
