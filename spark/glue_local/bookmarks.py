"""Glue job bookmarks, the API side: GetJobBookmark, ResetJobBookmark (with RunId: rewind).

The state is one JSON file per job, $CDCLAB_STATE_DIR/glue/bookmarks/<state name>.json
(glue_local.job_names.state_name: one file per job name, case and spaces included),
written by the JVM side of awsglue (spark/glue-jvm: org.cdclab.glue.BookmarkStore) at
`job.commit()`. Per transformation_ctx, as Glue's S3 bookmarks: every object modified at or
before `cutoff_ms` is processed, and objects modified after it are listed in `band` with
their modification times. `history` keeps the state after each committed run (bounded),
which rewinds and job-bookmark-pause ranges use.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path

from glue_local.errors import not_found
from glue_local.job_names import state_name
from pipeline_contract.atomic import write_json

ENABLE = "job-bookmark-enable"
DISABLE = "job-bookmark-disable"
PAUSE = "job-bookmark-pause"
OPTIONS = (ENABLE, DISABLE, PAUSE)

_lock = threading.Lock()


BOOKMARKS_DIR = ("glue", "bookmarks")


def bookmark_path(state_dir: Path | str, job_name: str) -> Path:
    """As spark/glue-jvm's BookmarkStore (StateNames.fileName) names it."""
    return Path(state_dir).joinpath(*BOOKMARKS_DIR, f"{state_name(job_name)}.json")


def empty(job_name: str) -> dict:
    return {"job": job_name, "version": 0, "run": 0, "attempt": 0, "run_id": None,
            "previous_run_id": None, "contexts": {}, "history": []}


def load(state_dir: Path | str, job_name: str) -> dict:
    path = bookmark_path(state_dir, job_name)
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        return empty(job_name)
    except json.JSONDecodeError as e:
        raise RuntimeError(f"job bookmark file {path} is corrupt: {e}") from e


def get_bookmark(state_dir: Path | str, job_name: str, run_id: str | None = None) -> dict:
    """Glue's JobBookmarkEntry shape (JobBookmark is a JSON string). A job that never
    committed a bookmark has none: EntityNotFoundException. With a run id: the state as
    that run committed it (from the history)."""
    if not bookmark_path(state_dir, job_name).exists():
        raise not_found(f"Continuation for job {job_name} not found")
    state = load(state_dir, job_name)
    if run_id:
        entry = state["history"][history_index(state, job_name, run_id)]
        state = {**state, "contexts": entry["contexts"], "run_id": run_id,
                 "run": entry.get("run", state["run"])}
    return bookmark_entry(job_name, state)


def history_index(state: dict, job_name: str, run_id: str) -> int:
    """Where the state after `run_id`'s commit is in the history (EntityNotFound if not)."""
    for i, h in enumerate(state.get("history", [])):
        if h.get("run_id") == run_id:
            return i
    raise not_found(f"Run {run_id} is not in the bookmark history of job {job_name}")


def bookmark_entry(job_name: str, state: dict) -> dict:
    return {
        "JobName": job_name,
        "Version": state["version"],
        "Run": state["run"],
        "Attempt": state.get("attempt", 0),
        "PreviousRunId": state.get("previous_run_id") or "",
        "RunId": state.get("run_id") or "",
        "JobBookmark": json.dumps(state["contexts"], sort_keys=True),
    }


def reset_bookmark(state_dir: Path | str, job_name: str, run_id: str | None = None) -> None:
    """Without a run id: forget everything (the next run reads the whole source again).
    With one: rewind to the state right after that run committed; later runs' input is
    read again."""
    with _lock:
        path = bookmark_path(state_dir, job_name)
        if not run_id:
            path.unlink(missing_ok=True)
            return
        state = load(state_dir, job_name)
        history = state.get("history", [])
        index = history_index(state, job_name, run_id)
        state["contexts"] = history[index]["contexts"]
        state["history"] = history[: index + 1]
        state["previous_run_id"], state["run_id"] = state.get("run_id"), run_id
        state["version"] = int(state.get("version", 0)) + 1
        write_json(path, state, sort_keys=True)


def delete_bookmark(state_dir: Path | str, job_name: str) -> None:
    """DeleteJob deletes the job's bookmark too (a job recreated under the name starts clean)."""
    with _lock:
        bookmark_path(state_dir, job_name).unlink(missing_ok=True)
