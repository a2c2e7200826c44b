"""The container path from wherever cdclab is installed: `cdclab image build` builds the
cdclab/runtime image from the code that is installed, `cdclab compose ...` runs docker
compose on the lab's docker-compose.yml with your pipeline.toml.

In a checkout the build context is the checkout (what `make docker-build` sends). An
installed cdclab (a wheel) has the same files in other places: the packages in
site-packages and the lab's files (the Dockerfile, docker-compose.yml, versions.env, the
locks, the JVM sources, scripts/) in the data package `cdclab_lab`. They are laid out
again as the checkout has them, in a temporary folder, and that is the context: the image
holds exactly the code that is installed, and building needs Docker only (Maven, Go and
the JDK run inside the build's stages).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path

from pipeline_contract import resources, settings

# import name -> its folder in a checkout (pyproject.toml [tool.setuptools] package-dir;
# tests/unit/test_containers_cli.py holds the two equal)
PACKAGE_FOLDERS = {
    "pipeline_contract": "pipeline_contract",
    "cdclab": "cdclab",
    "dms_emitter": "dms_emitter",
    "lambda_shim": "lambda_shim",
    "glue_local": "spark/glue_local",
    "deploy": "deploy",
}
BUILD_SCRIPT = "scripts/docker-build.sh"
COMPOSE_FILE = "docker-compose.yml"
ENV_PIPELINE_DIR = "CDCLAB_PIPELINE_DIR"  # docker-compose.yml's x-pipeline-mount source
SKIPPED = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")


class ImageBuildError(RuntimeError):
    """The image could not be built: what failed, and where its output is."""


def package_folder(name: str) -> Path:
    spec = importlib.util.find_spec(name)
    folders = list(spec.submodule_search_locations or []) if spec else []
    if not folders:
        raise ImageBuildError(f"package {name!r} is not installed: reinstall cdclab")
    return Path(folders[0])


def lay_out(dest: Path) -> Path:
    """The installed cdclab laid out as a checkout under `dest` (which must be empty)."""
    shutil.copytree(resources.lab_root(), dest, ignore=SKIPPED, dirs_exist_ok=True)
    for name, folder in PACKAGE_FOLDERS.items():
        shutil.copytree(package_folder(name), dest / folder, ignore=SKIPPED,
                        dirs_exist_ok=True)
    for script in (dest / "scripts").glob("*.sh"):  # a wheel may not keep the mode bits
        script.chmod(0o755)
    missing = [f for f in ("pyproject.toml", "spark/Dockerfile", BUILD_SCRIPT)
               if not (dest / f).is_file()]
    if missing:
        raise ImageBuildError(f"the installed cdclab lacks {', '.join(missing)} (looked in "
                              f"{resources.lab_root()}): reinstall cdclab")
    return dest


def build(say: Callable[[str], None]) -> None:
    """Builds the image through the checkout's own scripts/docker-build.sh (one line per
    step; each step's whole output in the cache's docker-build.log)."""
    if shutil.which("docker") is None:
        raise ImageBuildError("`docker` is not on PATH: install Docker (with its Compose "
                              "plugin), then run `cdclab image build` again")
    with tempfile.TemporaryDirectory(prefix="cdclab-image-") as tmp:
        if resources.from_checkout():
            root = resources.CHECKOUT
            say(f"build context: the checkout {root}")
        else:
            root = lay_out(Path(tmp) / "context")
            say(f"build context: the installed cdclab, laid out in {root}")
        done = subprocess.run(["bash", str(root / BUILD_SCRIPT)], cwd=root, env=os.environ,
                              check=False)
    if done.returncode != 0:
        raise ImageBuildError(f"{BUILD_SCRIPT} failed (exit {done.returncode}); its log is "
                              "named above")


def pipeline_dir() -> Path:
    """The folder of the pipeline.toml in use (yours from your repository, else the
    lab's): what every container mounts read-only at /pipeline."""
    return (resources.user_pipeline_file() or settings.PIPELINE_FILE).resolve().parent


def compose_command(args: list[str]) -> tuple[list[str], dict[str, str]]:
    """`docker compose` on the lab's docker-compose.yml, and the environment naming your
    pipeline folder (already named in the environment: kept)."""
    root = resources.lab_root()
    env = {**os.environ}
    env.setdefault(ENV_PIPELINE_DIR, str(pipeline_dir()))
    return ["docker", "compose", "--project-directory", str(root),
            "-f", str(root / COMPOSE_FILE), *args], env
