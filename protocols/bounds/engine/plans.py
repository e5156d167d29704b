"""The eps-independent plans of the conditioning method (protocols.bounds.engine.conditioning),
cached with functools.lru_cache (clear :func:`t_plan` and :func:`multi_plan` to time a cold
start): the window of the count T of the main group and its probabilities, and the blocks of
the multi style.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from shufflesim.protocols.bounds.engine.common import (
    REL_SPECIAL,
    U,
    binom_interval,
)
from shufflesim.protocols.distributions import binom
from shufflesim.protocols.errors import ParameterError

T_TAIL = 1e-22        # mass of T left outside its window on each side (bounded, not dropped)
#: Largest standard deviation of T the window may cover: its ~20 sd of float64 arrays (several
#: per evaluation) must fit in memory (issue 26: n = 1e29 ran for minutes towards petabytes).
T_SD_MAX = 1e6
#: fewest rows of T's full window for which engine/t_window.py's narrower one is tried (here so
#: that a shorter window does not import t_window: issue 32)
T_WINDOW_MIN_ROWS = 20_000
K_MULTI_OUTER = 9.0   # multi style: blocks beyond this many sd get the monotone bound
K_MULTI_INNER = 5.0   # multi style: fine blocks span +-5 sd

# ---------------------------------------------------------------------------------------------
# eps-independent plans (cached)
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class TPlan:
    t: np.ndarray          # window of T values
    pt: np.ndarray         # P[T = t]
    tail_p: float          # upper bound on P[T outside window]
    tail_et: float         # upper bound on E[T 1{T outside window}]


@lru_cache(maxsize=32)
def t_plan(n: int, w_pair: float) -> TPlan:
    if w_pair >= 1.0:
        return TPlan(np.array([float(n)]), np.array([1.0]), 0.0, 0.0)
    sd = math.sqrt(n * w_pair * (1.0 - w_pair))
    if sd > T_SD_MAX:
        raise ParameterError("n", n, f"beyond the numerical engine's reach (its window over "
                             f"the pool count would hold about {20 * sd:.1g} values); use a "
                             "closed-form bound for this many users")
    lo = max(int(binom.ppf(T_TAIL, n, w_pair)), 0)
    # (binom.isf loses tiny upper tails to 1 - q rounding: use the complement count n - T.)
    hi = min(n - int(binom.ppf(T_TAIL, n, 1.0 - w_pair)), n)
    t = np.arange(lo, hi + 1, dtype=float)
    pt = binom.pmf(t, n, w_pair)
    p_lo = float(binom.cdf(lo - 1, n, w_pair)) if lo > 0 else 0.0
    p_hi = float(binom.sf(hi, n, w_pair)) if hi < n else 0.0
    nw = n * w_pair
    # E[T 1{T >= k}] = n w P[Bin(n-1, w) >= k-1].
    et_lo = nw * float(binom.cdf(lo - 2, n - 1, w_pair)) if lo > 1 else 0.0
    et_hi = nw * float(binom.sf(hi - 1, n - 1, w_pair)) if hi < n else 0.0
    rel = 1 + REL_SPECIAL + 8 * U
    return TPlan(t, pt, (p_lo + p_hi) * rel, (et_lo + et_hi) * rel)


@dataclass(frozen=True)
class MultiPlan:
    """X ~ Bin(m, q) cut into blocks [lo, hi] per t (axis 1)."""

    m: np.ndarray          # (n_t, 1)
    lo: np.ndarray         # (n_t, n_blk)
    hi: np.ndarray
    p: np.ndarray          # block probability (computed)
    p_err: np.ndarray
    mu: np.ndarray         # E[X | block], clipped to [lo, hi]
    mu_err: np.ndarray
    var_ub: np.ndarray     # upper bound on Var[X | block]
    crude: np.ndarray      # bool: outermost or unreliable blocks: monotone bound only


@lru_cache(maxsize=16)
def multi_plan(n: int, w_pair: float, q: float, n_blocks: int) -> MultiPlan:
    tp = t_plan(n, w_pair)
    m = (n - tp.t)[:, None]
    mean = m * q
    sd = np.sqrt(mean * (1 - q))
    outer_lo = np.clip(np.ceil(mean - K_MULTI_OUTER * sd), 0.0, m)
    outer_hi = np.clip(np.floor(mean + K_MULTI_OUTER * sd), outer_lo, m)
    inner = mean + sd * K_MULTI_INNER * np.linspace(-1.0, 1.0, n_blocks + 1)[None, :]
    # Block starts: 0, L = ceil(mean - 9 sd), ceil(inner_0), ..., ceil(inner_{B-1}),
    # floor(inner_B) + 1, U + 1 with U = floor(mean + 9 sd); blocks are [start_i, start_{i+1} - 1],
    # the last one ending at m; empty blocks (hi < lo) carry no mass. When [L, U] holds at most
    # B + 2 integers, the middle blocks are single integers instead.
    general = np.concatenate([
        np.zeros_like(mean), outer_lo, np.ceil(inner[:, :-1]), np.floor(inner[:, -1:]) + 1,
        outer_hi + 1], axis=1)
    unit = np.concatenate([
        np.zeros_like(mean), outer_lo + np.arange(n_blocks + 2)[None, :], outer_hi + 1], axis=1)
    unit = np.minimum(unit, outer_hi + 1)
    starts = np.where(outer_hi - outer_lo + 1 <= n_blocks + 2, unit, general)
    starts = np.maximum.accumulate(np.clip(starts, 0.0, m + 1), axis=1)
    lo = starts
    hi = np.concatenate([starts[:, 1:] - 1, m], axis=1)
    crude = np.zeros(lo.shape, dtype=bool)
    mb = np.broadcast_to(m, lo.shape)
    empty = hi < lo
    p, p_err = binom_interval(lo, hi, mb, q)
    mm1 = np.maximum(mb - 1, 0.0)
    pmf = binom.pmf
    var = mb * q * (1 - q)
    pa, pb = pmf(lo - 1, mm1, q), pmf(hi, mm1, q)
    # E[(X - mq) 1{lo <= X <= hi}] = mq(1-q) (P'[lo-1] - P'[hi]),  P' = pmf of Bin(m-1, q).
    g1 = var * (pa - pb)
    g1_err = var * (pa + pb) * (REL_SPECIAL + 8 * U)
    # E[(X - mq)^2 1{block}] = mq(1-q) [P'(lo <= X' <= hi) + (lo - mq) P'[lo-1] - (hi+1-mq) P'[hi]].
    p2, p2_err = binom_interval(lo, hi, mm1, q)
    terms = p2 + np.abs(lo - mean) * pa + np.abs(hi + 1 - mean) * pb
    g2 = var * (p2 + (lo - mean) * pa - (hi + 1 - mean) * pb)
    g2_err = var * (p2_err + (REL_SPECIAL + 8 * U) * terms)
    with np.errstate(divide="ignore", invalid="ignore"):
        p_low = p - p_err
        ok = (p_low > 0) & ~empty
        mu = np.where(ok, mean + g1 / p, 0.5 * (lo + hi))
        mu_err = np.where(ok, (g1_err + np.abs(g1) * p_err / p_low) / p_low
                          + 8 * U * (mean + np.abs(mu)), hi - lo)
        second = np.where(ok, (g2 + g2_err) / p_low, np.inf)
    # The mean lies in its block; so does its error. Var <= E(X - mq)^2 and Popoviciu's bound.
    mu = np.clip(mu, lo, np.maximum(hi, lo))
    mu_err = np.minimum(mu_err, np.maximum(hi - lo, 0.0))
    var_ub = np.minimum(0.25 * (hi - lo) ** 2, second)
    var_ub = np.where(empty, 0.0, np.maximum(var_ub, 0.0))
    crude[:, 0] = True               # the two outermost blocks: monotone bound
    crude[:, -1] = True
    crude = (crude | ~ok) & ~empty
    p = np.where(empty, 0.0, p)
    p_err = np.where(empty, 0.0, p_err)
    return MultiPlan(m, lo, hi, p, p_err, mu, mu_err, var_ub, crude)
