"""examples/my-pipeline, a user's own repository, passes its tests from outside the
checkout with cdclab installed as a package (a wheel with the `pytest` extra): the
plugin's fixtures start the lab on the backend this run uses (embedded, or containers
from the cdclab image), run the user's Glue script as a job, and reconcile; the stack
runs the user's pipeline.toml (a setting changed from the lab's default shows in the DMS
files)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.resources.installed import clean_env
from tests.resources.stack import CONTAINERS, backend

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "my-pipeline"

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.launches]


def test_the_example_repository_passes_with_cdclab_installed(installed_cdclab: Path,
                                                             tmp_path: Path) -> None:
    repo = tmp_path / "my-pipeline"
    shutil.copytree(EXAMPLE, repo)
    # a setting of the user's own, which the containers see only through their mount
    settings = repo / "pipeline.toml"
    default = 'timestamp_column_name = "last_updated_ts"'
    assert default in settings.read_text()
    settings.write_text(settings.read_text().replace(
        default, 'timestamp_column_name = "dms_commit_ts"'))
    env = clean_env()
    if backend() == CONTAINERS:
        env["TESTCONTAINERS_RYUK_DISABLED"] = "true"
    done = subprocess.run(
        [str(installed_cdclab / "bin" / "pytest"), "-q", "-p", "no:cacheprovider",
         f"--cdclab-backend={backend()}"],
        cwd=repo, env=env, capture_output=True, text=True, timeout=1500)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "6 passed" in done.stdout, done.stdout[-2000:]
    assert not list(repo.glob(".cdclab")), "the private stack left its state in the repo"
