"""pyproject's dependency ranges (installing cdclab as a package) hold the lab's own pins
(requirements.lock): one set of versions, whichever way cdclab is installed."""

from __future__ import annotations

import functools
import subprocess
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.resources.installed import clean_env

ROOT = Path(__file__).resolve().parents[2]


def locked() -> dict[str, str]:
    pins = {}
    for line in (ROOT / "requirements.lock").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if "==" in line:
            name, version = line.split("==", 1)
            pins[canonicalize_name(name.split("[")[0])] = version.strip()
    return pins


def declared() -> list[Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = [r for group in project["optional-dependencies"].values() for r in group]
    return [Requirement(r) for r in project["dependencies"] + extras]


def test_every_declared_range_holds_the_locked_version() -> None:
    pins = locked()
    for req in declared():
        name = canonicalize_name(req.name)
        if name == "cdclab":  # an extra naming the others
            continue
        assert name in pins, f"{req.name} is declared in pyproject.toml but not locked"
        assert req.specifier.contains(pins[name], prereleases=True), (
            f"requirements.lock pins {req.name}=={pins[name]}, outside {req}")


def test_every_direct_requirement_is_declared() -> None:
    names = {canonicalize_name(r.name) for r in declared()}
    for file in ("requirements-runtime.in", "requirements.in"):
        for line in (ROOT / file).read_text().splitlines():
            line = line.split("#", 1)[0].strip()
            if line and not line.startswith("-r"):
                req = Requirement(line)
                assert canonicalize_name(req.name) in names, f"{file}: {req.name} undeclared"


@pytest.mark.slow
def test_a_plain_install_works_outside_the_checkout(installed_cdclab: Path,
                                                    tmp_path: Path) -> None:
    """`pip install <checkout>` (a wheel, not editable) into a fresh virtualenv: cdclab
    runs from any folder, its lab files (versions.env, jobs/ ...) from the wheel."""
    env, venv = clean_env(), installed_cdclab
    run = functools.partial(subprocess.run, env=env, capture_output=True, text=True,
                            timeout=900)
    cdclab = str(venv / "bin" / "cdclab")
    work = tmp_path / "elsewhere"
    work.mkdir()
    env["CDCLAB_STATE_DIR"] = str(tmp_path / "state")
    done = run([cdclab, "--help"], cwd=work)
    assert done.returncode == 0 and "init" in done.stdout, done.stderr
    done = run([cdclab, "init", "repo"], cwd=work)
    assert done.returncode == 0, done.stderr
    assert "wrote pipeline.toml" in done.stdout
    assert (work / "repo" / "jobs" / "example_job.py").is_file()
    # settings from the user's pipeline.toml; the shipped job script from the wheel
    done = run([cdclab, "deploy", "--profile", "aws", "--dry-run"], cwd=work / "repo")
    assert done.returncode == 0, done.stderr
    assert "source: jobs/bronze_to_silver.py" in done.stdout
    where = run([str(venv / "bin" / "python"), "-c",
                 "from pipeline_contract import resources; print(resources.lab_root())"],
                cwd=work)
    assert Path(where.stdout.strip()).is_relative_to(venv), where.stdout + where.stderr
