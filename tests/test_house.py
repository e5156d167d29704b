"""The house rules of issues 13 and 27, checked on the source: no module over 500 lines, no
import circles between the project's modules nor between its folders (tests/house_graph.py
reads every import, lazy ones and the plug-in declarations included), folders layered with
no import running back up, and no imports inside functions except optional dependencies
(imported where they are used, so the core never needs them)."""

from __future__ import annotations

import ast
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).parent))
import house_graph  # noqa: E402

REPO = pathlib.Path(__file__).resolve().parents[1]
FOLDERS = ("protocols", "simulator")
MAX_LINES = 500
#: Optional extras and heavy tools a function may import where it uses them.
OPTIONAL = {"matplotlib", "dask", "distributed", "sklearn", "multi_freq_ldpy", "pure_ldp",
            "mpmath", "importlib", "threadpoolctl"}


def _modules() -> dict[str, pathlib.Path]:
    found = {}
    for folder in FOLDERS:
        for path in (REPO / folder).rglob("*.py"):
            parts = path.relative_to(REPO).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            if parts[:2] == ("simulator", "api"):  # the package shufflesim itself (issue 28)
                found[".".join(("shufflesim", *parts[2:]))] = path
                continue
            found["shufflesim." + ".".join(parts)] = path
    return found


MODULES = _modules()


def _top_level_imports(tree: ast.Module):
    """Import statements executed when the module is imported (not inside a def)."""
    stack = list(tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        elif isinstance(node, ast.If | ast.Try | ast.With):
            stack.extend(ast.iter_child_nodes(node))
        elif isinstance(node, ast.ExceptHandler):
            stack.extend(node.body)


def _edges(name: str, path: pathlib.Path) -> set[str]:
    """The project modules ``name`` imports at import time (explicitly named ones)."""
    out = set()
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    for node in _top_level_imports(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out |= {alias.name for alias in node.names if alias.name in MODULES}
            continue
        base = node.module or ""
        if node.level:
            anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
            base = f"{anchor}.{base}".rstrip(".")
        for alias in node.names:
            target = f"{base}.{alias.name}"
            if target in MODULES:
                out.add(target)
            elif base in MODULES:
                out.add(base)
    out.discard(name)
    return out


def test_no_source_module_over_500_lines():
    long = {str(p.relative_to(REPO)): n for p in MODULES.values()
            if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert not long, f"split these modules (over {MAX_LINES} lines): {long}"


def test_no_import_circles():
    graph = {name: _edges(name, path) for name, path in MODULES.items()}
    assert not house_graph.cycles(graph)


def test_the_circle_check_finds_a_circle():
    assert house_graph.cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_functions_import_only_optional_dependencies():
    found = {}
    for path in MODULES.values():
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for inner in ast.walk(node):
                if isinstance(inner, ast.Import):
                    roots = {a.name.split(".")[0] for a in inner.names}
                elif isinstance(inner, ast.ImportFrom) and not inner.level:
                    roots = {(inner.module or "").split(".")[0]}
                else:
                    continue
                if roots - OPTIONAL:
                    found.setdefault(str(path.relative_to(REPO)), set()).update(roots)
    assert not found, f"imports inside functions: {found}"


#: The units of house_graph (folders one level down, modules at the top), top layer first:
#: an import may only run to a unit further down. Plug-in declarations sit at the top (they
#: name every plug-in); the registries' types and the errors at the bottom. A new folder
#: takes its place here.
LAYERS = [
    "simulator/plugins", "simulator/api", "simulator/cli", "simulator/calls",
    "simulator/design", "simulator/execution", "simulator/audit",
    "simulator/learning", "simulator/pipeline", "simulator/batch", "simulator/scenario",
    "simulator/population", "simulator/plotting", "simulator/results", "simulator",
    "simulator/usercode", "simulator/held_output", "simulator/lazy", "simulator/errors",
    "protocols/plugins", "protocols/learning", "protocols/accounting", "protocols/estimators",
    "protocols/bounds", "protocols/randomizers", "protocols/distributions",
    "protocols/registry", "protocols/errors", "protocols/lazy", "protocols/import_gc",
    "protocols",
]
#: Imports allowed to run back up between units (at most one).
UPWARD_ALLOWED: list[tuple[str, str]] = []
GRAPH = house_graph.edges()


def test_no_import_circles_with_lazy_and_declared_imports():
    assert not house_graph.cycles(GRAPH)


def test_no_import_circles_between_folders():
    assert not house_graph.cycles(house_graph.unit_graph(GRAPH))


def test_every_unit_has_a_layer():
    units = {house_graph.unit(m) for m in GRAPH}
    assert not units - set(LAYERS), f"place these in LAYERS: {sorted(units - set(LAYERS))}"


def test_at_most_one_import_runs_back_up():
    upward = house_graph.upward(GRAPH, LAYERS)
    assert len(UPWARD_ALLOWED) <= 1
    assert sorted(upward) == sorted(UPWARD_ALLOWED), f"imports running back up: {upward}"


def test_the_folder_check_sees_a_folder_circle_and_an_upward_import():
    graph = {"shufflesim.simulator.a.x": {"shufflesim.simulator.b.y"},
             "shufflesim.simulator.b.y": {"shufflesim.simulator.b.z"},
             "shufflesim.simulator.b.z": {"shufflesim.simulator.a.w"},
             "shufflesim.simulator.a.w": set()}
    assert house_graph.cycles(house_graph.unit_graph(graph)) == [
        ["simulator/a", "simulator/b"]]
    assert house_graph.upward(graph, ["simulator/a", "simulator/b"]) == [
        ("shufflesim.simulator.b.z", "shufflesim.simulator.a.w")]


def test_lazy_and_declared_imports_are_edges():
    lazy = [name for name, path in MODULES.items() if 'lazy_module("shufflesim.' in
            path.read_text() and name != "shufflesim.simulator.lazy"]
    assert lazy, "no lazy import left to check"
    for name in lazy:
        named = {line.split('"')[1] for line in MODULES[name].read_text().splitlines()
                 if 'lazy_module("shufflesim.' in line}
        assert named <= GRAPH[name], (name, named - GRAPH[name])
    assert "shufflesim._catalogue" in GRAPH["shufflesim"]  # the API's table of lazy names
    assert "shufflesim.simulator.audit.attacks" in GRAPH["shufflesim.simulator.plugins"]
