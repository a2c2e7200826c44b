"""Durable small state files: readers see the old or the new JSON, never half of it."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any


def write_json(path: Path, data: Any, *, sort_keys: bool = False) -> None:
    """Write `data` to a temp file beside `path`, then rename it over `path` (atomic).
    The temp name is unique per process and thread, so concurrent writers never share it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=sort_keys))
    os.replace(tmp, path)
