"""Amplification bounds for users with personalized budgets (heterogeneous users).

User i randomizes with its own budget eps_i. The bounds take a :class:`BudgetProfile` (the
multiset of the n budgets) and hold for every neighbouring pair of datasets differing in any one
user, whatever its budget.

003's mu-GDP bound (:func:`gspa_gdp_personalized`) holds for any (eps_i, delta_i)-LDP users; it is
``approximate`` (a Berry-Esseen term is dropped) and rests on the stronger-clone reduction
(000 Sec. 3.3). The other bounds are derived here for k-ary randomized response (``krr``, and
binary RR ``brr`` = 2-RR), the family for which the blanket is the same for every budget.

Blanket with one common component (derived from 000 Def. 7-8, Thm 4 and Thm 12)
-----------------------------------------------------------------------------
For k-RR with budget eps, R_eps(x) = gamma(eps) U + (1 - gamma(eps)) delta_x with U uniform on
[k] and gamma(eps) = k / (e^eps + k - 1): every budget has the *same* blanket U (000 Table 2 row
k-RR), only its mass gamma differs. Let user 1 (budget eps_t) be the one whose input changes,
x1^0 -> x1^1, and A_b = R_{eps_t}(x1^b). Write every other user as: with probability gamma_i a
sample from U, else a "left-over" sample from delta_{x_i}. The histogram of

    one sample of A_b, and for i >= 2 independently: a sample of U w.p. gamma_i, else a symbol _|_

is a reduction pair (P_0, P_1): the shuffled output is obtained from it by post-processing that
does not depend on b. Replace each _|_ by the left-over output of a user drawn from the set I of
users who chose _|_; given the histogram, P(I = S) is proportional to
prod_{i in S} (1 - gamma_i) prod_{i notin S} gamma_i over the sets of the right size, because the
histogram of the non-_|_ samples depends on S only through |S| (the U samples are i.i.d. whoever
drew them). This is where a *common* component is needed; the stronger clone of 003 Lemma 1
mixes user-specific components (000 Sec. 3.3).

The number M of users i >= 2 that drew from U is visible in the histogram, so
D_{e^eps}(P_0 || P_1) = sum_m P(M = m) f(m + 1), with M ~ Poisson-binomial(gamma_2..gamma_n) and
f(m) = D_{e^eps} of one A_b sample plus m - 1 samples of U, which by 000 Thm 12 (A2 = U) is

    f(m) = (1/m) E[(L_1 + ... + L_m)_+],   L = (A_0(y) - e^eps A_1(y)) / U(y),  y ~ U,

a sum of binomial tails (:func:`f_values`; cross-checked against the hockey-stick engine,
:func:`f_engine`). For equal budgets M is Bin(n-1, gamma) and the identity
C(n-1, m) / (m + 1) = C(n, m + 1) / n turns the sum into 000 Thm 13's (1/n) E[(G_1 + ... +
G_n)_+] (the homogeneous optimal bound). Equivalently (exchangeability inside f),
delta = E[L_0 1{L_0 + sum_{i>=2} B_i L_i > 0}] with B_i ~ Bernoulli(gamma_i): *not* a
normalized hockey-stick of a sum of non-identical GPARVs. The tempting generalization
(1/n) E[(sum_i G_i)_+] with G_i = L_i / gamma_i w.p. gamma_i is not a bound: for 3-RR with the
target at budget 0.2 and three others at 2.0 it gives 0.0311 at eps = 0.05, below the true
0.0346. The brute-force enumeration of shuffled histograms for n <= 6 in the tests is the
arbiter: the bound is never below the true divergence of any dataset, and for k >= 3 it is
attained.

Computation. f is non-increasing in m (adding an independent U sample is post-processing), so
blocks [b_j, b_{j+1}) of M's values bracket the sum: sum_j P_j f(b_{j+1}) <= delta <=
sum_j P_j f(b_j + 1), with a bracket of each f from :func:`f_values`. Blocks are split where the
gap exceeds its share until the bracket is within ``rtol``; the law of M is a product of
binomial / Bernoulli generating polynomials (:func:`poisson_binomial`, positive arithmetic with
an entry-wise relative error bound and bounded window tails).

Target user. The bound is the maximum over the budget values present of the bound with the
target at that budget (the others: everyone else). With more than :data:`MAX_TARGETS` distinct
budgets a single conservative case is used: the target at the largest budget and, as others,
everyone but one user of the smallest budget. It dominates every case because f grows with the
target's budget (k-RR at eps is k-RR at eps' > eps followed by a symmetric channel that maps U to
U, applied to the whole multiset) and the sum shrinks when M grows stochastically (removing a
user with a larger gamma leaves a stochastically smaller M).

Exact pair with heterogeneous budgets (lower bound; generalizes 000 Thm 14)
--------------------------------------------------------------------------
X0 = (x0, x2, ..., x2), X1 = (x1, x2, ..., x2), every other user with its own budget. With
pi = the law of M as above and F(c) = sum_m pi_m m! k^-m / (c - (n - 1) + m)!, the law of the
others' histogram H' is F(H'_x2) / prod_{y != x2} H'_y!, so with H the full histogram and
c2 = H_x2:

    P_b(H) = [F(c2) sum_{y != x2} A_b(y) H_y + A_b(x2) F(c2 - 1)] / prod_{y != x2} H_y!.

Summing over the histograms with a given c2 (weight (k-1)^(n-c2) / (n-c2)! times a multinomial
over the k - 1 other values) gives delta(eps) = sum_c2 w(c2) E[(alpha + linear(X))_+] with
closed forms in binomial tails (:func:`protocols.bounds.engine.common.leaf_positive_part`) for
the three cases x2 = x1, x2 = x0 and x2 outside {x0, x1} (the candidate triples of the
homogeneous bound; k-RR is symmetric, so these cover both directions). Exact for the pair, hence
a lower bound on the mechanism's delta; the tests compare it with brute-force enumeration.

Other bounds here: the homogeneous optimal bound at the largest budget (valid for k-RR by the
same two monotonicity facts), the per-group shuffle (the privacy of tagged reports, which the
weighted estimators of protocols.estimators.personalized need: each report's budget group is
visible, so a user hides only among its own group), and the baseline protocol in which every
user randomizes at the smallest budget (a different protocol: its central eps, not a bound on the
personalized mechanism).
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from shufflesim.protocols.bounds.closed_form import gdp
from shufflesim.protocols.bounds.engine import core as engine
from shufflesim.protocols.bounds.engine.common import Estimate
from shufflesim.protocols.bounds.numerical import optimal
from shufflesim.protocols.bounds.personalized.blanket import (
    RANDOMIZERS,
    _KRRFamily,
    blanket_delta_for_target,
)
from shufflesim.protocols.bounds.personalized.exact import _ExactPair
from shufflesim.protocols.bounds.personalized.profile import (
    BudgetProfile,
)
from shufflesim.protocols.bounds.result import BoundKind, BoundResult, BoundStatus
from shufflesim.protocols.bounds.spec import BoundSpec
from shufflesim.protocols.errors import ParameterError, require, require_probability_open

#: Largest number of distinct budgets for which every budget value is tried as the target's.
MAX_TARGETS = 16

REFERENCE_BLANKET = "000 Thm 12-13, common-blanket general clone for per-user budgets (derived)"
REFERENCE_EXACT = "000 Thm 14 generalized to per-user budgets (derived)"


# ----------------------------------------------------------------------------------------------
# Target cases and eps(delta)
# ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Case:
    label: str
    target_epsilon: float
    delta_fn: Callable[[float], Estimate]


def _target_cases(profile: BudgetProfile) -> tuple[list[tuple[float, np.ndarray, np.ndarray]],
                                                   bool]:
    """(target budget, others' budgets, others' counts) per case, largest budget first; and
    whether the cases are exhaustive (every distinct budget tried) or the single conservative
    case (module docstring)."""
    values, counts = profile.budget_counts()
    if values.size <= MAX_TARGETS:
        cases = []
        for eps_t in values[::-1]:
            others_v, others_c = profile.without_one(float(eps_t))
            cases.append((float(eps_t), others_v, others_c))
        return cases, True
    counts = counts.copy()
    counts[0] -= 1  # everyone but one user of the smallest budget
    keep = counts > 0
    return [(float(values[-1]), values[keep], counts[keep])], False


def _check_profile(profile, delta) -> None:
    require(isinstance(profile, BudgetProfile), "budgets", type(profile).__name__,
            "must be a BudgetProfile")
    require(profile.n >= 2, "n", profile.n, "must be an integer >= 2")
    require_probability_open("delta", delta)


def _eps_max(epsilon_t: float) -> float:
    # delta(eps) = 0 from eps = eps_t on (L <= gamma (e^eps_t - e^eps) <= 0; for the exact pair
    # A_0 <= e^eps_t A_1 pointwise).
    return epsilon_t * (1 + 1e-9) + 1e-9


def _search(case: _Case, delta: float, side: str, rtol: float, extra: int = 8):
    """eps(delta) for one case with the engine's bracketing (engine.epsilon_of_delta), then a
    few bisection steps on [certified above, certified below] to narrow the reported error: a
    midpoint is certified above when its lower estimate exceeds delta, below when its upper
    estimate is at most delta; when it is neither, the delta bracket is the limit.

    Absolute tolerances scale with the target's budget (a fixed 1e-9 could not resolve a bound
    at eps_t = 1e-12). Upper side: the result is at most eps_t, the safe answer wherever the
    float search cannot certify a crossing (it returned inf at eps_t = 20, where the certified
    bracket of the exact delta near eps_t is e^eps_t REL_LOG wide, and at eps_t = 1e-300): the
    pairs of this case differ in the report of one eps_t-LDP user, and the shuffled output is
    a post-processing of that report given the others, so their D_{e^eps_t} is 0 (issue 14)."""
    eps_t = case.target_epsilon
    xtol = min(1e-10, 1e-6 * eps_t)
    est = engine.epsilon_of_delta(case.delta_fn, delta, side, eps_max=_eps_max(eps_t),
                                  rtol=rtol, xtol=xtol)
    lower, upper = est.lower, est.upper
    steps = 0
    while (steps < extra and math.isfinite(upper)
           and upper - lower > max(10 * xtol, rtol * upper)):
        mid = 0.5 * (lower + upper)
        at = case.delta_fn(mid)
        steps += 1
        if at.lower > delta:
            lower = mid
        elif at.upper <= delta:
            upper = mid
        else:
            break
    if side == "upper" and not upper <= eps_t:
        upper = eps_t
        lower = min(lower, eps_t)
    value = upper if side == "upper" else lower
    return engine.EpsilonEstimate(value, lower, upper, upper - lower, est.saturated,
                                  est.evaluations + steps)


def _max_over_cases(cases: list[_Case], delta: float, side: str, rtol: float):
    """max over cases of eps(delta) with screening (as protocols.bounds.numerical.optimal): a case
    whose certified delta at the current best eps is <= delta (upper) / not > delta (lower)
    cannot raise the maximum (upper: exact; lower: only costs tightness)."""
    best = None
    label = ""
    for case in cases:
        if best is not None and math.isfinite(best.value):
            at = case.delta_fn(best.value)
            if (at.upper <= delta) if side == "upper" else not (at.lower > delta):
                continue
        est = _search(case, delta, side, rtol)
        better = best is None or (est.upper if side == "upper" else est.lower) > (
            best.upper if side == "upper" else best.lower)
        if better:
            best, label = est, case.label
    return best, label


def _result(method, kind, est, delta, status, reference, started, note) -> BoundResult:
    error = est.error if math.isfinite(est.error) else math.inf
    return BoundResult(method=method, kind=kind, epsilon=float(est.value), delta=float(delta),
                       epsilon_error=float(error), status=status, reference=reference,
                       seconds=time.perf_counter() - started, note=note)


def _profile_note(profile: BudgetProfile) -> str:
    values, counts = profile.budget_counts()
    if values.size <= 6:
        groups = ", ".join(f"{c} x {v:g}" for v, c in zip(values, counts, strict=True))
    else:
        groups = f"{values.size} distinct budgets in [{values[0]:g}, {values[-1]:g}]"
    return f"n = {profile.n}: {groups}"


def blanket_cases(randomizer, profile: BudgetProfile, *, rtol: float = 1e-3):
    """The target cases of the heterogeneous blanket bound (module docstring)."""
    family = _KRRFamily.of(randomizer)
    specs, exhaustive = _target_cases(profile)
    cases = []
    for eps_t, others_v, others_c in specs:
        law = family.others_law(others_v, others_c)

        def fn(eps, eps_t=eps_t, law=law):
            return blanket_delta_for_target(family, eps_t, law, eps, rtol=rtol)

        cases.append(_Case(f"target budget {eps_t:g}", eps_t, fn))
    return cases, exhaustive


def optimal_blanket_personalized_delta(randomizer, profile: BudgetProfile, epsilon: float, *,
                                       rtol: float = 1e-3) -> Estimate:
    """delta(eps) of the heterogeneous blanket bound (max over target cases), bracketed."""
    cases, _ = blanket_cases(randomizer, profile, rtol=rtol)
    ests = [c.delta_fn(float(epsilon)) for c in cases]
    return Estimate(max(e.upper for e in ests), max(e.lower for e in ests),
                    max(e.upper for e in ests), "heterogeneous-blanket")


def optimal_blanket_personalized(randomizer, profile: BudgetProfile, delta: float, *,
                                 rtol: float = 1e-5) -> BoundResult:
    """Upper bound eps(delta) for k-RR / binary RR users with personalized budgets: the
    common-blanket reduction (module docstring), maximised over the target's budget."""
    started = time.perf_counter()
    _check_profile(profile, delta)
    cases, exhaustive = blanket_cases(randomizer, profile)
    est, label = _max_over_cases(cases, delta, "upper", rtol)
    how = ("every budget tried as the target's" if exhaustive else
           "conservative case: target at the largest budget, others without one smallest")
    note = f"{_profile_note(profile)}; {how}; attained with {label}"
    return _result("optimal-blanket-personalized", BoundKind.UPPER, est, delta,
                   BoundStatus.PROVEN, REFERENCE_BLANKET, started, note)


def exact_cases(randomizer, profile: BudgetProfile, patterns=None):
    """Cases of the heterogeneous exact-pair lower bound: target budget x pattern."""
    family = _KRRFamily.of(randomizer)
    if patterns is None:
        patterns = ("x2-other", "x2=x1", "x2=x0") if family.k >= 3 else ("x2=x1", "x2=x0")
    specs, _ = _target_cases(profile)
    cases = []
    for eps_t, others_v, others_c in specs:
        for pattern in patterns:
            pair = _ExactPair.build(family, eps_t, others_v, others_c, pattern)
            cases.append(_Case(f"target budget {eps_t:g}, {pattern}", eps_t, pair.delta))
    return cases


def exact_lower_personalized_delta(randomizer, profile: BudgetProfile, epsilon: float,
                                   patterns=None) -> Estimate:
    """delta(eps) of the exact pair, maximised over the cases, bracketed (lower side)."""
    ests = [c.delta_fn(float(epsilon)) for c in exact_cases(randomizer, profile, patterns)]
    lower = max(e.lower for e in ests)
    return Estimate(lower, lower, max(e.upper for e in ests), "heterogeneous-exact")


def exact_lower_personalized(randomizer, profile: BudgetProfile, delta: float, *,
                             rtol: float = 1e-5, patterns=None) -> BoundResult:
    """Lower bound eps(delta): the exact divergence of X0 = (x0, x2, ..., x2) vs
    X1 = (x1, x2, ..., x2) with per-user budgets (module docstring), maximised over the
    target's budget and the position of x2."""
    started = time.perf_counter()
    _check_profile(profile, delta)
    cases = exact_cases(randomizer, profile, patterns)
    est, label = _max_over_cases(cases, delta, "lower", rtol)
    note = f"{_profile_note(profile)}; X0 = (0, x2, ..), X1 = (1, x2, ..) with {label}"
    return _result("exact-lower-personalized", BoundKind.LOWER, est, delta, BoundStatus.PROVEN,
                   REFERENCE_EXACT, started, note)


# ----------------------------------------------------------------------------------------------
# Other bounds for personalized budgets
# ----------------------------------------------------------------------------------------------
def gspa_gdp_personalized(profile: BudgetProfile, delta: float) -> BoundResult:
    """003 Thm 2 with every user's (eps_i, delta_i): mu = sqrt(2 / (sum q_i - max q_i)),
    q_i = (1 - delta_i) / (1 + e^eps_i), converted with 003 Fact 3
    (protocols.bounds.closed_form.gdp).
    Approximate (Berry-Esseen term dropped) and reliant on the stronger-clone reduction."""
    _check_profile(profile, delta)
    eps, deltas = profile.expanded()
    result = gdp.gdp_personalized_bound(eps, delta, deltas)
    return dataclasses.replace(result, method="gspa-gdp-personalized",
                               note=f"{_profile_note(profile)}; {result.note}")


def _optimal(randomizer, epsilon: float, n: int, delta: float) -> BoundResult:
    return optimal.optimal_blanket_epsilon(dataclasses.replace(randomizer, epsilon0=float(epsilon)),
                                           int(n), delta)


def optimal_blanket_max_budget(randomizer, profile: BudgetProfile, delta: float) -> BoundResult:
    """The homogeneous optimal bound (000 Thm 13) with every user at the largest budget: an
    upper bound for k-RR users with smaller budgets too (module docstring: f grows with the
    target's budget, and smaller budgets only enlarge the others' blanket masses). It ignores
    the heterogeneity; the personalized blanket bound is never above it."""
    started = time.perf_counter()
    _check_profile(profile, delta)
    _KRRFamily.of(randomizer)
    top = float(profile.budget_values[-1])
    result = _optimal(randomizer, top, profile.n, delta)
    return dataclasses.replace(result, method="optimal-blanket-max-budget",
                               seconds=time.perf_counter() - started,
                               note=f"everyone at the largest budget {top:g}, n = {profile.n}; "
                                    f"{result.note}")


def optimal_blanket_tagged(randomizer, profile: BudgetProfile, delta: float) -> BoundResult:
    """The privacy of tagged reports (each report carries its budget, as the weighted
    estimators need): a user hides only among the users of its own budget, so the shuffle acts
    as one shuffle per budget group; eps = max over groups of the homogeneous optimal bound
    (000 Thm 13) with that group's size and budget (a group of one has no amplification). With
    more than MAX_TARGETS distinct budgets the largest budget with n = 1 is used (every tag is
    unique up to ties: no amplification to count on)."""
    started = time.perf_counter()
    _check_profile(profile, delta)
    values, counts = profile.budget_counts()
    if values.size > MAX_TARGETS:
        groups = [(float(values[-1]), 1)]
    else:
        groups = [(float(v), int(c)) for v, c in zip(values, counts, strict=True)]
    results = [(_optimal(randomizer, v, c, delta), v, c) for v, c in groups]
    worst, v, c = max(results, key=lambda item: item[0].epsilon)
    statuses = {r.status for r, _, _ in results}
    status = BoundStatus.PROVEN if statuses == {BoundStatus.PROVEN} else worst.status
    return dataclasses.replace(worst, method="optimal-blanket-tagged", status=status,
                               seconds=time.perf_counter() - started,
                               note=f"per-group shuffle; worst group: {c} users at budget {v:g}; "
                                    f"{worst.note}")


def baseline_min_budget(randomizer, profile: BudgetProfile, delta: float) -> BoundResult:
    """The central eps of the non-personalized protocol in which every user randomizes at the
    smallest budget (the baseline that satisfies everyone's preference without personalized
    budgets). Not a bound on the personalized mechanism: a reference for its utility cost."""
    started = time.perf_counter()
    _check_profile(profile, delta)
    low = float(profile.budget_values[0])
    result = _optimal(randomizer, low, profile.n, delta)
    return dataclasses.replace(result, method="baseline-min-budget",
                               seconds=time.perf_counter() - started,
                               note=f"protocol with every user at the smallest budget {low:g} "
                                    f"(not the personalized mechanism); {result.note}")


# ----------------------------------------------------------------------------------------------
# Catalogue entries
# ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class PersonalizedUsers:
    """The users of a personalized-budget setting, for the bound catalogue: a randomizer family
    and the budget multiset. It has no ``epsilon0`` and its own ``name`` and ``output_kind``,
    so that the catalogue's homogeneous bounds (which assume one eps0) do not apply to it."""

    randomizer: object
    profile: BudgetProfile

    output_kind = "personalized"

    @property
    def name(self) -> str:
        return f"personalized:{getattr(self.randomizer, 'name', '?')}"

    @property
    def base_name(self) -> str:
        return getattr(self.randomizer, "name", "?")


@dataclass(frozen=True)
class PersonalizedSpec:
    """Catalogue data of one personalized bound (protocols.bounds.catalogue registers it);
    ``mechanism`` says what it describes: the personalized mechanism, the tagged-report
    protocol, or the baseline protocol at the smallest budget."""

    name: str
    kind: BoundKind
    reference: str
    status: BoundStatus
    regime: str
    function: Callable
    randomizers: tuple[str, ...] | None   # None: any randomizer
    mechanism: str
    also: tuple[BoundStatus, ...] = ()
    needs_randomizer: bool = True

    def applies_to(self, users) -> bool:
        return isinstance(users, PersonalizedUsers) and (
            self.randomizers is None or users.base_name in self.randomizers)

    def compute(self, users, n: int, delta: float) -> BoundResult:
        require(isinstance(users, PersonalizedUsers), "randomizer", type(users).__name__,
                "personalized bounds take PersonalizedUsers(randomizer, BudgetProfile)")
        require(int(n) == users.profile.n, "n", n,
                f"must equal the number of budgets in the profile ({users.profile.n})")
        if not self.needs_randomizer:
            return self.function(users.profile, delta)
        return self.function(users.randomizer, users.profile, delta)


MECHANISM = "personalized mechanism"
TAGGED = "per-group shuffle (tagged reports)"
BASELINE = "baseline protocol at the smallest budget"

PERSONALIZED_SPECS = (
    PersonalizedSpec("gspa-gdp-personalized", BoundKind.UPPER,
                     "003 Thm 2 (mu-GDP, personalized (eps_i, delta_i)) + 003 Fact 3",
                     BoundStatus.APPROXIMATE, "any eps_i-LDP users, n >= 2; asymptotic in n",
                     gspa_gdp_personalized, None, MECHANISM,
                     also=(BoundStatus.STRONGER_CLONE,), needs_randomizer=False),
    PersonalizedSpec("optimal-blanket-personalized", BoundKind.UPPER, REFERENCE_BLANKET,
                     BoundStatus.PROVEN, "k-RR / binary RR users with any budgets, n >= 2",
                     optimal_blanket_personalized, RANDOMIZERS, MECHANISM),
    PersonalizedSpec("exact-lower-personalized", BoundKind.LOWER, REFERENCE_EXACT,
                     BoundStatus.PROVEN, "k-RR / binary RR users with any budgets, n >= 2",
                     exact_lower_personalized, RANDOMIZERS, MECHANISM),
    PersonalizedSpec("optimal-blanket-max-budget", BoundKind.UPPER,
                     "000 Thm 13 at the largest budget (valid for k-RR; module docstring)",
                     BoundStatus.PROVEN, "k-RR / binary RR users, n >= 2",
                     optimal_blanket_max_budget, RANDOMIZERS, MECHANISM),
    PersonalizedSpec("optimal-blanket-tagged", BoundKind.UPPER,
                     "000 Thm 13 per budget group (reports tagged with their budget)",
                     BoundStatus.PROVEN, "randomizers with an optimal-blanket decomposition",
                     optimal_blanket_tagged, None, TAGGED),
    PersonalizedSpec("baseline-min-budget", BoundKind.UPPER,
                     "000 Thm 13 with every user at the smallest budget (another protocol)",
                     BoundStatus.PROVEN, "randomizers with an optimal-blanket decomposition",
                     baseline_min_budget, None, BASELINE),
)


def personalized_spec(name: str) -> PersonalizedSpec:
    for spec in PERSONALIZED_SPECS:
        if spec.name == name:
            return spec
    raise ParameterError("method", name, f"unknown personalized bound; choose one of "
                                         f"{[s.name for s in PERSONALIZED_SPECS]}")


# ------------------------------------------------------------------------------------------
# Catalogue entries
# ------------------------------------------------------------------------------------------
# Personalized budgets: these bounds apply to PersonalizedUsers (a randomizer and a
# BudgetProfile), never to a plain randomizer.
SPECS: tuple[BoundSpec, ...] = tuple(
    BoundSpec(s.name, s.kind, s.reference, s.status, s.regime, s.applies_to, s.compute,
              scope="personalized", also=s.also)
    for s in PERSONALIZED_SPECS)
