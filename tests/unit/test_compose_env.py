"""`cdclab compose-env`: credentials kept unless forced, pins always from versions.env."""

from __future__ import annotations

import stat

from cdclab import compose_env, credentials, settings
from tests.resources.compose_stack import PUBLISHED, host_env

PINS = {"SPARK_VERSION": "3.5.6", "MINIO_VERSION": "v1"}


def fresh(tag: str) -> dict[str, str]:
    return {k: f"{tag}-{k}" for k in compose_env.CREDENTIAL_KEYS}


def test_first_run_generates_credentials_and_copies_the_pins() -> None:
    env = compose_env.merge_env({}, PINS, fresh("new"))
    assert env[credentials.PG_PASSWORD] == "new-CDCLAB_PG_PASSWORD"
    assert env["SPARK_VERSION"] == "3.5.6"


def test_existing_credentials_survive_a_rerun_but_pins_follow_versions_env() -> None:
    old = {**fresh("old"), "SPARK_VERSION": "3.4.0", "CDCLAB_PORT_POSTGRES": "15432"}
    env = compose_env.merge_env(old, PINS, fresh("new"))
    assert env[settings.ENV_SECRET_KEY] == "old-AWS_SECRET_ACCESS_KEY"
    assert env["SPARK_VERSION"] == "3.5.6"
    assert env["CDCLAB_PORT_POSTGRES"] == "15432"  # the user's own settings stay


def test_force_and_placeholders_get_new_credentials() -> None:
    assert compose_env.merge_env(fresh("old"), PINS, fresh("new"), force=True)[
        settings.ENV_ACCESS_KEY] == "new-AWS_ACCESS_KEY_ID"
    example = compose_env.placeholder_credentials()
    assert compose_env.merge_env(example, PINS, fresh("new"))[
        credentials.PG_USER] == "new-CDCLAB_PG_USER"


def test_spark_adds_the_profile_once_and_points_glue_at_the_master() -> None:
    extra = compose_env.spark_settings({"COMPOSE_PROFILES": "aws,spark"})
    assert extra["COMPOSE_PROFILES"] == "aws,spark"
    assert compose_env.spark_settings({})["COMPOSE_PROFILES"] == "spark"
    assert extra[compose_env.ENV_SPARK_MASTER] == "spark://spark-master:7077"


def test_render_round_trips_through_parse() -> None:
    env = compose_env.merge_env({"X": "1"}, settings.versions(), credentials.generate())
    assert compose_env.parse_env(compose_env.render(env)) == env


def test_write_env_is_private_and_idempotent(tmp_path) -> None:
    path = tmp_path / ".env"
    first = compose_env.write_env(path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert compose_env.write_env(path) == first
    assert compose_env.write_env(path, force=True)[settings.ENV_SECRET_KEY] != first[
        settings.ENV_SECRET_KEY]


def test_containers_backend_reaches_the_published_ports_under_the_same_keys() -> None:
    creds = {**fresh("c"), credentials.PG_PASSWORD: "p/w@x"}
    ports = {var: 40000 + i for i, var in enumerate(PUBLISHED)}
    env = host_env(creds, ports)
    db = settings.load_pipeline().source.database
    assert env[settings.ENV_PG_DSN] == (
        f"postgresql://c-CDCLAB_PG_USER:p%2Fw%40x@127.0.0.1:40000/{db}")
    assert env[settings.ENV_S3_ENDPOINT] == "http://127.0.0.1:40001"
    assert env[settings.ENV_CATALOG_URI] == "http://127.0.0.1:40003"
    assert env[settings.ENV_GLUE_ENDPOINT] == "http://127.0.0.1:40004"
    assert env[settings.ENV_ACCESS_KEY] == "c-AWS_ACCESS_KEY_ID"
