"""The containers' health check: cheap, and true only for this start once it is ready."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time

import pytest

from cdclab import compose_probe
from cdclab.serve import ready_marker


def test_not_ready_until_serve_writes_its_marker_then_the_port_must_answer(
        monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("CDCLAB_STATE_DIR", str(tmp_path))
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        monkeypatch.setenv("CDCLAB_PORT_GLUE", str(server.getsockname()[1]))
        assert compose_probe.health("glue") is False  # starting
        ready_marker("glue").write_text("1")
        assert compose_probe.health("glue") is True
    assert compose_probe.health("glue") is False  # ready once, but no longer answering


def test_the_emitter_is_healthy_only_while_streaming(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("CDCLAB_STATE_DIR", str(tmp_path))
    ready_marker("emitter").write_text("1")
    state = tmp_path / "emitter" / "state.json"
    state.parent.mkdir()
    state.write_text(json.dumps({"phase": "full_load"}))
    assert compose_probe.health("emitter") is False
    state.write_text(json.dumps({"phase": "streaming"}))
    assert compose_probe.health("emitter") is True


def test_the_check_imports_no_client_library(tmp_path) -> None:
    """Nor does the registry it reads: the launchers it imports leave their boxes' heavy
    modules and clients to the functions that use them."""
    libraries = ("boto3", "botocore", "psycopg", "pyarrow", "pyspark")
    code = ("import sys; from cdclab import compose_probe; compose_probe.health('watcher'); "
            f"print(sorted(m for m in {libraries!r} if m in sys.modules))")
    path = {k: v for k, v in os.environ.items() if k == "PYTHONPATH"}  # the code under test
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={"CDCLAB_STATE_DIR": str(tmp_path), "PATH": "/usr/bin:/bin", **path})
    assert done.stdout.strip() == "[]", done.stderr


SCRIPT = compose_probe.settings.REPO_ROOT / "scripts" / "container-health.sh"


def shell_health(name: str, env: dict[str, str]) -> bool:
    return subprocess.run(["bash", str(SCRIPT), name], env=env,
                          capture_output=True).returncode == 0


def test_the_shell_check_docker_runs_agrees_with_the_python_rules(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("CDCLAB_STATE_DIR", str(tmp_path))
    env = {"CDCLAB_STATE_DIR": str(tmp_path), "PATH": "/usr/bin:/bin"}
    state = tmp_path / "emitter" / "state.json"
    state.parent.mkdir()
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = str(server.getsockname()[1])
        monkeypatch.setenv("CDCLAB_PORT_MINIO", port)
        env["CDCLAB_PORT_MINIO"] = port
        cases = [("minio", None), ("emitter", "full_load"), ("emitter", "streaming"),
                 ("emitter", "loaded"), ("watcher", None)]
        for ready in (False, True):
            for name, phase in cases:
                if ready:
                    ready_marker(name).write_text("1")
                if phase:
                    state.write_text(json.dumps({"phase": phase}, indent=1))
                assert shell_health(name, env) is compose_probe.health(name), (name, phase)
    assert shell_health("minio", env) is compose_probe.health("minio") is False
    watcher = tmp_path / "watcher" / "state.json"
    watcher.parent.mkdir()
    watcher.write_text("{}")
    assert shell_health("watcher", env) is compose_probe.health("watcher") is True
    old = time.time() - compose_probe.settings.WATCHER_STALE_SECONDS - 5
    os.utime(watcher, (old, old))  # not listing any more: hung, or S3 unreachable
    assert shell_health("watcher", env) is compose_probe.health("watcher") is False


def test_the_shell_check_knows_every_service_of_the_registry() -> None:
    """scripts/container-health.sh spells the registry out (Docker runs it every 2 s, so
    no Python): each service has its case, each server its port variable and default."""
    from cdclab.services import registry

    text = SCRIPT.read_text()
    for info in registry.SERVICES:
        assert f"\n  {info.name})" in text, info.name
    for name, port in registry.PUBLISHED.items():
        assert f'{name}) port="${{{port.env_key}:-{port.container}}}"' in text, name
    for name, state_file in registry.STATE_FILES.items():
        assert f"$state/{state_file}" in text, name


def test_the_spark_worker_gets_glues_s3_pair_and_nothing_else(monkeypatch, tmp_path) -> None:
    from cdclab import credentials
    from glue_local.server import ENV_GLUE_CLIENTS
    from pipeline_contract import settings

    creds = {**credentials.generate(), credentials.JUPYTER_TOKEN: "jt"}
    own = compose_probe.per_service_credentials(creds)
    worker = own[compose_probe.SPARK_WORKER]
    assert set(worker) == {settings.ENV_ACCESS_KEY, settings.ENV_SECRET_KEY, settings.ENV_REGION}
    assert worker.items() <= own["glue"].items()  # the runner's own MinIO user, not root
    assert worker[settings.ENV_ACCESS_KEY] != creds[settings.ENV_ACCESS_KEY]
    assert {settings.ENV_CATALOG_TOKEN, ENV_GLUE_CLIENTS} <= set(own["glue"])
    # the launcher puts the file in its environment and hands Spark its arguments as given
    secrets = tmp_path / "credentials.json"
    secrets.write_text(json.dumps(worker))
    monkeypatch.setenv(settings.ENV_CREDENTIALS_FILE, str(secrets))
    for key in compose_probe.EXECUTOR_KEYS:  # the launcher sets them: put back afterwards
        monkeypatch.delenv(key, raising=False)
    started: list = []

    def execvp(file: str, args: list[str]) -> None:
        started.append((file, args, os.environ.get(settings.ENV_ACCESS_KEY)))
        raise SystemExit(0)

    monkeypatch.setattr(compose_probe.os, "execvp", execvp)
    with pytest.raises(SystemExit):
        compose_probe.main(["spark-worker", "--cores", "2", "spark://m:7077"])
    assert started == [("spark-class", ["spark-class", compose_probe.WORKER_CLASS, "--cores",
                                        "2", "spark://m:7077"], worker[settings.ENV_ACCESS_KEY])]


def test_the_runner_is_on_the_cluster_only_when_its_application_holds_cores() -> None:
    def master(*apps: tuple[str, int]) -> dict:
        return {"activeapps": [{"id": f"app-{i}", "name": n, "cores": c}
                               for i, (n, c) in enumerate(apps)]}

    assert compose_probe.cluster_app(master(("cdclab-glue", 2)), "cdclab-glue")["id"] == "app-0"
    assert compose_probe.cluster_app(master(("other", 2), ("cdclab-glue", 1)),
                                     "cdclab-glue")["id"] == "app-1"
    assert compose_probe.cluster_app(master(("cdclab-glue", 0)), "cdclab-glue") is None
    assert compose_probe.cluster_app(master(("cdclab-gluey", 2)), "cdclab-glue") is None
    assert compose_probe.cluster_app({}, "cdclab-glue") is None
