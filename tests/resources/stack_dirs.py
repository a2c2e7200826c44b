"""Temporary state directories for test resources."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def temp_state_dir(prefix: str) -> Iterator[Path]:
    # 0755 so an unprivileged server user (PostgreSQL when we are root) can traverse it.
    path = Path(tempfile.mkdtemp(prefix=f"cdclab-{prefix}-"))
    path.chmod(0o755)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)
