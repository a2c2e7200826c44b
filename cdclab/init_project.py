"""`cdclab init [folder]`: the files a user's own repository starts from.

Writes, for the user to edit: pipeline.toml (the lab's default, commented), the DMS
table-mapping JSON it names, an example Glue script and its pytest test. A file already
there is the user's: kept, never overwritten (written with O_EXCL, so not even a file
appearing meanwhile is). Nothing is written outside the folder (a symlink pointing out
of it is refused).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from pipeline_contract.dms_format.table_mappings import default_mappings
from pipeline_contract.settings import PIPELINE_FILE, PipelineSettings

TEMPLATES = Path(__file__).with_name("templates")  # package data (pyproject)
MAPPINGS = "table-mappings.json"
# the files init writes, relative to the folder, in the order it reports them
FILES = ("pipeline.toml", MAPPINGS, "jobs/example_job.py", "tests/test_example_job.py")
TEMPLATE_OF = {"jobs/example_job.py": "example_job.py",
               "tests/test_example_job.py": "test_example_job.py"}

HEADER = """\
# Your pipeline, from cdclab's default (`cdclab init`): edit freely, `cdclab init` never
# overwrites it. cdclab reads it when run from this folder (or CDCLAB_PIPELINE_FILE names
# it); relative paths below are relative to this folder, and a path that is not here is
# the lab's own file (jobs/bronze_to_silver.py: the shipped MERGE job).
# Check it: `cdclab tables`; what AWS would get: `cdclab deploy --dry-run`.

"""


class InitError(RuntimeError):
    """The folder cannot be initialised: names the path and why."""


@dataclass(frozen=True)
class InitPlan:
    write: tuple[str, ...]
    keep: tuple[str, ...]


def plan_init(existing: Iterable[str]) -> InitPlan:
    """Pure: of FILES, those already there are kept, the others written."""
    there = set(existing)
    return InitPlan(tuple(f for f in FILES if f not in there),
                    tuple(f for f in FILES if f in there))


def inside(folder: Path, target: Path) -> bool:
    """Pure: `target` (both already resolved) is `folder` or under it."""
    return target == folder or folder in target.parents


def render(name: str, defaults: PipelineSettings) -> str:
    """The text of one of FILES: pipeline.toml and the mappings from the lab's default
    pipeline (one source of truth, `defaults` as read from it), the others from
    cdclab/templates."""
    if name == "pipeline.toml":
        text = PIPELINE_FILE.read_text()
        if 'table_mappings = ""' not in text:
            raise InitError(f"{PIPELINE_FILE}: no `table_mappings = \"\"` line to point at "
                            f"{MAPPINGS}")
        return HEADER + text.replace('table_mappings = ""', f'table_mappings = "{MAPPINGS}"')
    if name == MAPPINGS:
        p = defaults
        doc = default_mappings(p.source.schema, p.source.table, p.dms.change_seq_column,
                               p.dms.before_image_columns)
        return json.dumps(doc, indent=2) + "\n"
    return (TEMPLATES / TEMPLATE_OF[name]).read_text()


def _write_new(path: Path, text: str) -> bool:
    """Writes a new file; False when one appeared there meanwhile (kept)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:
        return False
    with os.fdopen(fd, "w") as out:
        out.write(text)
    return True


def init_project(folder: Path, say: Callable[[str], None] = print, *,
                 defaults: PipelineSettings) -> InitPlan:
    """Writes the missing FILES into `folder` (created if need be), keeps the others."""
    if folder.exists() and not folder.is_dir():
        raise InitError(f"{folder}: is a file, not a folder; `cdclab init` writes "
                        f"{', '.join(FILES)} into a folder (give another path)")
    folder.mkdir(parents=True, exist_ok=True)
    root = folder.resolve()
    say(f"cdclab init: {root}")
    plan = plan_init(f for f in FILES if os.path.lexists(root / f))
    written, kept = [], list(plan.keep)
    for name in plan.write:
        target = root / name
        if not inside(root, target.parent.resolve()):
            raise InitError(f"{target}: its folder leads outside {root} (a symlink?); "
                            "`cdclab init` writes only inside the folder")
        target.parent.mkdir(parents=True, exist_ok=True)
        if not inside(root, target.parent.resolve()):
            raise InitError(f"{target}: its folder leads outside {root}")
        (written if _write_new(target, render(name, defaults)) else kept).append(name)
    for name in FILES:
        if name in written:
            say(f"  wrote {name}")
        elif name in kept:
            say(f"  kept  {name} (already there: yours, not overwritten)")
    say(f"next: cd {root} && cdclab tables   (the pipeline it describes)")
    return InitPlan(tuple(written), tuple(kept))
