"""Durable small state files: readers see the old or the new JSON, never half of it."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any


def write_json(path: Path, data: Any, *, sort_keys: bool = False) -> None:
    """Write `data` to a temp file beside `path`, fsync it, rename it over `path`, fsync
    the folder: atomic, and durable once this returns (a power cut keeps the old or the
    new file, never an empty one). The temp name is unique per process and thread, so
    concurrent writers never share it. The file is its owner's only (0600): state files
    say where things are and how they stand. A write that fails (a full disk) leaves no
    temp file behind."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(json.dumps(data, indent=1, sort_keys=sort_keys))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    fsync_dir(path.parent)


def fsync_dir(folder: Path) -> None:
    """Make a rename in `folder` durable (POSIX: the directory entry is the folder's)."""
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
