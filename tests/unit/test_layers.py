"""The house reads like the diagram: the contract at the bottom, the boxes on it, the
conductor on top; arrows point one way and no module circle hides in a function."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("import_arrows", ROOT / "bench/import_arrows.py")
assert _spec and _spec.loader
arrows = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = arrows  # dataclasses look their module up
_spec.loader.exec_module(arrows)

GROUND = "pipeline_contract"
BOXES = ("dms_emitter", "lambda_shim", "glue_local", "deploy")
CONDUCTOR = "cdclab"
# The one arrow between boxes: deploy packages the Lambda (its files, its environment).
BOX_ARROWS = {("deploy", "lambda_shim")}
# Shipped to AWS (the job alone, the Lambda's files in one zip): they import nothing else
# of the project.
DEPLOYED = ("jobs/bronze_to_silver.py", "lambda_shim/lambda_function.py",
            "lambda_shim/object_gate.py", "lambda_shim/gate_base.py", "lambda_shim/gate_csv.py",
            "lambda_shim/gate_parquet.py", "lambda_shim/eventbridge_events.py")


@pytest.fixture(scope="module")
def graph():
    return arrows.read_graph(ROOT)


def _offending(graph, allowed, root: Path = ROOT) -> list[str]:
    out = []
    for e in graph.edges:
        a, b = e.source.split(".")[0], e.target.split(".")[0]
        if a != b and not allowed(a, b):
            out.append(f"{graph.modules[e.source].relative_to(root)}:{e.line} "
                       f"imports {e.target}")
    return out


def test_the_contract_imports_nothing_above_it(graph) -> None:
    assert _offending(graph, lambda a, b: a != GROUND) == []


def test_the_boxes_stand_on_the_contract_only(graph) -> None:
    assert _offending(graph, lambda a, b: a not in BOXES or b == GROUND
                      or (a, b) in BOX_ARROWS) == []


def test_nothing_imports_the_conductor(graph) -> None:
    assert _offending(graph, lambda a, b: b != CONDUCTOR) == []


def test_no_module_circle_even_through_imports_inside_functions(graph) -> None:
    assert graph.cycles() == []


def test_no_two_way_tie_between_packages(graph) -> None:
    assert arrows.summary(graph)["two_way_ties"] == []


def test_each_box_launches_itself_on_the_ground_only(graph) -> None:
    """A box's launcher and registry record sit beside its code (`<box>.launcher`), on the
    service interface of the ground (pipeline_contract.service_kit); the infrastructure
    the boxes run on (PostgreSQL, MinIO, the catalog) is the conductor's."""
    from cdclab.services import registry

    launchers = {s.name: s.launcher.partition(":")[0] for s in registry.SERVICES}
    assert {n: launchers[n] for n in ("emitter", "watcher", "glue")} == {
        "emitter": "dms_emitter.launcher", "watcher": "lambda_shim.launcher",
        "glue": "glue_local.launcher"}
    for name, module in launchers.items():
        top = module.split(".")[0]
        assert (top in BOXES and module == f"{top}.launcher"
                or module.startswith(f"{CONDUCTOR}.services.")), (name, module)
    for info in registry.SERVICES:  # the record is the one its launcher declares
        assert info.launcher_class().info is info, info.name
    in_boxes = {m for m in launchers.values() if m.split(".")[0] in BOXES}
    assert [f"{e.source} imports {e.target}" for e in graph.edges if e.source in in_boxes
            and e.target.split(".")[0] not in (GROUND, e.source.split(".")[0])] == []


def test_every_declared_service_is_in_the_registry() -> None:
    """A record a launcher declares but the registry does not list would never start:
    every ServiceInfo at module level of a launcher module is listed."""
    import importlib

    from cdclab.services import registry
    from pipeline_contract.service_kit import ServiceInfo

    modules = [f"{box}.launcher" for box in BOXES
               if importlib.util.find_spec(f"{box}.launcher") is not None]
    modules += [f"{CONDUCTOR}.services.{p.stem}" for p in
                (ROOT / CONDUCTOR / "services").glob("*.py") if not p.stem.startswith("_")]
    declared = {value.name for module in modules
                for value in vars(importlib.import_module(module)).values()
                if isinstance(value, ServiceInfo)}
    assert declared == set(registry.NAMES)


def test_the_watcher_starts_before_the_emitter() -> None:
    """The emitter is ready once its full load is written: a watcher started first merges
    the LOAD files as they land, as S3 events start Glue runs while DMS still loads."""
    from cdclab.services import registry

    assert registry.NAMES.index("watcher") < registry.NAMES.index("emitter")
    assert set(registry.PIPELINE_NAMES) == {"watcher", "emitter"}


@pytest.mark.parametrize("path", DEPLOYED)
def test_what_ships_to_aws_imports_nothing_of_the_project(path: str) -> None:
    import ast

    tree = ast.parse((ROOT / path).read_text())
    named = [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    named += [n.module for n in ast.walk(tree)
              if isinstance(n, ast.ImportFrom) and n.module and n.level == 0]
    shipped_beside = {f"lambda_shim.{Path(d).stem}" for d in DEPLOYED} | {"lambda_shim"}
    project = set(arrows.PACKAGES)
    assert [m for m in named if m.split(".")[0] in project and m not in shipped_beside] == []


def test_a_cycle_is_found_when_there_is_one(tmp_path: Path) -> None:
    for folder in arrows.PACKAGES.values():
        (tmp_path / folder).mkdir(parents=True)
        (tmp_path / folder / "__init__.py").write_text("")
    (tmp_path / "cdclab/a.py").write_text("from cdclab import b\n")
    (tmp_path / "cdclab/b.py").write_text("def f():\n    from cdclab.a import x\n")
    (tmp_path / "deploy/c.py").write_text("from cdclab import a\n")
    g = arrows.read_graph(tmp_path)
    assert g.cycles() == [["cdclab.a", "cdclab.b"]]
    offending = _offending(g, lambda a, b: b != CONDUCTOR, tmp_path)
    assert offending == ["deploy/c.py:1 imports cdclab.a"]


def test_the_contract_reads_settings_only_when_asked() -> None:
    """Settings are read once, at an entry point, and passed down: no function of the
    contract loads pipeline.toml behind its caller's back."""
    import ast

    calls = []
    for path in sorted((ROOT / GROUND).rglob("*.py")):
        if path.name == "settings.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and "load_pipeline" in ast.unparse(node.func):
                calls.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert calls == []


# Where pipeline.toml may be read: entry points only (one read per process or command),
# everything below takes the settings (or the section it needs) as a parameter.
# (file, function: fnmatch pattern) -> why it is an entry point
SETTINGS_ENTRY_POINTS = {
    ("cdclab/cli.py", "cmd_*"): "a `cdclab` command: one read per invocation",
    ("cdclab/deploy_cli.py", "run_deploy"): "`cdclab deploy`: the same checks as the lab",
    ("cdclab/deploy_cli.py", "run_destroy"): "`cdclab destroy`",
    ("cdclab/notebook.py", "cmd_notebook"): "`cdclab notebook`",
    ("cdclab/serve.py", "serve"): "`cdclab serve`: a container's process",
    ("cdclab/keeper.py", "main"): "the supervisor's keeper process",
    ("cdclab/compose_probe.py", "main"): "compose's health checks and init, a process each",
    ("cdclab/lab.py", "connect"): "a notebook's handle on the stack",
    ("cdclab/pytest_plugin.py", "_lab"): "the pytest plugin: one read per test session",
    ("dms_emitter/emitter.py", "main"): "python -m dms_emitter",
    ("lambda_shim/__main__.py", "main"): "python -m lambda_shim",
    ("spark/glue_local/__main__.py", "main"): "python -m glue_local: the server and runner",
    ("spark/glue_local/server.py", "running_server"): "the in-process Glue API (tests, "
                                                      "embedding): one read for its life",
}


def _entry_point_for(read) -> tuple[str, str] | None:
    from fnmatch import fnmatchcase

    return next((key for key in SETTINGS_ENTRY_POINTS
                 if key[0] == read.path and fnmatchcase(read.function, key[1])), None)


def test_settings_are_read_only_at_entry_points() -> None:
    """A library function that reads pipeline.toml itself hides a second, maybe different,
    configuration from its caller: it takes the settings as a parameter instead."""
    reads = arrows.settings_reads(ROOT)
    assert reads, "no load_pipeline call found: the finder is broken"
    assert [str(r) for r in reads if _entry_point_for(r) is None] == []
    used = {_entry_point_for(r) for r in reads}
    assert [k for k in SETTINGS_ENTRY_POINTS if k not in used] == []  # no stale entry


def test_a_settings_read_below_an_entry_point_is_named(tmp_path: Path) -> None:
    for folder in arrows.PACKAGES.values():
        (tmp_path / folder).mkdir(parents=True)
    (tmp_path / "cdclab/cli.py").write_text(
        "def cmd_up(args):\n    p = settings.load_pipeline()\n\n"
        "class Helper:\n    def name(self):\n        return load_pipeline().source\n")
    reads = arrows.settings_reads(tmp_path)
    assert [str(r) for r in reads] == ["cdclab/cli.py:2 in cmd_up",
                                      "cdclab/cli.py:6 in Helper.name"]
    assert [_entry_point_for(r) is None for r in reads] == [False, True]
