"""The import arrows between the project's packages, read from the source (ast, nothing is
imported): arrows and two-way ties between top-level packages, module import cycles,
imports made inside functions, and where pipeline.toml is read (calls of load_pipeline:
settings are read at entry points and passed down). Prints JSON.

    python bench/import_arrows.py [repo root]

tests/unit/test_layers.py holds the layering to these figures.
"""

from __future__ import annotations

import ast
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path

# Top-level package -> its folder. Ground first, the conductor last.
PACKAGES = {
    "pipeline_contract": "pipeline_contract",
    "dms_emitter": "dms_emitter",
    "lambda_shim": "lambda_shim",
    "glue_local": "spark/glue_local",
    "deploy": "deploy",
    "cdclab": "cdclab",
}


@dataclass(frozen=True)
class Edge:
    source: str  # importing module
    target: str  # imported module (the deepest project module the name resolves to)
    in_function: bool
    line: int


@dataclass
class Graph:
    modules: dict[str, Path] = field(default_factory=dict)
    edges: list[Edge] = field(default_factory=list)

    def package_arrows(self) -> dict[tuple[str, str], int]:
        out: dict[tuple[str, str], int] = {}
        for e in self.edges:
            a, b = e.source.split(".")[0], e.target.split(".")[0]
            if a != b:
                out[(a, b)] = out.get((a, b), 0) + 1
        return out

    def cycles(self) -> list[list[str]]:
        """Module import cycles (strongly connected components of more than one module),
        counting imports inside functions: one there that closes a circle only hides it."""
        succ: dict[str, set[str]] = {m: set() for m in self.modules}
        for e in self.edges:
            succ[e.source].add(e.target)
        index: dict[str, int] = {}
        low: dict[str, int] = {}
        stack: list[str] = []
        on_stack: set[str] = set()
        found: list[list[str]] = []

        def visit(v: str) -> None:  # Tarjan's algorithm
            index[v] = low[v] = len(index)
            stack.append(v)
            on_stack.add(v)
            for w in sorted(succ[v]):
                if w not in index:
                    visit(w)
                    low[v] = min(low[v], low[w])
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
            if low[v] == index[v]:
                component = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    component.append(w)
                    if w == v:
                        break
                if len(component) > 1:
                    found.append(sorted(component))

        for v in sorted(succ):
            if v not in index:
                visit(v)
        return found


def _module_name(package: str, folder: Path, path: Path) -> str:
    parts = (package, *path.relative_to(folder).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _type_checking_only(tree: ast.Module) -> set[int]:
    """Ids of imports under `if TYPE_CHECKING:` (annotations only: no import at run time)."""
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            out |= {id(n) for stmt in node.body for n in ast.walk(stmt)}
    return out


def read_graph(root: Path) -> Graph:
    graph = Graph()
    for package, folder in PACKAGES.items():
        for path in sorted((root / folder).rglob("*.py")):
            graph.modules[_module_name(package, root / folder, path)] = path

    def resolve(name: str) -> str | None:
        while name and name not in graph.modules:
            name = name.rpartition(".")[0]
        return name or None

    for module, path in graph.modules.items():
        tree = ast.parse(path.read_text(), str(path))
        typing_only = _type_checking_only(tree)
        in_function = {id(n) for fn in ast.walk(tree)
                       if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef)
                       for n in ast.walk(fn)}
        for node in ast.walk(tree):
            if id(node) in typing_only:
                continue
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [f"{node.module}.{a.name}" for a in node.names]
            else:
                continue
            for target in {t for t in map(resolve, names) if t and t != module}:
                graph.edges.append(Edge(module, target, id(node) in in_function, node.lineno))
    return graph


@dataclass(frozen=True)
class SettingsRead:
    path: str  # relative to the repo root
    line: int
    function: str  # the enclosing function's qualified name, "<module>" at module level

    def __str__(self) -> str:
        return f"{self.path}:{self.line} in {self.function}"


def settings_reads(root: Path) -> list[SettingsRead]:
    """Every call of load_pipeline (pipeline.toml read) in the project's packages."""
    found: list[SettingsRead] = []

    def visit(node: ast.AST, scope: tuple[str, ...], path: str) -> None:
        for child in ast.iter_child_nodes(node):
            inner = scope
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                inner = (*scope, child.name)
            if isinstance(child, ast.Call):
                f = child.func
                name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
                if name == "load_pipeline":
                    found.append(SettingsRead(path, child.lineno,
                                              ".".join(scope) or "<module>"))
            visit(child, inner, path)

    for folder in PACKAGES.values():
        for path in sorted((root / folder).rglob("*.py")):
            visit(ast.parse(path.read_text(), str(path)), (), str(path.relative_to(root)))
    return found


def summary(graph: Graph, root: Path | None = None) -> dict:
    arrows = graph.package_arrows()
    out = {
        "arrows": {f"{a}->{b}": n for (a, b), n in sorted(arrows.items())},
        "two_way_ties": sorted({"<->".join(sorted(p)) for p in arrows if p[::-1] in arrows}),
        "module_cycles": graph.cycles(),
        "imports_inside_functions": sum(e.in_function for e in graph.edges),
    }
    if root is not None:
        reads = settings_reads(root)
        out["load_pipeline_calls"] = len(reads)
        out["load_pipeline_functions"] = len({(r.path, r.function) for r in reads})
    return out


if __name__ == "__main__":
    repo = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parent.parent
    print(json.dumps(summary(read_graph(repo), repo), indent=1))
