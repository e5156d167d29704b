"""000 Alg. 7 with guaranteed error: round G to a grid, n-fold convolution by FFT, tilted.

Rounding (000 Sec. 5.2-5.3): for the upper bound every value c is rounded up to h ceil(c/h), so
each user's rounded value dominates the true one and E[(sum)_+] can only grow; for the lower
bound, rounded down. On the integer lattice the sum K (in units of h) is computed modulo L by one
real FFT of length L per group.

Exponential tilting (added here; the paper convolves the untilted law). E[S_+] lives in the
upper tail of S, where the untilted probabilities are far below the FFT's absolute rounding
level. With theta >= 0 and per-user tilted laws w_j e^{theta k_j h} / M_g(theta),
    P[K = k] = prod_g M_g(theta)^{n_g} e^{-theta h k} P_theta[K = k],
so E[(hK)_+] = sum_{k > 0} h k F(k) P_theta[K = k], F(k) = exp(sum_g n_g ln M_g - theta h k).
theta minimises sum_g n_g ln M_g(theta) (the tilted mean is ~ 0), so the window of the
convolution is centred where E[S_+] comes from and F(k) <= prod M_g^{n_g} (Chernoff's bound of
P[S >= 0]) turns the FFT's absolute error into a relative one. Index i of the circular result
stands for the value of the window [W_lo, W_lo + L - 1] congruent to i. Errors, all bounded:

- wrap-around: tilted mass outside the window lands inside (non-negative); its total tau_theta
  is bounded by Chernoff's inequality under the tilted law; it can only add to the computed
  sum, by at most tau_theta * max_{k > 0} h k F(k);
- truncation: E[S 1{S > top}] <= inf_lambda e^{-lambda top} M(lambda) (top + 1/(lambda e))
  (S 1{S > top} <= top e^{lambda (S - top)} + (S - top)_+, y_+ <= e^{lambda y}/(lambda e));
- FFT rounding: ||computed p - p||_2 <= sum_g n_g (kappa ||a_g||_2 + 4u) + kappa with
  kappa = 10 u log2(L) (Higham, Accuracy and Stability of Numerical Algorithms, Thm 24.2, with
  a margin; |rfft(a_g)| <= 1, so the n_g-th power amplifies an error by at most n_g), turned into
  an error on the weighted sum by Cauchy-Schwarz; F(k) is computed in log space with its own
  relative error.
- grid: the bracket [lower, upper] contains both roundings, so its width shows the grid error
  (about n h P[S > 0]); h is chosen from ``rtol`` and L is capped at 2^23.

Regime: several large groups, or atom sets the conditioning method handles poorly, at moderate
n: the grid must resolve sd(S) / n per user, so the cost grows like n / rtol (n = 1e4 users at
rtol = 1e-2 needs ~2^23 points). The conditioning method is preferred whenever it applies.
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
    """ln E e^{lam S} for S = sum over users of the given per-group values."""
    return sum(cat.count * float(logsumexp(lam * v, b=cat.w))
               for cat, v in zip(cats, values, strict=True))


def _minimise_log(fun, lo: float, hi: float) -> float:
    """min of fun over [lo, hi] (log-parametrised); any point is a valid bound."""
    res = optimize.minimize_scalar(fun, bounds=(lo, hi), method="bounded",
                                   options={"xatol": 1e-4})
    return min(float(res.fun), fun(0.5 * (lo + hi)))


def _upper_tail_mean(cats, values, top: float, scale: float) -> float:
    """Upper bound on E[S 1{S > top}] for top > 0, or on E[S_+] for top <= 0 (Chernoff)."""
    def fun(s):
        lam = math.exp(s)
        log_m = _log_mgf(lam, cats, values)
        if top > 0:
            return -lam * top + log_m + math.log(top + 1.0 / (lam * math.e))
        return log_m - math.log(lam * math.e)
    best = _minimise_log(fun, math.log(1e-6 / scale), math.log(1e3 / scale))
    return math.exp(min(best, 700.0)) + TINY


def _tilted_tail_prob(cats, values, theta: float, level: float, upper: bool,
                      scale: float) -> float:
    """Upper bound on P_theta[S > level] (upper) or P_theta[S < level] (lower), Chernoff with
    the tilted MGF M(theta + lam) / M(theta)."""
    sign = 1.0 if upper else -1.0
    base = _log_mgf(theta, cats, values)

    def fun(s):
        lam = math.exp(s)
        return -sign * lam * level + _log_mgf(theta + sign * lam, cats, values) - base
    best = _minimise_log(fun, math.log(1e-6 / scale), math.log(1e3 / scale))
    return min(1.0, math.exp(min(best, 0.0)) + TINY)


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


def _tilt(cats: list[Categories], values: list[np.ndarray], scale: float) -> float:
    """theta >= 0 minimising ln M_S(theta) (0 if E S >= 0)."""
    mean = sum(cat.count * float(cat.w @ v) for cat, v in zip(cats, values, strict=True))
    if mean >= 0:
        return 0.0
    res = optimize.minimize_scalar(lambda th: _log_mgf(th, cats, values),
                                   bounds=(0.0, 50.0 / scale), method="bounded",
                                   options={"xatol": 1e-6 / scale})
    return float(res.x)


def _one_side(cats: list[Categories], h: float, length: int, up: bool, scale: float,
              k_window: float):
    """Bounds (lower, upper) of E[(h K)_+] for one rounding direction."""
    ks = _rounded(cats, h, up)
    values = [k * h for k in ks]
    theta = _tilt(cats, values, scale)
    log_mgf = _log_mgf(theta, cats, values)
    # Tilted law: mean and sd of the sum, window around the tilted mean (containing 0).
    mean_t, var_t = 0.0, 0.0
    for cat, v in zip(cats, values, strict=True):
        wt = cat.w * np.exp(theta * v - logsumexp(theta * v, b=cat.w))
        m1 = float(wt @ v)
        mean_t += cat.count * m1
        var_t += cat.count * float(wt @ (v - m1) ** 2)
    sd_t = math.sqrt(var_t) + h
    w_lo = math.floor((min(mean_t, 0.0) - k_window * sd_t) / h) - 1
    w_lo = min(w_lo, -1)
    spectrum = None
    err_l2 = 0.0
    kappa = 10 * U * math.log2(length)
    for cat, k, v in zip(cats, ks, values, strict=True):
        wt = cat.w * np.exp(theta * v - logsumexp(theta * v, b=cat.w))
        arr = np.zeros(length)
        np.add.at(arr, np.mod(k.astype(np.int64), length), wt)
        power = fft.rfft(arr) ** cat.count
        spectrum = power if spectrum is None else spectrum * power
        err_l2 += cat.count * (kappa * float(np.linalg.norm(arr)) + 4 * U)
    err_l2 = (err_l2 + kappa) * 1.01
    probs = fft.irfft(spectrum, length)
    lattice = w_lo + np.mod(np.arange(length) - w_lo, length)   # window value of each index
    pos = lattice > 0
    vals = lattice[pos] * h
    log_f = log_mgf - theta * vals
    weights = vals * np.exp(np.minimum(log_f, 700.0))
    rel_f = 8 * U * (abs(log_mgf) + theta * vals + 1.0)        # error of exp(log F)
    terms = weights * probs[pos]
    est = float(terms.sum())
    fft_err = err_l2 * float(np.linalg.norm(weights * (1 + rel_f)))
    fft_err += float(np.abs(terms) @ rel_f) + 2 * terms.size * U * float(np.abs(terms).sum())
    top = float(lattice.max()) * h
    tau = (_tilted_tail_prob(cats, values, theta, top, True, scale)
           + _tilted_tail_prob(cats, values, theta, w_lo * h, False, scale))
    alias = tau * float(weights.max(initial=0.0)) * (1 + float(rel_f.max(initial=0.0)))
    beyond = _upper_tail_mean(cats, values, top, scale)
    return est - fft_err - alias, est + fft_err + beyond


def _shape(cats: list[Categories]) -> tuple[int, float, float, float]:
    n_users = sum(cat.count for cat in cats)
    mean = sum(cat.count * cat.mean for cat in cats)
    sd = max(math.sqrt(sum(cat.count * cat.variance for cat in cats)), 1e-300)
    spread = max(float(cat.c.max() - cat.c.min()) for cat in cats)
    return n_users, max(1.0, -mean / sd), sd, spread


def expected_gap(cats: list[Categories], length: int) -> float:
    """Rough relative width of the bracket on a grid of ``length`` points: the rounding moves
    the sum by up to n h, and E[S_+] ~ sd P[S > 0] / z (Gaussian tail, z = -E S / sd)."""
    n_users, z, sd, spread = _shape(cats)
    h = (2 * K_WINDOW * sd + 4 * spread) / length
    return n_users * h * z / sd


def fft_bounds(cats: list[Categories], rtol: float, step: float | None = None,
               length: int | None = None) -> tuple[float, float]:
    """Guaranteed (lower, upper) for E[(sum)_+] by 000 Alg. 7 with tilting (module docstring).

    ``step`` fixes the grid step h (e.g. 000 Sec. 6's l = (e^eps0 - 1)/1000, to reproduce the
    published discretization); by default h is chosen from ``rtol``, with at most ``length``
    (default 2^23) grid points."""
    n_users, z, sd, spread = _shape(cats)
    span = 2 * K_WINDOW * sd + 4 * spread
    if step is None:
        h_target = max(rtol, 1e-12) * sd / (n_users * z)
        cap = L_MAX if length is None else length
        length = int(min(cap, max(L_MIN, math.ceil(span / h_target) + 1)))
        length = fft.next_fast_len(length, real=True)
        h = span / (length - 1)
    else:
        h = float(step)
        length = fft.next_fast_len(max(L_MIN, math.ceil(span / h) + 2), real=True)
        if length > 8 * L_MAX:
            raise ParameterError("fft_step", step, f"needs a grid of {length} points "
                                 f"(more than {8 * L_MAX})")
    # The window holds the tilted law (sd <= sd of the untilted one for these bounded laws in
    # practice; the wrap-around bound covers the rest) within +-K sd of its mean and 0.
    k_window = 0.5 * (length * h - 2 * spread) / sd
    lower, _ = _one_side(cats, h, length, up=False, scale=sd, k_window=k_window)
    _, upper = _one_side(cats, h, length, up=True, scale=sd, k_window=k_window)
    return max(lower * (1 - REL_SUM), 0.0), upper * (1 + REL_SUM) + TINY
