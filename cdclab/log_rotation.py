"""Bounded logs for the embedded stack: the keeper rotates them, like logrotate's
`copytruncate` (services keep their O_APPEND file open, so the file is copied aside and
emptied in place; their next write lands at the new end). Lines written between the copy
and the truncate are lost: logrotate's documented trade-off for programs that cannot
reopen their log. Glue run logs (one file per run) keep the newest RUN_LOGS_KEPT.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

MAX_LOG_BYTES = 20 * 1024 * 1024
ROTATIONS_KEPT = 3  # <name>.log.1 (newest) ... <name>.log.3
RUN_LOGS_KEPT = 500


def rotate(path: Path, max_bytes: int = MAX_LOG_BYTES, keep: int = ROTATIONS_KEPT) -> bool:
    """Rotate `path` if it is larger than max_bytes; True when it did."""
    try:
        if path.stat().st_size <= max_bytes:
            return False
    except FileNotFoundError:
        return False
    oldest = path.with_name(f"{path.name}.{keep}")
    oldest.unlink(missing_ok=True)
    for n in range(keep - 1, 0, -1):
        older = path.with_name(f"{path.name}.{n}")
        if older.exists():
            older.rename(path.with_name(f"{path.name}.{n + 1}"))
    aside = path.with_name(f"{path.name}.1")
    shutil.copyfile(path, aside)
    os.chmod(aside, 0o600)
    with open(path, "r+b") as f:
        f.truncate(0)
    return True


def prune_run_logs(folder: Path, keep: int = RUN_LOGS_KEPT) -> int:
    """Delete all but the newest `keep` run logs; returns how many were deleted."""
    try:
        logs = sorted(folder.glob("*.log"), key=lambda p: p.stat().st_mtime, reverse=True)
    except FileNotFoundError:
        return 0
    for old in logs[keep:]:
        old.unlink(missing_ok=True)
    return max(0, len(logs) - keep)


def rotate_all(logs: Path, max_bytes: int = MAX_LOG_BYTES, keep: int = ROTATIONS_KEPT,
               runs_kept: int = RUN_LOGS_KEPT) -> list[str]:
    """Every service log under `logs`, and the Glue run logs; returns what was done."""
    done = [p.name for p in sorted(logs.glob("*.log")) if rotate(p, max_bytes, keep)]
    pruned = prune_run_logs(logs / "glue-runs", runs_kept)
    if pruned:
        done.append(f"{pruned} old Glue run logs")
    return done
