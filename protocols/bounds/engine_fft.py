"""000 Alg. 7 with guaranteed error: round G to a grid, n-fold convolution by FFT.

Upper bound: every value c is rounded up to h * ceil(c / h), so each user's rounded value
dominates the true one and E[(sum)_+] can only grow (000 Sec. 5.2, "Correctness"); lower bound:
rounded down (000 Sec. 5.3). On the integer lattice the sum K (in units of h) is computed modulo
L by one real FFT of length L per group: F = prod_g rfft(a_g)^{n_g}, p = irfft(F). Index i stands
for the value of the window [W_lo, W_lo + L - 1] congruent to i. Errors, all bounded:

- wrap-around: mass outside the window lands inside (non-negative). Its total tau is bounded by
  Chernoff's inequality with the exact moment generating function of the rounded sum; it can
  only add to the computed positive part, by at most tau * (largest window value);
- truncation: E[S 1{S > top}] <= inf_lambda e^{-lambda top} M(lambda) (top + 1/(lambda e)),
  from S 1{S > top} <= top e^{lambda (S - top)} + (S - top)_+ and y_+ <= e^{lambda y}/(lambda e);
- FFT rounding: ||computed p - p||_2 <= sum_g n_g (kappa ||a_g||_2 + 4u) + kappa with
  kappa = 10 u log2(L) (Higham, Accuracy and Stability of Numerical Algorithms, Thm 24.2, with
  a margin; |rfft(a_g)| <= 1 so powers amplify an error by at most n_g), turned into an error
  on sum_i value_i p_i by Cauchy-Schwarz.
- grid: the bracket [lower, upper] contains both roundings, so its width shows the grid error
  (about n h P[S > 0]); h is chosen from ``rtol`` and the grid length is capped at 2^23.

Regime: several large groups (or any atom set) at moderate n: the grid must resolve sd(S)/n
per user, so the cost grows like n / rtol (e.g. n = 1e4 users at rtol = 1e-2 needs ~2^23
points). The conditioning method is preferred whenever it applies.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import fft, optimize
from scipy.special import logsumexp

from protocols.bounds.engine_common import REL_SUM, TINY, Categories, U
from protocols.errors import ParameterError

L_MIN = 1 << 12
L_MAX = 1 << 23
K_WINDOW = 12.0


def _log_mgf(lam: float, cats: list[Categories], values: list[np.ndarray]) -> float:
    return sum(cat.count * float(logsumexp(lam * v, b=cat.w))
               for cat, v in zip(cats, values, strict=True))


def _chernoff_min(fun, scale: float) -> float:
    """min over lambda > 0 of fun(lambda) (a log-bound), searched on log lambda; any lambda
    gives a valid bound, so an inexact minimum is still safe."""
    res = optimize.minimize_scalar(lambda s: fun(math.exp(s)), bounds=(math.log(1e-6 / scale),
                                   math.log(1e3 / scale)), method="bounded",
                                   options={"xatol": 1e-3})
    return min(float(res.fun), fun(1.0 / scale))


def _upper_tail_mean(cats, values, top: float, scale: float) -> float:
    """Upper bound on E[S 1{S > top}] (top > 0) or on E[S_+] (top <= 0)."""
    if top > 0:
        def fun(lam):
            return -lam * top + _log_mgf(lam, cats, values) + math.log(top + 1.0 / (lam * math.e))
    else:
        def fun(lam):
            return _log_mgf(lam, cats, values) - math.log(lam * math.e)
    return math.exp(min(_chernoff_min(fun, scale), 700.0))


def _tail_prob(cats, values, level: float, upper: bool, scale: float) -> float:
    """Upper bound on P[S > level] (upper) or P[S < level] (lower), by Chernoff."""
    sign = 1.0 if upper else -1.0

    def fun(lam):
        return -sign * lam * level + _log_mgf(sign * lam, cats, values)
    return min(1.0, math.exp(min(_chernoff_min(fun, scale), 0.0)))


def _rounded(cats: list[Categories], h: float, up: bool) -> list[np.ndarray]:
    """Integer multiples k with k h >= c (up) or k h <= c (down), guaranteed."""
    out = []
    for cat in cats:
        q = cat.c / h
        if up:
            k = np.ceil(q)
            k = k + (k * h * (1 - 2 * U) < cat.c)
        else:
            k = np.floor(q)
            k = k - (k * h * (1 + 2 * U) > cat.c)
        out.append(k)
    return out


def _one_side(cats: list[Categories], h: float, length: int, w_lo: int, up: bool):
    """(estimate of E[(h K)_+] from the circular FFT, its error terms) for one rounding."""
    ks = _rounded(cats, h, up)
    values = [k * h for k in ks]
    spectrum = None
    err_l2 = 0.0
    kappa = 10 * U * math.log2(length)
    for cat, k in zip(cats, ks, strict=True):
        arr = np.zeros(length)
        np.add.at(arr, np.mod(k.astype(np.int64), length), cat.w)
        a_hat = fft.rfft(arr)
        power = a_hat ** cat.count
        spectrum = power if spectrum is None else spectrum * power
        err_l2 += cat.count * (kappa * float(np.linalg.norm(arr)) + 4 * U)
    err_l2 = (err_l2 + kappa) * 1.01
    probs = fft.irfft(spectrum, length)
    idx = np.arange(length)
    lattice = w_lo + np.mod(idx - w_lo, length)          # window value of each index
    vals = lattice * h
    pos = vals > 0
    est = float(vals[pos] @ probs[pos])
    fft_err = err_l2 * float(np.linalg.norm(vals[pos])) if pos.any() else 0.0
    top = float(vals.max())
    return est, fft_err, values, top


def fft_bounds(cats: list[Categories], rtol: float, step: float | None = None
               ) -> tuple[float, float]:
    """Guaranteed (lower, upper) for E[(sum)_+] by 000 Alg. 7 (see the module docstring).

    ``step`` fixes the grid step h (e.g. 000 Sec. 6's l = (e^eps0 - 1)/1000, to reproduce the
    published discretization); by default h is chosen from ``rtol``."""
    n_users = sum(cat.count for cat in cats)
    mean = sum(cat.count * cat.mean for cat in cats)
    sd = math.sqrt(sum(cat.count * cat.variance for cat in cats))
    spread = max(float(cat.c.max() - cat.c.min()) for cat in cats)
    sd = max(sd, 1e-300)
    z = max(1.0, -mean / sd)
    lo_v = mean - K_WINDOW * sd - spread
    hi_v = max(mean + K_WINDOW * sd, 0.0) + spread
    span = hi_v - lo_v
    h_target = max(rtol, 1e-12) * sd / (n_users * z)
    if step is None:
        length = int(min(L_MAX, max(L_MIN, math.ceil(span / h_target) + 1)))
        length = fft.next_fast_len(length, real=True)
        h = span / (length - 1)
    else:
        h = float(step)
        length = fft.next_fast_len(max(L_MIN, math.ceil(span / h) + 2), real=True)
        if length > 8 * L_MAX:
            raise ParameterError("fft_step", step, f"needs a grid of {length} points "
                                 f"(more than {8 * L_MAX})")
    w_lo = math.floor(lo_v / h)
    scale = sd
    # Upper: values rounded up.
    est, fft_err, values_up, top = _one_side(cats, h, length, w_lo, up=True)
    upper = est + fft_err + _upper_tail_mean(cats, values_up, top, scale)
    # Lower: values rounded down; remove what the wrap-around can have added.
    est, fft_err, values_dn, top = _one_side(cats, h, length, w_lo, up=False)
    tau = (_tail_prob(cats, values_dn, top, True, scale)
           + _tail_prob(cats, values_dn, w_lo * h, False, scale))
    lower = est - fft_err - max(top, 0.0) * tau
    return max(lower * (1 - REL_SUM), 0.0), upper * (1 + REL_SUM) + TINY
