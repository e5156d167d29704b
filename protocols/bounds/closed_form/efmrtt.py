"""Erlingsson, Feldman, Mironov, Raghunathan, Talwar, Thakurta (SODA 2019, "EFMRTT19"): the first
amplification-by-shuffling bound, for (possibly adaptive) eps0-DP randomizers applied to
shuffled data.

    eps = 12 eps0 sqrt(log(1/delta) / n)    (equivalently delta = exp(-n (eps / (12 eps0))^2))

Statement as cited in 001 Sec. 2 ("(eps0 sqrt(144 log(1/delta)/n), delta)-DP") and 004 Thm 5.1,
with the regime 0 < eps0 <= 1/2 (003 Sec. 1: "assumes 0 < eps0 < 1/2"). 004 Thm 5.1 adds
conditions on n and delta that our text copy of 004 lost; we enforce n >= 1000 and
delta <= 1/100, the limits that 004's authors apply to this bound in their released code (the
original paper is not among the seeds: these two limits are the one unverified input here).
Outside the regime the constants are not established and the functions raise ParameterError.
"""

from __future__ import annotations

import math
import time

from shufflesim.protocols.bounds.numerical.clones import (
    check_delta,
    check_epsilon,
    check_epsilon0,
    check_n,
    round_up,
)
from shufflesim.protocols.bounds.result import BoundKind, BoundResult, BoundStatus
from shufflesim.protocols.bounds.spec import BoundSpec, any_ldp, generic
from shufflesim.protocols.errors import ParameterError

EFMRTT19 = (
    "Erlingsson, Feldman, Mironov, Raghunathan, Talwar, Thakurta, SODA 2019 "
    "(cited in 001 Sec. 2 and 004 Thm 5.1)"
)
MAX_EPSILON0 = 0.5
MIN_N = 1000
MAX_DELTA = 0.01


def _check_regime(epsilon0: float, n: int) -> None:
    if epsilon0 > MAX_EPSILON0:
        raise ParameterError("epsilon0", epsilon0,
                             f"EFMRTT19 holds only for eps0 <= {MAX_EPSILON0}")
    if n < MIN_N:
        raise ParameterError("n", n, f"EFMRTT19 holds only for n >= {MIN_N}")


def efmrtt19_epsilon(epsilon0: float, n: int, delta: float) -> BoundResult:
    """eps = 12 eps0 sqrt(log(1/delta)/n) for eps0 <= 1/2, n >= 1000, delta <= 1/100."""
    epsilon0 = check_epsilon0(epsilon0)
    n = check_n(n)
    delta = check_delta(delta)
    _check_regime(epsilon0, n)
    if delta > MAX_DELTA:
        raise ParameterError("delta", delta, f"EFMRTT19 holds only for delta <= {MAX_DELTA}")
    start = time.perf_counter()
    eps = round_up(12.0 * epsilon0 * math.sqrt(math.log(1.0 / delta) / n))
    return BoundResult(
        method="efmrtt19", kind=BoundKind.UPPER, epsilon=eps, delta=delta, epsilon_error=0.0,
        status=BoundStatus.PROVEN, reference=EFMRTT19, seconds=time.perf_counter() - start,
    )


def efmrtt19_delta(epsilon: float, epsilon0: float, n: int) -> float:
    """delta(eps) = exp(-n (eps / (12 eps0))^2), the same bound solved for delta; raises when the
    resulting delta exceeds 1/100 (outside the regime)."""
    epsilon = check_epsilon(epsilon)
    epsilon0 = check_epsilon0(epsilon0)
    n = check_n(n)
    _check_regime(epsilon0, n)
    delta = math.exp(-n * (epsilon / (12.0 * epsilon0)) ** 2)
    if delta > MAX_DELTA:
        raise ParameterError(
            "epsilon", epsilon,
            f"EFMRTT19 gives delta = {delta:.3g} > {MAX_DELTA} here (outside its regime)",
        )
    return round_up(delta)


# ------------------------------------------------------------------------------------------
# Catalogue entries
# ------------------------------------------------------------------------------------------
SPECS: tuple[BoundSpec, ...] = (
    BoundSpec(
        "efmrtt19", BoundKind.UPPER, "Erlingsson et al. SODA 2019 (cited in 001 Sec. 2, 004 "
        "Thm 5.1): eps = 12 eps0 sqrt(log(1/delta)/n)", BoundStatus.PROVEN,
        "eps0 <= 1/2, n >= 1000, delta <= 0.01", any_ldp, generic(efmrtt19_epsilon)),
)
