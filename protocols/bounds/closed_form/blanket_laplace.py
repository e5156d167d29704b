"""004's Hoeffding and Bennett blanket bounds for the Laplace mechanism on [0, 1] (Balle, Bell,
Gascon, Nissim, "The privacy blanket of the shuffle model", Lemma 5.8 with Lemmas 5.1, 5.3, 5.5
and the authors' corrected Lemma 5.6; the "Laplace" curves of 004 Figure 3 (ii)-(iii)).

The Laplace mechanism R(x) = x + Lap(1/eps0), x in [0, 1], has density
mu_x(y) = (eps0/2) e^{-eps0 |y - x|}. Re-derived here (the text conversion of 004 lost every
symbol of these formulas; each step is checked numerically in tests/test_blanket_laplace.py):

* 004 Lemma 5.1 (2): inf_x mu_x(y) = (eps0/2) e^{-eps0/2} e^{-eps0 |y - 1/2|} (the infimum over
  [0, 1] is at the end point farther from y), so the total variation similarity is
  gamma = e^{-eps0/2} and the blanket is omega = Lap(1/2, 1/eps0).
* The ratio r_x(w) = mu_x(w) / omega(w) = e^{eps0 (|w - 1/2| - |w - x|)} lies in
  [e^{-eps0/2}, e^{eps0/2}]. For the privacy amplification random variable
  L = r_x(W) - e^eps r_x'(W), W ~ omega (004 Sec. 5.2), with E[L] = 1 - e^eps:
* 004 Lemma 5.8 (1): e^{-eps0/2} - e^{eps + eps0/2} <= L <= e^{eps0/2} - e^{eps - eps0/2}; both
  ends are attained by x = 0, x' = 1 (w <= 0 and w >= 1). Range b = (e^eps + 1) 2 sinh(eps0/2).
* 004 Lemma 5.8 (2): with d = |x - 1/2|, E[r_x^2] = (2/3) e^{eps0 d} + (1/3) e^{-2 eps0 d},
  largest at x in {0, 1}: A = (2 e^{eps0/2} + e^{-eps0}) / 3; and E[r_x r_x'] is smallest at
  x = 0, x' = 1: C = 2 e^{-eps0/2} - e^{-eps0}. So for every pair
  E[L^2] <= (1 + e^{2 eps}) A - 2 e^eps C, equal for the pair (0, 1). Written without
  cancellation (A - C = (2/3) e^{-eps0} (e^{eps0/2} - 1)^2 (e^{eps0/2} + 2)):
  E[L^2] <= (e^eps - 1)^2 A + (4/3) e^{eps - eps0} expm1(eps0/2)^2 (e^{eps0/2} + 2).

These constants agree with the authors' released implementation. The bounds hold for every
neighbour pair in [0, 1] at once (each parameter is the supremum over pairs), so they are proven
for ``laplace`` (whose worst pair is otherwise unknown, 000 Sec. 8), for ``laplace_binary``
(inputs {0, 1}: the same blanket, the pair (0, 1) is the one attaining the constants) and for
``laplace_metric`` (the same mechanism rescaled, see LAPLACE_NAMES). The concentration steps
(Lemma 5.3 with the exact expectation over the blanket count, Lemma 5.5, corrected Lemma 5.6)
are those of protocols.bounds.closed_form.blanket. Every parameter is rounded to its
conservative side (gamma and a down, the others up).
"""

from __future__ import annotations

import math
import time
from collections import OrderedDict
from dataclasses import replace

import numpy as np

from shufflesim.protocols.bounds.closed_form.blanket import (
    BBGN19,
    EPSILON0_MAX,
    PARVBounds,
    delta_question,
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
)
from shufflesim.protocols.bounds.result import BoundKind, BoundResult, BoundStatus
from shufflesim.protocols.bounds.spec import BoundSpec, named

#: The randomizers Lemma 5.8 covers: the Laplace mechanism on [0, 1], on {0, 1}, and
#: ``laplace_metric`` (Laplace of scale D / eps0 on [low, high], D = high - low: the affine
#: bijection y -> (y - low) / D maps it onto ``laplace`` with the same eps0, and relabelling
#: every report by it commutes with shuffling, so the shuffled curves are the same).
LAPLACE_NAMES = ("laplace", "laplace_binary", "laplace_metric")
#: Relative rounding allowance of the closed forms below (each a product of a few correctly
#: rounded exp/expm1/sinh values: a handful of ulps; 64 ulps taken).
_SLACK = 64 * float(np.finfo(float).eps)


def laplace_parv_bounds(epsilon: float, epsilon0: float) -> PARVBounds:
    """004 Lemma 5.1 (2) and Lemma 5.8: the PARV parameters of the eps0-LDP Laplace mechanism on
    [0, 1], valid for every neighbour pair (x, x') in [0, 1]: gamma = e^{-eps0/2},
    a = e^eps - 1, max L <= e^{eps0/2} - e^{eps - eps0/2}, range <= (e^eps + 1) 2 sinh(eps0/2),
    E[L^2] <= (1 + e^{2 eps}) (2 e^{eps0/2} + e^{-eps0}) / 3 - 2 e^eps (2 e^{-eps0/2} - e^{-eps0})
    (module docstring: the derivation and the cancellation-free forms used)."""
    return PARVBounds(*(np.array([v]) for v in laplace_parv_scalar(epsilon, epsilon0)[0]))


def laplace_parv_scalar(epsilon: float, epsilon0: float) -> tuple[tuple, tuple]:
    """:func:`laplace_parv_bounds` as floats (gamma, mean_gap, upper, width, second_moment),
    rounded to their conservative sides, and the derivatives in eps of the last four (unrounded:
    only the speed of the Newton steps depends on them, 004 Lemma 5.8's forms differentiated
    with h = eps0/2): e^eps, -e^(eps - h), e^eps 2 sinh(h),
    2 expm1(eps) e^eps A + (4/3) e^(eps - eps0) expm1(h)^2 (e^h + 2)."""
    eps, eps0 = float(epsilon), float(epsilon0)
    half = 0.5 * eps0
    e, em1 = math.exp(eps), math.expm1(eps)
    em1_half = math.expm1(half)
    second_a = (2.0 * math.exp(half) + math.exp(-eps0)) / 3.0
    tail = 4.0 / 3.0 * math.exp(eps - eps0) * em1_half**2 * (math.exp(half) + 2.0)
    second = em1**2 * second_a + tail
    spread = 2.0 * math.sinh(half)
    up, down = 1.0 + _SLACK, 1.0 - _SLACK
    values = (math.exp(-half) * down, em1 * down,
              # e^{eps0/2} - e^{eps - eps0/2} = e^{eps - eps0/2} expm1(eps0 - eps): exact sign
              # at eps0
              math.exp(eps - half) * math.expm1(eps0 - eps) * up,
              (e + 1.0) * spread * up, second * up)
    slopes = (e, -math.exp(eps - half), e * spread, 2.0 * em1 * e * second_a + tail)
    return values, slopes


def laplace_hoeffding_delta(epsilon: float, epsilon0: float, n: int) -> float:
    """delta(eps) of :func:`blanket_hoeffding_laplace`: 004 Lemmas 5.3 + 5.5 with Lemma 5.8
    (0 for eps >= eps0, where L <= 0)."""
    epsilon, epsilon0 = check_epsilon(epsilon), check_epsilon0(epsilon0)
    if epsilon >= epsilon0:
        return 0.0
    return math.exp(hoeffding_log(check_n(n), *laplace_parv_scalar(epsilon, epsilon0))[0])


def laplace_bennett_delta(epsilon: float, epsilon0: float, n: int) -> float:
    """delta(eps) of :func:`blanket_bennett_laplace`: 004 Lemmas 5.3 + 5.6 (corrected) with
    Lemma 5.8 (0 for eps >= eps0, where L <= 0)."""
    epsilon, epsilon0 = check_epsilon(epsilon), check_epsilon0(epsilon0)
    if epsilon >= epsilon0:
        return 0.0
    return math.exp(bennett_log(check_n(n), *laplace_parv_scalar(epsilon, epsilon0))[0])


#: results by (method, eps0, n, delta, tol): pure functions of these (issue 18)
_RESULTS: OrderedDict = OrderedDict()
_RESULTS_MAX = 4096


def _result(method, log_form, reference, randomizer, n, delta, tol) -> BoundResult:
    """The smallest eps with delta(eps) <= delta for the 004 bound ``log_form``
    (concentration_log.hoeffding_log or bennett_log) with Lemma 5.8's parameters, by bracketed
    Newton steps on ln delta (closed_form.newton; issue 32): the returned eps is a point where
    ln delta was verified <= ln delta, delta(eps) = 0 for eps >= eps0."""
    epsilon0 = check_epsilon0(randomizer.epsilon0, maximum=EPSILON0_MAX)
    n = check_n(n)
    delta = check_delta(delta)
    start = time.perf_counter()
    key = (method, float(epsilon0), n, float(delta), float(tol))
    hit = _RESULTS.get(key)
    if hit is not None:
        return replace(hit, seconds=time.perf_counter() - start)

    def log_delta(eps: float) -> tuple[float, float]:
        if eps >= epsilon0:
            return -math.inf, 0.0
        return log_form(n, *laplace_parv_scalar(eps, epsilon0))

    eps, err = invert_log_delta(log_delta, delta, epsilon0, tol)
    note = f"gamma = e^(-eps0/2) = {math.exp(-epsilon0 / 2):.6g}; every pair in [0, 1]"
    if eps >= epsilon0:
        note += "; eps = eps0 means no amplification shown"
    result = BoundResult(
        method=method, kind=BoundKind.UPPER, epsilon=eps, delta=delta, epsilon_error=err,
        status=BoundStatus.PROVEN, reference=reference, seconds=time.perf_counter() - start,
        note=note,
    )
    _RESULTS[key] = result
    if len(_RESULTS) > _RESULTS_MAX:
        _RESULTS.popitem(last=False)
    return result


def blanket_hoeffding_laplace(randomizer, n: int, delta: float,
                              tol: float = DEFAULT_TOL) -> BoundResult:
    """004 Lemmas 5.3, 5.5 with the Laplace parameters of Lemma 5.1 (2) and Lemma 5.8 (the
    "Hoeffding, Laplace" curve of 004 Figure 3): the smallest eps whose delta(eps) <= delta."""
    return _result("blanket_hoeffding_laplace", hoeffding_log,
                   f"{BBGN19}, Lemmas 5.1, 5.3, 5.5, 5.8", randomizer, n, delta, tol)


def blanket_bennett_laplace(randomizer, n: int, delta: float,
                            tol: float = DEFAULT_TOL) -> BoundResult:
    """004 Lemmas 5.3, 5.6 (as corrected by its authors) with the Laplace parameters of Lemma
    5.1 (2) and Lemma 5.8 (the "Bennett, Laplace" curve of 004 Figure 3)."""
    return _result("blanket_bennett_laplace", bennett_log,
                   f"{BBGN19}, Lemmas 5.1, 5.3, 5.6 (corrected), 5.8", randomizer, n, delta, tol)


SPECS: tuple[BoundSpec, ...] = (
    BoundSpec(
        "blanket_hoeffding_laplace", BoundKind.UPPER,
        "004 Lemmas 5.3, 5.5, 5.8 (Hoeffding, Laplace)", BoundStatus.PROVEN,
        "Laplace mechanism (laplace, laplace_binary, laplace_metric); 0 < eps0 <= 150",
        named(*LAPLACE_NAMES),
        blanket_hoeffding_laplace, scope="specific",
        delta_at=delta_question(laplace_hoeffding_delta)),
    BoundSpec(
        "blanket_bennett_laplace", BoundKind.UPPER,
        "004 Lemmas 5.3, 5.6 (corrected), 5.8 (Bennett, Laplace)", BoundStatus.PROVEN,
        "Laplace mechanism (laplace, laplace_binary, laplace_metric); 0 < eps0 <= 150",
        named(*LAPLACE_NAMES),
        blanket_bennett_laplace, scope="specific",
        delta_at=delta_question(laplace_bennett_delta)),
)
