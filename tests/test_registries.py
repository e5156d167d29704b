"""Issue 27: a registry's contents and order do not depend on what was imported before.

Every registry made with ``declared=`` loads its plug-in declaration (protocols/plugins.py,
simulator/plugins.py) on its first read and sorts its items by it. Checked three ways: in a
fresh interpreter reading every registry first, in one that imports every declared module in
reverse order (and the entry points that used to fill registries) before reading, and in this
test process after whatever the other tests imported; and every built-in item comes from a
module its declaration lists.
"""

from __future__ import annotations

import ast
import importlib
import json
import pathlib
import subprocess
import sys

import pytest

from shufflesim.protocols.registry import declared_modules as listed_modules

REPO = pathlib.Path(__file__).resolve().parents[1]
#: Every registry, as "module:NAME" (test_the_list_of_registries_is_complete keeps it whole).
REGISTRIES = (
    "shufflesim.protocols.randomizers.registry:RANDOMIZERS",
    "shufflesim.protocols.estimators.registry:ESTIMATORS",
    "shufflesim.protocols.bounds.spec:BOUNDS",
    "shufflesim.protocols.accounting.compose:COMPOSED_METHODS",
    "shufflesim.simulator.audit.levels:ATTACKS",
    "shufflesim.simulator.audit.levels:LEVELS",
    "shufflesim.simulator.plotting.kinds:PLOTS",
    "shufflesim.simulator.scenario.sections:SECTIONS",
    "shufflesim.simulator.scenario.sections:SECTION_SCHEMAS",
    "shufflesim.simulator.scenario.producers:PRODUCERS",
    "shufflesim.simulator.results.tables:TABLE_SCHEMAS",
    "shufflesim.simulator.batch.targets:TARGETS",
    "shufflesim.simulator.population.base:DATA_DISTRIBUTIONS",
    "shufflesim.simulator.population.base:BUDGET_DISTRIBUTIONS",
)
DECLARATIONS = ("shufflesim.protocols.plugins", "shufflesim.simulator.plugins")
#: Modules that filled registries by importing them before issue 27 (entry points).
ENTRY_POINTS = ("shufflesim.simulator.scenario.schema", "shufflesim.simulator.audit.run",
                "shufflesim.simulator.scenario.loader", "shufflesim.simulator.execution.runner",
                "shufflesim.protocols.bounds.catalogue", "shufflesim.simulator.cli.app")

_SNAPSHOT = """
import importlib, json, sys
for name in sys.argv[2:]:
    importlib.import_module(name)
out = {}
for ref in json.loads(sys.argv[1]):
    module, _, attribute = ref.partition(":")
    out[ref] = list(getattr(importlib.import_module(module), attribute))
print(json.dumps(out))
"""


def registry(ref: str):
    module, _, attribute = ref.partition(":")
    return getattr(importlib.import_module(module), attribute)


def snapshot_here() -> dict[str, list[str]]:
    return {ref: list(registry(ref)) for ref in REGISTRIES}


def snapshot_fresh(first: list[str]) -> dict[str, list[str]]:
    """The registries' names in order, read in a new interpreter after importing ``first``."""
    done = subprocess.run([sys.executable, "-c", _SNAPSHOT, json.dumps(REGISTRIES), *first],
                          capture_output=True, text=True, check=True, timeout=300)
    return json.loads(done.stdout)


def declared_modules() -> list[str]:
    out = []
    for declaration in DECLARATIONS:
        loaded = importlib.import_module(declaration)
        for name in loaded.__all__:
            out.extend(listed_modules(f"{declaration}:{name}"))
    return out


@pytest.fixture(scope="module")
def fresh() -> dict[str, list[str]]:
    return snapshot_fresh([])


def test_registries_read_first_hold_every_built_in(fresh):
    assert "approximate" in fresh["shufflesim.simulator.audit.levels:ATTACKS"]
    assert fresh["shufflesim.simulator.audit.levels:ATTACKS"][:3] == ["lr", "count", "order"]
    assert fresh["shufflesim.simulator.scenario.producers:PRODUCERS"][:3] == [
        "audit", "learning", "bounds"]
    assert "krr" in fresh["shufflesim.protocols.randomizers.registry:RANDOMIZERS"]
    assert fresh["shufflesim.simulator.audit.levels:LEVELS"] == [
        "randomizer", "shuffle", "pipeline"]
    assert fresh["shufflesim.simulator.plotting.kinds:PLOTS"][:3] == [
        "utility", "utility_vs_keys", "bounds_vs_n"]


def test_registries_do_not_depend_on_the_import_order(fresh):
    history = list(reversed(declared_modules())) + list(ENTRY_POINTS)
    assert snapshot_fresh(history) == fresh


def test_registries_here_match_a_fresh_interpreter(fresh):
    """Whatever the tests before this one imported (or registered and removed)."""
    assert snapshot_here() == fresh


def test_every_built_in_comes_from_a_declared_module():
    for ref in REGISTRIES:
        found = registry(ref)
        if found.declared is None:
            continue
        listed = set(listed_modules(found.declared))
        strays = {name: found.origin(name) for name in found
                  if found.origin(name) not in listed
                  and str(found.origin(name)).startswith("shufflesim.")}
        assert not strays, f"{ref}: registered outside its declaration {found.declared}: {strays}"


def test_every_declared_module_registers_something():
    """Into one of the registries that read its tuple (SECTIONS and SECTION_SCHEMAS share)."""
    origins: dict[str, set] = {}
    for ref in REGISTRIES:
        found = registry(ref)
        if found.declared is not None:
            origins.setdefault(found.declared, set()).update(found.origin(n) for n in found)
    for declared, registering in origins.items():
        listed = set(listed_modules(declared))
        assert not listed - registering, f"{declared}: declared, registers nothing"


def test_the_list_of_registries_is_complete():
    """Every module-level ``X = Registry(...)`` in the source is in REGISTRIES."""
    found = set()
    for folder in ("protocols", "simulator"):
        for path in (REPO / folder).rglob("*.py"):
            parts = path.relative_to(REPO).with_suffix("").parts
            module = "shufflesim." + ".".join(p for p in parts if p != "__init__")
            for node in ast.parse(path.read_text()).body:
                value = getattr(node, "value", None)
                if isinstance(value, ast.Call) and getattr(value.func, "id", "") == "Registry":
                    target = node.targets[0] if isinstance(node, ast.Assign) else node.target
                    found.add(f"{module}:{target.id}")
    assert found == set(REGISTRIES)


def test_a_registry_sorts_by_its_declaration_not_by_registration():
    from shufflesim.protocols.registry import Registry

    reg = Registry("thing", declared="shufflesim.protocols.plugins:ESTIMATORS")
    reg._load = lambda: None  # keep the declared modules out: only the sort is under test
    reg.register("late", object())
    reg._origins["late"] = "shufflesim.protocols.estimators.sum"
    reg.register("early", object())
    reg._origins["early"] = "shufflesim.protocols.estimators.frequency"
    reg.register("outside", object())
    assert list(reg) == ["early", "late", "outside"]


REGISTERING = {"register", "register_attack", "register_estimator", "register_section",
               "register_table_schema", "register_table_producer", "register_target",
               "register_data_distribution", "register_budget_distribution", "register_level",
               "register_plot"}


def _registers_at_import(tree: ast.Module) -> bool:
    """Whether a module's top level (decorators included) calls a registering function, or
    exports its plug-ins as data (a top-level ``SPECS``, read by the bound registry)."""
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
        if any(getattr(t, "id", None) == "SPECS" for t in targets):
            return True
        calls = []
        if isinstance(node, ast.ClassDef | ast.FunctionDef):
            calls = [d for d in node.decorator_list]
        elif isinstance(node, ast.Expr | ast.Assign | ast.AnnAssign | ast.For):
            calls = [n for n in ast.walk(node) if isinstance(n, ast.Call)]
        for call in calls:
            function = call.func if isinstance(call, ast.Call) else call
            while isinstance(function, ast.Call):
                function = function.func
            name = getattr(function, "id", getattr(function, "attr", ""))
            if name in REGISTERING:
                return True
    return False


def test_every_module_that_registers_at_import_is_declared():
    """Read from the source: a plug-in module missing from its declaration would register
    only when something happens to import it."""
    listed = set(declared_modules())
    homes = {ref.partition(":")[0] for ref in REGISTRIES}
    strays = []
    for folder in ("protocols", "simulator"):
        for path in (REPO / folder).rglob("*.py"):
            parts = path.relative_to(REPO).with_suffix("").parts
            module = "shufflesim." + ".".join(p for p in parts if p != "__init__")
            if module in listed or module in homes:
                continue
            if _registers_at_import(ast.parse(path.read_text())):
                strays.append(module)
    assert not strays, f"add these to protocols/plugins.py or simulator/plugins.py: {strays}"


def test_bound_modules_export_their_specs():
    """Issue 27: every declared bound module exports its bounds as data (``SPECS``), and the
    bound registry holds exactly those, in the declaration's order, each from its module."""
    from shufflesim.protocols import plugins
    from shufflesim.protocols.bounds.spec import BOUNDS

    modules = tuple(dict.fromkeys(plugins.BOUNDS.values()))
    exported = []
    for module in modules:
        specs = importlib.import_module(module).SPECS
        assert specs and all(BOUNDS.origin(spec.name) == module for spec in specs), module
        exported += [spec.name for spec in specs]
    assert [name for name in BOUNDS if BOUNDS.origin(name) in modules] == exported
    assert exported == list(plugins.BOUNDS)
    assert all(BOUNDS.get(name) is spec for module in modules
               for spec in importlib.import_module(module).SPECS for name in [spec.name])
