"""Exact band sum for one group whose categories are an exact zero plus a band shape: the
blanket GPARVs of two-level randomizers with four (a, b) levels (OUE, RAPPOR, Hadamard response,
subset selection, OLH, BLH: a, b in {1, e^eps0}, 000 Sec. 4-5 and Thm 13), whose five categories
(the zero atom included) are one more than engine/exact_band.py's pair and two-category pool.

Setting (000 Thm 12-14): n users, categories c_k with probabilities w_k, S = sum_k c_k N_k. One
category z has c_z = 0 exactly (the zero atom: a = b = 0, so the computed a - e^eps b is 0
too). The others, renormalized, have exact_band's shape: a pair (a, b) and a pool of two
categories. With T = N_a + N_b ~ Bin(n, w_a + w_b), the pool category r of the smaller
variance (the rarer one: the rows' count) has, given T = t, Y = N_r ~ Bin(n - t, s) with
s = w_r / (1 - w_a - w_b), and given (t, y) the other one, x, has X = N_x ~ Bin(m, q) among
the m = n - t - y users that are x or zero, q = w_x / (w_x + w_z), while B = N_a ~ Bin(t, rho)
as in exact_band; X and B are independent given (t, y). So, exactly,

    E[S_+] = sum_t P[T = t] sum_y P[Y = y | t] f(t, y),   f = E[(alpha + d B + e X)_+],

alpha = c_b t + c_r y, e = c_x (X -> m - X when c_x > 0, as in exact_band): exact_band's shape
with the zero atom as its second pool category (exact_band.row_bounds evaluates f, with its
error bound, c_r y added to its alpha). Its B tables (per t) are exact_band's own for
(n, w_a + w_b, rho); the X tables run over the consecutive m of every row; the tables of Y
given t are one more window_pmf. Each is eps-independent and cached
(table_cache.bounded_cache), so an eps search pays for them once and then ~(rows x band)
look-ups per evaluation, where a row is a pair (t, y). (Rows by the rarer category: at OUE
d = 4, eps0 = 1, n = 1389 the count of r varies with sd 6.5 where that of both pool
categories, the former rows, varies with sd 16.)

Error bound: every term P[T = t] P[M = m | t] (B entry) (X entry) coefficient has the
relative errors of its factors (REL_SPECIAL for P[T = t], the M table's window_pmf bound, the
band's own bound inside row_bounds); sums of non-negative terms add (length) u. Mass outside
the windows: T outside (plans.t_plan) adds c_a E[T; out] + p n P[out], Y outside its window
for a row adds P[T = t] P[Y out | t] (c_a t + p (n - t)), with p = max(c_r, c_x, 0): S_+ is at
most c_a T + p (n - T) (c_b < 0, zero users add 0). Both go to the upper side only, as do the
Chernoff bounds of the rows left out by :func:`_prune` (whose lower side is 0).

Cost: rows = (window of T) x (window of Y), ~ 4e4 at n = 1e3 (about 40 % kept after
:func:`_prune`), times the band (~5-20): applied up to MAX_USERS users and MAX_ROWS rows
(issue 32: these randomizers took 1-11 s per optimal-blanket at n = 1e2-1e3 on the FFT path,
~0.2 s an evaluation; now 0.02-0.5 s per bound).
"""

from __future__ import annotations

import math

import numpy as np

from shufflesim.protocols.bounds.engine import exact_band
from shufflesim.protocols.bounds.engine.band_sums import row_setup
from shufflesim.protocols.bounds.engine.common import (
    REL_SPECIAL,
    REL_SUM,
    TINY,
    Categories,
    U,
    log_sum_exp,
)
from shufflesim.protocols.bounds.engine.mixture_shape import (  # noqa: F401 - zero_mixture.*
    LARGE_ROWS,
    MAX_ROWS,
    MAX_USERS,
    WIDE_ROWS,
    WIDE_USERS,
    _analyse,
    _Mixture,
    _mixture,
    _sizes,
    applicable,
)
from shufflesim.protocols.bounds.engine.plans import t_plan
from shufflesim.protocols.bounds.engine.table_cache import TABLE_BYTES, bounded_cache

__all__ = ["applicable", "mixture_bounds"]

#: share of Chernoff's bound that the rows left out may carry (:func:`_prune`). Issue 32
#: (session 16): 1e-9 instead of 1e-11 keeps 14 % fewer rows (OUE d = 4, eps0 = 0.5,
#: n = 1389: 37 846 -> 32 411) and leaves out 7e-12 of E[S_+] instead of 7e-14 (at OUE and
#: HR d = 16, n = 1389, BLH d = 4, n = 720: Chernoff's bound is ~100x the value), far below
#: the bracket's own relative width (~8e-9: REL_SPECIAL on each side); eps moved by +1e-14.
PRUNE = 1e-9
#: rows evaluated at a time (:func:`mixture_bounds`): the per-row temporaries of
#: exact_band.row_bounds stay small enough (16 kB) for the allocator to reuse them. On whole
#: arrays of ~38 000 rows each temporary was a fresh mapping: ~1 700 page faults an
#: evaluation at RAPPOR d = 16, eps0 = 0.5, n = 1389, a third of its CPU time (issue 32)
EVAL_ROWS = 8192
#: a new set of kept rows leaves out at most PRUNE / KEEP_MARGIN, so that the eps search's
#: later evaluations keep it (:func:`_prune`)
KEEP_MARGIN = 8.0


@bounded_cache(4, TABLE_BYTES)
def _m_tables(n: int, w_pair: float, s: float):
    """Y | t ~ Bin(n - t, s) over the window of T: (y_lo, pmf, outside mass, error)."""
    size = n - t_plan(n, w_pair).t
    lo, width = exact_band._window(size, s)
    pm, err = exact_band.window_pmf(size, s, lo, width)
    return lo, pm, exact_band._outside(size, s, lo, width), err + REL_SPECIAL


@bounded_cache(4, TABLE_BYTES)
def _x_tables(m_first: int, m_last: int, q: float):
    """X | m ~ Bin(m, q) for m = m_first..m_last: exact_band's X tables (x_lo, CX, CCX,
    outside mass, error)."""
    return exact_band._x_recurrence(np.arange(m_first, m_last + 1, dtype=float), q)


@bounded_cache(4, TABLE_BYTES)
def _rows(n: int, w_pair: float, s: float):
    """The rows (t, y) with P[Y = y | t] > 0 in the window: (index of t, y, probability, the
    rows (t, m, y, ln P[row] + 64 u |ln P[row]|) of :func:`_prune`'s exponent, a (4, rows)
    array, and a memo of the rows kept and their eps-independent data, :func:`_kept`).
    (Written in place with one temporary: in a cold call every fresh array of the 93 280 rows
    at RAPPOR d = 16, eps0 = 0.5, n = 1389 costs ~180 page faults; the former ~8 temporaries
    took ~3 ms of its first evaluation. Four contiguous rows: the prune's product is faster
    on them; issue 32.)"""
    tp = t_plan(n, w_pair)
    y_lo, py, _, _ = _m_tables(n, w_pair, s)
    live = py > 0
    i, j = np.nonzero(live)
    lin = np.empty((4, i.size))
    t, m, y, log_p = lin
    np.take(tp.t, i, out=t)
    np.take(y_lo, i, out=y)
    y += j
    np.subtract(n, t, out=m)
    m -= y
    p_row = py[live]                   # (the order of np.nonzero)
    scratch = np.take(tp.pt, i)
    p_row *= scratch
    with np.errstate(divide="ignore"):
        np.log(p_row, out=log_p)
    np.abs(log_p, out=scratch)
    scratch *= 64 * U
    log_p += scratch
    return i, y, p_row, lin, {}


def _chernoff_lambda(cat: Categories) -> float:
    """A lam near the minimiser of Chernoff's bound E[S_+] <= E e^{lam S} / (lam e) for the
    whole group (a grid on ln lam, two passes); any lam > 0 is valid for :func:`_prune`."""
    var = max(cat.count * cat.variance, 1e-300)
    guess = math.log(max(-cat.count * cat.mean, math.sqrt(var)) / var)
    lo, hi = guess - 12.0, guess + 6.0
    for _ in range(2):
        s = np.linspace(lo, hi, 65)
        lam = np.exp(s)
        with np.errstate(over="ignore", invalid="ignore"):
            val = cat.count * log_sum_exp(lam[:, None] * cat.c[None, :], cat.w) - s
        val = np.where(np.isnan(val), np.inf, val)
        i = int(np.argmin(val))
        step = (hi - lo) / 64
        lo, hi = s[i] - step, s[i] + step
    return float(np.exp(s[i]))


def _prune(cat: Categories, sh, c_r: float, lin: np.ndarray, memo: dict,
           rel: float) -> tuple[np.ndarray, float]:
    """Rows worth evaluating, and an upper bound on the rest's share of E[S_+]. Per row,
    f <= E e^{lam (alpha + d B + e X)} / (lam e) (y_+ <= e^{lam y} / (lam e), B and X over
    their whole binomial laws; alpha = c_b t + base m + c_r y) = exp(lam alpha
    + t ln(1 + rho (e^{lam d} - 1)) + m ln(1 + q (e^{lam e} - 1))) / (lam e), times P[row]:
    a linear form in the rows (t, m, y, ln P[row]) of ``lin``, its rounding covered by
    64 u times the sum of the sizes of its terms (each coefficient and ln P[row] enlarged by
    64 u of its size). The rows left out carry at most PRUNE of the sum of all the bounds;
    their bounds go to the upper side (lower side: 0). The rows kept at an earlier eps (the
    eps search's evaluations; ``memo``) are kept again while the others carry at most PRUNE
    (issue 32: most rows of the 2-D window lie far from the values S > 0; the same rows let
    :func:`_kept` reuse their data); else the rows whose bound exceeds PRUNE / KEEP_MARGIN /
    rows of the sum are kept."""
    rows = lin.shape[1]
    lam = _chernoff_lambda(cat)
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        # (numpy scalars: an overflow gives inf, and then no row is left out)
        log_b1 = float(np.log1p(sh.rho * np.expm1(np.float64(lam * sh.d))))
        log_x1 = float(np.log1p(sh.q * np.expm1(np.float64(lam * sh.e))))
        terms = ((lam * sh.cb, log_b1), (lam * sh.base, log_x1), (lam * c_r, 0.0))
        coef = np.array([a + b + 64 * U * (abs(a) + abs(b)) for a, b in terms] + [1.0])
        const = -math.log(lam) - 1.0 + 64 * U * (abs(math.log(lam)) + 3.0)
        bound = np.exp(coef @ lin + const) * (1 + rel)
    total = float(bound.sum())
    if not (math.isfinite(total) and total > 0):
        return np.ones(rows, dtype=bool), 0.0
    keep = memo.get("keep")
    if keep is not None:
        left = float(bound @ memo["left"])
        if left <= PRUNE * total:
            return keep, left * (1 + rows * U)
    keep = bound > PRUNE / KEEP_MARGIN * total / rows
    memo.clear()
    memo["keep"], memo["left"] = keep, (~keep).astype(float)
    return keep, float(bound @ memo["left"]) * (1 + rows * U)


def _kept(memo: dict, keep: np.ndarray, ti, y, p_row, tp, n: int, plan,
          sizes: tuple[int, int], has_x: bool, q: float, lin_m: np.ndarray):
    """The kept rows in chunks of EVAL_ROWS: per chunk (t, m, index of t, row of the X tables,
    y, probability, row_bounds' setup with X's window trimmed, band_sums.row_setup), built
    once per kept set and plan tables (``memo``); ``sizes``: the least and largest m of all
    the rows (the X tables' first row is the least)."""
    tables = (plan.pb, plan.cx)
    got = memo.get("kept")
    if (got is not None and got[0] is keep
            and all(a is b for a, b in zip(got[1], tables, strict=True))):
        return got[2]
    chunks = []
    rows = np.flatnonzero(keep)
    # by pool size m: X's window, hence the band's width (~|e| width(X) / d), is a function of
    # m, so a chunk's rectangle of band cells (its widest row) wastes fewer cells
    by_m = lin_m[rows] - sizes[0]
    rows = rows[np.argsort(by_m.astype(np.int16) if by_m.size and by_m.max() < 2**15 else by_m,
                           kind="stable")]
    for r in range(0, rows.size, EVAL_ROWS):
        # (per chunk: arrays of EVAL_ROWS rows come from memory the allocator reuses)
        c = rows[r:r + EVAL_ROWS]
        ti_k, y_k = ti[c], y[c]
        t = tp.t[ti_k]
        m = n - t - y_k                    # the users that are x or zero
        xi = (m - sizes[0]).astype(np.int64)
        chunks.append((t, m, ti_k, xi, y_k, p_row[c],
                       row_setup(plan, t, m, ti_k, xi, has_x, q, True, sizes)))
    memo["kept"] = (keep, tables, chunks)
    return chunks


def mixture_bounds(cat: Categories) -> tuple[float, float]:
    """Guaranteed (lower, upper) of E[S_+] (module docstring); ``applicable(cat)`` must hold."""
    cat, down, up, mix, _ = _analyse(cat)
    sh, n = mix.shape, cat.count
    tp = t_plan(n, mix.w_pair)
    b_lo, pb, sb, ssb, b_out, eb, below = exact_band._b_tables(n, mix.w_pair, sh.rho)
    _, _, m_out, em = _m_tables(n, mix.w_pair, mix.s)
    ti, y, p_row, lin, memo = _rows(n, mix.w_pair, mix.s)
    m_all = lin[1]
    sizes = int(m_all.min()), int(m_all.max())
    x_lo, cx, ccx, x_out, ex, x_rows = _x_tables(*sizes, sh.q)
    plan = exact_band.BandPlan(tp.t, tp.pt, tp.tail_p, b_lo, pb, sb, ssb, b_out, x_lo, cx,
                               ccx, x_out, eb + ex + eb * ex + 4 * U, x_rows, below)
    # P[T = t] (REL_SPECIAL) times the Y table's entry (em) and the product's rounding (2u)
    rel = REL_SPECIAL + em + REL_SPECIAL * em + 2 * U
    keep, pruned = _prune(cat, sh, mix.c_r, lin, memo, rel)
    lower = upper = 0.0
    for t, m, ti_k, xi, y_k, p_k, setup in _kept(memo, keep, ti, y, p_row, tp, n, plan, sizes,
                                                 sh.q < 1.0, sh.q, m_all):
        f_lo, f_hi = exact_band.row_bounds(sh, plan, t, m, ti_k, xi, mix.c_r * y_k, setup)
        lower += float(p_k @ f_lo)
        upper += float(p_k @ f_hi)
    # (a sum of non-negative terms in any order: at most (terms) u relative)
    size = float(lin.shape[1] + tp.t.size)
    lower = lower * (1 - rel) * (1 - REL_SUM - size * U)
    upper = upper * (1 + rel) * (1 + REL_SUM + size * U) + pruned
    # Y outside its window given t, then T outside its window (module docstring)
    worst = mix.c_a * tp.t + mix.pool_pos * (n - tp.t)
    upper += float(tp.pt @ (m_out * worst)) * (1 + REL_SPECIAL) * (1 + tp.t.size * 4 * U)
    upper += (mix.c_a * tp.tail_et + mix.pool_pos * n * tp.tail_p) * (1 + 8 * U)
    lower = max(lower - down, 0.0)
    upper = upper * (1 + 4 * U) + up + TINY
    return lower, upper
