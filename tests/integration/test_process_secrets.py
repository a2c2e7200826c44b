"""No process of the stack holds a secret it does not use, on both backends.

Every process of every service (the server, what it starts: the Spark JVM, the Glue runs'
processes, PySpark's workers; in containers also `cdclab serve` and the container's init)
is read from /proc as the host sees it, and each secret of the stack found in its
environment is named: the MinIO root secret, each service user's secret, the PostgreSQL
password, the catalog's and Jupyter's tokens. What each service may hold is written out
here, independently of the services' own declarations (cdclab/services/*.py `secrets`).
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from cdclab.services.base import ENV_JUPYTER_TOKEN, ENV_PG_PASSWORD
from glue_local.runner import run_start
from pipeline_contract import minio_users, settings
from tests.resources.stack import CONTAINERS

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ROOT, PG, CATALOG, JUPYTER = "minio root", "postgres password", "catalog token", "jupyter token"


def user(name: str) -> str:
    return f"MinIO user {name}"


USERS = {user(n) for n in minio_users.SERVICES}
# what each service's processes may hold; `server`: the service's own program, `children`:
# what it starts; in containers `serve` is `cdclab serve` (its set-up and health checks)
ALLOWED = {
    "postgres": {"server": set(), "serve": {PG}},
    "minio": {"server": {ROOT}, "serve": {ROOT} | USERS},
    "iceberg-rest": {"server": {user("iceberg-rest"), CATALOG}, "serve": {CATALOG}},
    # the Glue API checks its clients' signatures: the admin's (root) and the watcher's
    "glue": {"server": {user("glue"), CATALOG, ROOT, user("watcher")},
             "children": {user("glue")}, "serve": set()},
    "emitter": {"server": {user("emitter"), PG}, "serve": set()},
    "watcher": {"server": {user("watcher")}, "serve": set()},
    "keeper": {"server": set()},
}


def secret_values(creds: dict[str, str]) -> dict[str, str]:
    """secret value -> its name, from the stack's credentials."""
    out = {creds[settings.ENV_SECRET_KEY]: ROOT, creds[ENV_PG_PASSWORD]: PG,
           creds[settings.ENV_CATALOG_TOKEN]: CATALOG}
    if creds.get(ENV_JUPYTER_TOKEN):
        out[creds[ENV_JUPYTER_TOKEN]] = JUPYTER
    for name, (_access, secret) in minio_users.parse_users(
            creds[minio_users.ENV_MINIO_USERS]).items():
        out[secret] = user(name)
    return out


def environ(pid: int) -> str | None:
    try:
        return Path(f"/proc/{pid}/environ").read_bytes().decode(errors="replace")
    except OSError:  # ended meanwhile
        return None


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()[:120]
    except OSError:
        return "?"


def children_of(pid: int) -> list[int]:
    """Every descendant of `pid` (by parent, whatever their session)."""
    parents: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            parents.setdefault(ppid, []).append(int(entry.name))
    out, todo = [], [pid]
    while todo:
        for child in parents.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def held(pid: int, values: dict[str, str]) -> set[str] | None:
    text = environ(pid)
    return None if text is None else {name for value, name in values.items() if value in text}


def check(role_pids: dict[tuple[str, str], list[int]], values: dict[str, str]) -> None:
    wrong = []
    for (service, role), pids in role_pids.items():
        allowed = ALLOWED[service][role]
        for pid in pids:
            found = held(pid, values)
            if found is not None and found - allowed:
                wrong.append(f"{service} {role} pid {pid} ({cmdline(pid)}): "
                             f"{sorted(found - allowed)}")
    assert not wrong, "secrets where they are not used:\n" + "\n".join(wrong)


def test_every_process_holds_only_the_secrets_its_service_uses(stack):
    stack.start_pipeline()
    if stack.backend == CONTAINERS:
        check_containers(stack)
        return
    creds = json.loads((stack.state_dir / "credentials.json").read_text())
    values = secret_values(creds)
    # the warm driver and the spare run process come later: the JVM and the spare, and in
    # fork mode (the default) the fork server the spare comes from
    expected = 3 if run_start({**os.environ, **stack.env}) == "fork" else 2
    deadline = time.monotonic() + 180
    while len(children_of(stack.pid_of("glue"))) < expected and time.monotonic() < deadline:
        time.sleep(1)
    servers = {service: stack.pid_of(service) for service in ALLOWED}
    for service, pid in servers.items():
        assert pid is not None, f"{service} is not running"
    # a service the keeper restarted is the keeper's child: it is checked as its service
    others = {p for s, pid in servers.items() if s != "keeper" for p in [pid, *children_of(pid)]}
    role_pids: dict[tuple[str, str], list[int]] = {}
    for service, pid in servers.items():
        role_pids[(service, "server")] = [pid]
        if "children" in ALLOWED[service]:
            role_pids[(service, "children")] = children_of(pid)
        else:
            role_pids[(service, "server")] += [p for p in children_of(pid) if p not in others]
    # the JVM, a run process kept ready (and the fork server), Python workers once a run
    # starts some
    assert len(role_pids[("glue", "children")]) >= expected
    check(role_pids, values)


def check_containers(stack) -> None:
    """The host reads each container's processes (`docker top`: host PIDs); `cdclab
    serve` is the container's main process under its init, the rest the service's."""
    def compose(*args: str) -> str:
        return stack.compose(*args)

    creds_file = compose("run", "--rm", "--no-deps", "--entrypoint", "cat", "cli",
                         "/run/cdclab/credentials.json")
    values = secret_values(json.loads(creds_file))
    role_pids: dict[tuple[str, str], list[int]] = {}
    for service in ALLOWED:
        if service == "keeper":
            continue  # Docker's restart policy keeps the containers
        cid = compose("ps", "--quiet", service).strip()
        top = subprocess.run(["docker", "top", cid, "-eo", "pid,ppid,args"],
                             capture_output=True, text=True, check=True).stdout.splitlines()[1:]
        procs = [(int(line.split()[0]), int(line.split()[1]), line) for line in top]
        serve = [pid for pid, _, args in procs if "cdclab serve" in args]
        assert serve, f"{service}: no `cdclab serve` process in {top}"
        role_pids[(service, "serve")] = serve
        rest = [pid for pid, _, _ in procs if pid not in serve]
        if "children" in ALLOWED[service]:
            server = [pid for pid, _, args in procs if "-m glue_local --port" in args]
            role_pids[(service, "server")] = server
            role_pids[(service, "children")] = [p for p in rest if p not in server]
        else:
            role_pids[(service, "server")] = rest
    check(role_pids, values)
