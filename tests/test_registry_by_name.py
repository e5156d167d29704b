"""Issue 32: a registry whose declaration maps each built-in's name to ``"module:attribute"``
(protocols/plugins.py ``RANDOMIZERS``) looks a declared name up by importing that module alone,
and keeps every other registry behaviour: an unknown name is one ParameterError naming the
field, the value and every name (built-ins and third-party ones); the whole registry is the
same in the same order; a name registered twice is refused; a declaration that does not match
its module is refused.

The toy registries below live in modules written to a temporary folder on ``sys.path`` (the
declaration, the registry and two plug-in modules), each test with its own names.
"""

from __future__ import annotations

import importlib
import json
import subprocess
import sys

import pytest

from shufflesim.protocols import plugins
from shufflesim.protocols import registry as registries
from shufflesim.protocols.errors import ParameterError
from shufflesim.protocols.randomizers.registry import RANDOMIZERS

TOY = {
    "{p}_decl.py": '''
DECLARED = {{"alpha": "{p}_one:Alpha", "beta": "{p}_one:Beta", "gamma": "{p}_two:Gamma",
            "wrong": "{p}_two:Alpha"}}
''',
    "{p}_reg.py": '''
from shufflesim.protocols.registry import Registry
REG = Registry("thing", field="thing.name", declared="{p}_decl:DECLARED")
''',
    "{p}_one.py": '''
from {p}_reg import REG
@REG.register
class Alpha: name = "alpha"
@REG.register
class Beta: name = "beta"
''',
    "{p}_two.py": '''
from {p}_reg import REG
@REG.register
class Gamma: name = "gamma"
class Alpha: name = "wrong"   # not what the declaration says "wrong" is
REG.register("wrong", object())
''',
}


@pytest.fixture
def toy(tmp_path, monkeypatch, request):
    prefix = f"toy{abs(hash(request.node.name)) % 10**8}"
    for name, text in TOY.items():
        (tmp_path / name.format(p=prefix)).write_text(text.format(p=prefix))
    monkeypatch.syspath_prepend(str(tmp_path))
    loaded = {}
    for part in ("decl", "reg"):
        loaded[part] = importlib.import_module(f"{prefix}_{part}")
    yield prefix, loaded["reg"].REG
    for name in list(sys.modules):
        if name.startswith(prefix):
            del sys.modules[name]


def test_a_declared_name_imports_only_its_module(toy, monkeypatch):
    prefix, reg = toy
    entry_points = []
    monkeypatch.setattr(registries, "load_third_party", lambda: entry_points.append(1))
    assert reg.get("gamma").__name__ == "Gamma"
    assert f"{prefix}_two" in sys.modules and f"{prefix}_one" not in sys.modules
    assert "beta" in reg and f"{prefix}_one" in sys.modules
    assert not entry_points, "a built-in looked up by name reads no entry point"
    assert list(reg) == ["alpha", "beta", "gamma", "wrong"]  # the declaration's order
    assert entry_points == [1]


def test_an_unknown_name_loads_everything_and_names_every_item(toy, monkeypatch):
    prefix, reg = toy
    entry_points = []
    monkeypatch.setattr(registries, "load_third_party", lambda: entry_points.append(1))
    with pytest.raises(ParameterError) as raised:
        reg.get("gama")
    assert str(raised.value) == ("thing.name = 'gama': unknown thing; did you mean 'gamma'? "
                                 "choose one of ['alpha', 'beta', 'gamma', 'wrong']")
    assert entry_points == [1]
    assert "delta" not in reg


def test_a_declaration_that_its_module_does_not_match_is_refused(toy):
    _, reg = toy
    with pytest.raises(RuntimeError, match="'wrong' is declared as .*_two:Alpha'"):
        reg.get("wrong")


def test_a_name_registered_twice_is_refused_after_a_lookup_by_name(toy):
    _, reg = toy
    reg.get("alpha")
    with pytest.raises(RuntimeError, match="thing 'alpha' registered twice"):
        reg.register("alpha", object())


def test_a_declared_name_removed_is_unknown(toy, monkeypatch):
    _, reg = toy
    monkeypatch.setattr(registries, "load_third_party", lambda: None)
    reg.get("alpha")
    reg.remove("alpha")
    with pytest.raises(ParameterError, match="'alpha': unknown thing"):
        reg.get("alpha")


def test_the_randomizer_declaration_is_what_the_modules_register():
    """Every declared name is the class its module registers under it, and every built-in
    randomizer is declared, in the registry's own order."""
    declared = plugins.RANDOMIZERS
    for name, ref in declared.items():
        module, _, attribute = ref.partition(":")
        assert RANDOMIZERS.get(name) is getattr(importlib.import_module(module), attribute)
        assert RANDOMIZERS.origin(name) == module
    built_in = [n for n in RANDOMIZERS if str(RANDOMIZERS.origin(n)).startswith("shufflesim.")]
    assert built_in == list(declared)


LOOKUP = '''
import json, sys
from shufflesim.protocols import registry
from shufflesim.protocols.randomizers import make_randomizer
make_randomizer("krr", epsilon0=1.0, domain_size=10)
print(json.dumps({"modules": sorted(m for m in sys.modules
                                    if m.startswith("shufflesim.protocols.randomizers.")),
                  "entry_points_read": registry._third_party_state["loaded"]}))
'''


def test_a_fresh_process_builds_krr_without_the_other_randomizers():
    done = subprocess.run([sys.executable, "-c", LOOKUP], capture_output=True, text=True,
                          check=True, timeout=300)
    seen = json.loads(done.stdout)
    assert "shufflesim.protocols.randomizers.krr" in seen["modules"]
    others = {ref.partition(":")[0] for name, ref in plugins.RANDOMIZERS.items()
              if name not in ("krr", "rappor")}   # k-RR's module imports RAPPOR's
    assert not others & set(seen["modules"]), sorted(others & set(seen["modules"]))
    assert seen["entry_points_read"] is False


def test_what_is_known_without_the_declared_modules(toy, monkeypatch):
    """registered, undeclared and items_of (the bound catalogue, the scenario's sections and
    a run's producers use them): no declared module is imported but those asked for."""
    prefix, reg = toy
    entry_points = []
    monkeypatch.setattr(registries, "load_third_party", lambda: entry_points.append(1))
    assert reg.registered("alpha") is None and not reg.complete
    reg.register("late", object())  # by a call, outside the declaration
    assert reg.undeclared() == ["late"] and entry_points == [1]
    assert f"{prefix}_one" not in sys.modules and f"{prefix}_two" not in sys.modules
    assert [name for name, _ in reg.items_of([f"{prefix}_two"])] == ["gamma", "wrong", "late"]
    assert f"{prefix}_one" not in sys.modules
    assert reg.registered("gamma").__name__ == "Gamma"
    assert [name for name, _ in reg.items_of([f"{prefix}_one", f"{prefix}_two"])] == [
        "alpha", "beta", "gamma", "wrong", "late"]  # the registry's order
    assert list(reg) == ["alpha", "beta", "gamma", "wrong", "late"] and reg.complete


def test_a_call_that_takes_a_declared_name_is_refused_before_loading(toy, monkeypatch):
    prefix, reg = toy
    monkeypatch.setattr(registries, "load_third_party", lambda: None)
    reg.register("beta", object())
    with pytest.raises(RuntimeError, match="thing 'beta' registered twice"):
        reg.undeclared()
