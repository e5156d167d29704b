"""The built-in bounds declared as data (protocols/bounds/declared.py, protocols/plugins.py
BOUNDS; issue 32): every declared fact is the module's own, and the catalogue answers names,
facts and applicability without importing bound modules (checked through sys.modules in a
fresh interpreter, never by timing)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from shufflesim.protocols import plugins
from shufflesim.protocols.bounds import catalogue
from shufflesim.protocols.bounds.declared import FACTS
from shufflesim.protocols.bounds.personalized.bounds import BudgetProfile, PersonalizedUsers
from shufflesim.protocols.bounds.spec import BOUNDS
from shufflesim.protocols.randomizers import make_randomizer, randomizer_names

#: Every built-in randomizer, with parameters it needs, and k-RR at the domain sizes where the
#: k-RR bounds switch (2: binary; 3: krr-exact; 4: krr-relabel).
SUBJECTS: dict[str, tuple[str, dict]] = {
    "balcer": ("balcer", dict(blanket_messages=2, coin="uniform")),
    "balls_into_bins": ("balls_into_bins", dict(bins=8, blanket_messages=2)),
    "blh": ("blh", dict(domain_size=4)), "brr": ("brr", {}),
    "cheu": ("cheu", dict(domain_size=4, flip_probability=0.2)), "duchi": ("duchi", {}),
    "gaussian": ("gaussian", dict(delta0=1e-9)), "hr": ("hr", dict(domain_size=4)),
    "krr2": ("krr", dict(domain_size=2)), "krr3": ("krr", dict(domain_size=3)),
    "krr4": ("krr", dict(domain_size=4)), "krr10": ("krr", dict(domain_size=10)),
    "laplace": ("laplace", {}), "laplace_binary": ("laplace_binary", {}),
    "laplace_metric": ("laplace_metric", {}),
    "mix_dump": ("mix_dump", dict(domain_size=4, flip_probability=0.2, blanket_messages=2)),
    "olh": ("olh", dict(domain_size=4)), "oue": ("oue", dict(domain_size=4)),
    "piecewise": ("piecewise", {}), "planar_laplace": ("planar_laplace", {}),
    "pure_dump": ("pure_dump", dict(domain_size=4, blanket_messages=2)),
    "rappor": ("rappor", dict(domain_size=4)), "subset": ("subset", dict(domain_size=4)),
    "summation": ("summation", {}), "witch_hat": ("witch_hat", {}),
}


def _subjects() -> dict[str, object]:
    subjects: dict[str, object] = {label: make_randomizer(name, epsilon0=1.0, **params)
                for label, (name, params) in SUBJECTS.items()}
    profile = BudgetProfile.from_groups([0.5, 1.0], [5, 5])
    for label in ("krr3", "brr", "oue"):
        subjects[f"personalized {label}"] = PersonalizedUsers(subjects[label], profile)
    subjects["not a randomizer"] = object()
    return subjects


def test_every_built_in_randomizer_is_a_subject():
    assert {name for name, _ in SUBJECTS.values()} == set(randomizer_names())


def test_facts_follow_the_declaration():
    assert list(FACTS) == list(plugins.BOUNDS)


def test_every_fact_is_the_modules_own():
    for name, facts in FACTS.items():
        spec = BOUNDS.get(name)
        assert BOUNDS.origin(name) == plugins.BOUNDS[name], name
        assert (facts.kind, facts.status, facts.also, facts.reference) == (
            spec.kind, spec.status, spec.also, spec.reference), \
            f"{name}: protocols/bounds/declared.py differs from its module's BoundSpec"
    # the catalogue's order is the declaration's
    assert [name for name in BOUNDS if name in FACTS] == list(FACTS)


@pytest.mark.parametrize("label", [*SUBJECTS, "personalized krr3", "personalized brr",
                                   "personalized oue", "not a randomizer"])
def test_facts_apply_where_the_bounds_do(label):
    subject = _subjects()[label]
    differ = [name for name, facts in FACTS.items()
              if facts.applies_to(subject) != BOUNDS.get(name).applies_to(subject)]
    assert not differ, f"{label}: the declared predicate differs for {differ}"
    assert [f.name for f in catalogue.applicable_facts(subject)] == [
        s.name for s in catalogue.applicable_bounds(subject)]


#: Run in a fresh interpreter: what the catalogue answers, and which bound modules it imported.
_FRESH = """
import json, sys
from shufflesim.protocols import plugins
from shufflesim.protocols.bounds import catalogue
from shufflesim.protocols.randomizers import make_randomizer

def imported():
    return sorted(set(plugins.BOUNDS.values()) & set(sys.modules))

out = {}
krr = make_randomizer("krr", epsilon0=1.0, domain_size=10)
out["names"] = catalogue.bound_names()
out["facts"] = [[f.name, f.kind.value, f.status_label, f.reference]
                for f in catalogue.applicable_facts(krr)]
out["after facts"] = imported()
out["efmrtt19"] = catalogue.get_bound("efmrtt19").reference
out["after get"] = imported()
out["applicable"] = [s.name for s in catalogue.applicable_bounds(krr)]
out["after applicable"] = imported()
print(json.dumps(out))
"""


def _fresh(code: str) -> dict:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_catalogue_answers_without_importing_bound_modules():
    out = _fresh(_FRESH)
    assert out["names"] == catalogue.bound_names() == sorted(BOUNDS.names())
    krr = make_randomizer("krr", epsilon0=1.0, domain_size=10)
    assert out["facts"] == [[s.name, s.kind.value, s.status_label, s.reference]
                            for s in catalogue.applicable_bounds(krr)]
    assert out["after facts"] == []
    # the bound's module (and what it imports, here numerical.clones), not the others
    assert plugins.BOUNDS["efmrtt19"] in out["after get"]
    assert not OTHERS & set(out["after get"])
    # the modules of the bounds that apply to 10-RR (and those they import), no other
    applicable = {plugins.BOUNDS[name] for name in out["applicable"]}
    assert applicable <= set(out["after applicable"])
    assert not OTHERS & set(out["after applicable"])


#: Bound modules of bounds that do not apply to k-RR and that no k-RR bound's module imports
#: (brr_exact does not count: krr_exact's blocks import it).
OTHERS = {plugins.BOUNDS[n] for n in (
    "multi-message-exact-lower", "gspa-gdp-personalized", "metric-pair-lower",
    "gaussian-sum-lower", "blanket_hoeffding_laplace")}


_REGISTERED = """
import json
from shufflesim.protocols.bounds import catalogue
from shufflesim.protocols.bounds.spec import BOUNDS, register

spec = catalogue.get_bound("efmrtt19")
register(spec.__class__(**{{**spec.__dict__, "name": {name!r}}}))
try:
    print(json.dumps([n for n in catalogue.bound_names() if n == {name!r}]))
except RuntimeError as error:
    print(json.dumps(str(error)))
"""


def test_a_bound_registered_by_a_call_is_listed_and_a_taken_name_refused():
    assert _fresh(_REGISTERED.format(name="toy-again")) == ["toy-again"]
    assert _fresh(_REGISTERED.format(name="exact-lower")) == \
        "bound 'exact-lower' registered twice"


def test_an_unknown_name_names_every_bound():
    with pytest.raises(Exception) as raised:
        catalogue.bound_facts("optimal-blanke")
    assert "did you mean 'optimal-blanket'" in str(raised.value)
    assert all(name in str(raised.value) for name in BOUNDS.names())
