"""Aggregated outcomes of a pair in count form (pairs.py), over its high-probability region.

An *aggregate* is a set of outcomes h (count vectors) given as its P0-mass p0, its P1-mass p1,
its exact aggregate loss ell = ln(p0 / p1) and an interval [lo, hi] holding the loss
ln(A(h) / B(h)) of every outcome in it. Aggregates are consumed by pld.py: an upper bound splits
each aggregate into two outcomes at lo and hi keeping (p0, p1) (the aggregate is a
post-processing of the split), a lower bound merges it into one outcome at ell (a
post-processing of the aggregate). Both errors are second order in the width of [lo, hi], so the
"weak" coordinates that change the loss only by dilution may be aggregated coarsely.

Two enumerations (notation of pairs.py; h1, h2 informative, h3 neutral, rest null):

* :func:`symmetric_aggregates` when the informative groups have equal weights and
  a1 - b1 = -(a2 - b2) = g (blanket pairs of binary and k-ary RR, the clone pair, the merged
  Thm 14 pair (x0, x1, x2) of k-RR). Then A - B = g D with D = h1 - h2, and
  B = sbar S + beta D + r h3 with S = h1 + h2, sbar = (b1 + b2) / 2, beta = (b1 - b2) / 2.
  D is enumerated exactly; S and h3 only through bins. Under M: S ~ Bin(n, 2w),
  h1 | S ~ Bin(S, 1/2), h3 | S ~ Bin(n - S, rho), so with X[D, S] = P(S) P(h1 | S) and per-S bin
  masses P_k(S), partial means M_k(S) = E[h3; bin k | S],
      p1 = (sbar X (S P_k) + beta D X P_k + r X M_k) / n,   p0 = p1 + g D (X P_k) / n
  (matrix products over the S of one S-bin). For fixed D the loss is monotone in B, which is
  linear in (S, h3) with positive coefficients, so lo and hi are at the box corners.
  P(h1 | S) is built from one accurate binomial pmf per S (Boost, via scipy.stats.binom.pmf)
  and cumulative sums of log((S - h1) / (h1 + 1)) (relative error ~1e-14).
* :func:`cell_aggregates` otherwise: (h1, h2) exact (h2 | h1 ~ Bin(n - h1, w2 / (1 - w1))), h3
  in bins per cell.

Both return, besides the aggregates, a bound on the P0- and P1-mass outside the region
(the largest a (b) times the binomial tail masses left out, since A / n <= max a).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

from shufflesim.protocols.accounting.pairs import CountModel
from shufflesim.protocols.accounting.run_masses import distinct_columns, run_interval_masses
from shufflesim.protocols.distributions import binom

#: Default tail mass left out of each binomial window.
DEFAULT_TAIL = 1e-15
#: Default relative width of the loss interval of an aggregate (weak coordinates).
DEFAULT_WEAK_RTOL = 0.002
#: Entries of X computed at once.
_CHUNK = 1 << 21


@dataclass
class Aggregates:
    """Arrays of equal length: p0, p1 (masses), ell (forward aggregate loss), lo, hi (forward
    loss interval); outside0 / outside1 bound the masses not enumerated."""

    p0: np.ndarray
    p1: np.ndarray
    ell: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    outside0: float
    outside1: float
    outcomes: int
    #: bound on the M-mass (reference multinomial) of the outcomes not enumerated
    outside_mass: float = 1.0
    #: smallest Sa / S of a block pair (blocks.py, neutral_blocks.py; 1: the pair itself):
    #: the block pairs' denominators are at least this times the pair's (rdp.py)
    shrink: float = 1.0
    #: pld.upper_split's memo: (interval, direction) -> the P-masses split onto that grid
    #: (shared by a round's PLD and its Renyi curve; it goes with a cached Aggregates)
    grids: dict = field(default_factory=dict, repr=False, compare=False)


def window(trials, p: float, tail: float) -> tuple[np.ndarray, np.ndarray]:
    """[lo, hi] holding all but ~tail on each side of Bin(trials, p) (upper end through the lower
    quantile of trials - X, reliable for tiny tails)."""
    trials = np.asarray(trials, dtype=float)
    if p <= 0.0:
        return np.zeros_like(trials), np.zeros_like(trials)
    if p >= 1.0:
        return trials.copy(), trials.copy()
    lo = np.nan_to_num(binom.ppf(tail, trials, p), nan=0.0)
    hi = trials - np.nan_to_num(binom.ppf(tail, trials, 1.0 - p), nan=0.0)
    lo = np.clip(lo, 0.0, trials)
    return lo, np.clip(np.maximum(hi, lo), 0.0, trials)


def interval_mass(lo, hi, trials, p: float) -> np.ndarray:
    """P[lo <= Bin(trials, p) <= hi] (0 when lo > hi), from the cdf below the mean and the sf
    above it (no cancellation of numbers near 1)."""
    lo, hi, trials = np.broadcast_arrays(*(np.asarray(v, dtype=float) for v in (lo, hi, trials)))
    if p <= 0.0:
        return ((lo <= 0) & (0 <= hi)).astype(float)
    if p >= 1.0:
        return ((lo <= trials) & (trials <= hi)).astype(float)
    upper_half = lo > trials * p
    mass = np.zeros(lo.shape)
    live = lo <= hi
    down, up = live & ~upper_half, live & upper_half     # each entry: only its own branch
    if down.any():
        mass[down] = (binom.cdf(hi[down], trials[down], p)
                      - binom.cdf(lo[down] - 1, trials[down], p))
    if up.any():
        mass[up] = binom.sf(lo[up] - 1, trials[up], p) - binom.sf(hi[up], trials[up], p)
    return np.clip(mass, 0.0, 1.0)


def row_interval_masses(lo: np.ndarray, hi: np.ndarray, trials: np.ndarray,
                        p: float) -> np.ndarray:
    """:func:`interval_mass` of rows of intervals (2-D arrays, each row's non-empty intervals
    in increasing order), with the same values: an end shared by two neighbours (hi of one
    is lo - 1 of the next, both on the same side of the mean) is evaluated once, so the
    binomial tails are computed about once per interval instead of twice (issue 32: the
    neutral bins of every k-RR round PLD)."""
    lo, hi, trials = np.broadcast_arrays(*(np.asarray(v, dtype=float) for v in (lo, hi, trials)))
    if p <= 0.0 or p >= 1.0 or lo.ndim != 2 or lo.shape[1] < 2:
        return interval_mass(lo, hi, trials, p)
    live = lo <= hi
    up = live & (lo > trials * p)
    down = live & ~(lo > trials * p)
    joined = np.zeros(lo.shape, dtype=bool)         # interval b starts where b - 1 ends
    joined[:, 1:] = (lo[:, 1:] - 1 == hi[:, :-1]) & live[:, 1:] & live[:, :-1]
    mass = np.zeros(lo.shape)
    if down.any():                                  # cdf(hi) - cdf(lo - 1)
        at_hi = np.zeros(lo.shape)
        at_hi[down] = binom.cdf(hi[down], trials[down], p)
        at_lo = np.zeros(lo.shape)
        shared = np.zeros(lo.shape, dtype=bool)
        shared[:, 1:] = joined[:, 1:] & down[:, 1:] & down[:, :-1]
        at_lo[:, 1:][shared[:, 1:]] = at_hi[:, :-1][shared[:, 1:]]
        rest = down & ~shared
        at_lo[rest] = binom.cdf(lo[rest] - 1, trials[rest], p)
        mass[down] = at_hi[down] - at_lo[down]
    if up.any():                                    # sf(lo - 1) - sf(hi)
        at_lo = np.zeros(lo.shape)
        at_lo[up] = binom.sf(lo[up] - 1, trials[up], p)
        at_hi = np.zeros(lo.shape)
        shared = np.zeros(lo.shape, dtype=bool)
        shared[:, :-1] = joined[:, 1:] & up[:, 1:] & up[:, :-1]
        at_hi[:, :-1][shared[:, :-1]] = at_lo[:, 1:][shared[:, :-1]]
        rest = up & ~shared
        at_hi[rest] = binom.sf(hi[rest], trials[rest], p)
        mass[up] = at_lo[up] - at_hi[up]
    return np.clip(mass, 0.0, 1.0)


#: Multiply-adds of a matrix product below which OpenBLAS computes it on one thread (its
#: GEMM threshold, 4 x 65536).
ONE_THREAD_PRODUCT = 1 << 18


def small_product(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a @ b in row blocks of at most ONE_THREAD_PRODUCT multiply-adds (issue 32). The block
    pairs' products are small (3311 x 79 by 79 x 11 for the 10-RR blanket pair at n = 1e6).
    OpenBLAS's two default threads mostly wait for each other on them: 18.8 ms instead of
    0.75 ms at load 6. Commands run on one thread anyway (simulator/execution/blas.py), but
    the Python API does not. Below its threshold OpenBLAS uses one thread whatever its
    setting, so the result is the same in commands and in the API. The blocking rounds it
    differently from the plain product, by an ulp."""
    rows = max(1, ONE_THREAD_PRODUCT // max(1, a.shape[1] * b.shape[1]))
    if a.shape[0] <= rows:
        return a @ b
    out = np.empty((a.shape[0], b.shape[1]))
    for first in range(0, a.shape[0], rows):
        np.matmul(a[first:first + rows], b, out=out[first:first + rows])
    return out


@dataclass(frozen=True)
class NeutralBins:
    """Bins of h3 | N (N = remaining draws) for N in [n_min, n_min + rows): ends (lo, hi),
    P[bin], E[h3; bin]; two tail bins and equal-width inner bins cover {0..N}."""

    n_min: int
    lo: np.ndarray     # (rows, bins)
    hi: np.ndarray
    mass: np.ndarray
    mean: np.ndarray


def _typical_b(model: CountModel, n: int) -> float:
    """n E[B / n]: the typical denominator (n for a valid 000 decomposition)."""
    return n * (sum(w * b for w, b in zip(model.w, model.b, strict=True))
                + model.r * model.w_neutral)


#: neutral_bins computes the windows of every WINDOW_EVERY-th row (issue 32: two Boost ppf
#: per row were a fifth of its time at n = 1e5, a third at n = 1e6).
WINDOW_EVERY = 8


def _sampled_window(N: np.ndarray, rho: float, tail: float) -> tuple[np.ndarray, np.ndarray]:
    """A window [lo, hi] of Bin(N, rho) for each N of the increasing run N (N_min + i),
    holding :func:`window`'s: that of every WINDOW_EVERY-th row, lo from the row at or
    below and hi from the row at or above (both ends are non-decreasing in N). Any window
    is valid for neutral_bins, whose tail bins take the rest exactly; this one is at most
    WINDOW_EVERY rows' drift wider."""
    picks = np.unique(np.append(np.arange(0, N.size, WINDOW_EVERY), N.size - 1))
    lo_s, hi_s = window(N[picks], rho, tail)
    below = np.searchsorted(picks, np.arange(N.size), side="right") - 1
    above = np.minimum(below + (picks[below] != np.arange(N.size)), picks.size - 1)
    return lo_s[below], np.minimum(hi_s[above], N)


def neutral_bins(model: CountModel, n: int, n_min: int, n_max: int, tail: float,
                 rtol: float) -> NeutralBins:
    """Bins of the neutral count for every number of remaining draws in [n_min, n_max]; the
    inner bin width changes B by at most ``rtol`` times its typical value."""
    N = np.arange(n_min, n_max + 1, dtype=float)
    wsum = model.w_neutral + model.w_null
    rho = 0.0 if model.w_neutral <= 0 or wsum <= 0 else min(1.0, model.w_neutral / wsum)
    if rho in (0.0, 1.0) or model.r == 0.0:
        value = (N * rho)[:, None]
        return NeutralBins(n_min, value, value, np.ones_like(value), value.copy())
    lo, hi = _sampled_window(N, rho, tail)
    width = max(1.0, math.floor(rtol * _typical_b(model, n) / model.r))
    inner = max(1, int(math.ceil(float((hi - lo + 1).max()) / width)))
    width = np.ceil((hi - lo + 1) / inner)
    starts = lo[:, None] + width[:, None] * np.arange(inner)[None, :]
    ends = np.minimum(starts + width[:, None] - 1, hi[:, None])
    blo = np.concatenate([np.zeros((N.size, 1)), starts, hi[:, None] + 1], axis=1)
    bhi = np.concatenate([lo[:, None] - 1, ends, N[:, None]], axis=1)
    NN = np.broadcast_to(N[:, None], blo.shape)
    mass = run_interval_masses(blo, bhi, N, rho)      # consecutive N (run_masses.py)
    # E[h3; lo <= h3 <= hi] = N rho P[lo - 1 <= Bin(N - 1, rho) <= hi - 1], and from
    # F_N(k) = F_{N-1}(k - 1) + (1 - rho) f(k) (f the pmf of Bin(N - 1, rho)) that probability
    # is mass - (1 - rho) (f(hi) - f(lo - 1)): two pmfs, about 20x cheaper than the two cdfs
    # of another row_interval_masses (issue 32; no cancellation: on a tail bin the pmf term
    # is a small share of the mass; the bin {0}, whose mean is 0, is set to 0)
    ends = np.concatenate([blo - 1, bhi], axis=1)          # each shared end once
    keep, which = distinct_columns(ends)
    at = binom.pmf(ends[:, keep], np.maximum(N - 1, 0)[:, None], rho)[:, which]
    inside = mass - (1.0 - rho) * (at[:, blo.shape[1]:] - at[:, :blo.shape[1]])
    mean = NN * rho * np.where(bhi <= 0, 0.0, np.clip(inside, 0.0, 1.0))
    empty = blo > bhi
    return NeutralBins(n_min, np.where(empty, 0.0, blo), np.where(empty, 0.0, bhi),
                       np.where(empty, 0.0, mass), np.where(empty, 0.0, mean))


def _forward_loss(g_d, den):
    """ln(1 + g D / B) where B > 0, else 0 (B = 0 only at h1 = h2 = h3 = 0, where D = 0)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(den > 0, np.log1p(g_d / np.where(den > 0, den, 1.0)), 0.0)


def is_symmetric(model: CountModel) -> bool:
    if len(model.w) != 2:
        return False
    (a1, a2), (b1, b2), (w1, w2) = model.a, model.b, model.w
    close = lambda x, y: abs(x - y) <= 1e-12 * max(abs(x), abs(y))  # noqa: E731
    return close(w1, w2) and close(a1 - b1, b2 - a2)


def _half_binomial_pmf(S: np.ndarray, t: np.ndarray) -> np.ndarray:
    """P[Bin(S, 1/2) = c + t], c = floor(S / 2), for offsets t (rows) and S (columns):
    :func:`binomial_pmf_around` with p = 1/2."""
    return binomial_pmf_around(S, 0.5, np.floor(S / 2.0), t)


def binomial_pmf_around(S: np.ndarray, p: float, c: np.ndarray, t: np.ndarray) -> np.ndarray:
    """P[Bin(S, p) = c + t] for offsets t (rows, sorted, holding 0) and columns (S, c),
    0 <= c <= S (c near the mode): the pmf at c from Boost (scipy.stats.binom.pmf), the rest by
    cumulative products of the ratios (S - h) / (h + 1) p / (1 - p) upwards and
    h / (S - h + 1) (1 - p) / p downwards. Each factor is within an ulp or two, so the relative
    error after k steps is about 2k ulp (measured: <= 3e-13 against Boost at k <= 250, S < 3000,
    where the former cumulative sum of log ratios, then exp, gave <= 8.5e-13): far inside
    pld.mass_relative_error. Exactly 0 off the support (a ratio there is clipped to 0, and every
    product after it is 0: the support is contiguous around c). One pass of elementwise work
    instead of a Boost call per entry, and no log or exp per entry (issue 32: 0.7x the time of
    the log-sum version on the block pairs at n = 1e5)."""
    S = np.asarray(S, dtype=float)
    c = np.asarray(c, dtype=float)
    at_c = binom.pmf(c, S, p)
    odds = p / (1.0 - p)
    out = np.empty((t.size, S.size))
    zero = int(np.searchsorted(t, 0))
    out[zero] = at_c
    up = t[zero:]
    if up.size > 1:                      # rows zero + 1 ..: ratios, then their running product
        i = up[:-1, None]
        steps = out[zero + 1:]
        np.subtract(S - c, i, out=steps)
        np.maximum(steps, 0.0, out=steps)
        np.divide(steps, c + i + 1.0, out=steps)
        if odds != 1.0:
            np.multiply(steps, odds, out=steps)
        np.multiply(steps[0], at_c, out=steps[0])
        np.cumprod(steps, axis=0, out=steps)
    down = -t[:zero][::-1]               # 1, 2, ...: rows zero - 1, zero - 2, ..
    if down.size:
        i = down[:, None]
        steps = out[:zero][::-1]
        np.subtract(c + 1.0, i, out=steps)
        np.maximum(steps, 0.0, out=steps)
        np.divide(steps, S - c + i, out=steps)
        if odds != 1.0:
            np.divide(steps, odds, out=steps)
        np.multiply(steps[0], at_c, out=steps[0])
        np.cumprod(steps, axis=0, out=steps)
    return out


def symmetric_aggregates(model: CountModel, n: int, *, tail: float = DEFAULT_TAIL,
                         weak_rtol: float = DEFAULT_WEAK_RTOL) -> Aggregates:
    """Aggregates of a symmetric pair (module docstring): D exact, (S, h3) in bins."""
    parts, outside, outcomes = _symmetric_parts(model, n, tail=tail, weak_rtol=weak_rtol)
    return _collect(list(parts), model, outside, outcomes)


def _symmetric_parts(model: CountModel, n: int, *, tail: float,
                     weak_rtol: float) -> tuple[Iterator[tuple], float, int]:
    """(parts, M-mass outside the region, outcomes) of :func:`symmetric_aggregates`: the parts
    (p0, p1, ell, lo, hi) are computed as they are iterated (ell not yet clipped)."""
    w = model.w[0]
    sbar = 0.5 * (model.b[0] + model.b[1])
    s_lo, s_hi = (int(v[0]) for v in window(np.array([n]), min(1.0, 2 * w), tail))
    tail_s = float(interval_mass(0, s_lo - 1, n, 2 * w) + interval_mass(s_hi + 1, n, n, 2 * w))
    S_all = np.arange(s_lo, s_hi + 1, dtype=float)
    h_lo, h_hi = window(S_all, 0.5, tail)
    c_all = np.floor(S_all / 2.0)
    t_min, t_max = int((h_lo - c_all).min()), int((h_hi - c_all).max())
    tail_h = float(np.max(interval_mass(0, h_lo - 1, S_all, 0.5)
                          + interval_mass(h_hi + 1, S_all, S_all, 0.5)))
    t = np.arange(t_min, t_max + 1, dtype=float)
    bins = neutral_bins(model, n, n - s_hi, n - s_lo, tail, weak_rtol)
    p_s = binom.pmf(S_all, n, min(1.0, 2 * w))
    step = max(1, int(math.floor(weak_rtol * _typical_b(model, n) / max(sbar, 1e-300))))
    cols = max(1, _CHUNK // t.size)
    outside = tail_s + tail_h
    return _symmetric_loop(model, n, S_all, t, bins, p_s, step, cols), outside, \
        int(S_all.size * t.size)


def _symmetric_loop(model: CountModel, n: int, S_all, t, bins: NeutralBins, p_s, step: int,
                    cols: int) -> Iterator[tuple]:
    """The parts of :func:`_symmetric_parts`, one (S-block, parity) at a time."""
    (a1, _), (b1, b2) = model.a, model.b
    g = a1 - b1
    sbar, beta, r = 0.5 * (b1 + b2), 0.5 * (b1 - b2), model.r
    for first in range(0, S_all.size, step):
        block = np.arange(first, min(first + step, S_all.size))
        for parity in (0, 1):
            sel = block[(S_all[block] % 2) == parity]
            if sel.size == 0:
                continue
            k = bins.mass.shape[1]
            y_p = np.zeros((t.size, k))
            y_sp = np.zeros((t.size, k))
            y_m = np.zeros((t.size, k))
            for c0 in range(0, sel.size, cols):
                cs = sel[c0:c0 + cols]
                S = S_all[cs]
                X = _half_binomial_pmf(S, t) * p_s[cs][None, :]
                rows = (n - S).astype(np.int64) - bins.n_min
                pk, mk = bins.mass[rows], bins.mean[rows]
                y_p += small_product(X, pk)
                y_sp += small_product(X, S[:, None] * pk)
                y_m += small_product(X, mk)
            S = S_all[sel]
            rows = (n - S).astype(np.int64) - bins.n_min
            h3_lo = bins.lo[rows].min(axis=0)[None, :]
            h3_hi = bins.hi[rows].max(axis=0)[None, :]
            D = (2.0 * t - parity)[:, None]
            p1 = (sbar * y_sp + beta * D * y_p + r * y_m) / n
            gdy = g * D * y_p / n
            p0 = p1 + gdy
            with np.errstate(divide="ignore", invalid="ignore"):
                ell = np.where(p1 > 0, np.log1p(gdy / np.where(p1 > 0, p1, 1.0)), 0.0)
            s_min = np.maximum(S.min(), np.abs(D))
            den_min = sbar * s_min + beta * D + r * h3_lo
            den_max = sbar * S.max() + beta * D + r * h3_hi
            l1, l2 = _forward_loss(g * D, den_min), _forward_loss(g * D, den_max)
            l1, l2 = np.broadcast_arrays(l1, l2)
            keep = (p0 > 0) | (p1 > 0)
            yield (p0[keep], p1[keep], ell[keep], np.minimum(l1, l2)[keep],
                   np.maximum(l1, l2)[keep])


def cell_aggregates(model: CountModel, n: int, *, tail: float = DEFAULT_TAIL,
                    weak_rtol: float = DEFAULT_WEAK_RTOL) -> Aggregates:
    """Aggregates with (h1, h2) exact and h3 in bins (any CountModel)."""
    w1 = model.w[0]
    w2 = model.w[1] if len(model.w) > 1 else 0.0
    a1, b1 = model.a[0], model.b[0]
    a2, b2 = (model.a[1], model.b[1]) if len(model.a) > 1 else (0.0, 0.0)
    p2 = min(1.0, w2 / (1.0 - w1)) if (w2 > 0 and w1 < 1) else 0.0
    lo1, hi1 = (int(v[0]) for v in window(np.array([n]), w1, tail))
    h1 = np.arange(lo1, hi1 + 1, dtype=float)
    lo2, hi2 = window(n - h1, p2, tail)
    tail1 = float(interval_mass(0, lo1 - 1, n, w1) + interval_mass(hi1 + 1, n, n, w1))
    tail2 = float(np.max(interval_mass(0, lo2 - 1, n - h1, p2)
                         + interval_mass(hi2 + 1, n - h1, n - h1, p2)))
    width = int((hi2 - lo2).max()) + 1
    bins = neutral_bins(model, n, max(0, int(np.min(n - h1 - hi2))), int(np.max(n - h1 - lo2)),
                        tail, weak_rtol)
    pmf1 = binom.pmf(h1, n, w1)
    rows = max(1, _CHUNK // (width * bins.mass.shape[1]))
    offsets = np.arange(width, dtype=float)
    r = model.r
    parts = []
    count = 0
    for start in range(0, h1.size, rows):
        sl = slice(start, start + rows)
        H2 = lo2[sl][:, None] + offsets[None, :]
        valid = H2 <= hi2[sl][:, None]
        H1 = np.broadcast_to(h1[sl][:, None], valid.shape)[valid]
        P1m = np.broadcast_to(pmf1[sl][:, None], valid.shape)[valid]
        H2 = H2[valid]
        pm = P1m if p2 in (0.0, 1.0) else P1m * binom.pmf(H2, n - H1, p2)
        idx = (n - H1 - H2).astype(np.int64) - bins.n_min
        e_lo, e_hi, bm, bmean = bins.lo[idx], bins.hi[idx], bins.mass[idx], bins.mean[idx]
        b_i = (b1 * H1 + b2 * H2)[:, None]
        diff = ((a1 - b1) * H1 + (a2 - b2) * H2)[:, None]
        q = pm[:, None] * (b_i * bm + r * bmean) / n
        gd = pm[:, None] * diff * bm / n
        p0 = q + gd
        with np.errstate(divide="ignore", invalid="ignore"):
            ell = np.where(q > 0, np.log1p(gd / np.where(q > 0, q, 1.0)), 0.0)
        l1 = _forward_loss(diff, b_i + r * e_lo)
        l2 = _forward_loss(diff, b_i + r * e_hi)
        keep = (p0 > 0) | (q > 0)
        count += keep.size
        parts.append((p0[keep], q[keep], ell[keep], np.minimum(l1, l2)[keep],
                      np.maximum(l1, l2)[keep]))
    return _collect(parts, model, tail1 + tail2, count)


def _collect(parts, model: CountModel, outside: float, outcomes: int) -> Aggregates:
    arrays = [np.concatenate([p[i] for p in parts]) if parts else np.zeros(0) for i in range(5)]
    p0, p1, ell, lo, hi = arrays
    ell = np.clip(ell, lo, hi)
    return Aggregates(p0, p1, ell, lo, hi, max(model.a) * outside, max(model.b) * outside,
                      outcomes, min(1.0, float(outside)))


@dataclass(frozen=True)
class AggregateStream:
    """The aggregates of :func:`aggregates`, as parts computed while ``parts`` is iterated
    (once): a consumer that only sums over them (rdp.py's Renyi moments) holds one part at a
    time instead of all of them (issue 32: the k-RR blanket pair at n = 1000 with windows of
    tail 1e-60 has 32 million aggregates, 6 GB as arrays). Each part is (p0, p1, ell, lo, hi)
    with ell clipped into [lo, hi]; the other fields as in :class:`Aggregates`."""

    parts: Iterator[tuple]
    outside0: float
    outside1: float
    outcomes: int
    outside_mass: float
    shrink: float = 1.0


def _clipped(parts: Iterator[tuple]) -> Iterator[tuple]:
    for p0, p1, ell, lo, hi in parts:
        yield p0, p1, np.clip(ell, lo, hi), lo, hi


def aggregate_stream(model: CountModel, n: int, *, tail: float = DEFAULT_TAIL,
                     weak_rtol: float = DEFAULT_WEAK_RTOL) -> AggregateStream:
    """:func:`aggregates` as an :class:`AggregateStream` (the same outcomes and bounds; pairs
    that are not symmetric come as one part)."""
    if not is_symmetric(model):
        agg = aggregates(model, int(n), tail=tail, weak_rtol=weak_rtol)
        return AggregateStream(iter([(agg.p0, agg.p1, agg.ell, agg.lo, agg.hi)]), agg.outside0,
                               agg.outside1, agg.outcomes, agg.outside_mass)
    parts, outside, outcomes = _symmetric_parts(model, int(n), tail=tail, weak_rtol=weak_rtol)
    return AggregateStream(_clipped(parts), max(model.a) * outside, max(model.b) * outside,
                           outcomes, min(1.0, float(outside)))


def aggregates(model: CountModel, n: int, *, tail: float = DEFAULT_TAIL,
               weak_rtol: float = DEFAULT_WEAK_RTOL) -> Aggregates:
    """The aggregates of ``model`` with n users (symmetric enumeration when it applies)."""
    fn = symmetric_aggregates if is_symmetric(model) else cell_aggregates
    return fn(model, int(n), tail=tail, weak_rtol=weak_rtol)


@functools.lru_cache(maxsize=2)
def cached_aggregates(model: CountModel, n: int, tail: float, weak_rtol: float) -> Aggregates:
    """:func:`aggregates`, cached per (model, n, tail, weak_rtol) (a pure function of them;
    the arrays are made read-only): the PLD of a round and its Renyi curve share one
    enumeration."""
    agg = aggregates(model, int(n), tail=float(tail), weak_rtol=float(weak_rtol))
    for array in (agg.p0, agg.p1, agg.ell, agg.lo, agg.hi):
        array.flags.writeable = False
    return agg
