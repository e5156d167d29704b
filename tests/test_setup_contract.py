"""The README's two set-up commands and CI stay true on a fresh machine.

A fresh virtual environment has only what ``pip install -e ".[dev]"`` installs, so every
third-party package the tests import must come from the core dependencies or the dev extra
(which includes the plot and dask extras), and no test may skip because one is missing. CI
(.ci/run) must build its own virtual environment and run the README's test command verbatim.
"""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
CI = (ROOT / ".ci" / "run").read_text()
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
FIRST_PARTY = {"protocols", "simulator", "shufflesim", "tests", "conftest"}


def _name(requirement: str) -> tuple[str, set[str]]:
    """Distribution name and extras of a requirement string."""
    match = re.match(r"\s*([A-Za-z0-9_.-]+)\s*(?:\[([^\]]*)\])?", requirement)
    assert match, requirement
    extras = {e.strip() for e in (match.group(2) or "").split(",") if e.strip()}
    return re.sub(r"[-_.]+", "-", match.group(1)).lower(), extras


def _dev_closure() -> set[str]:
    """Distributions named by the core dependencies and the dev extra (expanding the project's
    own extras it refers to, and a library's extras that name a distribution of that name)."""
    project = PYPROJECT["project"]
    extras = project["optional-dependencies"]
    names: set[str] = set()
    pending = list(project["dependencies"]) + list(extras["dev"])
    while pending:
        name, wanted = _name(pending.pop())
        if name == "shufflesim":
            for extra in wanted:
                pending += extras[extra]
            continue
        names.add(name)
        names |= {re.sub(r"[-_.]+", "-", e).lower() for e in wanted}
    return names


def _shell_blocks(text: str) -> list[str]:
    return [block.strip() for block in re.findall(r"```sh\n(.*?)```", text, flags=re.S)]


def test_readme_has_exactly_two_setup_commands_and_ci_runs_the_test_one():
    setup = README.split("## Set up", 1)[1].split("\n## ", 1)[0]
    blocks = _shell_blocks(setup)
    assert len(blocks) == 2, blocks
    install_and_run, test = blocks
    assert install_and_run.startswith("pip install -e .") and "shufflesim run" in install_and_run
    assert test == 'pip install -e ".[dev]" && python3 -m pytest'
    assert test in CI
    assert "python3 -m venv" in CI  # a fresh virtual environment, every run
    assert '"$rc" -eq 5' in CI  # no test collected is a failure, not a silent pass


def test_dev_extra_includes_every_optional_extra_the_tests_need():
    closure = _dev_closure()
    assert {"matplotlib", "dask", "distributed", "pytest", "hypothesis", "mpmath"} <= closure


def _imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module.split(".")[0])
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and node.func.attr == "importorskip" and node.args
              and isinstance(node.args[0], ast.Constant)):
            found.add(str(node.args[0].value).split(".")[0])
    return found


def test_every_package_the_tests_import_comes_from_the_dev_extra():
    closure = _dev_closure()
    distributions = packages_distributions()
    stdlib = set(sys.stdlib_module_names)
    local = {p.stem for p in (ROOT / "tests").rglob("*.py")} | {
        p.name for p in (ROOT / "tests").iterdir() if p.is_dir()}
    missing = {}
    for path in sorted((ROOT / "tests").rglob("*.py")):
        for module in _imported_modules(path):
            if module in stdlib or module in FIRST_PARTY | local or module.startswith("_"):
                continue
            dists = {re.sub(r"[-_.]+", "-", d).lower() for d in distributions.get(module, [])}
            if not dists & closure:
                missing.setdefault(module, []).append(path.name)
    assert missing == {}, f"imported by tests but not installed by the dev extra: {missing}"
