"""The pieces of the pair enumerations (accounting/enumeration.py, whose module docstring gives
the notation; 000 Sec. 5 for the pairs, Koskela et al. 2020 for PLDs of aggregates): the
aggregate record (:class:`Aggregates`, :class:`AggregateStream`), binomial windows and the
exact masses of their intervals, the neutral group's bins (:func:`neutral_bins`), the symmetric
pairs' test (:func:`is_symmetric`) and the binomial pmf around a centre by running products.

The block enumerations (blocks.py, lower_blocks.py, neutral_blocks.py, m_bins.py) and Renyi
accounting (rdp.py) are built from these alone. Their own module (issue 32, session 16) so that
a composition that takes the block paths does not compile the pair's own enumerations
(symmetric_aggregates, cell_aggregates, their stream and cache), which stay in enumeration.py
and re-export these names.
"""

from __future__ import annotations

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


def bin_edges(N: np.ndarray, lo: np.ndarray, hi: np.ndarray,
              inner: int) -> tuple[np.ndarray, np.ndarray]:
    """The bins of :func:`neutral_bins` per row (Bin(N, rho) for each N, window [lo, hi]):
    the lower tail [0, lo - 1], ``inner`` bins of equal width ceil((hi - lo + 1) / inner)
    from lo (the last cut at hi, some empty where the window is narrow), and the upper tail
    [hi + 1, N]; returned as the arrays of first and last points (rows x (inner + 2))."""
    width = np.ceil((hi - lo + 1) / inner)
    starts = lo[:, None] + width[:, None] * np.arange(inner)[None, :]
    ends = np.minimum(starts + width[:, None] - 1, hi[:, None])
    blo = np.concatenate([np.zeros((N.size, 1)), starts, hi[:, None] + 1], axis=1)
    bhi = np.concatenate([lo[:, None] - 1, ends, N[:, None]], axis=1)
    return blo, bhi


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
    blo, bhi = bin_edges(N, lo, hi, inner)
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
