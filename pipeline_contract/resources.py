"""Where the lab's own files are, and where the user's are.

The lab's files (versions.env, postgres/, jobs/, iceberg_rest/, spark/glue-jvm/, the
notebooks, docker-compose.yml, scripts/) are the checkout when cdclab runs from one
(`make setup`, an editable install), else the copy a wheel installs as the data package
`cdclab_lab` (pyproject [tool.setuptools.package-data]). The user's files (their
pipeline.toml, the table mappings and scripts it names) are relative to the folder
holding their pipeline.toml; a relative path it names that is not there is the lab's
(the shipped jobs/bronze_to_silver.py).
"""

from __future__ import annotations

import importlib.util
import os
from functools import cache
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parent.parent
DATA_PACKAGE = "cdclab_lab"  # the wheel's copy of the lab's files
ENV_PIPELINE_FILE = "CDCLAB_PIPELINE_FILE"  # (also in settings; kept here: no import cycle)


class ResourceError(RuntimeError):
    """A file of the lab is missing: a broken install, named with what and where."""


def from_checkout(root: Path = CHECKOUT) -> bool:
    """True when the code runs from a checkout of the lab (its versions.env beside it)."""
    return (root / "versions.env").is_file() and (root / "pyproject.toml").is_file()


@cache
def lab_root() -> Path:
    """The folder holding the lab's files: the checkout, else the installed copy."""
    if from_checkout():
        return CHECKOUT
    spec = importlib.util.find_spec(DATA_PACKAGE)
    for folder in (spec.submodule_search_locations or []) if spec else []:
        if (Path(folder) / "versions.env").is_file():
            return Path(folder)
    raise ResourceError(
        f"the lab's files (versions.env, jobs/, postgres/ ...) are neither beside {CHECKOUT} "
        f"(a checkout) nor in an installed package {DATA_PACKAGE!r}: reinstall cdclab "
        "(pip install <checkout> or pip install -e <checkout>)")


def resource(*parts: str) -> Path:
    """One of the lab's files, e.g. resource("postgres", "schema.sql")."""
    return lab_root().joinpath(*parts)


def user_pipeline_file(cwd: Path | None = None) -> Path | None:
    """The user's pipeline.toml: $CDCLAB_PIPELINE_FILE, else (installed, not a checkout)
    ./pipeline.toml when there is one; None means the lab's default."""
    if named := os.environ.get(ENV_PIPELINE_FILE):
        return Path(named)
    here = (cwd or Path.cwd()) / "pipeline.toml"
    return here if not from_checkout() and here.is_file() else None


def project_dir(pipeline_file: str | os.PathLike[str] | None = None) -> Path:
    """The user's project folder: the one holding `pipeline_file`, else the user's
    pipeline.toml's; without either, the lab's own (its default pipeline.toml)."""
    named = pipeline_file or user_pipeline_file()
    return Path(named).resolve().parent if named else lab_root()


def in_project(relative: str, base: Path, lab: Path) -> Path:
    """Pure rule for a path pipeline.toml names: absolute stays; relative is the user's
    file under `base` when it is there, else the lab's under `lab` when that is there,
    else the user's (so an error names where the user's file was looked for)."""
    path = Path(relative)
    if path.is_absolute():
        return path
    mine, shipped = base / path, lab / path
    if mine.exists() or not shipped.exists():
        return mine
    return shipped


def project_file(relative: str, pipeline_file: str | os.PathLike[str] | None = None) -> Path:
    """A file pipeline.toml names (table mappings, the job's script), resolved by in_project."""
    return in_project(relative, project_dir(pipeline_file), lab_root())
