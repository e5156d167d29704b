"""Issue 27 item 4: a package outside the project adds a randomizer, a bound and an attack
through the entry-point group ``shufflesim.plugins``; ``list``, ``bound`` and ``audit
--attack`` see them. The package is a module and its distribution metadata (a ``dist-info``
folder with ``entry_points.txt``) in a temporary folder put on ``sys.path`` of a fresh
interpreter: importlib.metadata finds it as it finds an installed one.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

PLUGIN = '''
"""A third-party plug-in module: a randomizer, a bound and an attack."""
from dataclasses import dataclass

from shufflesim.protocols.bounds.closed_form.efmrtt import efmrtt19_epsilon
from shufflesim.protocols.bounds.result import BoundKind, BoundStatus
from shufflesim.protocols.bounds.spec import BoundSpec, any_ldp, generic, register as bound
from shufflesim.protocols.randomizers.krr import KRR
from shufflesim.protocols.randomizers.registry import register
from shufflesim.simulator.audit.attacks import CountAttack
from shufflesim.simulator.audit.levels import Level, register_attack


@register
@dataclass(frozen=True)
class ToyKRR(KRR):
    name = "toy_krr"


bound(BoundSpec("toy-bound", BoundKind.UPPER, "a third party: EFMRTT19 again",
                BoundStatus.PROVEN, "eps0 <= 1/2, n >= 1000, delta <= 0.01", any_ldp,
                generic(efmrtt19_epsilon)))


@register_attack("toy_count", levels=(Level.SHUFFLE,), description="a third party's count")
class ToyCount(CountAttack):
    """The count of group 0, under its own name."""

    @classmethod
    def build(cls, setting):
        return [cls(setting.model, 0, name="toy_count[g0]")]
'''

ENTRY_POINTS = "[shufflesim.plugins]\ntoy = toy_plugin\n"
METADATA = "Metadata-Version: 2.1\nName: shufflesim-toy-plugin\nVersion: 0.1\n"


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    root = tmp_path_factory.mktemp("site")
    (root / "toy_plugin.py").write_text(PLUGIN)
    info = root / "shufflesim_toy_plugin-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(METADATA)
    (info / "entry_points.txt").write_text(ENTRY_POINTS)
    return root


def shufflesim(site, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(site), *filter(None, [os.environ.get("PYTHONPATH")])]))
    code = ("import sys; from shufflesim.simulator.cli import main; "
            "sys.argv[0] = 'shufflesim'; main()")
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                          env=env, timeout=600)


def test_list_sees_the_third_party_plug_ins(site):
    done = shufflesim(site, "list", "--json")
    assert done.returncode == 0, done.stderr
    info = json.loads(done.stdout)
    assert "toy_krr" in info["randomizers"]
    assert "toy-bound" in info["bounds"]
    attacks = list(info["audit"]["attacks"])
    assert attacks[-1] == "toy_count" and attacks[:3] == ["lr", "count", "order"]


def test_bound_and_audit_see_them(site):
    done = shufflesim(site, "bound", "--randomizer", "toy_krr", "--domain-size", "3",
                      "--epsilon0", "0.5", "--n", "2000", "--delta", "1e-3",
                      "--method", "toy-bound", "--json")
    assert done.returncode == 0, done.stderr
    assert '"toy-bound"' in done.stdout and '"epsilon": null' not in done.stdout
    done = shufflesim(site, "audit", "--randomizer", "toy_krr", "--domain-size", "2",
                      "--epsilon0", "2", "--n", "20", "--delta", "1e-3", "--trials", "2000",
                      "--attack", "toy_count", "--no-verdicts", "--json")
    assert done.returncode == 0, done.stderr
    records = json.loads(done.stdout)
    assert {r["attack"] for r in records if r["row_type"] == "attack"} == {"toy_count[g0]"}


def test_a_broken_plug_in_is_one_error_line(site, tmp_path):
    (tmp_path / "broken_plugin.py").write_text("raise ImportError('no such thing')\n")
    info = tmp_path / "broken-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(METADATA.replace("toy", "broken"))
    (info / "entry_points.txt").write_text("[shufflesim.plugins]\nbroken = broken_plugin\n")
    done = shufflesim(tmp_path, "list")
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("error: ")
    assert "broken = broken_plugin" in done.stderr, done.stderr


SCENARIO = '''
import sys
from shufflesim.simulator.execution.executors import InlineExecutor
from shufflesim.simulator.execution.runner import run_scenario
from shufflesim.simulator.scenario.loader import parse_scenario

tables = run_scenario(parse_scenario("""
name = "third-party"
seed = 2
repetitions = 2
[population]
n = 1000
data = { distribution = "uniform", domain_size = 3 }
budget = { distribution = "constant", epsilon0 = 0.5 }
[randomizer]
name = "toy_krr"
[estimator]
name = "frequency"
[bounds]
delta = 1e-3
methods = ["toy-bound"]
"""), executor=InlineExecutor())
assert set(tables["utility"].column("randomizer").to_pylist()) == {"toy_krr"}
assert tables["bounds"].column("method").to_pylist() == ["toy-bound"]
print("scenario ok")
'''


def test_a_scenario_sees_them(site):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(site), *filter(None, [os.environ.get("PYTHONPATH")])]))
    done = subprocess.run([sys.executable, "-c", SCENARIO], capture_output=True, text=True,
                          env=env, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "scenario ok" in done.stdout
