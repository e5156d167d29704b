"""Wang's variation-ratio framework (001): parameters, numerical and closed-form upper bounds,
and the lower bound of Thm 5.1.

The reduction (001 Thm 4.2)
---------------------------
A randomizer has the (p, beta)-variation property if every pair of output distributions has
ratio at most p and total variation at most beta, and the q-ratio property if
R(x1)(y) <= q R(xi)(y) for all inputs (001 Sec. 4). With alpha = beta / (p - 1) and
r = alpha p / q, 001 Thm 4.2 bounds every divergence of the shuffled outputs by that of

    P = (A + D1, C - A + D2),   Q = (A + D2, C - A + D1),
    C ~ Bin(n - 1, 2r),  A | C ~ Bin(C, 1/2),
    (D1, D2) = (1, 0) w.p. p alpha, (0, 1) w.p. alpha, (0, 0) otherwise.

**Status.** 000 Sec. 3.3 shows that the "stronger clone" reduction of Feldman et al. (SODA 2023),
which 001 Lemma 4.4 generalises, rests on a wrong post-processing step. Every upper bound here
that goes through Thm 4.2 (numerical, Thm 4.7, Thm 4.8) therefore carries the status
``relies-on-stronger-clone-reduction``; the auditor compares them with exact lower bounds.
The lower bound of Thm 5.1 is a genuine post-processing of the shuffled output of a concrete
neighbouring pair and is ``proven``. It exposes the flaw: with the other users at a third value,
k-RR (k >= 3) gives exactly 001's pair, so both bounds agree (001 Sec. 5); but with all other
users at x0 the lower bound can exceed 001's upper bound (4-RR, eps0 = 4, n = 100,
delta = 1e-6: lower 3.9998 > "upper" 3.687; tests/test_variation_ratio.py).

The two-count kernel that evaluates P/Q (and the lower bound's pair) is described in
protocols.bounds.numerical.two_count.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from shufflesim.protocols.bounds.engine import core as engine
from shufflesim.protocols.bounds.engine.common import Estimate
from shufflesim.protocols.bounds.engine.core import EpsilonEstimate
from shufflesim.protocols.bounds.numerical.two_count import (
    TwoCountPair,
    _interval,
    two_count_delta,
)
from shufflesim.protocols.bounds.result import BoundKind, BoundResult, BoundStatus
from shufflesim.protocols.bounds.spec import BoundSpec, any_ldp, discrete_output
from shufflesim.protocols.errors import require, require_int_at_least, require_probability_open
from shufflesim.protocols.randomizers.base import Randomizer
from shufflesim.protocols.randomizers.registry import randomizer_class, randomizer_names

REFERENCE_NUMERICAL = "001 Thm 4.2 + Thm 4.6, Alg. 1"
REFERENCE_THM47 = "001 Thm 4.7"
REFERENCE_THM48 = "001 Thm 4.8"
REFERENCE_LOWER = "001 Thm 5.1, Prop. 1, Alg. 3"


# ------------------------------------------------------------------------------------------
# Parameters (001 Sec. 4.1, Tables 1, 2, 5; Thm 6.1)
# ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class VariationRatioParameters:
    """(p, beta, q) of 001 Sec. 4: ratio bound p > 1, total variation bound
    0 <= beta <= (p - 1)/(p + 1), and ratio to the other users' distributions q >= 1."""

    p: float
    beta: float
    q: float
    source: str = ""

    def __post_init__(self) -> None:
        require(_is_real(self.p) and 1.0 < self.p < math.inf, "p", self.p,
                "must be a finite number > 1")
        require(_is_real(self.q) and 1.0 <= self.q < math.inf, "q", self.q,
                "must be a finite number >= 1")
        limit = (self.p - 1.0) / (self.p + 1.0)
        require(_is_real(self.beta) and 0.0 <= self.beta <= limit * (1.0 + 1e-12), "beta",
                self.beta, f"must lie in [0, (p - 1)/(p + 1)] = [0, {limit:.6g}]")
        object.__setattr__(self, "beta", float(min(self.beta, limit)))

    @property
    def alpha(self) -> float:
        """alpha = beta / (p - 1): the weight of each clone component of user 1 (001 Lemma 4.3)."""
        return self.beta / (self.p - 1.0)

    @property
    def r(self) -> float:
        """r = alpha p / q: each other user is a clone of either component w.p. r (Lemma 4.3)."""
        return self.alpha * self.p / self.q

    def describe(self) -> str:
        text = f"p={self.p:.6g}, beta={self.beta:.6g}, q={self.q:.6g}"
        return f"{text} ({self.source})" if self.source else text


#: Largest eps0 of the variation-ratio bounds: p = e^eps0 and the binomial kernels must stay
#: finite floats.
EPSILON0_MAX = 700.0


def check_epsilon0(randomizer) -> None:
    """ParameterError when the randomizer's eps0 exceeds :data:`EPSILON0_MAX`."""
    eps0 = float(randomizer.epsilon0)
    require(eps0 <= EPSILON0_MAX, "epsilon0", randomizer.epsilon0,
            f"the variation-ratio bounds handle eps0 <= {EPSILON0_MAX:g} (e^eps0 must be a "
            f"finite float); eps0 itself is a valid eps")


def _is_real(value: object) -> bool:
    return isinstance(value, (int, float, np.floating)) and not isinstance(value, bool)


def generic_parameters(epsilon0: float) -> VariationRatioParameters:
    """Any eps0-LDP randomizer: p = q = e^eps0, beta = (e^eps0 - 1)/(e^eps0 + 1)
    (001 Table 1 row "general mechanisms"; beta from Kairouz et al. [36, Thm 2.4])."""
    require(_is_real(epsilon0) and 0 < epsilon0 < 700, "epsilon0", epsilon0,
            "must be a finite number in (0, 700)")
    e = math.exp(epsilon0)
    return VariationRatioParameters(e, math.tanh(epsilon0 / 2.0), e, "001 Table 1, general")


def specific_parameter_names() -> list[str]:
    """Registered randomizer names that declare a specific row
    (``variation_ratio_parameters``); the others use the generic row."""
    return [name for name in randomizer_names()
            if randomizer_class(name).variation_ratio_parameters
            is not Randomizer.variation_ratio_parameters]


def parameters_for(randomizer) -> VariationRatioParameters:
    """The tightest (p, beta, q) known for ``randomizer`` (001 Tables 1, 5): the row it declares
    (``variation_ratio_parameters``), else the generic row, valid for every eps0-LDP randomizer.

    The built-in rows have p = q = e^eps0 (identical eps0-LDP users, 001 Sec. 4) and beta the
    worst-case total variation between two output distributions.
    """
    check_epsilon0(randomizer)
    generic = generic_parameters(randomizer.epsilon0)
    declared = getattr(randomizer, "variation_ratio_parameters", None)
    row = declared() if callable(declared) else None
    if row is None:
        return generic
    # Round the closed form up by far more than its floating-point error (the bounds are
    # non-decreasing in beta), never beyond the generic row.
    beta = min(row.beta * (1.0 + 1e-12), generic.beta)
    return VariationRatioParameters(row.p, beta, row.q, row.source)


def parallel_parameters(epsilon0: float, betas, probabilities) -> VariationRatioParameters:
    """Advanced parallel composition (001 Thm 6.1, Alg. 2): a user runs base randomizer k with
    probability P_k; with every base eps0-LDP with total variation beta_k, the parallel
    randomizer has p = q = e^eps0 and beta = sum_k P_k beta_k."""
    betas = np.asarray(betas, dtype=float)
    probabilities = np.asarray(probabilities, dtype=float)
    require(betas.shape == probabilities.shape and betas.ndim == 1 and betas.size > 0,
            "probabilities", probabilities.tolist(), "needs one probability per base beta")
    require(bool(np.all(probabilities >= 0)) and abs(probabilities.sum() - 1) < 1e-9,
            "probabilities", probabilities.tolist(), "must be >= 0 and sum to 1")
    generic = generic_parameters(epsilon0)
    require(bool(np.all((betas >= 0) & (betas <= generic.beta * (1 + 1e-12)))), "betas",
            betas.tolist(), f"must lie in [0, {generic.beta:.6g}] for eps0 = {epsilon0}")
    return VariationRatioParameters(generic.p, float(betas @ probabilities), generic.q,
                                    "001 Thm 6.1, parallel composition")


def reduction_pair(params: VariationRatioParameters, n: int) -> TwoCountPair:
    """The pair (P^q_{beta,p}, Q^q_{beta,p}) of 001 Thm 4.2."""
    a, r = params.alpha, params.r
    return TwoCountPair(n, (r, r), (params.p * a, a), (a, params.p * a))


# ------------------------------------------------------------------------------------------
# eps(delta) by bracketing
# ------------------------------------------------------------------------------------------
#: Relative eps-bracket width of every two-count inversion (1e-6 before evaluations got cheaper)
INVERT_RTOL = 1e-7


def invert(delta_fn: Callable[[float], Estimate], delta: float, side: str, eps_max: float,
           bracket=None, known=None) -> EpsilonEstimate:
    """eps(delta) by the engine's certified search (rtol INVERT_RTOL; start bracket, known)."""
    return engine.epsilon_of_delta(delta_fn, delta, side, eps_max=eps_max, rtol=INVERT_RTOL,
                                   xtol=engine.SEARCH_XTOL, bracket=bracket, known=known)


def _check_common(n: int, delta: float) -> None:
    require_int_at_least("n", n, 2)
    require_probability_open("delta", delta)


# ------------------------------------------------------------------------------------------
# Upper bounds
# ------------------------------------------------------------------------------------------
def reduction_delta(params: VariationRatioParameters, n: int, epsilon: float) -> Estimate:
    """max(D_{e^eps}(P||Q), D_{e^eps}(Q||P)) for 001's P^q_{beta,p}, Q^q_{beta,p} (Thm 4.6)."""
    require_int_at_least("n", n, 2)
    if params.beta == 0.0:
        return _interval(0.0, 0.0)
    return two_count_delta(reduction_pair(params, n), epsilon)


def numerical_delta(params: VariationRatioParameters, n: int, epsilon: float) -> float:
    """delta(eps) of :func:`numerical_epsilon` (its BoundSpec.delta_at): the upper estimate,
    and 0 from log p on, where P/Q <= p makes it exact."""
    return 0.0 if epsilon >= math.log(params.p) else reduction_delta(params, n, epsilon).upper


def numerical_epsilon(params: VariationRatioParameters, n: int, delta: float,
                      iterations: int | None = None) -> EpsilonEstimate:
    """The numerical upper bound of 001 Alg. 1: smallest eps in [0, log p] with
    max(D(P||Q), D(Q||P)) <= delta, on the conservative side.

    ``iterations=T`` reproduces the paper's T-step bisection on [0, log p] exactly (it returns
    eps_H, an upper bound for every T); by default the bracket is refined to relative 1e-7.
    """
    _check_common(n, delta)
    eps_max = math.log(params.p)
    if params.beta == 0.0:
        return EpsilonEstimate(0.0, 0.0, 0.0, 0.0, False, 0)
    pair = reduction_pair(params, n)
    if iterations is None:
        found = invert(lambda e: two_count_delta(pair, e), delta, "upper", eps_max)
        if found.saturated:
            # the upper estimate at log p exceeded delta only through its slack: the ratio
            # P/Q is at most p, so delta(log p) = 0 exactly.
            return replace(found, value=eps_max, upper=eps_max, error=eps_max - found.lower)
        return found
    require_int_at_least("iterations", iterations, 1)
    low, high = 0.0, eps_max
    for _ in range(iterations):
        mid = 0.5 * (low + high)
        if two_count_delta(pair, mid).upper > delta:
            low = mid
        else:
            high = mid
    return EpsilonEstimate(high, low, high, high - low, False, iterations)


def theorem_4_7_epsilon(params: VariationRatioParameters, n: int, delta: float) -> float:
    """001 Thm 4.7 (analytic bound), with Omega = 2r(n-1) - sqrt(min(6r, 1/2)(n-1) log(4/delta)):

        eps = log(1 + beta (2 sqrt(Omega L/2) + 1)
                      / (alpha Omega + beta (Omega/2 - sqrt(Omega L/2))
                         + (1 - alpha - alpha p)(n - 1 - Omega) r/(1 - 2r)))

    with L = log(4/delta). Regime (001 Thm 4.7 and App. C): the coefficient of C in the
    denominator gamma = (p+1) alpha/2 - (1-alpha-alpha p) r/(1-2r) must be >= 0 and the bound
    F(C) must be non-increasing for C >= Omega. The paper states the latter as Omega >= a
    threshold whose printed form is garbled in our copy; we use the exact condition re-derived
    from App. C: with x = sqrt(C), F' < 0 iff gamma sqrt(L/2) x^2 + gamma x - sqrt(L/2)(D0 +
    beta/2) > 0, D0 = (1-alpha-alpha p)(n-1) r/(1-2r), i.e. C > x*^2 for the positive root x*;
    and the denominator must be positive on [Omega, n-1].
    """
    _check_common(n, delta)
    p, beta, alpha, r = params.p, params.beta, params.alpha, params.r
    if beta == 0.0:
        return 0.0
    big_l = math.log(4.0 / delta)
    k = big_l / 2.0
    rest = (1.0 - alpha - alpha * p) * r / (1.0 - 2.0 * r)
    gamma = (p + 1.0) * alpha / 2.0 - rest
    require(gamma >= 0.0, "epsilon0", math.log(p),
            f"Thm 4.7 needs (p+1) alpha/2 - (1-alpha-alpha p) r/(1-2r) >= 0 (it is {gamma:.4g})")
    omega = 2.0 * r * (n - 1) - math.sqrt(min(6.0 * r, 0.5) * (n - 1) * big_l)
    d0 = rest * (n - 1)
    if gamma > 0:
        root = (-gamma + math.sqrt(gamma**2 + 4.0 * gamma * math.sqrt(k) * math.sqrt(k)
                                   * (d0 + beta / 2.0))) / (2.0 * gamma * math.sqrt(k))
        threshold = root**2
    else:
        threshold = math.inf
    require(omega > 0 and omega >= threshold, "n", n,
            f"Thm 4.7 needs Omega = {omega:.4g} >= {threshold:.4g} (F non-increasing beyond "
            "Omega); increase n")

    def denominator(cc: float) -> float:
        return alpha * cc + beta * (cc / 2.0 - math.sqrt(cc * k)) + rest * (n - 1 - cc)

    den = denominator(omega)
    require(den > 0 and gamma - beta * math.sqrt(k) / (2.0 * math.sqrt(omega)) >= 0, "n", n,
            "Thm 4.7 needs a positive, non-decreasing denominator beyond Omega; increase n")
    return math.log1p(beta * (2.0 * math.sqrt(omega * k) + 1.0) / den)


def theorem_4_8_epsilon(params: VariationRatioParameters, n: int, delta: float) -> float:
    """001 Thm 4.8 (asymptotic bound), valid for n >= 8 log(2/delta) / r:

        eps = log(1 + beta / ((1 - c)(1 + p) beta/(p - 1) + c)
                      * (sqrt(32 log(4/delta) / (r (n - 1))) + 4 / (r n))),
        r = p beta / ((p - 1) q),  c = max(0, (4/9)(1 - 3r)/(1 - 2r)).
    """
    _check_common(n, delta)
    p, beta, r = params.p, params.beta, params.r
    if beta == 0.0:
        return 0.0
    needed = 8.0 * math.log(2.0 / delta) / r
    require(n >= needed, "n", n, f"Thm 4.8 needs n >= 8 log(2/delta)/r = {needed:.6g}")
    c = max(0.0, 4.0 / 9.0 * (1.0 - 3.0 * r) / (1.0 - 2.0 * r))
    factor = beta / ((1.0 - c) * (1.0 + p) * beta / (p - 1.0) + c)
    return math.log1p(factor * (math.sqrt(32.0 * math.log(4.0 / delta) / (r * (n - 1)))
                                + 4.0 / (r * n)))


def _upper_result(method: str, reference: str, epsilon: float, error: float, delta: float,
                  params: VariationRatioParameters, started: float, note: str = "") -> BoundResult:
    text = params.describe() + (f"; {note}" if note else "")
    cap = math.log(params.p)
    if epsilon > cap:
        # the shuffled mechanism is always log(p)-DP (p bounds every output ratio of R)
        epsilon, error = cap, 0.0
        text += "; capped at log p = eps0: no amplification shown"
    return BoundResult(method=method, kind=BoundKind.UPPER, epsilon=float(epsilon),
                       delta=float(delta), epsilon_error=float(error),
                       status=BoundStatus.STRONGER_CLONE, reference=reference,
                       seconds=time.perf_counter() - started, note=text)


def numerical_bound(randomizer, n: int, delta: float, *, generic: bool = False,
                    iterations: int | None = None) -> BoundResult:
    """001 Alg. 1 with the randomizer's parameters (or the generic eps0-LDP row)."""
    started = time.perf_counter()
    params = generic_parameters(randomizer.epsilon0) if generic else parameters_for(randomizer)
    search = numerical_epsilon(params, n, delta, iterations)
    method = "variation-ratio-generic" if generic else "variation-ratio"
    return _upper_result(method, REFERENCE_NUMERICAL, search.value, search.error, delta,
                         params, started)


def analytic_bound(randomizer, n: int, delta: float) -> BoundResult:
    """001 Thm 4.7 with the randomizer's parameters (closed form: no numerical error)."""
    started = time.perf_counter()
    params = parameters_for(randomizer)
    eps = theorem_4_7_epsilon(params, n, delta)
    return _upper_result("variation-ratio-thm4.7", REFERENCE_THM47, eps, 0.0, delta, params,
                         started)


def asymptotic_bound(randomizer, n: int, delta: float) -> BoundResult:
    """001 Thm 4.8 with the randomizer's parameters (closed form)."""
    started = time.perf_counter()
    params = parameters_for(randomizer)
    eps = theorem_4_8_epsilon(params, n, delta)
    return _upper_result("variation-ratio-thm4.8", REFERENCE_THM48, eps, 0.0, delta, params,
                         started)


# ------------------------------------------------------------------------------------------
# Lower bound (001 Thm 5.1)
# ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class LowerCandidate:
    """A neighbouring pair (x0, x1) with the other users all at x*, post-processed by
    g(y) = category 0 if R(x0)(y) > R(x1)(y), 1 if R(x0)(y) < R(x1)(y), else elsewhere
    (001 Thm 5.1 proof). Inputs are anchor indices (see :func:`lower_candidates`)."""

    x0: int
    x1: int
    x_star: int
    pair: TwoCountPair


def _anchor_count(randomizer) -> int:
    domain = randomizer.input_domain
    if hasattr(domain, "size"):
        return int(domain.size)
    return int(randomizer.output_pmf().shape[0])


def lower_candidates(randomizer, n: int) -> list[LowerCandidate]:
    """Candidate triples for Thm 5.1.

    Anchors are the categorical inputs, or for interval inputs the rows of the randomizer's
    default ``output_pmf`` (its extreme inputs). The pair is (0, 1) for categorical inputs (all
    registered categorical randomizers are symmetric under relabelling) and (first, last)
    anchors otherwise. x* ranges over x0, x1 and the anchor maximising
    min(R(x0)(Y0)/R(x*)(Y0), R(x1)(Y1)/R(x*)(Y1)) (001 Thm 5.1's choice); each candidate is a
    valid lower bound, so taking the best of several only tightens it.
    Needs a finite output space (001 Thm 5.1): continuous randomizers raise ParameterError.
    """
    require(randomizer.output_size is not None, "randomizer", randomizer.name,
            "001 Thm 5.1 needs a finite output domain")
    check_epsilon0(randomizer)
    count = _anchor_count(randomizer)
    x0, x1 = (0, 1) if hasattr(randomizer.input_domain, "size") else (0, count - 1)
    if hasattr(randomizer.input_domain, "size"):
        others = [2] if count >= 3 else []
    else:
        others = [x for x in range(count) if x not in (x0, x1)]
    groups = randomizer.output_groups((x0, x1, *others))
    mass = groups.mass
    higher0, higher1 = mass[0] > mass[1], mass[1] > mass[0]
    u = (float(mass[0][higher0].sum()), float(mass[0][higher1].sum()))
    v = (float(mass[1][higher0].sum()), float(mass[1][higher1].sum()))
    star_masses = np.stack([mass[:, higher0].sum(axis=1), mass[:, higher1].sum(axis=1)], axis=1)
    anchors = (x0, x1, *others)
    chosen = {0, 1}
    if len(anchors) > 2:
        with np.errstate(divide="ignore", invalid="ignore"):  # 0/0 when nothing distinguishes
            ratio = np.nan_to_num(np.minimum(u[0] / star_masses[2:, 0],
                                             v[1] / star_masses[2:, 1]), nan=0.0)
        chosen.add(2 + int(np.argmax(ratio)))
    candidates = []
    for index in sorted(chosen):
        s0, s1 = star_masses[index]
        if s0 <= 0 or s1 <= 0:
            continue
        pair = TwoCountPair(n, (float(s0), float(s1)), u, v,
                            exhaustive=not (~(higher0 | higher1)).any())
        candidates.append(LowerCandidate(x0, x1, anchors[index], pair))
    require(bool(candidates), "randomizer", randomizer.name,
            "no neighbouring pair with outputs that distinguish it")
    return candidates


def triple_candidate(randomizer, n: int, x0: int, x1: int, x_star: int) -> LowerCandidate | None:
    """The Thm 5.1 post-processing (categories: outputs more likely under x0, more likely under
    x1, the rest) of the concrete pair X0 = (x0, x*, ..., x*), X1 = (x1, x*, ..., x*), i.e. of
    000 Thm 14's pair for the triple (x0, x1, x*), for a randomizer with a categorical input
    domain. Post-processing cannot increase a divergence, so its divergence is a proven lower
    bound on that pair's (001 Thm 5.1 proof). None when n < 2 or the pair is indistinguishable
    this way; also None for a continuous output (laplace_binary: no output groups to count)."""
    if n < 2 or not hasattr(randomizer.input_domain, "size") \
            or getattr(randomizer, "output_kind", "discrete") == "continuous":
        return None
    groups = randomizer.output_groups((int(x0), int(x1), int(x_star)))
    mass = np.asarray(groups.mass)
    higher0, higher1 = mass[0] > mass[1], mass[1] > mass[0]
    u = (float(mass[0][higher0].sum()), float(mass[0][higher1].sum()))
    v = (float(mass[1][higher0].sum()), float(mass[1][higher1].sum()))
    s0, s1 = float(mass[2][higher0].sum()), float(mass[2][higher1].sum())
    if s0 <= 0 or s1 <= 0:
        return None
    pair = TwoCountPair(int(n), (s0, s1), u, v, exhaustive=not (~(higher0 | higher1)).any())
    return LowerCandidate(int(x0), int(x1), int(x_star), pair)


def lower_delta(candidates: list[LowerCandidate], epsilon: float) -> Estimate:
    """max over candidates and both directions of the Thm 5.1 divergence (a lower bound on the
    shuffled mechanism's delta(eps) for its worst neighbouring pair)."""
    best = _interval(0.0, 0.0)
    for candidate in candidates:
        value = two_count_delta(candidate.pair, epsilon)
        if value.lower > best.lower:
            best = value
    return best


def lower_bound(randomizer, n: int, delta: float) -> BoundResult:
    """001 Thm 5.1 lower bound on the shuffled eps(delta) (status proven: data processing on a
    concrete neighbouring pair, no reduction involved)."""
    started = time.perf_counter()
    _check_common(n, delta)
    candidates = lower_candidates(randomizer, n)
    search = invert(lambda e: lower_delta(candidates, e), delta, "lower",
                    float(randomizer.epsilon0))
    best = max(candidates, key=lambda cand: two_count_delta(cand.pair, search.value).lower)
    note = f"pair (x0, x1) = anchors ({best.x0}, {best.x1}), others at anchor {best.x_star}"
    return BoundResult(method="variation-ratio-lower", kind=BoundKind.LOWER,
                       epsilon=float(search.value), delta=float(delta),
                       epsilon_error=float(search.error), status=BoundStatus.PROVEN,
                       reference=REFERENCE_LOWER, seconds=time.perf_counter() - started,
                       note=note)


# ------------------------------------------------------------------------------------------
# Catalogue entries
# ------------------------------------------------------------------------------------------
SPECS: tuple[BoundSpec, ...] = (
    BoundSpec(
        "variation-ratio", BoundKind.UPPER,
        REFERENCE_NUMERICAL + " with the randomizer's (p, beta, q) (Tables 1, 5)",
        BoundStatus.STRONGER_CLONE,
        "any eps0 > 0, n >= 2; randomizers without a table row use the generic row",
        any_ldp, numerical_bound, scope="specific",
        delta_at=lambda r, n, eps, _: numerical_delta(parameters_for(r), n, eps)),
    BoundSpec(
        "variation-ratio-generic", BoundKind.UPPER,
        REFERENCE_NUMERICAL + " with the generic row p = q = e^eps0, beta = tanh(eps0/2)",
        BoundStatus.STRONGER_CLONE, "any eps0 > 0, n >= 2", any_ldp,
        lambda r, n, delta: numerical_bound(r, n, delta, generic=True),
        delta_at=lambda r, n, eps, _: numerical_delta(generic_parameters(r.epsilon0), n,
                                                       eps)),
    BoundSpec(
        "variation-ratio-thm4.7", BoundKind.UPPER, REFERENCE_THM47 + " (analytic)",
        BoundStatus.STRONGER_CLONE,
        "(p+1) alpha/2 >= (1-alpha-alpha p) r/(1-2r) and Omega beyond the turning point of F "
        "(large enough n)", any_ldp, analytic_bound, scope="specific"),
    BoundSpec(
        "variation-ratio-thm4.8", BoundKind.UPPER, REFERENCE_THM48 + " (asymptotic)",
        BoundStatus.STRONGER_CLONE, "n >= 8 log(2/delta) / r, r = p beta / ((p - 1) q)", any_ldp,
        asymptotic_bound, scope="specific"),
    BoundSpec(
        "variation-ratio-lower", BoundKind.LOWER, REFERENCE_LOWER, BoundStatus.PROVEN,
        "finite output domain", discrete_output, lower_bound, scope="specific"),
)
