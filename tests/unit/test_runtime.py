"""Which stack the CLI talks to: chosen by CDCLAB_RUNTIME, never guessed."""

from __future__ import annotations

import json

import pytest
from psycopg.conninfo import conninfo_to_dict

from cdclab import runtime
from cdclab.services.base import ServiceError
from pipeline_contract import settings
from pipeline_contract.settings import load_pipeline


def test_host_endpoints_use_the_published_loopback_ports() -> None:
    ports = runtime.published_ports({"CDCLAB_PORT_POSTGRES": "15432"})
    assert ports == {"postgres": 15432, "minio": 9000, "iceberg-rest": 8181, "glue": 8090}
    env = runtime.host_endpoints(ports, "airbnb_db")
    assert env[settings.ENV_PG_DSN] == "postgresql://127.0.0.1:15432/airbnb_db"
    assert env[settings.ENV_S3_ENDPOINT] == "http://127.0.0.1:9000"
    assert env[settings.ENV_CATALOG_URI] == "http://127.0.0.1:8181"
    assert env[settings.ENV_GLUE_ENDPOINT] == "http://127.0.0.1:8090"


def test_unset_port_variables_mean_the_well_known_ports() -> None:
    assert runtime.published_ports({"CDCLAB_PORT_GLUE": ""}) == {
        svc: port for svc, (_, port) in runtime.PUBLISHED.items()}


def test_the_runtime_is_configuration(monkeypatch, tmp_path) -> None:
    monkeypatch.delenv(settings.ENV_RUNTIME, raising=False)
    monkeypatch.setenv(settings.ENV_STATE_DIR, str(tmp_path))
    assert isinstance(runtime.current(load_pipeline()), runtime.EmbeddedRuntime)  # the default
    monkeypatch.setenv(settings.ENV_RUNTIME, "embedded")
    assert isinstance(runtime.current(load_pipeline()), runtime.EmbeddedRuntime)
    monkeypatch.setenv(settings.ENV_RUNTIME, "compose")
    assert isinstance(runtime.current(load_pipeline()), runtime.ComposeRuntime)
    monkeypatch.setenv(settings.ENV_RUNTIME, "kubernetes")
    with pytest.raises(ServiceError, match="embedded"):
        runtime.current(load_pipeline())


def test_inside_a_container_the_credentials_file_completes_the_env(tmp_path) -> None:
    creds = tmp_path / "credentials.json"
    creds.write_text(json.dumps({"CDCLAB_PG_USER": "u", "CDCLAB_PG_PASSWORD": "p@ss",
                                 settings.ENV_ACCESS_KEY: "k", settings.ENV_SECRET_KEY: "s"}))
    rt = runtime.ComposeRuntime(load_pipeline(), environ={
        settings.ENV_PG_DSN: "postgresql://postgres:5432/airbnb_db",
        settings.ENV_CREDENTIALS_FILE: str(creds), "HOME": "/nowhere"})
    assert rt.inside
    env = rt.env()
    assert conninfo_to_dict(env[settings.ENV_PG_DSN])["password"] == "p@ss"
    assert env[settings.ENV_SECRET_KEY] == "s" and "HOME" not in env
    with pytest.raises(ServiceError, match="from the host"):
        rt.log_command("emitter", follow=False, lines=5)


def test_from_the_host_logs_come_from_the_chosen_compose_project() -> None:
    rt = runtime.ComposeRuntime(load_pipeline(),
                                environ={settings.ENV_COMPOSE_PROJECT: "cdclab-test-y"})
    assert not rt.inside
    command = rt.log_command("glue", follow=True, lines=7)
    assert command[:2] == ["docker", "compose"]
    assert command[command.index("--project-name") + 1] == "cdclab-test-y"
    assert command[-5:] == ["logs", "--tail", "7", "-f", "glue"]


def test_from_the_host_without_docker_the_credentials_are_a_clear_error(monkeypatch) -> None:
    monkeypatch.setenv("PATH", "")
    rt = runtime.ComposeRuntime(load_pipeline(), environ={"CDCLAB_PORT_POSTGRES": "15432"})
    with pytest.raises(ServiceError, match="no docker CLI"):
        rt.env()


def test_the_state_dir_is_the_owners_only(tmp_path) -> None:
    """Credentials and data live there: 0700, or 0710 with the cdclab group as root
    (PostgreSQL then runs as the cdclab user and must traverse it, never list it; no other
    user may even traverse it)."""
    import grp
    import os
    import stat

    from cdclab.services.base import SERVER_OS_USER
    from cdclab.supervisor import Stack

    state = tmp_path / "state"
    state.mkdir(mode=0o755)
    Stack(state_dir=state, pipeline=load_pipeline())
    mode = stat.S_IMODE(state.stat().st_mode)
    try:
        server_group = grp.getgrnam(SERVER_OS_USER).gr_gid if os.geteuid() == 0 else None
    except KeyError:  # PostgreSQL's start creates it
        server_group = None
    assert mode == (0o710 if server_group is not None else 0o700)
    if server_group is not None:
        assert state.stat().st_gid == server_group
    assert stat.S_IMODE((state / "credentials.json").stat().st_mode) == 0o600
