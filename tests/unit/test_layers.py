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
