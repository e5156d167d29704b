"""A proven lower bound for the shuffled ``gaussian`` randomizer (issue 15, item 4): the sum of
the shuffled reports.

The engine's exact lower bound (000 Thm 14) needs a pure eps0-LDP randomizer with a finite
decomposition; the Gaussian randomizer has neither (its privacy loss is unbounded). A lower bound
still follows from one statistic. Take the neighbouring datasets X0 = (low, x_2, ..., x_n) and
X1 = (high, x_2, ..., x_n). The sum of the n shuffled reports is a post-processing of the
shuffled output (it does not depend on the order), and under X_b it is
N(b Delta + sum_i x_i, n sigma^2) with Delta = high - low. So for every eps the shuffled
mechanism's delta(eps) is at least that of the Gaussian mechanism with noise sigma sqrt(n) at
sensitivity Delta (Balle and Wang 2018, Thm 8; protocols.randomizers.gaussian.gaussian_delta),
and it is not (eps, delta)-DP for any eps below the root eps* of

    gaussian_delta(sigma sqrt(n), eps*, Delta) = delta.

The bound returns eps* from below: the returned eps has a computed delta above delta by a
relative margin (1e-9) far wider than the formula's rounding. eps* is found by the bracketed
Newton steps of closed_form/newton.py with the closed-form slope (issue 32; it was brentq). It is a lower bound from one
statistic, not the exact shuffled eps (the likelihood ratio of the whole multiset is stronger).
"""

from __future__ import annotations

import math
import time

from scipy import special

from shufflesim.protocols.bounds.closed_form.newton import smallest_epsilon_newton
from shufflesim.protocols.bounds.result import BoundKind, BoundResult, BoundStatus
from shufflesim.protocols.bounds.spec import BoundSpec, named
from shufflesim.protocols.errors import require_int_at_least, require_probability_open
from shufflesim.protocols.randomizers.gaussian import gaussian_delta, log_gaussian_delta

METHOD = "gaussian-sum-lower"
REFERENCE = ("sum of the shuffled reports (post-processing) of the pair (low, high): Balle and "
             "Wang 2018 Thm 8 at noise sigma sqrt(n)")
#: Relative margin by which the returned eps's computed delta exceeds the target.
MARGIN = 1e-9


def _log_delta_and_slope(scale: float, sensitivity: float):
    """eps -> (ln delta(eps), d ln delta / d eps) of the Gaussian mechanism with noise ``scale``
    (Balle and Wang 2018, Thm 8: delta = Phi(a - b) - e^eps Phi(-a - b), a = Delta / (2 scale),
    b = eps scale / Delta; the phi terms of the derivative cancel, leaving
    d delta / d eps = -e^eps Phi(-a - b)). The slope only steers the search's Newton steps."""
    a = sensitivity / (2.0 * scale)

    def log_delta(eps: float) -> tuple[float, float]:
        value = float(log_gaussian_delta(scale, eps, sensitivity))
        second = eps + float(special.log_ndtr(-a - eps * scale / sensitivity))
        return value, (-math.exp(second - value) if math.isfinite(value) else math.nan)
    return log_delta


def gaussian_sum_lower(randomizer, n: int, delta: float) -> BoundResult:
    """The largest eps (from below) at which the sum of n shuffled Gaussian reports still has
    delta(eps) > delta (module docstring); 0 when even eps = 0 gives at most delta."""
    started = time.perf_counter()
    require_int_at_least("n", n, 2)
    require_probability_open("delta", delta)
    scale = float(randomizer.sigma) * math.sqrt(n)
    sensitivity = float(randomizer.sensitivity)
    target = delta * (1.0 + MARGIN)

    def excess(eps: float) -> float:
        return float(log_gaussian_delta(scale, eps, sensitivity)) - math.log(target)

    top = 0.0                 # the crossing lies in [eps, top]
    if excess(0.0) <= 0:
        eps = 0.0
    else:
        hi = 1.0
        while excess(hi) > 0:
            hi *= 2.0
        top, width = smallest_epsilon_newton(_log_delta_and_slope(scale, sensitivity), target,
                                             hi, 1e-14, rtol=1e-13)
        eps = top - width         # the largest point whose computed delta exceeded the target
        while eps > 0 and gaussian_delta(scale, eps, sensitivity) <= target:  # the safe side
            eps = max(0.0, eps * (1 - 1e-12) - 1e-15)
    return BoundResult(
        method=METHOD, kind=BoundKind.LOWER, epsilon=eps, delta=float(delta),
        epsilon_error=float(top - eps), status=BoundStatus.PROVEN, reference=REFERENCE,
        seconds=time.perf_counter() - started,
        note=f"sigma sqrt(n) = {scale:.6g}, Delta = {sensitivity:g}; one statistic (the sum), "
             "not the exact shuffled eps")


SPECS: tuple[BoundSpec, ...] = (
    BoundSpec(
        METHOD, BoundKind.LOWER, REFERENCE, BoundStatus.PROVEN,
        "the gaussian randomizer, n >= 2 (any delta0: the Gaussian law is exact)",
        named("gaussian"), gaussian_sum_lower, scope="specific", accepts_delta0=True),
)
