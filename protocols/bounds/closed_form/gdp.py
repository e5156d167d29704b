"""Chen, Cao and Ge's mu-GDP amplification bound for personalized budgets (003, GSPA).

003 Thm 2: if user i is (eps_i, delta_i)-LDP, the shuffled output of n users is approximately
mu-GDP with

    mu = sqrt(2 / (sum_i q_i - max_i q_i)),   q_i = (1 - delta_i) / (1 + e^{eps_i}),

(003 Lemma 3 computes mu^2 = 4 / sum_{i != j} p_i with p_i = 2 q_i over the n - 1 users other
than the one whose data changes, j; the worst case removes the largest q_i). A mu-GDP mechanism is
(eps, delta(eps))-DP for every eps >= 0 with (003 App., Fact 3; Dong, Roth and Su 2022)

    delta(eps) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2).

Status. The bound is *approximate*: 003 Thm 2 holds up to a Berry-Esseen term C/sqrt(n - 1)
with an unspecified constant C, which the stated mu drops. It also *relies on the stronger-clone
reduction*: 003 Thm 1 decomposes every other user's randomizer as q W^0 + q W^1 + (1 - 2q) W_i,
the decomposition 000 Sec. 3.3 shows to be unsound in general. BoundResult has one status field:
results carry ``approximate`` there and the second fact in ``note``; the catalogue lists both
(:data:`STATUSES`).
"""

from __future__ import annotations

import math
import time

import numpy as np
from scipy import special

from shufflesim.protocols.bounds.engine.common import Estimate
from shufflesim.protocols.bounds.engine.core import EpsilonEstimate
from shufflesim.protocols.bounds.numerical.variation_ratio import invert
from shufflesim.protocols.bounds.result import BoundKind, BoundResult, BoundStatus
from shufflesim.protocols.bounds.spec import BoundSpec, any_ldp, randomizer_delta0
from shufflesim.protocols.errors import require, require_int_at_least, require_probability_open

METHOD = "gspa-gdp"
REFERENCE = "003 Thm 2 (mu-GDP) + 003 Fact 3 (GDP to (eps, delta))"
#: Every status that applies: the primary one first (BoundResult.status), then the others.
STATUSES = (BoundStatus.APPROXIMATE, BoundStatus.STRONGER_CLONE)
#: Largest eps0: 1 / (1 + e^eps0) must be a normal float.
EPSILON0_MAX = 700.0
NOTE = ("approximate: 003 Thm 2 drops a Berry-Esseen term C/sqrt(n-1); also relies on the "
        "stronger-clone reduction (000 Sec. 3.3)")


def gdp_mu(epsilons, deltas=None) -> float:
    """mu = sqrt(2 / (sum_i q_i - max_i q_i)), q_i = (1 - delta_i)/(1 + e^{eps_i}) (003 Thm 2).

    ``epsilons``: the local budgets of all n users (n >= 2); ``deltas``: their local deltas
    (default 0).
    """
    eps = np.asarray(epsilons, dtype=float).ravel()
    require(eps.size >= 2, "epsilons", eps.size, "needs the budgets of at least 2 users")
    bad = ~(np.isfinite(eps) & (eps > 0))
    require(not bad.any(), "epsilons", float(eps[bad][0]) if bad.any() else None,
            "must be finite numbers > 0")
    if deltas is None:
        dl = np.zeros_like(eps)
    else:
        dl = np.broadcast_to(np.asarray(deltas, dtype=float).ravel(), eps.shape)
        bad = ~((dl >= 0) & (dl < 1))
        require(not bad.any(), "deltas", float(dl[bad][0]) if bad.any() else None,
                "must lie in [0, 1)")
    # q_i = (1 - delta_i) / (1 + e^eps_i) = (1 - delta_i) * sigmoid(-eps_i), stable for large eps.
    q = (1.0 - dl) * special.expit(-eps)
    total = math.fsum(q.tolist()) - float(q.max())
    require(total > 0, "epsilons", eps.tolist()[:5], "leave no blanket (sum q_i - max q_i = 0)")
    return math.sqrt(2.0 / total)


def gdp_mu_identical(epsilon0: float, n: int, delta0: float = 0.0) -> float:
    """mu for n identical (eps0, delta0)-LDP users: sqrt(2 (1 + e^eps0) / ((n - 1)(1 - delta0)))
    (delta0 = 0: eps0-LDP users)."""
    require(isinstance(epsilon0, (int, float)) and 0 < epsilon0 < math.inf, "epsilon0", epsilon0,
            "must be a finite number > 0")
    require(epsilon0 <= EPSILON0_MAX, "epsilon0", epsilon0,
            f"003's mu needs 1/(1 + e^eps0) > 0 in floating point: eps0 <= {EPSILON0_MAX:g}")
    require_int_at_least("n", n, 2)
    require(0 <= delta0 < 1, "delta0", delta0, "must lie in [0, 1)")
    return math.sqrt(2.0 / ((n - 1) * (1.0 - delta0) * float(special.expit(-epsilon0))))


def gdp_delta(epsilon: float, mu: float) -> Estimate:
    """delta(eps) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2) for mu-GDP, as an interval
    that contains the exact value: computed as Phi(a) * (-expm1(eps + log Phi(b) - log Phi(a)))
    with scipy.special.log_ndtr, and widened by a bound on the rounding of the exponent."""
    require(mu > 0 and math.isfinite(mu), "mu", mu, "must be a finite number > 0")
    require(epsilon >= 0 and math.isfinite(epsilon), "epsilon", epsilon,
            "must be a finite number >= 0")
    a = -epsilon / mu + mu / 2.0
    b = -epsilon / mu - mu / 2.0
    log_a, log_b = float(special.log_ndtr(a)), float(special.log_ndtr(b))
    exponent = epsilon + log_b - log_a
    # exponent <= 0 in exact arithmetic; at eps ~ mu^2 >> 1 its terms are huge and rounding
    # may leave it positive: clamp before expm1 overflows (the slack below covers the rounding)
    value = math.exp(log_a) * -math.expm1(min(exponent, 700.0))
    slack = math.exp(log_a) * 1e-13 * (1.0 + abs(epsilon) + abs(log_a) + abs(log_b))
    upper = min(1.0, value + slack)
    return Estimate(upper, max(0.0, value - slack), upper, "gdp")


def gdp_epsilon(mu: float, delta: float, cap: float = math.inf) -> EpsilonEstimate:
    """The smallest eps >= 0 with delta(eps) <= delta for mu-GDP, on the conservative side
    (``.value``) with the width of the final bracket (``.error``). With a finite ``cap`` the
    search stays in [0, cap] and returns eps = cap (saturated) when delta(cap) > delta: callers
    cap the bound there anyway, and at eps ~ mu^2 (mu ~ e^(eps0/2) at large eps0) the formula
    is a difference of huge numbers."""
    require_probability_open("delta", delta)
    if math.isfinite(cap):
        if gdp_delta(cap, mu).upper > delta:
            return EpsilonEstimate(cap, cap, cap, 0.0, True, 1)
        return invert(lambda e: gdp_delta(e, mu), delta, "upper", cap)
    eps_max = max(1.0, mu * mu)
    while gdp_delta(eps_max, mu).upper > delta:
        eps_max *= 2.0
    return invert(lambda e: gdp_delta(e, mu), delta, "upper", eps_max)


def _result(mu: float, n: int, delta: float, started: float, detail: str,
            cap: float) -> BoundResult:
    """The bound, capped at ``cap`` = the largest local budget: the shuffled mechanism is
    always max_i eps_i-DP (post-processing of the local reports), whatever 003 gives."""
    search = gdp_epsilon(mu, delta, cap)
    epsilon, error = search.value, search.error
    if epsilon >= cap:
        epsilon, error = cap, 0.0
        detail += f"; capped at the local budget {cap:.6g}: no amplification shown"
    return BoundResult(method=METHOD, kind=BoundKind.UPPER, epsilon=epsilon,
                       delta=float(delta), epsilon_error=error, status=STATUSES[0],
                       reference=REFERENCE, seconds=time.perf_counter() - started,
                       note=f"mu = {mu:.6g}{detail}; {NOTE}")


def gdp_bound(randomizer, n: int, delta: float) -> BoundResult:
    """003's bound for n identical users running an (eps0, delta0)-LDP ``randomizer`` (003 Thm 2
    holds for (eps_i, delta_i)-LDP users; delta0 is the randomizer's, 0 for eps0-LDP). With
    delta0 > 0 there is no cap at eps0 (the local guarantee alone is only (eps0, delta0))."""
    started = time.perf_counter()
    require_int_at_least("n", n, 2)
    require_probability_open("delta", delta)
    eps0 = float(randomizer.epsilon0)
    delta0 = randomizer_delta0(randomizer)
    mu = gdp_mu_identical(eps0, n, delta0)
    if delta0 > 0:
        return _result(mu, n, delta, started, f", local delta0 = {delta0:g}", math.inf)
    return _result(mu, n, delta, started, "", eps0)


def gdp_personalized_bound(epsilons, delta: float, deltas=None) -> BoundResult:
    """003's bound for personalized local budgets (eps_i, delta_i), one per user."""
    started = time.perf_counter()
    require_probability_open("delta", delta)
    mu = gdp_mu(epsilons, deltas)
    n = int(np.asarray(epsilons).size)
    cap = float(np.max(np.asarray(epsilons, dtype=float)))
    if deltas is not None and np.any(np.asarray(deltas, dtype=float) > 0):
        cap = math.inf  # (eps_i, delta_i)-LDP: the local budget alone bounds only (eps, delta_i)
    return _result(mu, n, delta, started, f", n = {n} personalized budgets", cap)


# ------------------------------------------------------------------------------------------
# Catalogue entries
# ------------------------------------------------------------------------------------------
SPECS: tuple[BoundSpec, ...] = (
    BoundSpec(
        METHOD, BoundKind.UPPER, REFERENCE, STATUSES[0],
        "any eps0 > 0 (and delta0 in [0, 1)), n >= 2; asymptotic in n (Berry-Esseen term "
        "dropped)", any_ldp, gdp_bound, also=STATUSES[1:], accepts_delta0=True),
)
