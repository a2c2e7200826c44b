"""`cdclab notebook`: JupyterLab on the running stack, notebooks/ as its root.

The kernels inherit CDCLAB_STATE_DIR and every key of the stack's configuration, so
`cdclab.lab.connect()` in a notebook reaches exactly the stack that was checked here.
Embedded stack: its services must be running (stack.json PIDs). Compose `jupyter` service
(no stack.json, keys in the environment): the endpoints must answer.
"""

from __future__ import annotations

import argparse
import os
import secrets
import socket
import sys
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import urlsplit

from cdclab.lab import LabError, stack_env
from cdclab.services.base import LOOPBACK, ServiceError
from pipeline_contract import resources, settings
from pipeline_contract.settings import PipelineSettings

NOTEBOOKS_DIR = resources.resource("notebooks")
DEFAULT_PORT = 8888
NEEDED = ("postgres", "minio", "iceberg-rest")  # what every notebook reads
PIPELINE = ("glue", "emitter", "watcher")  # what notebook 03 needs to see its changes land
TOKEN_ENV = "JUPYTER_TOKEN"  # read by Jupyter Server; keeps the token out of `ps`


def say(msg: str) -> None:
    print(f"cdclab: {msg}", flush=True)


# --- pure logic -------------------------------------------------------------------------
def jupyter_command(
    python: str, root: Path, ip: str, port: int, open_browser: bool, as_root: bool
) -> list[str]:
    cmd = [
        python, "-m", "jupyterlab", f"--ServerApp.root_dir={root}", f"--ip={ip}",
        f"--port={port}",
        "--ServerApp.port_retries=0",  # a busy port is an error, not a different URL
    ]
    if not open_browser:
        cmd.append("--no-browser")
    if as_root:  # CI and containers-as-root; Jupyter refuses root otherwise
        cmd.append("--allow-root")
    return cmd


def browse_url(ip: str, port: int, token: str) -> str:
    host = LOOPBACK if ip in ("0.0.0.0", "") else ip
    return f"http://{host}:{port}/lab?token={token}"


def endpoints(env: Mapping[str, str]) -> list[tuple[str, str, int]]:
    """(what, host, port) of the servers a notebook talks to."""
    found = []
    for what, key, default_port in (
        ("postgres", settings.ENV_PG_DSN, 5432),
        ("S3 (MinIO)", settings.ENV_S3_ENDPOINT, 80),
        ("Iceberg REST catalog", settings.ENV_CATALOG_URI, 80),
    ):
        parts = urlsplit(env[key])
        found.append((what, parts.hostname or LOOPBACK, parts.port or default_port))
    return found


# --- I/O ----------------------------------------------------------------------------------
def _answers(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=2):
            return True
    except OSError:
        return False


def running_stack_env(state_dir: Path, pipeline: PipelineSettings) -> dict[str, str]:
    """The running stack's configuration, or a ServiceError that says what to start."""
    from cdclab.supervisor import ENV_FILE, STACK_FILE, Stack, read_env_file

    embedded = (state_dir / STACK_FILE).exists()
    if embedded:
        stack = Stack(state_dir, pipeline=pipeline)
        missing = [n for n in NEEDED if stack.pid_of(n) is None]
        if missing:
            raise ServiceError(
                f"the stack in {state_dir} is not running ({', '.join(missing)} stopped). "
                "Start it with `cdclab up` (or `cdclab demo`)."
            )
        idle = [n for n in PIPELINE if stack.pid_of(n) is None]
        if idle:
            say(f"note: {', '.join(idle)} not running; changes will not reach silver "
                "(notebook 03 needs them): `cdclab up`")
    try:
        file_env = read_env_file(state_dir / ENV_FILE) if embedded else {}
        env = stack_env(state_dir, file_env, os.environ)
    except LabError as exc:
        raise ServiceError(str(exc)) from exc
    if not embedded:
        down = [f"{w} at {h}:{p}" for w, h, p in endpoints(env) if not _answers(h, p)]
        if down:
            raise ServiceError(f"the stack does not answer: {', '.join(down)}. "
                               "Start it with `cdclab up` or `docker compose up -d`.")
    return env


def cmd_notebook(args: argparse.Namespace) -> int:
    state_dir = settings.state_dir().resolve()
    env = running_stack_env(state_dir, settings.load_pipeline())
    root = Path(args.dir).resolve()
    if not root.is_dir():
        raise ServiceError(f"notebook directory {root} does not exist")
    given = os.environ.get(TOKEN_ENV)  # containers: generated with the stack's credentials
    token = given or secrets.token_urlsafe(24)
    cmd = jupyter_command(sys.executable, root, args.ip, args.port, not args.no_browser,
                          os.geteuid() == 0)
    say(f"JupyterLab on the stack in {state_dir}, notebooks in {root}")
    if given:  # a container's log is no place for the token
        say(f"open {browse_url(args.ip, args.port, '<token>')}; the URL with its token: "
            "docker compose exec jupyter python -m cdclab.compose_probe jupyter-url")
    else:
        say(f"open {browse_url(args.ip, args.port, token)}")
    # exec: Jupyter itself gets the signals (^C, `docker stop`), no orphaned server.
    os.execve(cmd[0], cmd, {**os.environ, **env, TOKEN_ENV: token})
    return 0  # not reached


def add_notebook_command(subparsers) -> None:
    p = subparsers.add_parser("notebook", help="JupyterLab on the running stack (notebooks/)")
    p.add_argument("--ip", default=LOOPBACK, help="address to listen on (default %(default)s)")
    p.add_argument("--port", type=int, default=DEFAULT_PORT)
    p.add_argument("--no-browser", action="store_true", help="do not open a browser")
    p.add_argument("--dir", default=str(NOTEBOOKS_DIR), help="notebook root (default notebooks/)")
    p.set_defaults(func=cmd_notebook)
