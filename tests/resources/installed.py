"""Test resource: cdclab installed as a package (a wheel, not editable) into a fresh
virtualenv outside the checkout, with the `pytest` extra, as a user would have it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from cdclab.private_stack import temp_state_dir
from pipeline_contract import settings

ROOT = Path(__file__).resolve().parents[2]


def clean_env(uv_cache: Path | None = None) -> dict[str, str]:
    """The environment of a user's shell: none of the lab's or this venv's variables, the
    download cache kept (bootstrap's: nothing is fetched twice) unless `uv_cache` names
    another (an empty one: a cold install, every package from the configured index)."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("CDCLAB_", "VIRTUAL_ENV", "PYTHON"))}
    env["CDCLAB_CACHE"] = str(settings.cache_dir())
    env["UV_CACHE_DIR"] = str(uv_cache or settings.cache_dir() / "uv")
    return env


def find_uv() -> str | None:
    """uv on PATH, else the one scripts/bootstrap.sh put beside this Python."""
    uv = shutil.which("uv") or str(Path(sys.executable).with_name("uv"))
    return uv if Path(uv).exists() else None


@pytest.fixture(scope="session")
def installed_cdclab() -> Iterator[Path]:
    """The virtualenv's folder; its bin/ has cdclab and pytest (with cdclab's plugin). In a
    folder others may traverse: as root, the embedded PostgreSQL runs as another user,
    from the binary the virtualenv holds."""
    uv = find_uv()
    if uv is None:
        pytest.skip("uv not found (scripts/bootstrap.sh installs it into .venv)")
    with temp_state_dir("installed") as folder:
        venv = folder / "venv"
        install(uv, venv, cached_first=True)
        yield venv


def install(uv: str, venv: Path, env: dict[str, str] | None = None,
            cached_first: bool = False) -> None:
    """A fresh virtualenv at `venv` with this checkout as a wheel and its `pytest` extra,
    pinned by requirements.lock, resolved online as a user's install is; raises
    RuntimeError with uv's output when it fails. The checkout's wheel is always built
    anew: uv keys a directory's build by the mtime of its pyproject.toml, setup.py or
    setup.cfg (docs.astral.sh/uv/concepts/cache), and the code may have changed since.

    `cached_first`: the same packages from the cache when it holds them all, else online
    (resolving online re-reads every package's index page: ~25 s of a ~27 s install)."""
    env = env or clean_env()
    uv_run([uv, "venv", "-q", "--python", sys.executable, str(venv)], env)
    sources = [uv, "pip", "install", "-q", "--python", str(venv / "bin" / "python"),
               "--refresh-package", "cdclab", "-c", str(ROOT / "requirements.lock"),
               f"{ROOT}[pytest]"]
    if cached_first:
        try:
            uv_run([*sources, "--offline"], env)
            return
        except RuntimeError:
            pass
    uv_run(sources, env)


def uv_run(command: list[str], env: dict[str, str]) -> None:
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=900)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command[:3])} failed:\n{done.stderr[-4000:]}")
