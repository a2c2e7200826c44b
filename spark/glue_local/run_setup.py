"""Fetching what a run's special parameters name: scripts, files, jars, Python modules.

Paths are `s3://bucket/key` (read with boto3, so MinIO locally and S3 on AWS) or local
paths / `file://` URIs. `--additional-python-modules` are installed with pip from the
index pip is configured with (or wheel paths), once per distinct request, into
`<state>/glue/python-modules/<key>`; the install's output goes to the run's log.
"""

from __future__ import annotations

import fcntl
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from glue_local import run_args


def fetch(location: str, dest_dir: Path) -> Path:
    """A copy of `location` in dest_dir (s3:// downloaded; a local file copied)."""
    dest_dir.mkdir(parents=True, exist_ok=True)
    if location.startswith("s3://"):
        import boto3
        from botocore.config import Config

        bucket, _, key = location[5:].partition("/")
        if not key or key.endswith("/"):
            raise run_args.RunArgumentError(f"{location} names no object")
        dest = dest_dir / Path(key).name
        boto3.client("s3", config=Config(s3={"addressing_style": "path"})).download_file(
            bucket, key, str(dest))
        return dest
    path = Path(location.removeprefix("file://"))
    if not path.is_file():
        raise FileNotFoundError(f"{location} does not exist")
    dest = dest_dir / path.name
    if dest.resolve() != path.resolve():
        shutil.copyfile(path, dest)
    return dest


def resolve_script(location: str, work_dir: Path) -> Path:
    """Command.ScriptLocation: an s3:// object is downloaded; a local path is used in place
    (so its neighbours stay importable, as in the lab's own jobs/)."""
    if location.startswith("s3://"):
        return fetch(location, work_dir)
    path = Path(location.removeprefix("file://"))
    if not path.is_file():
        raise FileNotFoundError(f"Command.ScriptLocation {location} does not exist")
    return path


def python_paths(locations: list[str], work_dir: Path) -> list[str]:
    """--extra-py-files: .py files go into one directory on the path; .zip/.whl/.egg
    archives are put on the path themselves (Python imports from them)."""
    paths: list[str] = []
    plain = work_dir / "py-files"
    for location in locations:
        if location.endswith(".py"):
            fetch(location, plain)
            if str(plain) not in paths:
                paths.append(str(plain))
        else:
            paths.append(str(fetch(location, work_dir / "py-archives")))
    return paths


def install_modules(requirements: list[str], options: list[str], cache_root: Path,
                    work_dir: Path, log: Callable[[str], None]) -> str:
    """pip install --target, once per (request, interpreter); returns the directory."""
    local = []
    for req in requirements:  # wheels named by path: fetch them first
        local.append(str(fetch(req, work_dir / "wheels")) if req.startswith("s3://") else req)
    key = run_args.modules_key(local, options, sys.version)
    target = cache_root / key
    cache_root.mkdir(parents=True, exist_ok=True)
    with open(cache_root / f"{key}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # two runs asking the same: one installs
        if (target / ".complete").exists():
            log(f"--additional-python-modules: reusing {target.name}")
            return str(target)
        shutil.rmtree(target, ignore_errors=True)
        log(f"--additional-python-modules: pip install {' '.join(local)}")
        proc = subprocess.run(
            [sys.executable, "-m", "pip", "install", "--no-input", "--disable-pip-version-check",
             "--target", str(target), *options, *local],
            capture_output=True, text=True, check=False)
        for line in (proc.stdout + proc.stderr).splitlines():
            log(f"pip: {line}")
        if proc.returncode != 0:
            tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["?"]
            raise run_args.RunArgumentError(
                f"--additional-python-modules: pip failed ({proc.returncode}): {tail[0]}")
        (target / ".complete").touch()
    return str(target)
