"""FFT method: G on a grid, n-fold convolution by FFT (000 Alg. 7), tilted, guaranteed.

Two ways of putting G on the lattice h Z, each giving a guaranteed bracket:

- randomized rounding (default; derived here): c = (k + f) h goes to (k + 1) h with
  probability f and to k h otherwise (f rounded up by 4u). The rounded G' is a mean-preserving
  spread of G, so S' = S + W with E[W | G] = 0 and, (.)_+ being convex, E[S'_+] >= E[S_+]: an
  upper bound whose error is second order. Lower bound: E[S'_+] - E[S_+] = E[D] with
  0 <= D = (S+W)_+ - S_+ - 1{S>0} W <= |W| 1{|S| <= |W|}, so E[D] <= E f(|S|) with
  f(a) = E[|W| 1{|W| >= a}] (Hoeffding: W is a sum of independent centred terms, each in an
  interval of length h), and by Abel summation over radii r_j (f decreasing)
  E f(|S|) <= f(r_J) + sum_j (f(r_j) - f(r_{j+1})) P[|S| < r_{j+1}], with
  P[|S| < r] <= P[|S'| < r + y] + P[|W| > y] read off the same convolution. The bracket is
  about 8 n h^2 z^2 / sd(S)^2 wide (relative), so h can stay fixed as n grows.
- rounding up (upper bound) and down (lower bound), 000 Sec. 5.2-5.3, used to reproduce the
  paper's numbers (``step`` given) and, for few users, where S is too lumpy near 0 for the
  second-order bound; its error n h P[S > 0] is first order.

Exponential tilting (added here; the paper convolves the untilted law). E[S_+] lives in the
upper tail of S, far below the FFT's absolute rounding level. With theta >= 0 and per-user
tilted laws w_j e^{theta k_j h} / M_g(theta),
    P[K = k] = prod_g M_g(theta)^{n_g} e^{-theta h k} P_theta[K = k],
so E[(hK)_+] = sum_{k > 0} h k F(k) P_theta[K = k], F(k) = exp(sum_g n_g ln M_g - theta h k).
theta minimises sum_g n_g ln M_g(theta) (the tilted mean is ~ 0), so the window of the
convolution is centred where E[S_+] comes from and F(k) <= prod M_g^{n_g} (Chernoff's bound of
P[S >= 0]) turns the FFT's absolute error into a relative one. Index i of the circular result
stands for the value of the window [W_lo, W_lo + L - 1] congruent to i. Errors, all bounded:

- wrap-around: tilted mass outside the window lands inside (non-negative); its total tau_theta
  is bounded by Chernoff's inequality under the tilted law; it can only add to the computed
  sums, by at most tau_theta * max weight;
- truncation: E[S 1{S > top}] <= inf_lambda e^{-lambda top} M(lambda) (top + 1/(lambda e))
  (S 1{S > top} <= top e^{lambda (S - top)} + (S - top)_+, y_+ <= e^{lambda y}/(lambda e));
- FFT rounding: ||computed p - p||_2 <= sum_g n_g (kappa ||a_g||_2 + 4u) + kappa with
  kappa = 10 u log2(L) (Higham, Accuracy and Stability of Numerical Algorithms, Thm 24.2, with
  a margin; |rfft(a_g)| <= 1, so the n_g-th power amplifies an error by at most n_g), turned into
  an error on each weighted sum by Cauchy-Schwarz; F(k) is computed in log space with its own
  relative error.

Regime: several large groups, and many-atom GPARVs (discretized continuous randomizers) that
the conditioning method handles poorly; the grid has ~ 70 z sqrt(n / rtol) points (capped at
2^23), i.e. rtol ~ 1e-3 up to n ~ 1e6 and a coarser bracket beyond.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from shufflesim.protocols.bounds.engine.common import (
    REL_SUM,
    TINY,
    Categories,
    U,
    log_sum_exp,
    minimise_unimodal,
)
from shufflesim.protocols.bounds.engine.fft_gap import (
    K_WINDOW,
    L_MAX,
    SPREAD_GAP_FACTOR,
    _shape,
    expected_gap,  # noqa: F401 (re-exported)
)
from shufflesim.protocols.bounds.engine.spectrum_power import (
    integer_power,  # noqa: F401 (same)
    power_or_zero,
)
from shufflesim.protocols.errors import ParameterError
from shufflesim.protocols.lazy import lazy_module

optimize = lazy_module("scipy.optimize")  # one minimiser, loaded on first use (issue 32)
fft = lazy_module("scipy.fft")  # loaded by the first convolution: most bounds never run one

L_MIN = 1 << 12
L_FEW = 1 << 21     # grid cap of the plain-rounding pass for few users


@dataclass(frozen=True)
class _Law:
    """One group's per-user law on the lattice h Z: integer points, their masses, the count."""

    k: np.ndarray
    mass: np.ndarray
    count: int


def _log_mgf(lam, laws: list[_Law], h: float):
    """ln E e^{lam S} for S = h * (sum over users of the lattice points); ``lam`` a number
    (returns a float) or an array (returns an array)."""
    lam_arr = np.asarray(lam, dtype=float)
    rows = np.atleast_1d(lam_arr)[:, None]
    out = sum(law.count * log_sum_exp(rows * h * law.k[None, :], law.mass) for law in laws)
    return float(out[0]) if lam_arr.ndim == 0 else out


def _minimise_log(fun, lo: float, hi: float) -> float:
    """min of fun over [lo, hi] (log-parametrised, ``fun`` vectorized); any point is a valid
    bound. Every exponent minimised here is convex in lam (a log-MGF plus -lam x, -ln lam or
    ln(top + 1/(lam e))), hence unimodal in ln lam: common.minimise_unimodal."""
    return minimise_unimodal(fun, lo, hi)


def _upper_tail_mean(laws, h, top: float, scale: float) -> float:
    """Upper bound on E[S 1{S > top}] for top > 0, or on E[S_+] for top <= 0 (Chernoff)."""
    def fun(s):
        lam = np.exp(s)
        log_m = _log_mgf(lam, laws, h)
        if top > 0:
            return -lam * top + log_m + np.log(top + 1.0 / (lam * math.e))
        return log_m - np.log(lam * math.e)
    best = _minimise_log(fun, math.log(1e-6 / scale), math.log(1e3 / scale))
    return math.exp(min(best, 700.0)) + TINY


def _tilted_tail_prob(laws, h, theta: float, level: float, upper: bool, scale: float) -> float:
    """Upper bound on P_theta[S > level] (upper) or P_theta[S < level] (lower), Chernoff with
    the tilted MGF M(theta + lam) / M(theta)."""
    sign = 1.0 if upper else -1.0
    base = _log_mgf(theta, laws, h)

    def fun(s):
        lam = np.exp(s)
        return -sign * lam * level + _log_mgf(theta + sign * lam, laws, h) - base
    best = _minimise_log(fun, math.log(1e-6 / scale), math.log(1e3 / scale))
    return min(1.0, math.exp(min(best, 0.0)) + TINY)


def _rounded_laws(cats: list[Categories], h: float, up: bool) -> list[_Law]:
    """Each value moved to k h with k h >= c (up) or k h <= c (down), guaranteed."""
    out = []
    for cat in cats:
        q = cat.c / h
        if up:
            k = np.ceil(q)
            k = k + (k * h * (1 - 2 * U) < cat.c)
        else:
            k = np.floor(q)
            k = k - (k * h * (1 + 2 * U) > cat.c)
        out.append(_Law(k, cat.w, cat.count))
    return out


def _spread_laws(cats: list[Categories], h: float) -> list[_Law]:
    """Randomized rounding: c = (k + f) h goes to (k + 1) h with probability f, else to k h.
    The probability is rounded up (by 4u), so each rounded value dominates c in the
    increasing convex order, and E[(S')_+] >= E[S_+] (Jensen / icx order is closed under
    independent sums)."""
    out = []
    for cat in cats:
        q = cat.c / h
        k = np.floor(q)
        frac = np.clip(q - k + 4 * U * (np.abs(q) + 1), 0.0, 1.0)
        kk = np.concatenate([k, k + 1])
        mass = np.concatenate([cat.w * (1 - frac), cat.w * frac])
        keep = mass > 0
        out.append(_Law(kk[keep], mass[keep], cat.count))
    return out


def _tilt(laws: list[_Law], h: float, scale: float) -> float:
    """theta >= 0 minimising ln M_S(theta) (0 if E S >= 0)."""
    mean = sum(law.count * float(law.mass @ law.k) * h for law in laws)
    if mean >= 0:
        return 0.0
    res = optimize.minimize_scalar(lambda th: _log_mgf(th, laws, h),
                                   bounds=(0.0, 50.0 / scale), method="bounded",
                                   options={"xatol": 1e-6 / scale})
    return float(res.x)


@dataclass
class _Convolution:
    """The tilted law of the lattice sum: P[K = k] = F(k) P_theta[K = k] with
    F(k) = exp(ln M(theta) - theta h k); ``probs`` is P_theta on the window (with wrap-around
    mass and FFT error ``err_l2`` in l2)."""

    lattice: np.ndarray
    probs: np.ndarray
    log_mgf: float
    theta: float
    err_l2: float
    tau: float           # tilted mass outside the window (bound)
    top: float
    h: float
    w_lo: int = 0        # lowest window value (index i holds w_lo + (i - w_lo) mod length)

    def log_f(self, vals):
        return self.log_mgf - self.theta * vals

    def weighted_sum(self, mask, weight_fn):
        """Bounds (lower, upper) of sum over window points in ``mask`` of
        weight_fn(value) P[S = value], weights >= 0; wrap-around can only add mass."""
        vals = self.lattice[mask] * self.h
        log_f = self.log_f(vals)
        weights = weight_fn(vals) * np.exp(np.minimum(log_f, 700.0))
        rel_f = 8 * U * (abs(self.log_mgf) + np.abs(self.theta * vals) + 1.0)
        terms = weights * self.probs[mask]
        est = float(terms.sum())
        err = self.err_l2 * _l2(weights * (1 + rel_f))
        abs_terms = np.abs(terms)
        err += (float(np.sum(abs_terms * rel_f)) * (1 + SUM_MARGIN)
                + 2 * terms.size * U * float(abs_terms.sum()))
        alias = self.tau * float(weights.max(initial=0.0)) * (1 + float(rel_f.max(initial=0.0)))
        return est - err - alias, est + err


#: spectrum entries whose real and imaginary parts are both below this are set to 0 before the
#: inverse FFT: the n-th powers of a characteristic function leave hundreds of subnormal
#: numbers, on which the inverse FFT runs about 5 times slower (laplace_metric, n = 1e4, 1M
#: points: 0.118 s -> 0.022 s)
FLUSH_BELOW = 1e-200


#: relative margin on a sum of non-negative terms (pairwise summation: at most ~log2(n) u)
SUM_MARGIN = 1e-12


def _l2(x: np.ndarray) -> float:
    """The l2 norm of a real array, rounded up (numpy's pairwise sum of squares, relative error
    at most ~log2(n) u, well inside SUM_MARGIN); not np.linalg.norm, whose BLAS dot spins its
    threads on a busy machine (~8 ms of CPU a call, measured under load)."""
    return math.sqrt(float(np.sum(x * x)) * (1 + SUM_MARGIN)) * (1 + SUM_MARGIN)


def _flush_tiny(spectrum: np.ndarray, length: int) -> float:
    """Set the entries of the half spectrum ``spectrum`` with both parts < FLUSH_BELOW to 0, in
    place; return a bound on the l2 change of its inverse real FFT of ``length`` points. By
    Parseval, p = irfft(X) has ||p||_2^2 = (|X_0|^2 + 2 sum_{0<k<L/2} |X_k|^2 + |X_{L/2}|^2) / L
    <= 2 ||X||_2^2 / L, so the change is at most sqrt(2 / L) times the dropped entries' l2 norm
    (rounded up by a factor 1 + 1e-12)."""
    tiny = (np.abs(spectrum.real) < FLUSH_BELOW) & (np.abs(spectrum.imag) < FLUSH_BELOW)
    if not tiny.any():
        return 0.0
    # each dropped entry has modulus < sqrt(2) FLUSH_BELOW (its squares would underflow)
    dropped = math.sqrt(2.0 * np.count_nonzero(tiny)) * FLUSH_BELOW
    spectrum[tiny] = 0.0
    return math.sqrt(2.0 / length) * dropped * (1 + 1e-12) + TINY


def _convolve(laws: list[_Law], h: float, length: int, scale: float,
              k_window: float) -> _Convolution:
    theta = _tilt(laws, h, scale)
    log_mgf = _log_mgf(theta, laws, h)
    # Tilted law: mean and sd of the sum; the window is centred on it and contains 0.
    mean_t, var_t = 0.0, 0.0
    tilted = []
    for law in laws:
        v = law.k * h
        wt = law.mass * np.exp(theta * v - log_sum_exp(theta * v, law.mass))
        m1 = float(wt @ v)
        mean_t += law.count * m1
        var_t += law.count * float(wt @ (v - m1) ** 2)
        tilted.append(wt)
    sd_t = math.sqrt(var_t) + h
    w_lo = min(math.floor((min(mean_t, 0.0) - k_window * sd_t) / h) - 1, -1)
    spectrum = None
    err_l2 = 0.0
    kappa = 10 * U * math.log2(length)
    # Powers below FLUSH_BELOW e^{-2 - growth} are left 0: times the other groups' factors (of
    # modulus <= e^growth) they stay below FLUSH_BELOW, which _flush_tiny zeroes and counts.
    growth = sum(law.count for law in laws) * (kappa * math.sqrt(length) + 8 * U)
    for law, wt in zip(laws, tilted, strict=True):
        arr = np.zeros(length)
        np.add.at(arr, np.mod(law.k.astype(np.int64), length), wt)
        power = power_or_zero(fft.rfft(arr), law.count, FLUSH_BELOW, growth)
        spectrum = power if spectrum is None else spectrum * power
        err_l2 += law.count * (kappa * _l2(arr) + 4 * U)
    err_l2 = (err_l2 + kappa) * 1.01
    err_l2 += _flush_tiny(spectrum, length)
    probs = fft.irfft(spectrum, length)
    lattice = w_lo + np.mod(np.arange(length) - w_lo, length)   # window value of each index
    top = float(lattice.max()) * h
    tau = (_tilted_tail_prob(laws, h, theta, top, True, scale)
           + _tilted_tail_prob(laws, h, theta, w_lo * h, False, scale))
    return _Convolution(lattice, probs, log_mgf, theta, err_l2, tau, top, h, int(w_lo))


def _positive_part(conv: _Convolution, laws, scale) -> tuple[float, float]:
    """Bounds of E[(S)_+] for the lattice sum of ``conv``."""
    lo, hi = conv.weighted_sum(conv.lattice > 0, lambda v: v)
    return lo, hi + _upper_tail_mean(laws, conv.h, conv.top, scale)


def _rounded_bounds(cats, h, length, scale, k_window) -> tuple[float, float]:
    """000 Alg. 7: rounding up for the upper bound, down for the lower one."""
    laws_dn = _rounded_laws(cats, h, up=False)
    lower, _ = _positive_part(_convolve(laws_dn, h, length, scale, k_window), laws_dn, scale)
    laws_up = _rounded_laws(cats, h, up=True)
    _, upper = _positive_part(_convolve(laws_up, h, length, scale, k_window), laws_up, scale)
    return lower, upper


def _hoeffding_tail_mean(a, var_bound):
    """f(a) >= E[|W| 1{|W| >= a}] for a sum W of independent centred terms each in an interval
    of length h (sum of squared lengths <= 4 var_bound): Hoeffding, P[|W| >= x] <=
    2 exp(-x^2 / (2 var_bound)); f(a) = a P + int_a^inf P <= 2 e^{-a^2/(2v)} (a + v / a); and
    f(a) <= E|W| <= sqrt(var_bound)."""
    a = np.asarray(a, dtype=float)
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        tail = 2 * np.exp(-a * a / (2 * var_bound)) * (a + var_bound / a)
    return np.minimum(np.sqrt(var_bound), np.where(a > 0, tail, np.inf))


def _near_zero(conv: _Convolution, radius: float) -> np.ndarray:
    """Indices (increasing) of the window points with |value| < ``radius``: the same set, in
    the same order, as the boolean mask ``np.abs(conv.lattice * h) < radius``, found without a
    pass over the whole window (the radii of the Abel sum span a few sd of W, a tiny part of
    a window of up to 2^23 points)."""
    length = conv.lattice.size
    w_hi = conv.w_lo + length - 1
    reach = int(math.ceil(radius / conv.h)) + 1
    k = np.arange(max(-reach, conv.w_lo), min(reach, w_hi) + 1, dtype=conv.lattice.dtype)
    k = k[np.abs(k * conv.h) < radius]
    return np.sort(np.mod(k, length))      # value k sits at index k mod length


#: Abel radii (sd of W; a finer partition only lowers the sum) and Hoeffding margins y - drift
#: tried at each (sd of W; until session 17: radii 0, 1, ..., 12 and the margin 12 alone)
ABEL_RADII = np.arange(0.0, 12.25, 0.25)
ABEL_MARGINS = np.array([1.5, 2.0, 2.5, 3.0, 3.5, 4.0, 5.0, 6.0, 8.0, 10.0, 12.0])


def _near_zero_upper(conv: _Convolution, reach: np.ndarray) -> np.ndarray:
    """Upper bounds of P[|S'| < R] (window part) for every R in ``reach``: the terms of
    :meth:`_Convolution.weighted_sum` (weight 1, points |value| < R) as cumulative sums by
    |value| (m sequential terms: relative error < m u, covered by the factor 1 + 2 m u)."""
    near = _near_zero(conv, float(np.max(reach)))
    vals = conv.lattice[near] * conv.h
    dist = np.abs(vals)
    order = np.argsort(dist, kind="stable")
    vals, dist = vals[order], dist[order]
    log_f = conv.log_f(vals)
    weights = np.exp(np.minimum(log_f, 700.0))
    rel_f = 8 * U * (abs(conv.log_mgf) + np.abs(conv.theta * vals) + 1.0)
    terms = weights * conv.probs[near][order]
    abs_terms = np.abs(terms)
    c_est, c_abs, c_rel, c_sq = (np.concatenate([[0.0], np.cumsum(x)]) for x in (
        terms, abs_terms, abs_terms * rel_f, (weights * (1 + rel_f)) ** 2))
    m = np.searchsorted(dist, reach, side="left")      # points with |value| < R
    grow = 1 + 2 * U * (m + 1.0)
    err = conv.err_l2 * np.sqrt(c_sq[m] * grow * (1 + SUM_MARGIN)) * (1 + SUM_MARGIN)
    err += c_rel[m] * grow * (1 + SUM_MARGIN) + 2 * m * U * c_abs[m] * grow
    return c_est[m] + err


def _spread_bounds(cats, h, length, scale, k_window) -> tuple[float, float]:
    """Randomized rounding (module docstring): one convolution gives both sides. With
    S' = S + W, E[W | G] = 0 (up to the 4u rounding of the split probabilities),
    E[S'_+] = E[S_+] + E[D], 0 <= D <= |W| 1{|S| <= |W|}, so
    E[D] <= E f(|S|), f(a) = E[|W| 1{|W| >= a}], bounded by Abel summation over radii r_j.
    {|S| < r, |W - E[W|G]| <= y - drift} lies in {|S'| < r + y}; Hoeffding, p_w =
    2 exp(-(y - drift)^2 / (2 Var-bound)), holds given G (of which {|S| < r} is an event), so
    P[|S| < r] <= min(P[|S'| < r + y] + p_w, P[|S'| < r + y] / (1 - p_w)) (the latter since
    session 17, issue 32: margins of 2-3 sd of W instead of 12), the best over several y."""
    laws = _spread_laws(cats, h)
    conv = _convolve(laws, h, length, scale, k_window)
    lower, upper = _positive_part(conv, laws, scale)
    n_users = sum(cat.count for cat in cats)
    var_w = n_users * h * h / 4.0       # each user's term of W lies in an interval of length h
    sd_w = math.sqrt(var_w)
    # The split probabilities were rounded up by at most 4u(|c/h| + 1) (plus 2u for the split
    # itself): 0 <= E[W | G] <= drift. Hoeffding applies to W - E[W | G], so every radius below
    # is reduced by the drift; and E[1{S > 0} W] <= drift is subtracted as well.
    drift = 8 * U * sum(cat.count * float(cat.w @ (np.abs(cat.c) + h)) for cat in cats)
    radii = sd_w * ABEL_RADII
    f = _hoeffding_tail_mean(np.maximum(radii - drift, 0.0), var_w) + drift
    ys = ABEL_MARGINS * sd_w + drift
    p_w = 2 * np.exp(-ABEL_MARGINS ** 2 / 2) * (1 + 8 * U)      # P[|W - E[W|G]| > y - drift]
    reach = radii[1:, None] + ys[None, :]                          # r_{j+1} + y
    p_near = _near_zero_upper(conv, reach.ravel()).reshape(reach.shape)
    # Wrap-around (tilted) mass tau may sit anywhere in the window: untilted mass tau F(v),
    # F(v) = e^{ln M - theta v} <= its largest value on the range (the upper sums contain it).
    f_max = np.exp(np.minimum(conv.log_mgf + conv.theta * reach, 700.0))
    p_near = p_near + conv.tau * f_max * (1 + 8 * U * (abs(conv.log_mgf) + 1.0))
    ratio = np.where(p_w < 1, p_near / np.maximum(1 - p_w, TINY) * (1 + 4 * U), np.inf)
    p_s = np.minimum(np.minimum(p_near + p_w, ratio).min(axis=1), 1.0)
    p_s = np.minimum.accumulate(p_s[::-1])[::-1]     # P[|S| < r] is non-decreasing in r
    steps = np.maximum(f[:-1] - f[1:], 0.0)
    e_d = float(f[-1]) + float(np.sum(steps * p_s)) * (1 + SUM_MARGIN)
    return lower - e_d * (1 + 8 * U) - drift, upper


ROUNDED_USELESS = 4.0     # plain rounding skipped beyond this predicted relative error
#: ... and where its predicted relative bracket n h1 z / sd is more than this many times the
#: randomized rounding's measured one: the prediction overstates the plain bracket by about
#: 2.4x on Laplace (0.0241 predicted, 0.0102 measured, n = 1e4), so a factor 4 skips only
#: passes that cannot narrow the bracket (laplace_metric, n = 1e4: two 2^21-point
#: convolutions, 0.7 s of each 0.8-1.1 s evaluation, never kept)
ROUNDED_OPTIMISM = 4.0
#: a finer randomized rounding aims at this fraction of rtol (its bracket shrinks about as h^2)
FINER_AIM = 0.5


WINDOW_CHOICES = (7.0, 8.0, 9.0, 10.0, K_WINDOW)
TAU_TARGET = 1e-4         # tilted mass beyond the window, relative to rtol (window_sd)


def window_sd(cats: list[Categories], rtol: float) -> float:
    """Half-width of the FFT window in sd of S: the smallest of WINDOW_CHOICES for which
    Chernoff's bound on the tilted law of the (unrounded) sum puts at most
    TAU_TARGET * rtol of its mass beyond mean +- k sd; K_WINDOW (12) otherwise.

    Only the grid depends on this choice: the wrap-around and truncation of whatever window
    is used are bounded rigorously afterwards (tau, _upper_tail_mean), so a narrower window
    can only change the width of the bracket, never its validity. For many users the sum is
    nearly Gaussian and 7 sd suffice (Laplace, n = 1e6: a grid 1.6 times shorter, or a step
    1.6 times finer at the 2^23 cap); skewed sums of few users keep 12."""
    laws = [_Law(cat.c, cat.w, cat.count) for cat in cats]
    n_users, _, sd, _ = _shape(cats)
    theta = _tilt(laws, 1.0, sd)
    base = _log_mgf(theta, laws, 1.0)
    mean_t, var_t = 0.0, 0.0
    for law in laws:
        wt = law.mass * np.exp(theta * law.k - log_sum_exp(theta * law.k, law.mass))
        m1 = float(wt @ law.k)
        mean_t += law.count * m1
        var_t += law.count * float(wt @ (law.k - m1) ** 2)
    sd_t = math.sqrt(var_t)
    if not (math.isfinite(base) and sd_t > 0) or sd_t > sd:
        return K_WINDOW
    target = TAU_TARGET * max(rtol, 1e-12)
    for k in WINDOW_CHOICES:
        tails = (_tilted_tail_prob(laws, 1.0, theta, mean_t + k * sd_t, True, sd)
                 + _tilted_tail_prob(laws, 1.0, theta, mean_t - k * sd_t, False, sd))
        if tails <= target:
            return k
    return K_WINDOW


def _finer_spread_length(length: int, gap: float, rtol: float, limit: int) -> int | None:
    """Grid of a randomized rounding whose bracket (~ h^2) should be FINER_AIM * rtol, given
    the relative ``gap`` on ``length`` points; None unless longer and at most ``limit`` (the
    plain rounding's grid, whose pass it replaces: on the same grid its first-order bracket
    was 4-40x wider in every case measured, issue 32). Each bracket is guaranteed."""
    if not (gap > 0 and math.isfinite(gap)):
        return None
    want = math.ceil(length * math.sqrt(gap / (FINER_AIM * max(rtol, 1e-12))))
    finer = fft.next_fast_len(min(want, limit), real=True)
    return finer if length < finer <= limit else None


def fft_bounds(cats: list[Categories], rtol: float, step: float | None = None,
               length: int | None = None) -> tuple[float, float]:
    """Guaranteed (lower, upper) for E[(sum)_+] by FFT (module docstring).

    By default: randomized rounding on a grid chosen from ``rtol`` (at most ``length``, default
    2^23, points). With ``step``: 000 Alg. 7 exactly as published, values rounded up (upper) and
    down (lower) to multiples of ``step`` (e.g. 000 Sec. 6's l = (e^eps0 - 1)/1000)."""
    n_users, z, sd, spread = _shape(cats)
    k_sd = K_WINDOW if step is not None else window_sd(cats, rtol)
    span = 2 * k_sd * sd + 4 * spread
    if step is None:
        h_target = sd * math.sqrt(max(rtol, 1e-12) / SPREAD_GAP_FACTOR / n_users) / z
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
    # The window holds the tilted law within +-k_window sd of its mean and 0 (the wrap-around
    # bound covers the rest).
    k_window = 0.5 * (length * h - 2 * spread) / sd
    if step is not None:
        lower, upper = _rounded_bounds(cats, h, length, sd, k_window)
        return max(lower * (1 - REL_SUM), 0.0), upper * (1 + REL_SUM) + TINY
    lower, upper = _spread_bounds(cats, h, length, sd, k_window)
    # Few users: S is lumpy near 0 and the second-order bound of the randomized rounding can be
    # loose; the plain rounding (first-order error n h) is then cheap and may do better. Both
    # brackets are valid: keep the intersection.
    h1 = max(max(rtol, 1e-12) * sd / (n_users * z), span / (L_FEW - 1))
    # Its bracket is about n h1 z / sd wide (relative: each user moves by up to h1, E[S_+] ~
    # sd P[S > 0] / z). When the grid cap makes that more than ROUNDED_USELESS while the
    # randomized rounding is already within a factor 2, the two convolutions cannot tighten
    # anything (n = 1e6 Laplace: [4e-46, 3.5] against [1.0000e-6, 1.0058e-6]) and are skipped;
    # skipping a valid bracket only forgoes an intersection, it never loosens the other one.
    predicted = n_users * h1 * z / sd
    useless = ((predicted > ROUNDED_USELESS and upper - lower < 0.5 * upper)
               or predicted > ROUNDED_OPTIMISM * (upper - lower) / max(upper, TINY))
    if upper - lower > rtol * upper and not useless:
        length1 = fft.next_fast_len(max(L_MIN, math.ceil(span / h1) + 2), real=True)
        finer = _finer_spread_length(length, (upper - lower) / max(upper, TINY), rtol,
                                     min(cap, length1))
        if finer is not None:   # one convolution instead of the plain rounding's two (issue 32)
            h2 = span / (finer - 1)
            lo2, up2 = _spread_bounds(cats, h2, finer, sd, 0.5 * (finer * h2 - 2 * spread) / sd)
            lower, upper = max(lower, lo2), min(upper, up2)
        else:
            h1 = span / (length1 - 1)
            k1 = 0.5 * (length1 * h1 - 2 * spread) / sd
            lo1, up1 = _rounded_bounds(cats, h1, length1, sd, k1)
            lower, upper = max(lower, lo1), min(upper, up1)
    return max(lower * (1 - REL_SUM), 0.0), upper * (1 + REL_SUM) + TINY
