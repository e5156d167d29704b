"""Issue 27, acceptance: a new randomizer with its estimator, a bound, an attack and an audit
level, each one module plus one line in its package's declaration, are seen by every consumer:
``list``, a scenario (utility, bounds and audit tables), ``bound``, ``audit --attack`` and
``--level``, the JSON Schema of scenarios, and the randomizer and estimator conformance suites.

The modules are written to a temporary folder; ``toy_declare.py`` there is the five
declaration lines (appended to the tuples, or for the randomizer its mapping, of
protocols/plugins.py and simulator/plugins.py
before any registry is read, as the edited files would hold them). Everything runs in fresh
interpreters, so the project's own registries are untouched.
"""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import pytest

REPO = pathlib.Path(__file__).resolve().parents[1]

MODULES = {
    "toy_randomizer.py": '''
"""A new randomizer: k-RR under another name, with its example parameters."""
from dataclasses import dataclass

from shufflesim.protocols.randomizers.krr import KRR
from shufflesim.protocols.randomizers.registry import register


@register
@dataclass(frozen=True)
class ToyRR(KRR):
    name = "toy_rr"
    example = dict(epsilon0=0.9, domain_size=3)
''',
    "toy_estimator.py": '''
"""A new estimator for it, declaring its target."""
from typing import ClassVar

from shufflesim.protocols.estimators.frequency import FrequencyEstimator
from shufflesim.protocols.estimators.registry import register_estimator


@register_estimator
class ToyFrequency(FrequencyEstimator):
    name: ClassVar[str] = "toy_frequency"
    target: ClassVar[str] = "frequency"

    @classmethod
    def fits(cls, randomizer):
        return getattr(randomizer, "name", None) == "toy_rr"
''',
    "toy_bound.py": '''
"""A new bound: EFMRTT19's closed form under another name."""
from shufflesim.protocols.bounds.closed_form.efmrtt import efmrtt19_epsilon
from shufflesim.protocols.bounds.result import BoundKind, BoundStatus
from shufflesim.protocols.bounds.spec import BoundSpec, any_ldp, generic, register

register(BoundSpec("toy-bound", BoundKind.UPPER, "EFMRTT19 again", BoundStatus.PROVEN,
                   "eps0 <= 1/2, n >= 1000, delta <= 0.01", any_ldp,
                   generic(efmrtt19_epsilon)))
''',
    "toy_attack.py": '''
"""A new attack: the count of output group 0, under its own name."""
from shufflesim.simulator.audit.attacks import CountAttack
from shufflesim.simulator.audit.levels import Level, register_attack


@register_attack("toy_count", levels=(Level.SHUFFLE, "toy_level"),
                 description="the count of group 0")
class ToyCount(CountAttack):
    @classmethod
    def build(cls, setting):
        return [cls(setting.model, 0, name="toy_count[g0]")]
''',
    "toy_level.py": '''
"""A new audit level: the shuffle level's audit, reported under its own name."""
import dataclasses

from shufflesim.simulator.audit.levels import register_level


def run(settings, randomizer, n, seed, context, pipeline, progress):
    from shufflesim.simulator.audit.run import run_audit

    shuffled = dataclasses.replace(settings, level="shuffle")
    rows = run_audit(shuffled, randomizer, n, seed, context, pipeline, progress)
    return [{**row, "level": "toy_level"} for row in rows]


register_level("toy_level", "the shuffle level again, under its own name", run)
''',
    "toy_declare.py": '''
"""The five declaration lines (one per plug-in module)."""
from shufflesim.protocols import plugins as p
from shufflesim.simulator import plugins as s

p.RANDOMIZERS["toy_rr"] = "toy_randomizer:ToyRR"
p.ESTIMATORS += ("toy_estimator",)
p.BOUNDS["toy-bound"] = "toy_bound"
s.ATTACKS += ("toy_attack",)
s.LEVELS += ("toy_level",)
''',
}

DRIVER = '''
import json
import sys

import toy_declare  # noqa: F401
from click.testing import CliRunner

from shufflesim.simulator.cli import main
from shufflesim.simulator.execution.executors import InlineExecutor
from shufflesim.simulator.execution.runner import run_scenario
from shufflesim.simulator.scenario.loader import parse_scenario
from shufflesim.simulator.scenario.schema import scenario_schema


def cli(*args):
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


info = json.loads(cli("list", "--json"))
assert "toy_rr" in info["randomizers"], "list: randomizer"
assert "toy_frequency" in info["estimators"], "list: estimator"
assert "toy-bound" in info["bounds"], "list: bound"
assert list(info["audit"]["attacks"])[-1] == "toy_count", "list: attack"
assert list(info["audit"]["levels"])[-1] == "toy_level", "list: level"

rows = json.loads(cli("bound", "--randomizer", "toy_rr", "--domain-size", "3", "--epsilon0",
                      "0.5", "--n", "2000", "--delta", "1e-3", "--method", "toy-bound",
                      "--json"))
assert [r["method"] for r in rows] == ["toy-bound"] and rows[0]["epsilon"] > 0, rows

records = json.loads(cli("audit", "--randomizer", "toy_rr", "--domain-size", "2",
                         "--epsilon0", "2", "--n", "20", "--delta", "1e-3", "--trials",
                         "2000", "--attack", "toy_count", "--no-verdicts", "--json"))
assert {r["attack"] for r in records if r["row_type"] == "attack"} == {"toy_count[g0]"}
records = json.loads(cli("audit", "--randomizer", "toy_rr", "--domain-size", "2",
                         "--epsilon0", "2", "--n", "20", "--delta", "1e-3", "--trials",
                         "2000", "--level", "toy_level", "--attack", "toy_count", "--no-verdicts",
                         "--json"))
assert records and {r["level"] for r in records} == {"toy_level"}, records
assert {r["attack"] for r in records if r["row_type"] == "attack"} == {"toy_count[g0]"}

scenario = parse_scenario("""
name = "toy"
seed = 1
repetitions = 3
[population]
n = 1000
data = { distribution = "uniform", domain_size = 3 }
budget = { distribution = "constant", epsilon0 = 0.5 }
[randomizer]
name = "toy_rr"
[estimator]
name = "toy_frequency"
[bounds]
delta = 1e-3
methods = ["toy-bound"]
[audit]
trials = 2000
delta = 1e-3
attacks = ["toy_count"]
bounds = []
""")
tables = run_scenario(scenario, executor=InlineExecutor())
utility = tables["utility"].to_pandas()
assert set(utility["estimator"]) == {"toy_frequency"} and set(utility["randomizer"]) == {"toy_rr"}
bounds = tables["bounds"].to_pandas()
assert set(bounds["method"]) == {"toy-bound"} and bounds["epsilon"].notna().all()
audit = tables["audit"].to_pandas()
assert set(audit.loc[audit["row_type"] == "attack", "attack"]) == {"toy_count[g0]"}

schema = json.dumps(scenario_schema())
for name in ("toy_rr", "toy_frequency", "toy-bound", "toy_count", "toy_level"):
    assert f'"{name}"' in schema, f"schema: {name}"
print("every consumer sees the four plug-ins")
'''


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    root = tmp_path_factory.mktemp("toy")
    for name, text in MODULES.items():
        (root / name).write_text(text.lstrip())
    (root / "driver.py").write_text(DRIVER)
    return root


def _env(folder, tmp_path) -> dict:
    return dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(folder), *filter(None, [os.environ.get("PYTHONPATH")])]),
        SHUFFLESIM_CACHE_DIR=str(tmp_path / "cache"))


def test_every_consumer_sees_the_new_plug_ins(folder, tmp_path):
    done = subprocess.run([sys.executable, str(folder / "driver.py")], capture_output=True,
                          text=True, env=_env(folder, tmp_path), timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "every consumer sees the four plug-ins" in done.stdout


def test_the_conformance_suites_take_the_new_randomizer_and_estimator(folder, tmp_path):
    """And the tests that used to hard-code the attack set still pass with one more."""
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "toy_declare", "-p", "no:cacheprovider",
         "-k", "toy_rr or attack_set or one_registered_class or list_plain",
         "tests/test_randomizer_conformance.py", "tests/test_estimator_conformance.py",
         "tests/test_audit_shuffle.py", "tests/test_cli_run.py"],
        capture_output=True, text=True, env=_env(folder, tmp_path), cwd=REPO, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:]
    passed = int(done.stdout.strip().splitlines()[-1].split(" passed")[0].split()[-1])
    assert passed >= 14, done.stdout[-500:]
