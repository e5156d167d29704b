"""Exact summation for one group whose pool is a binomial, by bands: the conditioning method's
decomposition (protocols.bounds.engine.conditioning, 000 Thm 12-14) without its Jensen / kink
bracket, at a cost that does not grow with the product of two windows.

Setting: one group of n users, categories c_k with probabilities w_k, S = sum_k c_k N_k. With the
pair (a, b) of conditioning.choose_roles, T = N_a + N_b ~ Bin(n, w_a + w_b) and, given T = t,
B = N_a ~ Bin(t, rho), rho = w_a / (w_a + w_b), and the other m = n - t users fall in the pool.
When the pool is empty, one category, or two categories j and o (k-RR's blanket and 000 Thm 14's
exact atoms, once a zero atom of mass ~2e-16 left by rounding is folded in, :func:`reduced`),

    S = alpha_t + d B + e X,   alpha_t = c_b t + c_o m,  d = c_a - c_b > 0,  e = c_j - c_o,

with X ~ Bin(m, q), q = w_j / (w_j + w_o), independent of B given t (X = 0 without a second
pool category). If e > 0, X is replaced by m - X ~ Bin(m, 1 - q), so that e <= 0 below.

For each t, f(t) = E[(alpha + d B + e X)_+] over the windows of B and X (Bernstein widths
leaving at most TAIL of mass outside on each side, which is bounded, not dropped). For B = k,
let x*(k) = floor((alpha + d k) / |e|), the largest x with alpha + d k + e x >= 0. Then, exactly,

    G(k) = E[(alpha + d k + e X)_+ ; X in window]
         = (alpha + d k + e x^) CX(x^) + |e| CCX(x^ - 1),   x^ = min(x*, x_hi)  (0 if x* < x_lo),

with CX(x) = P[x_lo <= X <= x] and CCX(y) = sum_{x_lo <= x <= y} CX(x): every term is >= 0, so
nothing cancels. Only the k whose x*(k) falls inside the window of X (a band of about
|e| width(X) / d + 2 values of k) need a table look-up each; above the band x^ = x_hi and the
sum over k is closed form with the suffix sums SB(k) = P[k <= B <= b_hi] and
SSB(k) = sum_{j >= k} SB(j):

    sum_{k >= k1} P[B = k] G(k) = P_X [(alpha + d k1 + e x_hi) SB(k1) + d SSB(k1 + 1)]
                                  + |e| CCX(x_hi - 1) SB(k1).

The tables (pmf of B, SB, SSB, CX, CCX per t) do not depend on eps: they are built once per
(n, w_pair, rho, q) and cached (:func:`band_plan`), so an eps search pays for them once and
then ~(rows x band) look-ups per evaluation. Both are built by the one-user recurrence
(engine/band_recurrence.py). B's window may start below the band (:func:`band_cut`) and end
above it (:func:`band_top`; SB and SSB there count all the mass above, so SB(k) is then
P[B >= k] up to the chains' missing mass): levels in standard deviations, reused by the
search's later evaluations while they cover them.

Error bound (every term is bracketed, the bracket is returned):

* tables: pmfs anchored at the row's mode (scipy, REL_SPECIAL) times exp of cumulative log
  ratios (their error bound, :func:`window_pmf`); sums and nested sums of non-negative terms
  add (length) u and 2 (length) u relative. Every term of f is a product of one B entry, one X
  entry and a coefficient, so its relative error is at most eb + ex + eb ex + (ops) u;
* values: the computed alpha + d k + e x is within ve = 8u (|c_b| t + |c_o| m + d (t + 1) +
  |e| (m + 1)) of the exact one; f is 1-Lipschitz in a shift with slope P[S > -ve | t], and a
  misplaced x* or k_hi moves a term of size at most ve. Hence 2 ve times a bound on that slope
  (P[computed value > -3 ve] over the band, which starts one below its first k, with the B pmf,
  plus P[B >= k_hi]: a k_hi off by one by rounding moves a term of size ve P[B = k_hi]);
* mass outside the windows of B and X: at most its probability times max S_+ = (alpha + d t)_+,
  added to the upper side only; T outside its window (plans.t_plan): pos_max n times its mass.

The result's relative width is ~4 REL_SPECIAL: the eps search then stops on its own tolerance.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

import numpy as np

from shufflesim.protocols.bounds.engine.band_levels import (  # noqa: F401 - exact_band.*
    CUT_FLOOR,
    TOP_CEILING,
    TOP_MIN_CELLS,
    _cuts,
    _tops,
    band_cut,
    band_top,
)
from shufflesim.protocols.bounds.engine.band_recurrence import _x_recurrence, suffix_chains
from shufflesim.protocols.bounds.engine.band_shape import (  # noqa: F401 - exact_band.*
    MAX_CELLS,
    TINY_MASS,
    _cells,
    _Shape,
    _shape,
    applicable,
    reduced,
)
from shufflesim.protocols.bounds.engine.band_sharing import (  # noqa: F401 - read as exact_band.*
    SHARE_ULPS,
    _seen_parameters,
    _shared_parameters,
)
from shufflesim.protocols.bounds.engine.band_sums import (
    TRIM_TAIL,
    RowSetup,
    _flat,
    _trim_tops,
    band_sums,
    row_setup,
)
from shufflesim.protocols.bounds.engine.binomial_window import (  # noqa: F401 - exact_band.*
    CHUNK_ROWS,
    TAIL,
    _half_width,
    _outside,
    _window,
    window_pmf,
)
from shufflesim.protocols.bounds.engine.common import REL_SPECIAL, REL_SUM, TINY, Categories, U
from shufflesim.protocols.bounds.engine.conditioning import choose_roles
from shufflesim.protocols.bounds.engine.plans import t_plan
from shufflesim.protocols.bounds.engine.table_cache import TABLE_BYTES, bounded_cache
from shufflesim.protocols.distributions import binom
from shufflesim.protocols.lazy import lazy_module

#: the helper thread's executor (:func:`_helper`), imported when a first table pair is built
#: at once: a pool of one category (2-RR, binary RR) never starts it (concurrent.futures
#: imports logging and string, about 3 ms; issue 32)
futures = lazy_module("concurrent.futures")

__all__ = ["applicable", "band_bounds", "band_plan", "reduced"]

# ---------------------------------------------------------------------------------------------
# tables (eps-independent, cached)
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class BandPlan:
    """Per row t of the window of T: the B and X tables of the module docstring."""

    t: np.ndarray            # (rows,)
    pt: np.ndarray           # P[T = t]
    t_tail: float            # upper bound on P[T outside the window]
    b_lo: np.ndarray         # (rows,) first k of B's window
    pb: np.ndarray           # (rows, b_w) P[B = k]
    sb: np.ndarray           # (rows, b_w + 1) SB: sb[i] = sum_{i' >= i} pb[i']
    ssb: np.ndarray          # (rows, b_w + 2) SSB: ssb[i] = sum_{j >= i} sb[j]
    b_out: np.ndarray        # (rows,) P[B outside its window] (upper bound)
    x_lo: np.ndarray         # (rows,) first x of X's window
    cx: np.ndarray           # (rows, x_w + 1) cx[i] = P[x_lo <= X <= x_lo + i - 1]
    ccx: np.ndarray          # (rows, x_w + 1) ccx[i] = sum_{i' < i} cx[i' + 1]
    x_out: np.ndarray        # (rows,) P[X outside its window] (upper bound)
    rel: float               # relative error of (B entry) x (X entry)
    x_rows: np.ndarray       # (rows,) row of cx and ccx holding each row's X tables
    b_below: np.ndarray      # (rows,) P[B below b_lo] (an upper bound; 0 if none)

    @property
    def b_w(self) -> int:
        return self.pb.shape[1]

    @property
    def x_w(self) -> int:
        return self.cx.shape[1] - 1


_helpers: dict[int, futures.ThreadPoolExecutor] = {}


def _helper() -> futures.ThreadPoolExecutor:
    """One helper thread per process for :func:`band_plan`, started on first use. Keyed by
    process id: a child forked by a process pool has no copy of the parent's thread, and the
    parent's executor would take its work and never run it."""
    pid = os.getpid()
    if pid not in _helpers:
        _helpers.clear()
        _helpers[pid] = futures.ThreadPoolExecutor(max_workers=1,
                                                   thread_name_prefix="shufflesim-band")
    return _helpers[pid]


@bounded_cache(4, TABLE_BYTES)
def _b_tables(n: int, w_pair: float, rho: float, z_cut: float | None = None,
              z_top: float | None = None):
    """B | t ~ Bin(t, rho) over the window of T: (b_lo, pmf, SB, SSB, outside mass, error,
    mass cut off below b_lo), by band_recurrence.suffix_chains on frames holding each row's
    window (Chernoff's, binomial_window._window). With ``z_cut``, a row's window starts at
    t rho + z_cut sd(t) instead (:func:`band_cut`): the columns below the band are never read,
    and the mass below the frame's start is returned (an upper bound) for row_bounds. With
    ``z_top``, it ends at t rho + z_top sd(t) (:func:`band_top`), and SB and SSB past its end
    count the mass above it (suffix_chains' ``whole``). Every row's mass below its frame is
    returned as the cut-off mass (row_bounds bounds its terms by the largest value below the
    frame), and the outside mass is the chains' missing mass: the rest of B's law is in the
    frame or counted by SB and SSB above it (suffix_chains)."""
    t = t_plan(n, w_pair).t
    if z_top is None:
        b_lo, b_w = _window(t, rho)
        b_hi = np.minimum(b_lo + b_w - 1, t)
    else:                            # (Bernstein's window: wider, and no Newton steps)
        mean, span = t * rho, _half_width(np.sqrt(t * rho * (1.0 - rho)))
        b_lo = np.maximum(np.floor(mean - span - 1.0), 0.0)
        b_hi = np.minimum(np.ceil(mean + span + 1.0), t)
    first = b_lo
    if z_cut is not None:
        cut = np.floor(t * rho + z_cut * np.sqrt(t * rho * (1.0 - rho)))
        first = np.minimum(np.maximum(cut, b_lo), b_hi)
    whole, top = None, b_hi
    if z_top is not None:
        top = np.floor(t * rho + z_top * np.sqrt(t * rho * (1.0 - rho)))
        top = np.maximum(np.minimum(top, b_hi), first)
        whole = b_hi
    frame, pb, sb, ssb, missing, err = suffix_chains(t, rho, first, top, whole)
    # every row's mass below its frame (cut or not), with its own bound in row_bounds
    below = np.zeros(t.size)
    some = frame > 0
    below[some] = binom.cdf(frame[some] - 1, t[some], rho) * (1 + REL_SPECIAL) + TINY
    return frame, pb, sb, ssb, missing, err, below


@bounded_cache(4, TABLE_BYTES)
def _x_tables(n: int, w_pair: float, q: float):
    """X | t ~ Bin(n - t, q) over the window of T: (x_lo, CX, CCX, outside mass, error);
    q = 1: no X (a single entry of mass 1 at x = 0); else :func:`_x_recurrence`, ending at the
    tops band_sums.row_setup trims the band's window of X to (its mass above them is bounded
    relative to each row, TRIM_TAIL): row_bounds sets every row up with trim=True."""
    m = n - t_plan(n, w_pair).t
    rows = m.size
    if q < 1.0:               # ending at row_setup's trimmed tops (row_bounds trims every row)
        m_min, m_max = float(m.min()), float(m.max())
        tops = _trim_tops(m_min, m_max, q, TRIM_TAIL)[(m - m_min).astype(np.intp)]
        return _x_recurrence(m, q, tops)
    cx = np.zeros((rows, 2))
    cx[:, 1] = 1.0
    ccx = np.zeros((rows, 2))
    ccx[:, 1] = 1.0
    return np.zeros(rows), cx, ccx, np.zeros(rows), 0.0, np.arange(rows)


#: keys of tables built in this process: a hint only (the caches above may have evicted them)
_built: set = set()


def band_plan(n: int, w_pair: float, rho: float, q: float,
              z_cut: float | None = None, z_top: float | None = None) -> BandPlan:
    """The eps-independent tables for one group (q = 1: no X); the B and X tables are cached
    separately (an eps search meets the same pair with and without a pool variable). When
    neither has been built, they are built at once, B on a helper thread (numpy and scipy
    release the GIL; a rebuild at n = 1e4 in a warm process: 32 -> 17 ms; a first build in a
    fresh process gains little, its page faults are shared): the same tables, hence numbers."""
    tp = t_plan(n, w_pair)
    b_key, x_key = (n, w_pair, rho, z_cut, z_top), (n, w_pair, q)
    pending = None
    if q < 1.0 and b_key not in _built and x_key not in _built:
        pending = _helper().submit(_b_tables, *b_key)
    x_lo, cx, ccx, x_out, ex, x_rows = _x_tables(*x_key)
    b_lo, pb, sb, ssb, b_out, eb, below = pending.result() if pending else _b_tables(*b_key)
    if len(_built) > 64:
        _built.clear()
    _built.update((b_key, x_key))
    return BandPlan(tp.t, tp.pt, tp.tail_p, b_lo, pb, sb, ssb, b_out, x_lo, cx, ccx, x_out,
                    eb + ex + eb * ex + 4 * U, x_rows, below)


# ---------------------------------------------------------------------------------------------
# evaluation
# ---------------------------------------------------------------------------------------------

def band_bounds(cat: Categories) -> tuple[float, float]:
    """Guaranteed (lower, upper) of E[S_+] for one group with a binomial pool (module
    docstring); ``applicable(cat)`` must hold."""
    cat, down, up = reduced(cat)
    sh = _shape(cat)
    n = cat.count
    w_pair, rho, q, shift = _shared_parameters(n, sh.w_pair, sh.rho, sh.q)
    plan = band_plan(n, w_pair, rho, q, band_cut(sh, n, w_pair, rho, q),
                     band_top(sh, n, w_pair, rho, q))
    t = plan.t
    rows = np.arange(t.size)
    f_lo, f_hi = row_bounds(sh, plan, t, n - t, rows, rows)
    lower = float((plan.pt * (1 - REL_SPECIAL)) @ f_lo)
    upper = float((plan.pt * (1 + REL_SPECIAL)) @ f_hi)
    upper += _t_tail_bound(cat, n, w_pair)
    lower = max(lower * (1 - REL_SUM - t.size * U) * math.exp(-shift) - down, 0.0)
    upper = upper * (1 + REL_SUM + t.size * U) * math.exp(shift) * (1 + 4 * U) + up + TINY
    return lower, upper


def row_bounds(sh: _Shape, plan: BandPlan, t: np.ndarray, m: np.ndarray, bi: np.ndarray,
               xi: np.ndarray, shift: np.ndarray | None = None,
               setup: RowSetup | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Per row (t pair users, m pool users; ``bi`` / ``xi`` its row in the plan's B / X
    tables): guaranteed (lower, upper) of f = E[(alpha + d B + e X)_+] (module docstring),
    the upper side with the mass of B and X outside their windows; ``shift`` (per row) is
    added to alpha (engine/zero_mixture.py: the value of the users counted by its rows);
    ``setup``: band_sums.row_setup of these rows (built here if not given)."""
    d, e, ae = sh.d, sh.e, abs(sh.e)
    if setup is None:
        setup = row_setup(plan, t, m, bi, xi, sh.q < 1.0, sh.q, True)
    alpha = sh.cb * t + sh.base * m
    size = abs(sh.cb) * t + abs(sh.base) * m
    if shift is not None:
        alpha = alpha + shift
        size = size + np.abs(shift)
    b_lo, b_hi, x_lo, x_hi, ix_hi, xt = (setup.b_lo, setup.b_hi, setup.x_lo, setup.x_hi,
                                         setup.ix_hi, setup.xt)
    with np.errstate(divide="ignore", invalid="ignore"):
        # k_hi: the smallest k with alpha + d k + e x_hi >= 0 (x*(k) >= x_hi from there on)
        k_hi = np.ceil(-(alpha + e * x_hi) / d)
        # the band starts one below the smallest k with alpha + d k + e x_lo > 0
        v_lo = -(alpha + e * x_lo) / d
        k_lo = np.floor(v_lo)
    # above the band: closed form with SB and SSB (flat look-ups: numpy's 2-D fancy indexing
    # and np.clip / np.where with array operands cost ~4 ns an element, issue 32)
    b_hi1 = b_hi + 1
    k1 = np.minimum(np.maximum(k_hi, b_lo), b_hi1)
    i1 = (k1 - b_lo).astype(np.int64)
    sb_f, sb_rs, _ = _flat(plan.sb)
    ssb_f, ssb_rs, _ = _flat(plan.ssb)
    sb1 = np.take(sb_f, i1 + bi * sb_rs)
    i1 += bi * ssb_rs + 1
    ssb1 = np.take(ssb_f, i1)
    coef = d * k1
    coef += alpha
    coef += e * x_hi
    np.maximum(coef, 0.0, out=coef)
    coef *= sb1
    ssb1 *= d
    coef += ssb1                        # sum_{k >= k1} P[B = k] (alpha + d k + e x_hi)_+
    f = setup.px_w * coef
    f += ae * setup.ccx_hi * sb1
    # where B's window ends below k_hi - 1 (band_top), the closed form from b_hi + 1 takes
    # x^ = x_hi for k < k_hi too: an upper bound only (each term (a + e x_hi)_+ CX(x_hi) +
    # |e| CCX(x_hi - 1) >= G(k)), so the lower end leaves it out
    short = k_hi > b_hi1
    if short.any():
        short &= sb1 > 0
    band_only = short.any()
    slope = sb1
    ve = d * (t + 1)
    ve += size
    ve += ae * (m + 1)
    ve *= 8 * U * (1 + 1e-6)
    # the slope argument needs the value error below one step of B and of X
    wide = 4 * ve >= min(d, ae if ae > 0 else math.inf)
    # the band: one look-up per k, from k_lo + 1 where the computed value at (k_lo, x_lo),
    # -d (v_lo - k_lo), is below -5 ve (exact: below -3.8 ve, v_lo's rounding being at most
    # ve / d + u v_lo <= 1.2 ve / d): every x of the window then gives k_lo a value < -3 ve,
    # so G(k_lo) = 0 and its slope term is 0; from k_lo elsewhere, and where 4 ve >= d
    v_lo -= k_lo
    v_lo *= d
    skip = v_lo > 5 * ve
    skip &= ~wide
    kb0 = k_lo + skip
    np.maximum(kb0, b_lo, out=kb0)
    kb1 = np.minimum(k_hi, b_hi1)
    width = int(np.max(kb1 - kb0, initial=0.0)) if e != 0.0 else 0
    df, ds = band_sums(plan, d, e, alpha, kb0, kb1, b_lo, x_lo, x_hi, ix_hi, bi, xt, ve, width)
    f += df
    f_low = np.where(short, df, f) if band_only else f
    slope += ds
    out = setup.out
    # k below a cut window (band_cut): no term of the band when its largest value is < -4 ve
    below = setup.below
    top_below = d * (b_lo - 1)
    top_below += alpha
    top_below += e * x_lo
    slope += below * (top_below > -4 * ve)
    slope += out
    slope += setup.tau                  # X above a trimmed window's top (row_setup)
    np.minimum(slope, 1.0, out=slope)
    if wide.any():
        slope[wide] = 1.0
    rel = plan.rel + (width + 41) * U        # + 1: band_sums' factor |e|
    err = 2 * ve
    err *= slope
    f_lo = f_low * (1 - rel)
    f_lo -= err
    np.maximum(f_lo, 0.0, out=f_lo)
    f_hi = f * (1 + rel)
    f_hi += err
    top = d * t
    top += alpha
    np.maximum(top, 0.0, out=top)
    top *= out
    f_hi += top
    top_below += 2 * ve
    np.maximum(top_below, 0.0, out=top_below)
    top_below *= below
    f_hi += top_below
    # a trimmed window's top (band_sums.row_setup): X above x_hi for k >= k1
    coef *= setup.tau
    coef *= 1 + rel
    f_hi += coef
    return f_lo, f_hi


def _t_tail_bound(cat: Categories, n: int, w_pair: float) -> float:
    """Upper bound on E[S_+ ; T outside its window] (plans.t_plan). S_+ <= c+ T + p+ (n - T)
    with c+ the largest positive value of the pair (a, b) and p+ that of the pool, so the term
    is at most c+ E[T ; out] + p+ n P[out]. (It was (largest value) n P[out]: at k-RR's
    blanket with eps0 = 14, k = 65536, n = 1e6 that is ~9e-17 on delta, 10 % of delta = 1e-15
    where E[T] ~ 1.6; issue 31.)"""
    roles = choose_roles(cat)
    tp = t_plan(n, w_pair)
    pair_pos = max(float(cat.c[roles.a]), float(cat.c[roles.b]), 0.0)
    pool = np.array(roles.pool, dtype=int)
    pool_pos = float(np.maximum(cat.c[pool], 0.0).max()) if pool.size else 0.0
    return (pair_pos * tp.tail_et + pool_pos * n * tp.tail_p) * (1 + 8 * U)
