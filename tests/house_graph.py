"""The project's import graph, read from its own source with ast (tests/test_house.py and the
closing notes' counts): ``shufflesim.*`` names mapped to the files of protocols/ and simulator/.

An edge A -> B: module A names module B in an ``import`` statement (at its top or inside a
function), in ``lazy_module("...")``, ``lazy_functions("...", ...)`` or ``import_module("...")``
with a literal name, or (for a plug-in declaration, protocols/plugins.py and
simulator/plugins.py) in one of its tuples of module names. A *unit* is a folder one level below
protocols/ or simulator/ (its subfolders included), or a module at their top (errors.py,
registry.py, plugins.py, the package itself).
"""

from __future__ import annotations

import ast
import importlib
import pathlib
from collections import defaultdict

REPO = pathlib.Path(__file__).resolve().parents[1]
FOLDERS = ("protocols", "simulator")
DECLARATIONS = ("shufflesim.protocols.plugins", "shufflesim.simulator.plugins")
#: The folder installed as the ``shufflesim`` package itself (pyproject.toml package-dir).
API = ("simulator", "api")
DYNAMIC = {"lazy_module", "lazy_functions", "import_module"}


def modules(repo: pathlib.Path = REPO) -> dict[str, pathlib.Path]:
    """Module name -> file, for every .py file of protocols/ and simulator/."""
    found = {}
    for folder in FOLDERS:
        for path in sorted((repo / folder).rglob("*.py")):
            parts = path.relative_to(repo).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            if parts[:2] == API:
                parts = parts[2:]
            found[".".join(("shufflesim", *parts))] = path
    return found


def _resolve(name: str, known: dict[str, pathlib.Path]) -> str | None:
    while name:
        if name in known:
            return name
        name = name.rpartition(".")[0]
    return None


def _named(node: ast.AST, module: str, is_package: bool,
           known: dict[str, pathlib.Path]) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if isinstance(node, ast.ImportFrom):
        base = node.module or ""
        if node.level:
            package = module if is_package else module.rpartition(".")[0]
            for _ in range(node.level - 1):
                package = package.rpartition(".")[0]
            base = f"{package}.{base}".rstrip(".")
        # ``from package import submodule`` names the submodule, else the package
        return [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base
                for alias in node.names]
    if isinstance(node, ast.Call):
        function = node.func
        called = getattr(function, "id", getattr(function, "attr", ""))
        if called in DYNAMIC and node.args and isinstance(node.args[0], ast.Constant) \
                and isinstance(node.args[0].value, str):
            return [node.args[0].value]
    return []


def edges(repo: pathlib.Path = REPO) -> dict[str, set[str]]:
    """Module -> the project modules it names (module docstring)."""
    known = modules(repo)
    graph: dict[str, set[str]] = {name: set() for name in known}
    for name, path in known.items():
        is_package = path.name == "__init__.py"
        for node in ast.walk(ast.parse(path.read_text())):
            for target in _named(node, name, is_package, known):
                if not target.startswith("shufflesim"):
                    continue
                resolved = _resolve(target, known)
                if resolved and resolved != name:
                    graph[name].add(resolved)
    for declaration in DECLARATIONS:
        if declaration in known:
            for listed in declared(declaration):
                resolved = _resolve(listed, known)
                if resolved:
                    graph[declaration].add(resolved)
    return graph


def declared(declaration: str) -> list[str]:
    """Every module name listed by a plug-in declaration (its tuples of module names, and the
    modules of its mappings name -> "module:attribute")."""
    loaded = importlib.import_module(declaration)
    out = []
    for name in getattr(loaded, "__all__", ()):
        listed = getattr(loaded, name)
        if isinstance(listed, dict):
            listed = [ref.partition(":")[0] for ref in listed.values()]
        out.extend(listed)
    return out


def unit(module: str) -> str:
    """The unit (module docstring) a module belongs to: 'simulator/audit', 'simulator/errors'
    ('simulator/api' for the ``shufflesim`` package itself)."""
    parts = module.split(".")[1:]
    if not parts or parts[0] not in FOLDERS:
        return "/".join(API)
    return "/".join(parts[:2])


def unit_edges(graph: dict[str, set[str]]) -> dict[tuple[str, str], list[tuple[str, str]]]:
    """(unit A, unit B) -> the module edges that run from A to B (A != B)."""
    out: dict[tuple[str, str], list[tuple[str, str]]] = defaultdict(list)
    for source, targets in graph.items():
        for target in sorted(targets):
            if unit(source) != unit(target):
                out[(unit(source), unit(target))].append((source, target))
    return dict(out)


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one node (Tarjan, iterative)."""
    index, low, on_stack, stack, result, counter = {}, {}, set(), [], [], [0]
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter[0]
                    counter[0] += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    result.append(sorted(component))
    return result


def unit_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {unit(m): set() for m in graph}
    for a, b in unit_edges(graph):
        out[a].add(b)
    return out


def upward(graph: dict[str, set[str]], layers: list[str]) -> list[tuple[str, str]]:
    """Module edges from a unit to a unit above it in ``layers`` (top first)."""
    rank = {name: i for i, name in enumerate(layers)}
    return [edge for (a, b), found in unit_edges(graph).items()
            if rank[b] < rank[a] for edge in found]


if __name__ == "__main__":  # a summary for notes: python tests/house_graph.py
    g = edges()
    ug = unit_graph(g)
    print("modules", len(g), "file circles", len(cycles(g)), "unit circles", cycles(ug))
    for a in sorted(ug):
        print(f"  {a} -> {sorted(ug[a])}")
