"""Conformance suite: every registered bound against the contracts of the bound catalogue.

The bounds are taken from the registry (``catalogue.all_bounds()``) at collection time, so a
newly registered bound is covered without editing this file; a homogeneous bound that applies to
none of the randomizers below fails ``test_every_bound_is_exercised``.

For each (bound, randomizer) pair where ``spec.applies_to(randomizer)``:

* regime: invalid inputs (n <= 0, a non-integer n, delta in {0, 1, 1.5, -1e-3, nan}; for
  generic bounds eps0 <= 0) raise ParameterError naming a field -- never another exception --
  and ``evaluate`` turns that into an evaluation with an ``error`` string; n = 1 is either
  ParameterError or a sane result;
* the result states its own numerical error: finite ``epsilon_error >= 0``, the interval it
  promises ([epsilon - err, epsilon] for an upper bound, [epsilon, epsilon + err] for a lower
  one, BoundResult's docstring) lies in [0, eps0] up to rounding, and method/kind/delta match;
* upper bounds are non-increasing in n and non-decreasing in eps0 on a small grid, using only
  the promise of the result: true U(n2) <= U(n1) and U in [eps - err, eps] imply
  eps(n2) - err(n2) <= eps(n1) (points outside a bound's regime are skipped);
* every proven upper bound (as the result states its status) >= the proven ``exact-lower``
  value at the same point (both conservative, so eps_upper >= eps_lower must hold exactly).

Personalized-scope bounds take ``PersonalizedUsers`` (a randomizer and a budget profile); they
get a small fixture of their own below (regime, stated error, order against
``exact-lower-personalized``); their numbers are tested in tests/test_heterogeneous_bounds.py.

The expensive numerical bounds (optimal-blanket, exact-lower) on OUE and HR (d = 4) take
several seconds per point and are marked slow. Tests of the checking functions at the end plant
faults (a bound halved, a bound that grows with n, a crash outside the regime) and assert that
the checks report them.
"""

from __future__ import annotations

import dataclasses
import math
import types

import pytest

from shufflesim.protocols.bounds import catalogue as cat
from shufflesim.protocols.bounds.personalized import bounds as het
from shufflesim.protocols.bounds.result import BoundKind, BoundResult, BoundStatus
from shufflesim.protocols.errors import ParameterError
from shufflesim.protocols.randomizers import make_randomizer

#: Small randomizers: categorical with small domains and one numeric.
RANDOMIZERS: dict[str, dict] = {
    "krr": dict(domain_size=3),
    "brr": {},
    "oue": dict(domain_size=4),
    "hr": dict(domain_size=4),
    "duchi": {},
    # continuous outputs, worst pair unknown (004 Lemma 5.8's bounds hold for every pair)
    "laplace": {},
    # metric DP (001 Table 2): the pair bounds; no engine bound applies to it (fast)
    "witch_hat": dict(height=3.0, brim=0.2, pair_x0=0.3, pair_x1=0.6),
    # (eps0, delta0)-LDP (002 Thm 3.8, the shuffled Gaussian's sum): pure-LDP bounds refuse it
    "gaussian": dict(delta0=1e-9),
    # multi-message (001 Table 3; protocols/bounds/multi_message): single-message bounds refuse
    "pure_dump": dict(domain_size=4, blanket_messages=2),
    # k-RR with k >= 4, only for the bounds that need it (krr-relabel; the others see "krr")
    "krr4": dict(domain_size=4),
}
#: Configurations under another label than their registry name, and the bounds they are for.
REGISTRY_NAME = {"krr4": "krr"}
ONLY_FOR = {"krr4": {"krr-relabel"}}
NS = (50, 200, 1000)
#: Bounds whose regime is small n (their grid of n instead of NS).
SMALL_NS = {"krr-relabel": (6, 10, 16)}
EPS0S = (0.5, 1.0, 2.0)
DELTAS = (1e-6, 1e-3)
#: (bound, randomizer) pairs that cost several seconds per grid point.
SLOW = {(b, r) for b in ("optimal-blanket", "exact-lower") for r in ("oue", "hr", "laplace")}
LOWER_REFERENCE = "exact-lower"
#: Relative rounding slack for comparisons between two conservative numbers.
TINY = 1e-12

_CACHE: dict[tuple, tuple[BoundResult | None, str]] = {}


def _randomizer(name: str, eps0: float):
    return make_randomizer(REGISTRY_NAME.get(name, name), epsilon0=eps0, **RANDOMIZERS[name])


def _ns(name: str) -> tuple:
    return SMALL_NS.get(name, NS)


def run(spec, randomizer, n, delta) -> tuple[BoundResult | None, str]:
    """(result, "") or (None, field) for a ParameterError; any other exception propagates."""
    try:
        return spec.compute(randomizer, n, delta), ""
    except ParameterError as error:
        assert error.field, f"{spec.name}: ParameterError without a field: {error}"
        assert str(error).startswith(f"{error.field} = "), str(error)
        return None, error.field


def cached(name: str, rname: str, eps0: float, n: int, delta: float):
    key = (name, rname, eps0, n, delta)
    if key not in _CACHE:
        _CACHE[key] = run(cat.get_bound(name), _randomizer(rname, eps0), n, delta)
    return _CACHE[key]


# --------------------------------------------------------------------------------------------
# Checking functions (pure; tested against planted faults at the end)
# --------------------------------------------------------------------------------------------
def result_problems(spec, result: BoundResult, eps0: float, delta: float) -> list[str]:
    """What is wrong with one result against the BoundResult contract."""
    out = []
    eps, err = result.epsilon, result.epsilon_error
    if result.method != spec.name:
        out.append(f"method {result.method!r} != {spec.name!r}")
    if result.kind is not spec.kind:
        out.append(f"kind {result.kind} != {spec.kind}")
    if result.delta != delta:
        out.append(f"delta {result.delta} != {delta}")
    if not (math.isfinite(eps) and math.isfinite(err) and err >= 0):
        return out + [f"epsilon {eps}, epsilon_error {err}: not finite / negative error"]
    low, high = (eps - err, eps) if spec.kind is BoundKind.UPPER else (eps, eps + err)
    slack = TINY * max(1.0, eps0) + 1e-12
    if low < -slack:
        out.append(f"promised interval [{low}, {high}] reaches below 0")
    # the true privacy level never exceeds eps0 (a shuffled eps0-LDP mechanism is eps0-DP), so
    # a lower bound's interval must reach down to eps0 at least (an upper bound above eps0 is
    # loose, not wrong: efmrtt19 and blanket_krr_thm31 are, at eps0 = 0.5, n = 1000)
    if spec.kind is BoundKind.LOWER and low > eps0 * (1 + 1e-9) + 1e-12:
        out.append(f"promised interval [{low}, {high}] lies above eps0 = {eps0}")
    return out


def monotone_problems(points, increasing: bool) -> list[str]:
    """points: [(x, epsilon, epsilon_error)] of an upper bound in increasing x. The true value is
    in [eps - err, eps]; it must be non-increasing (increasing=False) or non-decreasing in x."""
    out = []
    for (x1, e1, r1), (x2, e2, r2) in zip(points, points[1:], strict=False):
        if increasing and e2 < e1 - r1 - TINY * max(1.0, e1):
            out.append(f"x {x1} -> {x2}: epsilon {e1} (err {r1}) -> {e2}: decreases")
        if not increasing and e2 - r2 > e1 + TINY * max(1.0, e1):
            out.append(f"x {x1} -> {x2}: epsilon {e1} -> {e2} (err {r2}): increases")
    return out


def order_problem(upper: BoundResult, lower: BoundResult) -> str:
    """Both conservative: a sound upper bound's epsilon is >= the lower bound's epsilon."""
    if upper.epsilon < lower.epsilon - TINY * max(1.0, lower.epsilon):
        return (f"{upper.method} = {upper.epsilon!r} (err {upper.epsilon_error}) < "
                f"{lower.method} = {lower.epsilon!r} (err {lower.epsilon_error})")
    return ""


# --------------------------------------------------------------------------------------------
# Parametrization from the registry
# --------------------------------------------------------------------------------------------
HOMOGENEOUS = [spec for spec in cat.all_bounds() if spec.scope != "personalized"]
PERSONALIZED = [spec for spec in cat.all_bounds() if spec.scope == "personalized"]


def _pairs(specs, also_slow=()):
    params = []
    for spec in specs:
        for rname in RANDOMIZERS:
            if rname in ONLY_FOR and spec.name not in ONLY_FOR[rname]:
                continue
            randomizer = _randomizer(rname, 1.0)
            if spec.applies_to(randomizer) and spec.delta0_refusal(randomizer) is None:
                slow = any((b, rname) in SLOW for b in (spec.name, *also_slow))
                marks = [pytest.mark.slow] if slow else []
                params.append(pytest.param(spec.name, rname, marks=marks,
                                           id=f"{spec.name}-{rname}"))
    return params


PAIRS = _pairs(HOMOGENEOUS)
UPPER_PAIRS = _pairs([s for s in HOMOGENEOUS if s.kind is BoundKind.UPPER])
PROVEN_UPPER_PAIRS = _pairs([s for s in HOMOGENEOUS if s.kind is BoundKind.UPPER
                             and s.status is BoundStatus.PROVEN], also_slow=(LOWER_REFERENCE,))


def test_every_bound_is_exercised():
    covered = {p.values[0] for p in PAIRS}
    missing = [s.name for s in HOMOGENEOUS if s.name not in covered]
    assert not missing, f"no randomizer of RANDOMIZERS applies to {missing}; add one"
    assert LOWER_REFERENCE in covered and PERSONALIZED, "registry lost its reference bounds"


BAD_N = (0, -5, 2.5)
BAD_DELTA = (0.0, 1.0, 1.5, -1e-3, float("nan"))


@pytest.mark.parametrize("name,rname", PAIRS)
def test_regime_errors(name, rname):
    spec = cat.get_bound(name)
    randomizer = _randomizer(rname, 1.0)
    for n in BAD_N:
        result, field = run(spec, randomizer, n, 1e-6)
        assert result is None, f"{name}: n = {n} gave {result}"
        out = cat.evaluate(name, randomizer, n, 1e-6)
        assert not out.ok and out.error.startswith(f"{field} = ")
    for delta in BAD_DELTA:
        result, field = run(spec, randomizer, _ns(name)[1], delta)
        assert result is None, f"{name}: delta = {delta} gave {result}"
    result, _ = run(spec, randomizer, 1, 1e-6)   # n = 1: a reason or a sane result
    if result is not None:
        assert result_problems(spec, result, 1.0, 1e-6) == []
    if spec.scope == "generic":   # the randomizers themselves refuse eps0 <= 0
        for eps0 in (0.0, -1.0, float("nan")):
            stand_in = types.SimpleNamespace(name=rname, epsilon0=eps0, output_kind="discrete")
            result, _ = run(spec, stand_in, 200, 1e-6)
            assert result is None, f"{name}: eps0 = {eps0} gave {result}"


@pytest.mark.parametrize("name,rname", PAIRS)
def test_results_state_their_error(name, rname):
    spec = cat.get_bound(name)
    problems, computed = [], 0
    for eps0 in EPS0S:
        for n in _ns(name):
            for delta in DELTAS:
                result, _ = cached(name, rname, eps0, n, delta)
                if result is not None:
                    computed += 1
                    # a multi-message protocol's eps0 is a design target; its users' own
                    # privacy level is local_epsilon = log p (001 Table 3; may be infinite)
                    level = getattr(_randomizer(rname, eps0), "local_epsilon", eps0)
                    problems += [f"eps0={eps0} n={n} delta={delta}: {p}"
                                 for p in result_problems(spec, result, level, delta)]
    assert not problems, problems
    if computed == 0:
        pytest.skip(f"{name} on {rname}: every grid point outside its regime")


def _series(name, rname, along: str, fixed):
    points = []
    for x in (_ns(name) if along == "n" else EPS0S):
        eps0, n, delta = (fixed[0], x, fixed[1]) if along == "n" else (x, fixed[0], fixed[1])
        result, _ = cached(name, rname, eps0, n, delta)
        if result is not None:
            points.append((x, result.epsilon, result.epsilon_error))
    return points


@pytest.mark.parametrize("name,rname", UPPER_PAIRS)
def test_upper_bounds_monotone(name, rname):
    problems = []
    for eps0 in EPS0S:
        for delta in DELTAS:
            problems += [f"eps0={eps0} delta={delta} in n: {p}" for p in
                         monotone_problems(_series(name, rname, "n", (eps0, delta)), False)]
    for n in _ns(name):
        for delta in DELTAS:
            problems += [f"n={n} delta={delta} in eps0: {p}" for p in
                         monotone_problems(_series(name, rname, "eps0", (n, delta)), True)]
    assert not problems, problems


@pytest.mark.parametrize("name,rname", PROVEN_UPPER_PAIRS)
def test_proven_upper_above_exact_lower(name, rname):
    if not cat.get_bound(LOWER_REFERENCE).applies_to(_randomizer(rname, 1.0)):
        pytest.skip(f"{LOWER_REFERENCE} does not apply to {rname}")
    problems, compared = [], 0
    for eps0 in EPS0S:
        for n in _ns(name):
            for delta in DELTAS:
                upper, _ = cached(name, rname, eps0, n, delta)
                if upper is None or upper.status is not BoundStatus.PROVEN:
                    continue
                lower, _ = cached(LOWER_REFERENCE, rname, eps0, n, delta)
                if lower is None:
                    continue
                compared += 1
                problem = order_problem(upper, lower)
                if problem:
                    problems.append(f"eps0={eps0} n={n} delta={delta}: {problem}")
    assert not problems, problems
    if compared == 0:
        pytest.skip(f"{name} on {rname}: no grid point where both are in their regime")


# --------------------------------------------------------------------------------------------
# Personalized-scope bounds: PersonalizedUsers fixtures
# --------------------------------------------------------------------------------------------
PERSONALIZED_BASES = {"krr": dict(domain_size=3), "brr": {}}
PERSONALIZED_LOWER = "exact-lower-personalized"


def _users(rname: str, budgets=(0.5, 1.0), m: int = 25):
    randomizer = make_randomizer(rname, epsilon0=max(budgets), **PERSONALIZED_BASES[rname])
    profile = het.BudgetProfile.from_groups(list(budgets), [m] * len(budgets))
    return het.PersonalizedUsers(randomizer, profile)


def _personalized_pairs():
    params = []
    for spec in PERSONALIZED:
        for rname in PERSONALIZED_BASES:
            if spec.applies_to(_users(rname)):
                params.append(pytest.param(spec.name, rname, id=f"{spec.name}-{rname}"))
    return params


PERSONALIZED_PAIRS = _personalized_pairs()


def test_every_personalized_bound_is_exercised():
    covered = {p.values[0] for p in PERSONALIZED_PAIRS}
    assert covered == {s.name for s in PERSONALIZED}
    assert not any(s.applies_to(_randomizer("krr", 1.0)) for s in PERSONALIZED)


@pytest.mark.parametrize("name,rname", PERSONALIZED_PAIRS)
def test_personalized_regime_and_stated_error(name, rname):
    spec = cat.get_bound(name)
    users = _users(rname)
    n = users.profile.n
    for bad_n in (n - 1, n + 1, 0):
        assert run(spec, users, bad_n, 1e-6)[0] is None
    for delta in BAD_DELTA:
        assert run(spec, users, n, delta)[0] is None, f"delta = {delta}"
    assert run(spec, _randomizer(rname, 1.0), n, 1e-6)[0] is None   # a plain randomizer
    for delta in DELTAS:
        result, _ = run(spec, users, n, delta)
        assert result is not None
        assert result_problems(spec, result, max(users.profile.epsilons), delta) == []


def _mechanism(name: str) -> str:
    lookup = getattr(het, "personalized_spec", None)
    return getattr(lookup(name), "mechanism", "") if lookup else ""


@pytest.mark.parametrize("name,rname", [
    p for p in PERSONALIZED_PAIRS
    if cat.get_bound(p.values[0]).kind is BoundKind.UPPER
    and cat.get_bound(p.values[0]).status is BoundStatus.PROVEN])
def test_personalized_proven_upper_above_exact_lower(name, rname):
    # The baseline protocol at the smallest budget is another (more private) mechanism; the
    # tagged protocol reveals more than the personalized mechanism, so it must be above.
    if _mechanism(name) == getattr(het, "BASELINE", None):
        pytest.skip("describes the baseline protocol at the smallest budget, not the "
                    "personalized mechanism that exact-lower-personalized bounds")
    spec, lower_spec = cat.get_bound(name), cat.get_bound(PERSONALIZED_LOWER)
    for m in (25, 100):
        users = _users(rname, m=m)
        for delta in DELTAS:
            upper, _ = run(spec, users, users.profile.n, delta)
            lower, _ = run(lower_spec, users, users.profile.n, delta)
            assert upper is not None and lower is not None
            assert not order_problem(upper, lower), (m, delta, order_problem(upper, lower))


# --------------------------------------------------------------------------------------------
# The checks can fail: planted faults
# --------------------------------------------------------------------------------------------
def _planted(spec, transform):
    def compute(randomizer, n, delta):
        return transform(spec.compute(randomizer, n, delta), n)
    return dataclasses.replace(spec, compute=compute)


def test_planted_bound_below_exact_lower_is_reported():
    """fmt21_numerical with epsilon halved (its error unchanged) falls below exact-lower."""
    spec = _planted(cat.get_bound("fmt21_numerical"),
                    lambda r, n: dataclasses.replace(r, epsilon=0.5 * r.epsilon))
    randomizer = _randomizer("krr", 2.0)
    upper, _ = run(spec, randomizer, 200, 1e-6)
    lower, _ = cached(LOWER_REFERENCE, "krr", 2.0, 200, 1e-6)
    assert order_problem(upper, lower)
    honest, _ = cached("fmt21_numerical", "krr", 2.0, 200, 1e-6)
    assert not order_problem(honest, lower)


def test_planted_monotonicity_fault_is_reported():
    """A bound that grows with n, and one that shrinks with eps0, are reported."""
    growing = _planted(cat.get_bound("blanket_hoeffding_generic"),
                       lambda r, n: dataclasses.replace(r, epsilon=r.epsilon * n / 50))
    points = []
    for n in NS:
        result, _ = run(growing, _randomizer("brr", 1.0), n, 1e-6)
        points.append((n, result.epsilon, result.epsilon_error))
    assert monotone_problems(points, increasing=False)
    assert monotone_problems([(x, 1.0 / x, 0.0) for x in EPS0S], increasing=True)
    # within the stated error is not a fault; beyond it is
    assert not monotone_problems([(1, 1.0, 0.0), (2, 1.05, 0.05)], increasing=False)
    assert monotone_problems([(1, 1.0, 0.0), (2, 1.05, 0.04)], increasing=False)


def test_planted_contract_faults_are_reported():
    spec = cat.get_bound("fmt21_numerical")
    good, _ = cached("fmt21_numerical", "krr", 1.0, 200, 1e-6)
    assert result_problems(spec, good, 1.0, 1e-6) == []
    for bad in (dict(epsilon_error=-1e-9), dict(epsilon_error=float("nan")),
                dict(epsilon=float("inf")), dict(method="other"), dict(delta=1e-3),
                dict(epsilon=0.01, epsilon_error=0.02), dict(kind=BoundKind.LOWER)):
        assert result_problems(spec, dataclasses.replace(good, **bad), 1.0, 1e-6), bad
    lower = cat.get_bound(LOWER_REFERENCE)
    exact, _ = cached(LOWER_REFERENCE, "krr", 1.0, 200, 1e-6)
    assert result_problems(lower, exact, 1.0, 1e-6) == []
    assert result_problems(lower, dataclasses.replace(exact, epsilon=1.2), 1.0, 1e-6)


def test_planted_crash_outside_regime_is_reported():
    """A bound raising something other than ParameterError outside its regime propagates."""
    crashing = dataclasses.replace(cat.get_bound("efmrtt19"),
                                   compute=lambda r, n, d: 1 / 0 if d <= 0 else None)
    with pytest.raises(ZeroDivisionError):
        run(crashing, _randomizer("krr", 0.5), 2000, 0.0)
    silent = dataclasses.replace(cat.get_bound("efmrtt19"),
                                 compute=lambda r, n, d: "a number anyway")
    assert run(silent, _randomizer("krr", 0.5), 0, 1e-6)[0] is not None  # regime test fails
