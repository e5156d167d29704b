"""Closed forms of Feldman, McMillan and Talwar, "Hiding among the clones" (002): Thm 3.1 (generic,
eq. (1)), its (eps0, delta0)-LDP version (Thm 3.8, registered as ``fmt21_approx_dp``), and the
k-RR specific Thm 4.1 / Cor. 4.2. The numerical clone bounds (002 Thm 3.2 and the stronger
clone) and the shared argument checks are in protocols.bounds.numerical.clones.
"""

from __future__ import annotations

import math
import numbers
import time

from shufflesim.protocols.bounds.closed_form.newton import smallest_epsilon_newton
from shufflesim.protocols.bounds.numerical.clones import (
    DEFAULT_TOL,
    FMT21,
    check_delta,
    check_epsilon0,
    check_n,
    krr_fields,
    round_up,
)
from shufflesim.protocols.bounds.result import BoundKind, BoundResult, BoundStatus
from shufflesim.protocols.bounds.spec import (
    BoundSpec,
    any_ldp,
    generic,
    named,
    randomizer_delta0,
)
from shufflesim.protocols.errors import ParameterError, require


# -- closed forms ----------------------------------------------------------------------------------
def fmt21_max_epsilon0(n: int, delta: float) -> float:
    """Largest eps0 for which 002 Thm 3.1 / 3.8 is proven: log(n / (16 log(4/delta))).

    002 prints log(2/delta) in the regime condition of Thm 3.1, Lemma 3.5, Thm 3.8 and
    Prop. 5.3 (all inherit it from Lemma A.1). Re-derived from the proof of Lemma A.1 (002
    App. A): with p = e^-eps0 and probability >= 1 - delta, a Chernoff bound and Hoeffding's
    inequality at log(4/delta) (delta/2 each side, split over the two deviations) give
    |C - pn| <= sqrt(3 pn log(4/delta)) and |A - C/2| <= sqrt(C/2 log(4/delta)); the proof then
    needs sqrt(3 pn log(4/delta)) <= pn/2 (pn >= 12 log(4/delta)) and
    sqrt(C/2 log(4/delta)) <= C/4 with C >= pn/2 (pn >= 16 log(4/delta)), and writes that
    condition itself as "p >= 16 ln(4/delta)/n". So the statement's log(2/delta) does not
    follow from its proof; the authors' reference code uses log(4/delta) and a comment on their
    repository calls the 2 a typo. We use the conservative log(4/delta) (issue 31): it refuses
    a thin band of eps0 (width log(log(4/delta)/log(2/delta)), 0.048 at delta = 1e-6) that the
    printed condition would accept."""
    return math.log(n / (16.0 * math.log(4.0 / delta)))


def _fmt21_closed_value(epsilon0: float, n: int, delta: float) -> float:
    """Eq. (1) of 002 Thm 3.1. The factor (e^eps0 - 1)/(e^eps0 + 1) is tanh(eps0/2): the
    quotient as printed loses every digit at tiny eps0 (e^eps0 - 1 = 0 at eps0 = 1e-300, which
    made the bound 0) and ~1e-10 relative at eps0 = 1e-6, more than round_up's margin."""
    e0 = math.exp(epsilon0)
    inner = 8.0 * math.sqrt(e0 * math.log(4.0 / delta)) / math.sqrt(n) + 8.0 * e0 / n
    return math.log1p(math.tanh(epsilon0 / 2.0) * inner)


def _check_fmt21_regime(epsilon0: float, n: int, delta: float, theorem: str) -> None:
    limit = fmt21_max_epsilon0(n, delta)
    if not epsilon0 <= limit:
        raise ParameterError(
            "epsilon0", epsilon0,
            f"{theorem} holds only for eps0 <= log(n / (16 log(4/delta))) = {limit:.6g} "
            f"(n = {n}, delta = {delta:g})",
        )


def fmt21_closed_form(epsilon0: float, n: int, delta: float) -> BoundResult:
    """002 Thm 3.1, eq. (1): eps = log(1 + (e^eps0 - 1)/(e^eps0 + 1) * (8 sqrt(e^eps0 log(4/delta))
    / sqrt(n) + 8 e^eps0 / n)), for eps0 <= log(n / (16 log(4/delta))) (the proof's condition;
    002 prints log(2/delta): :func:`fmt21_max_epsilon0`).

    Applies to adaptive eps0-DP randomizers. The value is reported as printed (it may exceed eps0
    near the edge of the regime, where eps0 itself is the better bound)."""
    epsilon0 = check_epsilon0(epsilon0)
    n = check_n(n)
    delta = check_delta(delta)
    _check_fmt21_regime(epsilon0, n, delta, "002 Thm 3.1")
    start = time.perf_counter()
    eps = _fmt21_closed_value(epsilon0, n, delta)
    eps = round_up(eps)
    return BoundResult(
        method="fmt21_closed", kind=BoundKind.UPPER, epsilon=eps, delta=delta,
        epsilon_error=0.0, status=BoundStatus.PROVEN, reference=f"{FMT21}, Thm 3.1 eq. (1)",
        seconds=time.perf_counter() - start,
    )


def fmt21_approx_dp(epsilon0: float, n: int, delta: float, delta0: float) -> BoundResult:
    """002 Thm 3.8, (eps0, delta0)-DP randomizers: for delta_in with eps0 <= log(n / (16
    log(4/delta_in))) (the condition its proof needs; 002 prints log(2/delta_in), see
    :func:`fmt21_max_epsilon0`), the shuffle is
    (eps, delta_in + (e^eps + 1)(1 + e^-eps0 / 2) n delta0)-DP with eps = eq. (1) at delta_in.

    Here ``delta`` is the *total* target: we search the eps for which delta_in = delta - (e^eps +
    1)(1 + e^-eps0/2) n delta0 > 0 makes eq. (1) at delta_in at most eps (bracketed Newton
    steps on eq. (1) solved for delta_in, :func:`_newton_bracket`; every accepted eps was
    checked, with eq. (1) rounded up by its floating-point error, so the result is valid
    whatever the shape of the constraint): the shuffle is then (eq. (1) at
    delta_in, delta_in + (e^eq1 + 1)(...) n delta0)-DP, hence (eps, delta)-DP. The replacement
    (eps0, delta0)-LDP of the local randomizer is what the theorem assumes (the ``gaussian``
    randomizer is calibrated at sensitivity high - low for exactly that). With delta0 = 0 it is
    Thm 3.1 (eq. (1) at delta), rounded up.

    Registered as ``fmt21_approx_dp`` (accepts_delta0): delta0 is the randomizer's ``delta0``
    (0 for pure eps0-LDP randomizers). Note that the delta0 term grows with n, so unlike the
    pure bounds this eps need not decrease in n.
    """
    epsilon0 = check_epsilon0(epsilon0)
    n = check_n(n)
    delta = check_delta(delta)
    require(
        isinstance(delta0, numbers.Real) and 0 <= float(delta0) < 1, "delta0", delta0,
        "must lie in [0, 1)",
    )
    delta0 = float(delta0)
    start = time.perf_counter()
    factor = (1.0 + math.exp(-epsilon0) / 2.0) * n * delta0

    def inner_delta(eps: float) -> float:
        return delta - (math.exp(eps) + 1.0) * factor

    def admissible(eps: float) -> bool:
        d_in = inner_delta(eps)
        if d_in <= 0:
            return False
        if epsilon0 > fmt21_max_epsilon0(n, d_in):
            return False
        return round_up(_fmt21_closed_value(epsilon0, n, d_in)) <= eps

    d_at_zero = inner_delta(0.0)
    if d_at_zero <= 0:
        raise ParameterError(
            "delta0", delta0,
            f"002 Thm 3.8 needs 2 (1 + e^-eps0/2) n delta0 < delta (= {delta:g}); "
            f"here it is {2 * factor:.3g}",
        )
    _check_fmt21_regime(epsilon0, n, d_at_zero, "002 Thm 3.8")
    # The formula at the largest possible delta_in is a lower limit for any admissible eps.
    hi = round_up(_fmt21_closed_value(epsilon0, n, d_at_zero))
    step = max(hi, 1e-6)
    for _ in range(200):  # grow the bracket until admissible (delta_in shrinks as eps grows)
        if admissible(hi):
            break
        if inner_delta(hi) <= 0 or epsilon0 > fmt21_max_epsilon0(n, max(inner_delta(hi), 1e-300)):
            raise ParameterError(
                "delta0", delta0,
                "002 Thm 3.8: n * delta0 is too large for the target delta; no admissible eps",
            )
        hi += step
        step *= 2.0
    else:  # pragma: no cover - defensive
        raise ParameterError("delta0", delta0, "002 Thm 3.8: no admissible eps found")
    lo = _fmt21_closed_value(epsilon0, n, d_at_zero)
    lo = min(lo, hi)
    if admissible(lo):
        hi = lo
    elif hi - lo > DEFAULT_TOL:
        lo, hi = _newton_bracket(epsilon0, n, delta, factor, lo, hi, admissible)
    return BoundResult(
        method="fmt21_approx_dp", kind=BoundKind.UPPER, epsilon=hi, delta=delta,
        epsilon_error=hi - lo, status=BoundStatus.PROVEN, reference=f"{FMT21}, Thm 3.8",
        seconds=time.perf_counter() - start,
        note=f"delta_in = {inner_delta(hi):.6g} for the pure-DP part; delta0 = {delta0:g}",
    )


def _log_total_delta(epsilon0: float, n: int, factor: float):
    """eps -> (ln D(eps), d ln D / d eps), D(eps) the smallest total delta at which 002 Thm 3.8
    gives eps: eq. (1) at delta_in is <= eps iff delta_in >= 4 exp(-s(eps)^2) with
    s(eps) = sqrt(n) (expm1(eps) / tanh(eps0/2) - 8 e^eps0 / n) / (8 e^(eps0/2)) (eq. (1) solved
    for log(4/delta_in)), so D(eps) = 4 exp(-s^2) + (e^eps + 1) factor (+inf where s <= 0:
    eq. (1) exceeds eps at every delta_in). Only the search's steps use it: every accepted eps
    is checked by :func:`fmt21_approx_dp`'s own predicate."""
    e0 = math.exp(epsilon0)
    t = math.tanh(epsilon0 / 2.0)
    scale = math.sqrt(n) / (8.0 * math.sqrt(e0))

    def log_total(eps: float) -> tuple[float, float]:
        s = scale * (math.expm1(eps) / t - 8.0 * e0 / n)
        if s <= 0:
            return math.inf, math.nan
        ds = scale * math.exp(eps) / t
        inner = 4.0 * math.exp(-s * s)
        outer = (math.exp(eps) + 1.0) * factor
        total = inner + outer
        if total <= 0:
            return -math.inf, math.nan
        return math.log(total), (-2.0 * s * ds * inner + math.exp(eps) * factor) / total
    return log_total


def _newton_bracket(epsilon0: float, n: int, delta: float, factor: float, lo: float,
                    hi: float, admissible) -> tuple[float, float]:
    """[lo, hi] within DEFAULT_TOL around the smallest admissible eps of 002 Thm 3.8, by the
    bracketed Newton steps of closed_form/newton.py on ln D(eps) = ln delta
    (:func:`_log_total_delta`; issue 32: no generic bisection), started at ``lo`` (eq. (1) at
    the largest delta_in, below every admissible eps) inside the verified ``hi``. The result is
    then checked with ``admissible`` (eq. (1) rounded up): hi must pass and lo fail; where
    rounding at the edge disagrees, the checked ends are kept and the rest is bisected."""
    log_total = _log_total_delta(epsilon0, n, factor)

    def shifted(u: float) -> tuple[float, float]:      # the search starts at 0: eps = lo + u
        return log_total(lo + u)

    top, width = smallest_epsilon_newton(shifted, delta, hi - lo, 0.5 * DEFAULT_TOL,
                                         start=min(0.5 * (hi - lo), 1e-3 * max(lo, 1e-12)))
    new_hi, new_lo = lo + top, lo + top - width
    if new_hi < hi and admissible(new_hi):
        hi = new_hi
    if lo < new_lo < hi and not admissible(new_lo):
        lo = new_lo
    while hi - lo > DEFAULT_TOL:       # only where the checks disagreed with the steps
        mid = 0.5 * (lo + hi)
        if admissible(mid):
            hi = mid
        else:
            lo = mid
    return lo, hi


def fmt21_approx_dp_bound(randomizer, n: int, delta: float) -> BoundResult:
    """The catalogue's form of :func:`fmt21_approx_dp`: eps0 and delta0 from the randomizer."""
    return fmt21_approx_dp(float(randomizer.epsilon0), n, delta, randomizer_delta0(randomizer))


def fmt21_theorem41_epsilon(p: float, q: float, n: int, delta: float) -> float:
    """002 Thm 4.1, eq. (10): if R(x^b_1) = q Q1(x^b_1) + (1 - q) Q0 and every other input mixes
    Q1(x^0_1), Q1(x^1_1), Q0 with weight p each (p in (0, 1/3], q in (0, 1)), the shuffle is
    (eps, q delta')-indistinguishable with eps = ln(1 + q (4 sqrt(2 log(4/delta'))/sqrt(p n) +
    4/(p n))) whenever p >= 8 ln(2/delta')/n.

    We use delta' = min(1, delta / q) so that the guarantee is (eps, delta)."""
    n = check_n(n)
    delta = check_delta(delta)
    require(0 < p <= 1.0 / 3.0, "p", p, "002 Thm 4.1 needs p in (0, 1/3]")
    require(0 < q < 1, "q", q, "002 Thm 4.1 needs q in (0, 1)")
    d_prime = min(1.0, delta / q)
    need = 8.0 * math.log(2.0 / d_prime) / n
    if p < need:
        raise ParameterError(
            "n", n,
            f"002 Thm 4.1 needs p >= 8 ln(2/delta')/n, i.e. n >= {need * n / p:.6g} "
            f"(p = {p:.6g}, delta' = delta/q = {d_prime:.6g})",
        )
    pn = p * n
    inner = 4.0 * math.sqrt(2.0 * math.log(4.0 / d_prime)) / math.sqrt(pn) + 4.0 / pn
    eps = math.log1p(q * inner)
    return round_up(eps)


def krr_clone_parameters(epsilon0: float, domain_size: int) -> tuple[float, float]:
    """(p, q) of k-RR in 002 Thm 4.1 (App. E): p = k / ((k + 1)(e^eps0 + k - 1)),
    q = (e^eps0 - 1) / (e^eps0 + k - 1)."""
    e0 = math.exp(epsilon0)
    k = domain_size
    return k / ((k + 1) * (e0 + k - 1)), (e0 - 1) / (e0 + k - 1)


def fmt21_krr_closed_form(randomizer, n: int, delta: float) -> BoundResult:
    """002 Thm 4.1 / Cor. 4.2 for k-RR: eq. (10) with the k-RR (p, q) (equal to eq. (11)).

    The regime is Thm 4.1's own hypothesis p >= 8 ln(2/delta')/n (Cor. 4.2's stated sufficient
    condition eps0 <= log(n / (16 log(2/delta))) does not imply it for large k)."""
    epsilon0, k = krr_fields(randomizer)
    n = check_n(n)
    delta = check_delta(delta)
    start = time.perf_counter()
    p, q = krr_clone_parameters(epsilon0, k)
    eps = fmt21_theorem41_epsilon(p, q, n, delta)
    return BoundResult(
        method="fmt21_krr_closed", kind=BoundKind.UPPER, epsilon=eps, delta=delta,
        epsilon_error=0.0, status=BoundStatus.PROVEN,
        reference=f"{FMT21}, Thm 4.1 eq. (10) / Cor. 4.2 eq. (11)",
        seconds=time.perf_counter() - start, note=f"k = {k}, p = {p:.6g}, q = {q:.6g}",
    )


# ------------------------------------------------------------------------------------------
# Catalogue entries
# ------------------------------------------------------------------------------------------
SPECS: tuple[BoundSpec, ...] = (
    BoundSpec(
        "fmt21_closed", BoundKind.UPPER, "002 (Feldman, McMillan, Talwar 2021) Thm 3.1",
        BoundStatus.PROVEN, "eps0 <= log(n / (16 log(4/delta))) (the proof's constant; 002 prints "
        "log(2/delta))", any_ldp,
        generic(fmt21_closed_form)),
    BoundSpec(
        "fmt21_approx_dp", BoundKind.UPPER, "002 Thm 3.8 ((eps0, delta0)-LDP randomizers)",
        BoundStatus.PROVEN, "eps0 <= log(n / (16 log(4/delta_in))) with delta_in = delta - (e^eps "
        "+ 1)(1 + e^-eps0/2) n delta0 > 0", any_ldp, fmt21_approx_dp_bound, accepts_delta0=True),
    BoundSpec(
        "fmt21_krr_closed", BoundKind.UPPER, "002 Thm 4.1 (k-RR specific)", BoundStatus.PROVEN,
        "k-RR; Thm 4.1's conditions on n and delta", named("krr"), fmt21_krr_closed_form,
        scope="specific"),
)
