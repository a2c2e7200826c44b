"""Glue job bookmarks: which bronze files each (job, transformation_ctx) has processed.

State is one JSON file per job under $CDCLAB_STATE_DIR/glue/bookmarks/<job>.json. The
awsglue shim reads it when a bookmarked source is read and writes it only at
`job.commit()`; the Glue API's GetJobBookmark/ResetJobBookmark call get/reset here.
File-level, like Glue's S3 bookmarks: a file is identified by key + ETag + size.
"""

from __future__ import annotations

import json
import re
import threading
from pathlib import Path

from cdclab.atomic import write_json

ENABLE = "job-bookmark-enable"
DISABLE = "job-bookmark-disable"
PAUSE = "job-bookmark-pause"
OPTIONS = (ENABLE, DISABLE, PAUSE)

_lock = threading.Lock()

FileId = dict[str, object]  # {"etag": str, "size": int}


def bookmark_path(state_dir: Path | str, job_name: str) -> Path:
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", job_name)
    return Path(state_dir) / "glue" / "bookmarks" / f"{safe}.json"


def load(state_dir: Path | str, job_name: str) -> dict:
    path = bookmark_path(state_dir, job_name)
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        return {"job": job_name, "version": 0, "run": 0, "run_id": None,
                "previous_run_id": None, "contexts": {}}
    except json.JSONDecodeError as e:
        raise RuntimeError(f"job bookmark file {path} is corrupt: {e}") from e


def processed_files(state_dir: Path | str, job_name: str, ctx: str) -> dict[str, FileId]:
    """key -> {"etag", "size"} of the files already processed under transformation_ctx."""
    return dict(load(state_dir, job_name)["contexts"].get(ctx, {}).get("files", {}))


def is_processed(done: dict[str, FileId], key: str, etag: str, size: int) -> bool:
    seen = done.get(key)
    return seen is not None and seen.get("etag") == etag and seen.get("size") == size


def commit(
    state_dir: Path | str, job_name: str, run_id: str | None, read: dict[str, dict[str, FileId]]
) -> dict:
    """Add the files read in this run (per transformation_ctx) and save atomically."""
    with _lock:
        state = load(state_dir, job_name)
        for ctx, files in read.items():
            entry = state["contexts"].setdefault(ctx, {"files": {}})
            entry["files"].update(files)
        state["previous_run_id"] = state.get("run_id")
        state["run_id"] = run_id
        state["run"] = int(state.get("run", 0)) + 1
        state["version"] = int(state.get("version", 0)) + 1
        _save(bookmark_path(state_dir, job_name), state)
        return state


def _save(path: Path, state: dict) -> None:
    write_json(path, state, sort_keys=True)  # readers never see a half-written file


def get_bookmark(state_dir: Path | str, job_name: str) -> dict:
    """Glue's JobBookmarkEntry shape (JobBookmark is a JSON string)."""
    state = load(state_dir, job_name)
    return {
        "JobName": job_name,
        "Version": state["version"],
        "Run": state["run"],
        "Attempt": 0,
        "PreviousRunId": state.get("previous_run_id") or "",
        "RunId": state.get("run_id") or "",
        "JobBookmark": json.dumps(state["contexts"], sort_keys=True),
    }


def reset_bookmark(state_dir: Path | str, job_name: str, run_id: str | None = None) -> None:
    """Forget every processed file, so the next run reads the whole source again."""
    with _lock:
        bookmark_path(state_dir, job_name).unlink(missing_ok=True)
