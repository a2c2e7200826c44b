"""Temporary state directories for test resources."""

from __future__ import annotations

import os
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
        # CDCLAB_KEEP_TEST_STATE=1 keeps logs and data for a post-mortem
        if not os.environ.get("CDCLAB_KEEP_TEST_STATE"):
            shutil.rmtree(path, ignore_errors=True)
