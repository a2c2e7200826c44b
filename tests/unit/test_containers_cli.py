"""The container path from an install: the build context's layout and `cdclab compose`."""

from __future__ import annotations

import tomllib
from pathlib import Path

from cdclab import containers
from cdclab.cli import build_parser

ROOT = Path(__file__).resolve().parents[2]


def test_the_build_context_lays_packages_out_as_pyproject_does() -> None:
    tool = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    folders = {name: folder for name, folder in tool["package-dir"].items()
               if name != "cdclab_lab"}
    assert folders == containers.PACKAGE_FOLDERS
    lab_files = tool["package-data"]["cdclab_lab"]
    for needed in ("pyproject.toml", "spark/Dockerfile", containers.BUILD_SCRIPT,
                   containers.COMPOSE_FILE, "pipeline_contract/pipeline.toml"):
        assert any(Path(needed).match(glob) for glob in lab_files), needed


def test_compose_names_the_pipeline_folder_and_keeps_one_already_named(
        monkeypatch, tmp_path) -> None:
    monkeypatch.delenv(containers.ENV_PIPELINE_DIR, raising=False)
    monkeypatch.setenv("CDCLAB_PIPELINE_FILE", str(tmp_path / "pipeline.toml"))
    command, env = containers.compose_command(["up", "-d", "--wait"])
    assert command[:2] == ["docker", "compose"] and command[-3:] == ["up", "-d", "--wait"]
    assert command[command.index("-f") + 1].endswith(containers.COMPOSE_FILE)
    assert env[containers.ENV_PIPELINE_DIR] == str(tmp_path.resolve())
    monkeypatch.setenv(containers.ENV_PIPELINE_DIR, "/elsewhere")
    assert containers.compose_command(["ps"])[1][containers.ENV_PIPELINE_DIR] == "/elsewhere"


def test_compose_passes_every_argument_through() -> None:
    args = build_parser().parse_args(["compose", "run", "--rm", "cli", "status", "--json"])
    assert args.compose_args == ["run", "--rm", "cli", "status", "--json"]


def test_the_compose_file_mounts_the_pipeline_folder_read_only_everywhere_it_is_read() -> None:
    import yaml

    doc = yaml.safe_load((ROOT / containers.COMPOSE_FILE).read_text())
    for name, service in doc["services"].items():
        env = service.get("environment") or {}
        if "CDCLAB_PIPELINE_FILE" not in env:
            continue
        assert env["CDCLAB_PIPELINE_FILE"] == "/pipeline/pipeline.toml", name
        mounts = [v for v in service.get("volumes", []) if isinstance(v, dict)
                  and v.get("target") == "/pipeline"]
        assert mounts, f"{name} reads /pipeline/pipeline.toml but does not mount it"
        assert mounts[0]["read_only"] and not mounts[0]["bind"]["create_host_path"]
        assert mounts[0]["source"] == "${CDCLAB_PIPELINE_DIR:-./pipeline_contract}"
