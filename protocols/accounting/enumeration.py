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

import numpy as np

from shufflesim.protocols.accounting.aggregate_parts import (  # noqa: F401  (re-exported)
    DEFAULT_TAIL,
    DEFAULT_WEAK_RTOL,
    ONE_THREAD_PRODUCT,
    WINDOW_EVERY,
    Aggregates,
    AggregateStream,
    NeutralBins,
    _half_binomial_pmf,
    _sampled_window,
    _typical_b,
    binomial_pmf_around,
    interval_mass,
    is_symmetric,
    neutral_bins,
    small_product,
    window,
)
from shufflesim.protocols.accounting.pairs import CountModel
from shufflesim.protocols.distributions import binom

#: Entries of X computed at once.
_CHUNK = 1 << 21


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


def _forward_loss(g_d, den):
    """ln(1 + g D / B) where B > 0, else 0 (B = 0 only at h1 = h2 = h3 = 0, where D = 0)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(den > 0, np.log1p(g_d / np.where(den > 0, den, 1.0)), 0.0)


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
