"""Once, at start: move per-job state files from earlier versions' names to state_name's.

Earlier versions named a job's definition, runs folder and tags file `quote(name)` (one
file per name, but `..` left its folder and capitals collide on case-insensitive disks)
and its bookmark `name` with every character outside [A-Za-z0-9_.-] made `_` (so `Bronze
to Silver` and `Bronze_to_Silver` shared one). A file moves where its old name says whose
it is: a job file and a runs folder by the name recorded inside, a tags file by decoding
`quote`, a bookmark file only when exactly one job maps to it (else it is set aside with
a warning naming the jobs: whose state it holds cannot be known). Done once: a marker
file records it, so files already named by state_name are never taken for old ones.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from urllib.parse import quote, unquote

from glue_local.bookmarks import BOOKMARKS_DIR
from glue_local.job_names import legacy_bookmark_stem, state_name
from glue_local.tags_api import TAGS_DIR
from pipeline_contract.atomic import write_json

log = logging.getLogger("glue_local.state_upgrade")

MARKER = ("glue", "state-names.json")
VERSION = 2


def upgrade(state_dir: Path) -> list[str]:
    """Migrate once; returns what moved (for the log and tests)."""
    state_dir = Path(state_dir)
    marker = state_dir.joinpath(*MARKER)
    if marker.exists():
        return []
    glue = state_dir / "glue"
    moved: list[str] = []
    names = _jobs(glue / "jobs", moved)
    _runs(glue / "runs", moved)
    _tags(state_dir.joinpath(*TAGS_DIR), moved)
    _bookmarks(state_dir.joinpath(*BOOKMARKS_DIR), names, moved)
    write_json(marker, {"version": VERSION})
    for line in moved:
        log.info("state upgrade: %s", line)
    return moved


def _move(src: Path, dst: Path, moved: list[str]) -> None:
    if src == dst:
        return
    if dst.exists():
        log.warning("state upgrade: %s not moved: %s exists", src, dst)
        return
    os.replace(src, dst)
    moved.append(f"{src} -> {dst}")


def _read(path: Path) -> dict:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _jobs(folder: Path, moved: list[str]) -> list[str]:
    names = []
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        name = _read(path).get("Name")
        if isinstance(name, str):
            names.append(name)
            _move(path, folder / f"{state_name(name)}.json", moved)
    return names


def _runs(folder: Path, moved: list[str]) -> None:
    for sub in sorted(folder.iterdir()) if folder.is_dir() else []:
        if not sub.is_dir():
            continue
        recorded = {_read(p).get("JobName") for p in sub.glob("*.json")}
        name = unquote(sub.name)
        if recorded - {name}:  # not quote(name)'s folder: leave it
            log.warning("state upgrade: runs folder %s holds runs of %s", sub, recorded)
            continue
        _move(sub, folder / state_name(name), moved)


def _tags(folder: Path, moved: list[str]) -> None:
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        name = unquote(path.stem)
        if quote(name, safe="") == path.stem:  # quote's output: decodes to one name
            _move(path, folder / f"{state_name(name)}.json", moved)


def _bookmarks(folder: Path, jobs: list[str], moved: list[str]) -> None:
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        owners = sorted({n for n in jobs if legacy_bookmark_stem(n) == path.stem})
        if not owners:  # no job of that name now: the one the file names, if it fits
            recorded = _read(path).get("job")
            if isinstance(recorded, str) and legacy_bookmark_stem(recorded) == path.stem:
                owners = [recorded]
        if len(owners) == 1:
            _move(path, folder / f"{state_name(owners[0])}.json", moved)
        elif owners:  # set aside: for a-z names the old name is the new one
            aside = path.with_name(path.name + ".shared")
            log.warning("state upgrade: bookmark %s was shared by jobs %s; whose state it "
                        "holds cannot be known, so none of them keeps it (kept as %s; "
                        "their next bookmarked runs read their sources from the start)",
                        path, owners, aside.name)
            _move(path, aside, moved)
