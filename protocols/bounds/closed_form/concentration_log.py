"""The 004 concentration bounds (Lemma 5.3 with Lemma 5.5 Hoeffding or corrected Lemma 5.6
Bennett, protocols.bounds.closed_form.blanket) for one neighbour pair given as floats, in
logarithms and with their derivative in eps, and the inversion eps(delta) by bracketed Newton
steps (protocols.bounds.closed_form.newton; issue 32: closed forms as closed forms).

The formulas are those of blanket.hoeffding_delta and blanket.bennett_delta (same conservative
margins) written for floats: ln delta is returned, so that the inversion's Newton steps need no
exponentials, and the derivative follows by the chain rule from the derivatives of the PARV
parameters (a = -E[L], b_+ >= max L, b >= range, v >= E[L^2]) in eps.
"""

from __future__ import annotations

import math

from shufflesim.protocols.bounds.closed_form.newton import smallest_epsilon_newton

#: Relative safety margin on every floating-point delta of the 004 bounds.
REL_ERR = 1e-12
_REL_ERR = REL_ERR


def _log_binomial_geometric(gamma: float, n: int, theta: float) -> tuple[float, float]:
    """ln of blanket._binomial_geometric_sum for floats, and its derivative in theta:
    with A = 1 - gamma (1 - e^-theta), F = A^n - (1 - gamma)^n and
    d ln F / d theta = -n gamma e^-theta / (A (1 - ((1 - gamma)/A)^n))."""
    if not theta > 0:
        return -math.inf, 0.0
    spread = -math.expm1(-theta)                       # 1 - e^-theta
    log_a = n * math.log1p(-gamma * spread)
    log_b = n * math.log1p(-gamma) if gamma < 1.0 else -math.inf
    ratio = log_b - log_a
    if not ratio < 0:                                  # F = 0 (or NaN): no positive mass
        return -math.inf, 0.0
    rest = -math.expm1(ratio)
    return (log_a + math.log(rest),
            -n * gamma * math.exp(-theta) / ((1.0 - gamma * spread) * rest))


def _phi_lower_scalar(u: float) -> float:
    """blanket._phi_lower for one float."""
    if u < 1e-3:
        value = u**2 / 2 - u**3 / 6 + u**4 / 12 - u**5 / 20
    else:
        value = (1.0 + u) * math.log1p(u) - u
    return value * (1.0 - _REL_ERR)


def _log_finish(log_total: float, gamma: float, n: int) -> float:
    """ln of blanket._finish (0 = delta capped at 1)."""
    value = log_total - math.log(gamma * n) + math.log1p(_REL_ERR)
    return min(value, 0.0) if not math.isnan(value) else 0.0


def hoeffding_log(n: int, params: tuple, slopes: tuple) -> tuple[float, float]:
    """ln delta of blanket.hoeffding_delta for one pair given as floats (gamma, mean_gap,
    upper, width, second_moment), and its derivative in eps from ``slopes`` (the derivatives of
    mean_gap, upper, width, second_moment): d ln delta = 2 db/b - da/a + (d ln F/d theta) dtheta
    with theta = 2 a^2/b^2. -inf where delta = 0; (0, 0) where delta is capped at 1."""
    gamma, a, _, b, _ = params
    da, _, db, _ = slopes
    if not b > 0:
        return -math.inf, 0.0
    if not a > 0:
        return 0.0, 0.0
    try:
        theta = 2.0 * (a / b) ** 2
        log_f, dlog_f = _log_binomial_geometric(gamma, n, theta)
        if log_f == -math.inf:
            return -math.inf, 0.0
        value = _log_finish(2.0 * math.log(b) - math.log(4.0 * a) + log_f, gamma, n)
        slope = 2.0 * db / b - da / a + dlog_f * theta * (2.0 * da / a - 2.0 * db / b)
    except (OverflowError, ZeroDivisionError, ValueError):
        return 0.0, 0.0                                # the conservative side: delta = 1
    return value, (slope if value < 0 else 0.0)


def bennett_log(n: int, params: tuple, slopes: tuple) -> tuple[float, float]:
    """ln delta of blanket.bennett_delta for one pair given as floats, and its derivative in eps
    (as :func:`hoeffding_log`): with A = v/b^2, B = a b/v, theta = A phi(B), K = b/ln(1 + B),
    d ln delta = db/b - dB/((1 + B) ln(1 + B)) + (d ln F/d theta)(dA phi(B) + A ln(1 + B) dB)."""
    gamma, a, b, _, v = params
    da, db, _, dv = slopes
    if not b > 0:
        return -math.inf, 0.0
    if not a > 0:
        return 0.0, 0.0
    try:
        big_a, big_b = v / b**2, a * b / v
        log_1b = math.log1p(big_b)
        theta = big_a * _phi_lower_scalar(big_b)
        log_f, dlog_f = _log_binomial_geometric(gamma, n, theta)
        if log_f == -math.inf:
            return -math.inf, 0.0
        value = _log_finish(math.log(b) - math.log(log_1b) + log_f, gamma, n)
        d_a = dv / b**2 - 2.0 * v * db / b**3
        d_b = (da * b + a * db) / v - a * b * dv / v**2
        d_theta = d_a * _phi_lower_scalar(big_b) + big_a * log_1b * d_b
        slope = db / b - d_b / ((1.0 + big_b) * log_1b) + dlog_f * d_theta
    except (OverflowError, ZeroDivisionError, ValueError):
        return 0.0, 0.0
    return value, (slope if value < 0 else 0.0)


def invert_log_delta(log_delta, delta: float, upper: float, tol: float) -> tuple[float, float]:
    """The smallest eps in [0, upper] with delta(eps) <= delta, for ``log_delta(eps)`` = (ln
    delta(eps), its slope) and delta(upper) = 0: bracketed Newton steps
    (protocols.bounds.closed_form.newton), rounded outward. Returns (eps, bracket width)."""
    return smallest_epsilon_newton(log_delta, delta, upper, tol, start=0.5 * upper)
