"""mu-GDP to (eps, delta), vectorized over many mu (issue 32: the learning accounting made about
6,000 scalar eps searches per run of scenarios/learning/fig4.toml).

A mu-GDP mechanism is (eps, delta(eps))-DP with (Dong, Roth and Su 2022, Cor. 2.13; 003 App.,
Fact 3)

    delta(eps) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2),

decreasing in eps. :func:`gdp_delta_upper` evaluates it exactly as the scalar
``protocols.bounds.closed_form.gdp.gdp_delta`` does (log_ndtr, expm1, and the same rounding
slack added: an upper bound of the exact value), element-wise. :func:`gdp_epsilons` bisects all
searches at once and returns, for each mu, a point eps_hi at which the *upper* delta is already
<= delta: an upper bound on the smallest such eps, never below it, whatever the rounding. The
bracket is narrowed to relative width :data:`RTOL` (the scalar search stops at 1e-7), so the
values agree with ``gdp_epsilon`` within its own bracket (tests/test_learning_accounting.py).
"""

from __future__ import annotations

import numpy as np
from scipy import special

from shufflesim.protocols.errors import require, require_probability_open

#: Relative width of every returned bracket (eps_hi - eps_lo <= RTOL eps_hi + ATOL).
RTOL = 1e-10
ATOL = 1e-14
MAX_ITERATIONS = 200


def gdp_delta_upper(epsilon, mu) -> np.ndarray:
    """Upper bound of delta(eps) for mu-GDP, element-wise (the scalar gdp_delta's ``upper``)."""
    eps, mu = np.broadcast_arrays(np.asarray(epsilon, float), np.asarray(mu, float))
    a = -eps / mu + mu / 2.0
    b = -eps / mu - mu / 2.0
    log_a, log_b = special.log_ndtr(a), special.log_ndtr(b)
    exponent = np.minimum(eps + log_b - log_a, 700.0)
    value = np.exp(log_a) * -np.expm1(exponent)
    slack = np.exp(log_a) * 1e-13 * (1.0 + np.abs(eps) + np.abs(log_a) + np.abs(log_b))
    return np.minimum(1.0, value + slack)


def gdp_epsilons(mu, delta: float) -> tuple[np.ndarray, np.ndarray]:
    """(eps, error): for every mu (any shape, finite > 0), the conservative end eps of a bracket
    [eps - error, eps] that contains the smallest eps >= 0 with delta(eps) <= ``delta``."""
    require_probability_open("delta", delta)
    mu = np.asarray(mu, dtype=float)
    require(bool(np.all(np.isfinite(mu) & (mu > 0))), "mu", mu.ravel()[:3].tolist(),
            "must be finite numbers > 0")
    lo = np.zeros_like(mu)
    hi = np.maximum(1.0, mu * mu)
    done_at_zero = gdp_delta_upper(lo, mu) <= delta
    for _ in range(MAX_ITERATIONS):  # grow the upper end until it meets the condition
        grow = gdp_delta_upper(hi, mu) > delta
        if not grow.any():
            break
        lo = np.where(grow, hi, lo)
        hi = np.where(grow, 2.0 * hi, hi)
    lo = np.where(done_at_zero, 0.0, lo)
    hi = np.where(done_at_zero, 0.0, hi)
    for _ in range(MAX_ITERATIONS):
        open_ = hi - lo > RTOL * hi + ATOL
        if not open_.any():
            break
        mid = 0.5 * (lo + hi)
        ok = gdp_delta_upper(mid, mu) <= delta
        hi = np.where(open_ & ok, mid, hi)
        lo = np.where(open_ & ~ok, mid, lo)
    return hi, hi - lo
