"""Privacy-blanket bounds of Balle, Bell, Gascon and Nissim (004): shuffled k-ary randomized
response (Thm 3.1) and the Hoeffding / Bennett bounds on the privacy amplification random
variable (Sec. 5), generic (from eps0 only) and per randomizer.

Blanket reduction (004 Lemma 5.3; 000 Thm 2 and Thm 13). Let gamma be the total variation
similarity of R and omega its blanket, so R(x) = gamma omega + (1 - gamma) LO(x). For a neighbour
pair (x, x') the privacy amplification random variable (PARV) is

    L = (R(x)(W) - e^eps R(x')(W)) / omega(W),   W ~ omega,

with E[L] = 1 - e^eps (when omega has full support), and for M ~ Bin(n, gamma)

    D_{e^eps}(shuffle(X), shuffle(X')) <= (1 / (gamma n)) E[ E[(L_1 + ... + L_M)_+ | M] ].

The proof only uses gamma omega(y) <= R(x)(y) for every x, so any sub-blanket (a smaller gamma
with the same omega, or atoms of a sub-blanket reference measure) gives a valid bound.

Concentration (our derivation, matching 004 Lemma 5.5 and the authors' *corrected* Lemma 5.6,
see /work/shared/reference/published.md): with a = -E[L] > 0,

* Hoeffding (L in an interval of length b):  E[(sum_{i<=m} L_i)_+] <= b^2/(4a) e^{-2 m a^2 / b^2};
* Bennett (L <= b_+ with b_+ > 0, E[L^2] <= v; Boucheron-Lugosi-Massart Thm 2.9, which uses the
  *uncentred* bound and second moment): E[(sum_{i<=m} L_i)_+] <= b_+ e^{-m A phi(B)} / log(1 + B),
  A = v / b_+^2, B = a b_+ / v, phi(u) = (1 + u) log(1 + u) - u.

Both follow from E[S_+] = int_0^inf P[S >= t] dt and int_0^inf e^{-g(t)} dt <= e^{-g(0)}/g'(0)
for convex increasing g (004 Lemma A.4). Both have the form K e^{-m theta}, so the expectation
over M ~ Bin(n, gamma) (m >= 1; the m = 0 term is exactly 0) is exact in closed form:

    sum_{m>=1} Bin(n, gamma)(m) e^{-m theta} = (1 - gamma + gamma e^{-theta})^n - (1 - gamma)^n.

Inversion eps(delta): neither bound has a solution for eps in closed form (004 Thm 5.3 solves a
looser variant, with a tail of M split off); ln delta(eps) and its derivative are closed forms
(:func:`hoeffding_log`, :func:`bennett_log`, from the PARV parameters and their slopes), and the
root is found by bracketed Newton steps (protocols.bounds.closed_form.newton), rounded outward.

Reproduction of 000 Table 4 (Blanket (Bennett), 10-RR, n = 1000, delta = 1e-6): the variant is
the k-RR *specific* Bennett bound (gamma = k/(e^eps0 + k - 1), exact PARV max and second moment of
004 Lemma 5.7) with the exact Binomial expectation over M (no split of delta between a tail of M
and the Bennett term) and the corrected denominator log(1 + B) (no factor m). See
tests/test_blanket_closed.py.
"""

from __future__ import annotations

import math
import numbers
import time
from dataclasses import dataclass, replace

import numpy as np

from shufflesim.protocols.bounds.atoms import RatioAtoms, Rounding
from shufflesim.protocols.bounds.closed_form.concentration_log import (
    REL_ERR as _REL_ERR,
)
from shufflesim.protocols.bounds.closed_form.concentration_log import (
    bennett_log,
    hoeffding_log,
    invert_log_delta,
)
from shufflesim.protocols.bounds.numerical.clones import (
    DEFAULT_TOL,
    check_delta,
    check_epsilon,
    check_epsilon0,
    check_n,
    krr_fields,
    round_up,
)
from shufflesim.protocols.bounds.result import BoundKind, BoundResult, BoundStatus
from shufflesim.protocols.bounds.spec import BoundSpec, any_ldp, generic, named
from shufflesim.protocols.errors import ParameterError, require

BBGN19 = "Balle, Bell, Gascon, Nissim, The privacy blanket of the shuffle model (004)"
_U = float(np.finfo(float).eps) / 2      # unit roundoff
#: Largest (#ordered input pairs) x (#outputs) enumerated for a per-randomizer bound.
MAX_PAIR_OUTPUTS = 20_000_000
#: Largest eps0 of the concentration bounds: their range and second moment grow like e^(2 eps0)
#: and are squared (Hoeffding's b^2 ~ e^(4 eps0) must stay below the float range).
EPSILON0_MAX = 150.0


# -- Thm 3.1: shuffled k-ary randomized response ---------------------------------------------------
def _check_k(domain_size: int) -> int:
    require(
        isinstance(domain_size, numbers.Integral) and not isinstance(domain_size, bool)
        and int(domain_size) >= 2, "domain_size", domain_size, "must be an integer >= 2",
    )
    return int(domain_size)


def blanket_krr_gamma(epsilon: float, n: int, delta: float, domain_size: int) -> float:
    """004 Thm 3.1: the randomizer that keeps its input w.p. 1 - gamma and otherwise reports a
    uniform value of [k] makes the shuffle (eps, delta)-DP, for eps <= 1, when

        gamma = max{14 k log(2/delta) / ((n - 1) eps^2), 27 k / ((n - 1) eps)}.

    Returns that gamma (a value above 1 means no such randomizer exists)."""
    eps = check_epsilon(epsilon)
    require(0 < eps <= 1, "epsilon", epsilon, "004 Thm 3.1 needs 0 < eps <= 1")
    n = check_n(n, 2)
    delta = check_delta(delta)
    k = _check_k(domain_size)
    return max(14.0 * k * math.log(2.0 / delta) / ((n - 1) * eps**2), 27.0 * k / ((n - 1) * eps))


def blanket_krr_epsilon_for_gamma(gamma: float, n: int, delta: float, domain_size: int) -> float:
    """Inversion of 004 Thm 3.1: the smallest eps whose required gamma is <= the given gamma,

        eps = max{sqrt(14 k log(2/delta) / ((n - 1) gamma)), 27 k / ((n - 1) gamma)}.

    A larger gamma than the theorem requires is still private: RR with gamma' >= gamma is RR with
    gamma followed by more uniform replacement, a post-processing that commutes with shuffling.
    Raises ParameterError when the result exceeds 1 (outside the theorem's regime)."""
    require(isinstance(gamma, numbers.Real) and 0 < gamma <= 1, "gamma", gamma,
            "must lie in (0, 1]")
    n = check_n(n, 2)
    delta = check_delta(delta)
    k = _check_k(domain_size)
    eps = max(math.sqrt(14.0 * k * math.log(2.0 / delta) / ((n - 1) * gamma)),
              27.0 * k / ((n - 1) * gamma))
    if eps > 1.0:
        raise ParameterError(
            "n", n,
            f"004 Thm 3.1 holds only for eps <= 1; gamma = {gamma:.6g}, k = {k}, "
            f"delta = {delta:g} give eps = {eps:.6g} (increase n or gamma)",
        )
    return round_up(eps)


def krr_blanket_gamma(epsilon0: float, domain_size: int) -> float:
    """Total variation similarity of eps0-LDP k-RR (004 Lemma 5.1): k / (e^eps0 + k - 1)."""
    return domain_size / (math.expm1(epsilon0) + domain_size)


def blanket_krr_theorem31(randomizer, n: int, delta: float) -> BoundResult:
    """004 Thm 3.1 applied to a k-RR randomizer: gamma = k/(e^eps0 + k - 1), then the inversion
    :func:`blanket_krr_epsilon_for_gamma` (regime: resulting eps <= 1)."""
    epsilon0, k = krr_fields(randomizer)
    k = _check_k(k)
    start = time.perf_counter()
    gamma = krr_blanket_gamma(epsilon0, k)
    try:
        eps = blanket_krr_epsilon_for_gamma(gamma, n, delta, k)
    except ParameterError as err:
        if err.field != "n":
            raise
        raise ParameterError("epsilon0", epsilon0, err.requirement) from None
    return BoundResult(
        method="blanket_krr_thm31", kind=BoundKind.UPPER, epsilon=eps, delta=delta,
        epsilon_error=0.0, status=BoundStatus.PROVEN, reference=f"{BBGN19}, Thm 3.1",
        seconds=time.perf_counter() - start, note=f"k = {k}, gamma = {gamma:.6g}",
    )


# -- PARV parameters ------------------------------------------------------------------------------
@dataclass(frozen=True)
class PARVBounds:
    """What the concentration bounds need about L at one eps (arrays: one entry per neighbour
    pair; the bound is the maximum over pairs).

    gamma: blanket mass used in Lemma 5.3 (a lower bound on the total variation similarity is
    fine); mean_gap: a = -E[L] (or a lower bound); upper: b_+ >= max L; width: b >= max L - min L;
    second_moment: v >= E[L^2].
    """

    gamma: np.ndarray
    mean_gap: np.ndarray
    upper: np.ndarray
    width: np.ndarray
    second_moment: np.ndarray


def generic_parv_bounds(epsilon: float, epsilon0: float) -> PARVBounds:
    """004 Lemma 5.2 and 5.4 for any eps0-LDP randomizer, with the constants of the authors'
    released implementation: gamma >= e^-eps0, E[L] = 1 - e^eps,
    max L <= e^eps0 - e^(eps - eps0), range <= (e^eps + 1)(e^eps0 - e^-eps0),
    E[L^2] <= e^eps0 (e^2eps + 1) - 2 e^(eps - 3 eps0).

    Validity (our check, any blanket gamma in [e^-eps0, 1]): R(x)(w)/omega(w) lies in
    [gamma, gamma e^eps0], so L <= gamma (e^eps0 - e^eps), L >= gamma (1 - e^(eps + eps0)),
    E[L^2] <= gamma (e^eps0 (1 + e^2eps) - 2 e^eps); each is below the constant above.
    """
    return _as_arrays(generic_parv_scalar(epsilon, epsilon0)[0])


def generic_parv_scalar(epsilon: float, epsilon0: float) -> tuple[tuple, tuple]:
    """:func:`generic_parv_bounds` as floats (gamma, mean_gap, upper, width, second_moment),
    and the derivatives in eps of the last four (for the Newton steps of the inversion)."""
    e, e0 = math.exp(epsilon), math.exp(epsilon0)
    # Written without cancellation (tiny eps0: e0 - e / e0 was 0 at eps0 = 1e-300, so the
    # Bennett term vanished and the bound returned eps = 0):
    #   e0 - e/e0 = e^(eps - eps0) expm1(2 eps0 - eps),   e0 - 1/e0 = 2 sinh(eps0),
    #   e0 (e^2 + 1) - 2 e / e0^3 = e0 expm1(eps)^2 + 2 e e0^-3 expm1(4 eps0).
    em1 = math.expm1(epsilon)
    spread = 2.0 * math.sinh(epsilon0)
    tail = 2.0 / e0**3 * math.expm1(4.0 * epsilon0)
    values = (math.exp(-epsilon0), em1,
              math.exp(epsilon - epsilon0) * math.expm1(2.0 * epsilon0 - epsilon),
              (e + 1.0) * spread, e0 * em1 ** 2 + e * tail)
    slopes = (e, -math.exp(epsilon - epsilon0), e * spread, 2.0 * e0 * em1 * e + e * tail)
    return values, slopes


def krr_parv_bounds(epsilon: float, epsilon0: float, domain_size: int) -> PARVBounds:
    """004 Lemma 5.7 (exact for k-RR, uniform blanket): with gamma = k/(e^eps0 + k - 1),
    L = gamma (1 - e^eps) + (1 - gamma) k ([W = x] - e^eps [W = x']), so
    max L = gamma (1 - e^eps) + (1 - gamma) k, range = (1 - gamma) k (e^eps + 1),
    E[L^2] = gamma (2 - gamma)(e^eps - 1)^2 + (1 - gamma)^2 k (e^2eps + 1)."""
    return _as_arrays(krr_parv_scalar(epsilon, epsilon0, domain_size)[0])


def krr_parv_scalar(epsilon: float, epsilon0: float, domain_size: int) -> tuple[tuple, tuple]:
    """:func:`krr_parv_bounds` as floats, with the derivatives in eps of its last four entries
    (as :func:`generic_parv_scalar`)."""
    k = domain_size
    g = krr_blanket_gamma(epsilon0, k)
    # 1 - gamma = expm1(eps0) / (expm1(eps0) + k) and e^eps - 1 = expm1(eps): 1.0 - g was 0 at
    # eps0 = 1e-300 (max L <= 0, delta = 0, eps = 0) and lost ~1e-10 relative at eps0 = 1e-6.
    one_minus_g = math.expm1(epsilon0) / (math.expm1(epsilon0) + k)
    e, em1 = math.exp(epsilon), math.expm1(epsilon)
    keep, drop = one_minus_g * k, g * em1
    tail = one_minus_g ** 2 * k
    values = (g, em1,
              # a difference of two accurate terms: its rounding (<= 2u of their sum) added
              keep - drop + 4 * _U * (keep + drop),
              one_minus_g * k * (e + 1.0),
              g * (2.0 - g) * em1 ** 2 + tail * (e * e + 1))
    slopes = (e, -g * e, one_minus_g * k * e, 2.0 * g * (2.0 - g) * em1 * e + 2.0 * tail * e * e)
    return values, slopes


def _as_arrays(values: tuple) -> PARVBounds:
    return PARVBounds(*(np.array([v]) for v in values))


@dataclass(frozen=True)
class PairAtoms:
    """Blanket atoms of several neighbour pairs stacked into (pairs, atoms) arrays (zero weight
    pads short rows), so that the PARV parameters of every pair are computed at once. Each pair
    keeps its own reference mass gamma = sum of its weights."""

    a: np.ndarray
    b: np.ndarray
    weight: np.ndarray

    @property
    def gamma(self) -> np.ndarray:
        return self.weight.sum(axis=1)

    @classmethod
    def stack(cls, atoms: list[RatioAtoms]) -> PairAtoms:
        if not atoms:
            raise ParameterError("atoms", atoms, "need at least one RatioAtoms")
        for at in atoms:
            if at.rounding == Rounding.DOWN:
                raise ParameterError("atoms.rounding", at.rounding.value,
                                     "upper bounds need exact or rounded-up atoms")
        width = max(at.weight.size for at in atoms)
        a, b, w = (np.zeros((len(atoms), width)) for _ in range(3))
        for i, at in enumerate(atoms):  # once per pair, outside the eps loop
            a[i, : at.a.size], b[i, : at.b.size], w[i, : at.weight.size] = at.a, at.b, at.weight
        b = np.where(w > 0, b, 1.0)  # padding: harmless finite values with zero weight
        a = np.where(w > 0, a, 0.0)
        if (w.sum(axis=1) <= 0).any():
            raise ParameterError("atoms", "weights", "every pair needs positive blanket mass")
        return cls(a, b, w)

    def trivial_epsilon(self) -> float:
        """max over pairs and atoms of log(a/b) = log(R(x)(y)/R(x')(y)): at this eps every PARV
        value is <= 0 and both concentration bounds give delta = 0."""
        with np.errstate(divide="ignore"):
            ratio = np.log(self.a) - np.log(self.b)
        return float(np.max(np.where(self.weight > 0, ratio, -np.inf)))


def atoms_parv_bounds(epsilon: float, atoms: list[RatioAtoms] | PairAtoms) -> PARVBounds:
    """Exact PARV parameters from blanket atoms (one RatioAtoms per neighbour pair): weight_j =
    m(y) mass of the group (any reference with m <= min_x R(x)), a_j, b_j the ratios
    R(x)(y)/m(y), R(x')(y)/m(y). Then gamma = sum_j weight_j, omega = weight/gamma and
    L = gamma (a_j - e^eps b_j) w.p. weight_j / gamma. Atoms rounded DOWN are refused (they
    would under-state L). The mean is computed from the atoms (equal to 1 - e^eps when the
    reference has full support)."""
    pairs = atoms if isinstance(atoms, PairAtoms) else PairAtoms.stack(list(atoms))
    gamma = pairs.gamma
    values = gamma[:, None] * (pairs.a - math.exp(epsilon) * pairs.b)
    prob = pairs.weight / pairs.weight.sum(axis=1, keepdims=True)
    present = pairs.weight > 0
    top = np.max(np.where(present, values, -np.inf), axis=1)
    bottom = np.min(np.where(present, values, np.inf), axis=1)
    # Rounding allowance, each parameter pushed to its conservative side: the values carry a
    # relative error of a few ulps of their magnitude.
    slack = 8 * np.finfo(float).eps * np.max(np.abs(values), axis=1)
    mean = np.sum(prob * values, axis=1)
    return PARVBounds(
        gamma=gamma,
        mean_gap=-mean - slack,
        upper=top + slack,
        width=top - bottom + 2 * slack,
        second_moment=np.sum(prob * values**2, axis=1) * (1 + _REL_ERR) + slack**2,
    )


# -- the two concentration bounds ------------------------------------------------------------------
def _binomial_geometric_sum(gamma: np.ndarray, n: int, theta: np.ndarray) -> np.ndarray:
    """sum_{m=1}^n Bin(n, gamma)(m) e^{-m theta} = (1 - gamma + gamma e^-theta)^n - (1-gamma)^n,
    evaluated in log space (arrays; theta >= 0, 0 < gamma <= 1)."""
    theta = np.asarray(theta, dtype=float)
    gamma = np.asarray(gamma, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        log_a = n * np.log1p(-gamma * -np.expm1(-theta))
        log_b = n * np.log1p(-gamma)
        diff = np.exp(log_a) * -np.expm1(np.minimum(log_b - log_a, 0.0))
    return np.where(np.isfinite(diff), diff, 0.0)


def _phi_lower(u: np.ndarray) -> np.ndarray:
    """A lower bound (to rounding) on phi(u) = (1 + u) log(1 + u) - u for u > 0: the alternating
    series u^2/2 - u^3/6 + u^4/12 - u^5/20 for small u (truncated after a negative term, hence a
    lower bound), the closed form otherwise; shaved by a relative 1e-12."""
    u = np.asarray(u, dtype=float)
    with np.errstate(all="ignore"):
        series = u**2 / 2 - u**3 / 6 + u**4 / 12 - u**5 / 20
        direct = (1.0 + u) * np.log1p(u) - u
    return np.where(u < 1e-3, series, direct) * (1.0 - _REL_ERR)


def _finish(bound: np.ndarray, gamma: np.ndarray, n: int) -> float:
    """max over pairs of bound / (gamma n), rounded up; capped at 1 (a hockey-stick divergence
    never exceeds 1)."""
    value = float(np.max(bound / (gamma * n))) * (1.0 + _REL_ERR)
    return min(1.0, value) if np.isfinite(value) else 1.0


def hoeffding_delta(n: int, params: PARVBounds) -> float:
    """004 Lemma 5.3 + Lemma 5.5: delta(eps) <= max over pairs of
    (1/(gamma n)) b^2/(4a) [(1 - gamma + gamma e^{-2a^2/b^2})^n - (1 - gamma)^n]."""
    n = check_n(n)
    a, b = params.mean_gap, params.width
    # a = 0 (eps = 0) makes k infinite and the sum 0: the product is NaN, and any NaN or
    # overflow is replaced by inf (delta = 1 after _finish), the conservative side.
    with np.errstate(all="ignore"):
        theta = np.where(b > 0, 2.0 * a**2 / b**2, np.inf)
        k = np.where(a > 0, b**2 / (4.0 * a), np.inf)
        total = np.where(b > 0, k * _binomial_geometric_sum(params.gamma, n, theta), 0.0)
    total = np.where((a > 0) & ~np.isnan(total), total, np.inf)
    return _finish(total, params.gamma, n)


def bennett_delta(n: int, params: PARVBounds) -> float:
    """004 Lemma 5.3 + corrected Lemma 5.6: delta(eps) <= max over pairs of
    (1/(gamma n)) b_+ / log(1 + B) [(1 - gamma + gamma e^{-A phi(B)})^n - (1 - gamma)^n]
    with A = v / b_+^2, B = a b_+ / v (no factor m in the denominator). If max L <= 0 the sum of
    the L_i is never positive and the term is 0."""
    n = check_n(n)
    a, b, v = params.mean_gap, params.upper, params.second_moment
    positive = b > 0
    with np.errstate(all="ignore"):
        big_a = np.where(positive, v / b**2, 0.0)
        big_b = np.where(positive, a * b / v, 1.0)
        theta = big_a * _phi_lower(big_b)
        k = np.where(positive, b / np.log1p(big_b), 0.0)
        total = np.where(positive, k * _binomial_geometric_sum(params.gamma, n, theta), 0.0)
    # NaN (0 * inf at a = 0) or overflow: the conservative side, delta = 1 after _finish
    total = np.where((positive & ~(a > 0)) | np.isnan(total), np.inf, total)
    return _finish(total, params.gamma, n)


# -- bound functions ------------------------------------------------------------------------------
def blanket_hoeffding_generic_delta(epsilon: float, epsilon0: float, n: int) -> float:
    """004 Thm 5.3 (generic Hoeffding), delta as a function of eps (0 for eps >= eps0)."""
    epsilon, epsilon0 = check_epsilon(epsilon), check_epsilon0(epsilon0)
    if epsilon >= epsilon0:
        return 0.0
    return math.exp(hoeffding_log(check_n(n), *generic_parv_scalar(epsilon, epsilon0))[0])


def blanket_bennett_generic_delta(epsilon: float, epsilon0: float, n: int) -> float:
    """004 Sec. 5.3 generic Bennett (corrected), delta as a function of eps (0 for eps >= eps0)."""
    epsilon, epsilon0 = check_epsilon(epsilon), check_epsilon0(epsilon0)
    if epsilon >= epsilon0:
        return 0.0
    return math.exp(bennett_log(check_n(n), *generic_parv_scalar(epsilon, epsilon0))[0])


#: results of the generic bounds by (method, eps0, n, delta, tol) (pure functions of these;
#: issue 18: warm closed forms at library speed)
_GENERIC_RESULTS: dict = {}
GENERIC_RESULTS_MAX = 4096


def _generic_result(method, delta_fn, epsilon0, n, delta, reference, tol):
    epsilon0 = check_epsilon0(epsilon0, maximum=EPSILON0_MAX)
    n = check_n(n)
    delta = check_delta(delta)
    start = time.perf_counter()
    key = (method, float(epsilon0), n, float(delta), float(tol))
    hit = _GENERIC_RESULTS.get(key)
    if hit is not None:
        return replace(hit, seconds=time.perf_counter() - start)
    result = _generic_compute(method, delta_fn, epsilon0, n, delta, reference, tol, start)
    if len(_GENERIC_RESULTS) >= GENERIC_RESULTS_MAX:
        _GENERIC_RESULTS.pop(next(iter(_GENERIC_RESULTS)))
    _GENERIC_RESULTS[key] = result
    return result


def _generic_compute(method, delta_fn, epsilon0, n, delta, reference, tol, start):
    concentration = _LOG_FORMS[delta_fn]

    def log_delta(eps: float) -> tuple[float, float]:
        return concentration(n, *generic_parv_scalar(eps, epsilon0))

    eps, err = invert_log_delta(log_delta, delta, epsilon0, tol)
    return BoundResult(
        method=method, kind=BoundKind.UPPER, epsilon=eps, delta=delta, epsilon_error=err,
        status=BoundStatus.PROVEN, reference=reference, seconds=time.perf_counter() - start,
        note="eps = eps0 means no amplification shown" if eps >= epsilon0 else "",
    )


def blanket_hoeffding_generic(
    epsilon0: float, n: int, delta: float, tol: float = DEFAULT_TOL
) -> BoundResult:
    """004 Thm 5.3: generic Hoeffding blanket bound for any eps0-LDP randomizer."""
    return _generic_result("blanket_hoeffding_generic", blanket_hoeffding_generic_delta,
                           epsilon0, n, delta, f"{BBGN19}, Thm 5.3 (Lemmas 5.2-5.5)", tol)


def blanket_bennett_generic(
    epsilon0: float, n: int, delta: float, tol: float = DEFAULT_TOL
) -> BoundResult:
    """004 Sec. 5.3: generic Bennett blanket bound (corrected Lemma 5.6) for any eps0-LDP
    randomizer."""
    return _generic_result("blanket_bennett_generic", blanket_bennett_generic_delta,
                           epsilon0, n, delta, f"{BBGN19}, Lemmas 5.2-5.4 and 5.6 (corrected)", tol)


#: the logarithmic form (with slope) of each generic delta function
_LOG_FORMS = {blanket_hoeffding_generic_delta: hoeffding_log,
              blanket_bennett_generic_delta: bennett_log}


def delta_question(delta_fn):
    """BoundSpec.delta_at of a bound with delta(eps, eps0, n) = ``delta_fn`` (the generic
    bounds here, 004's Laplace ones in blanket_laplace.py), after the regime checks of eps0
    and n (no refinement: the threshold is not needed)."""
    def delta_at(randomizer, n: int, epsilon: float, threshold: float) -> float:
        epsilon0 = check_epsilon0(randomizer.epsilon0, maximum=EPSILON0_MAX)
        return delta_fn(epsilon, epsilon0, check_n(n))
    return delta_at


# ------------------------------------------------------------------------------------------
# Catalogue entries
# ------------------------------------------------------------------------------------------
SPECS: tuple[BoundSpec, ...] = (
    BoundSpec(
        "blanket_krr_thm31", BoundKind.UPPER, "004 (Balle et al.) Thm 3.1, shuffled k-RR",
        BoundStatus.PROVEN, "k-RR; resulting eps <= 1", named("krr"), blanket_krr_theorem31,
        scope="specific"),
    BoundSpec(
        "blanket_hoeffding_generic", BoundKind.UPPER, "004 Thm 5.3 (Hoeffding, generic)",
        BoundStatus.PROVEN, "0 < eps0 <= 150", any_ldp, generic(blanket_hoeffding_generic),
        delta_at=delta_question(blanket_hoeffding_generic_delta)),
    BoundSpec(
        "blanket_bennett_generic", BoundKind.UPPER,
        "004 Sec. 5.3 (Bennett, generic; corrected Lemma 5.6)", BoundStatus.PROVEN,
        "0 < eps0 <= 150", any_ldp, generic(blanket_bennett_generic),
        delta_at=delta_question(blanket_bennett_generic_delta)),
)
