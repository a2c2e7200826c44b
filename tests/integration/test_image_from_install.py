"""`cdclab image build` from an installed cdclab (a wheel) builds from the same files as
the checkout: the installed code laid out as a checkout holds every file the image uses,
byte for byte (the build itself is make docker-build's, run by the containers stage)."""

from __future__ import annotations

import filecmp
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# what the image does not hold: the checkout's tests, docs, benches, examples, CI and
# editor/ignore files (the context's .dockerignore keeps local state out either way)
NOT_IN_THE_IMAGE = ("tests/", "docs/", "bench/", "examples/", ".ci/", ".github/")
NOT_IN_THE_IMAGE_FILES = {".dockerignore", ".env.example", ".gitignore", ".hadolint.yaml",
                          "Makefile", "README.md", "minio/README.md"}

pytestmark = [pytest.mark.integration]


def test_the_installed_cdclab_lays_out_as_its_checkout(installed_cdclab: Path,
                                                       tmp_path: Path) -> None:
    dest = tmp_path / "context"
    done = subprocess.run(
        [str(installed_cdclab / "bin" / "python"), "-c",
         "import sys; from pathlib import Path; from cdclab.containers import lay_out; "
         "lay_out(Path(sys.argv[1]))", str(dest)],
        cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True,
                             check=True).stdout.split()
    wanted = [f for f in tracked if not f.startswith(NOT_IN_THE_IMAGE)
              and f not in NOT_IN_THE_IMAGE_FILES]
    missing = [f for f in wanted if not (dest / f).is_file()]
    assert missing == [], f"the installed cdclab lacks files the image holds: {missing}"
    differ = [f for f in wanted if not filecmp.cmp(ROOT / f, dest / f, shallow=False)]
    assert differ == []
    assert all((dest / "scripts" / s.name).stat().st_mode & 0o111
               for s in (ROOT / "scripts").glob("*.sh"))
