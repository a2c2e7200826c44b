"""pyproject's dependency ranges (installing cdclab as a package) hold the lab's own pins
(requirements.lock): one set of versions, whichever way cdclab is installed."""

from __future__ import annotations

import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

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
