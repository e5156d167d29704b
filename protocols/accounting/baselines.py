"""Baselines a user compares with: basic and advanced composition of per-round (eps, delta).

Each round t is (eps_t, delta_t)-DP with eps_t the single-round ``optimal-blanket`` bound
(000 Thm 13, protocols.bounds.numerical.optimal, conservative side of the engine) at delta_t.

* ``basic`` (Dwork, Kenthapadi, McSherry, Mironov, Naor 2006; Dwork-Roth Thm 3.16): the
  composition is (sum eps_t, sum delta_t)-DP; here delta_t = delta / T.
* ``advanced`` (Kairouz, Oh, Viswanath 2015, Thm 3.5, heterogeneous form; Dwork, Rothblum,
  Vadhan 2010 with the sharper mean): for every delta' > 0 the adaptive composition is
  (eps', delta' + sum delta_t)-DP with
      eps' = min(sum eps_t, sum eps_t tanh(eps_t / 2) + sqrt(2 log(1/delta') sum eps_t^2)).
  (An (eps_t, delta_t)-DP round is delta_t-close to an eps_t-DP one; for eps-DP the privacy loss
  lies in [-eps, eps] with mean <= eps tanh(eps / 2), and Azuma-Hoeffding bounds the sum.)
  The split delta = delta' + T delta_t is optimised over a grid of fractions (every candidate
  is a valid guarantee, the smallest is reported).

``naive_epsilon``: T x eps(delta), the number a user would write down without composition
theorems -- not a valid (eps, delta) guarantee (its delta is T delta); reported for comparison.
"""

from __future__ import annotations

import math
import time

from shufflesim.protocols.accounting.rounds import (
    ComposedMethod,
    ComposedResult,
    normalize_rounds,
    total_rounds,
)
from shufflesim.protocols.bounds.numerical.optimal import optimal_blanket_epsilon
from shufflesim.protocols.bounds.result import BoundKind, BoundStatus
from shufflesim.protocols.errors import require_probability_open

#: Fractions of delta given to delta' in the advanced composition.
ADVANCED_FRACTIONS = (0.02, 0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 0.9)


def _round_epsilons(rounds, delta_t: float) -> list[tuple[float, int]]:
    return [(optimal_blanket_epsilon(r.randomizer, int(r.n), delta_t).epsilon, r.repeat)
            for r in rounds]


def basic(rounds, delta: float, **_options) -> ComposedResult:
    start = time.perf_counter()
    rounds = normalize_rounds(rounds)
    require_probability_open("delta", delta)
    t = total_rounds(rounds)
    eps = sum(e * k for e, k in _round_epsilons(rounds, delta / t))
    return ComposedResult("basic", BoundKind.UPPER, math.nextafter(eps, math.inf), delta, t,
                          BoundStatus.PROVEN, "basic composition (Dwork et al. 2006) of "
                          "per-round optimal-blanket eps at delta / T",
                          time.perf_counter() - start, None, f"delta_t = {delta / t:.3g}")


def advanced_epsilon(epsilons, delta_prime: float) -> float:
    """eps' of the heterogeneous advanced composition for per-round eps (list of (eps, repeat))."""
    total = sum(e * k for e, k in epsilons)
    mean = sum(k * e * math.tanh(e / 2) for e, k in epsilons)
    square = sum(k * e * e for e, k in epsilons)
    return min(total, mean + math.sqrt(2 * math.log(1 / delta_prime) * square))


def advanced(rounds, delta: float, **_options) -> ComposedResult:
    start = time.perf_counter()
    rounds = normalize_rounds(rounds)
    require_probability_open("delta", delta)
    t = total_rounds(rounds)
    best = (math.inf, None)
    for frac in ADVANCED_FRACTIONS:
        eps_t = _round_epsilons(rounds, (1 - frac) * delta / t)
        value = advanced_epsilon(eps_t, frac * delta)
        if value < best[0]:
            best = (value, frac)
    eps, frac = best
    return ComposedResult("advanced", BoundKind.UPPER, eps * (1 + 1e-12), delta, t,
                          BoundStatus.PROVEN, "advanced composition (Kairouz-Oh-Viswanath 2015 "
                          "Thm 3.5) of per-round optimal-blanket (eps_t, delta_t)",
                          time.perf_counter() - start, None,
                          f"delta' = {frac:g} delta, delta_t = {(1 - frac) * delta / t:.3g}")


def naive_epsilon(rounds, delta: float) -> float:
    """T x (single-round optimal-blanket eps at delta): not a guarantee at delta (see module)."""
    rounds = normalize_rounds(rounds)
    return sum(e * k for e, k in _round_epsilons(rounds, delta))


METHODS = (
    ComposedMethod("basic", BoundKind.UPPER, BoundStatus.PROVEN,
                   "basic composition of per-round optimal-blanket (eps, delta / T)",
                   "every round with an optimal-blanket bound", basic),
    ComposedMethod("advanced", BoundKind.UPPER, BoundStatus.PROVEN,
                   "advanced composition (KOV15 Thm 3.5) of per-round optimal-blanket bounds",
                   "every round with an optimal-blanket bound", advanced),
)
