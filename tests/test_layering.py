"""`protocols` is pure mathematics: it must never import the runner or its dependencies."""

import ast
import pathlib

FORBIDDEN = {"simulator", "simpy", "pandas", "pyarrow", "click", "dask", "matplotlib"}
ROOT = pathlib.Path(__file__).resolve().parents[1] / "protocols"


def _imported_roots(path: pathlib.Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    roots = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            roots |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            roots.add(node.module.split(".")[0])
    return roots


def test_protocols_imports_only_numerics():
    files = sorted(ROOT.rglob("*.py"))
    assert files, "protocols package has no modules"
    offenders = {
        str(f.relative_to(ROOT)): sorted(_imported_roots(f) & FORBIDDEN) for f in files
    }
    offenders = {k: v for k, v in offenders.items() if v}
    assert not offenders, f"protocols must not import {offenders}"
