"""Exact summation for one small group whose pool is a binomial: the conditioning method's
decomposition (protocols.bounds.engine.conditioning, 000 Thm 12-14) without its Jensen / kink
bracket.

Setting: one group of n users, categories c_k with probabilities w_k, S = sum_k c_k N_k. With the
pair (a, b) of conditioning.choose_roles, T = N_a + N_b ~ Bin(n, w_a + w_b) and, given T = t,
N_a = B ~ Bin(t, rho), S = c_b t + d B + V with d = c_a - c_b > 0 and V the pool's sum over the
other m = n - t users. When the pool is

* empty: V = 0;
* one category j: V = c_j m;
* two categories j and o (k-RR's blanket: j and the zero atom; 000 Thm 14's atoms for k-RR:
  the two values below 0, once the zero atom of mass ~2e-16 left by rounding is folded in with
  a bounded error, _reduced): V = c_o m + (c_j - c_o) X with X ~ Bin(m, q),
  q = w_j / (w_j + w_o);

the law of V given t is a binomial, and

    E[S_+] = sum_t P[T = t] sum_x P[X = x | t] h_t(c_j x),   h_t(v) = E[(c_b t + v + d B)_+],

is a finite sum. For each t the pmf of B on a window of +-K_SD sd around its mode gives h_t at
every v by suffix sums: with k* = the smallest k with c_b t + v + d k > 0,
h_t(v) = A P[B >= k*] + d E[B 1{B >= k*}], A = c_b t + v (a sum of non-negative terms,
computed as two suffix sums). At n = 1e3 (10-RR) this is ~5e4 table look-ups per eps instead of
the conditioning method's refinements (~10 ms).

Error bound (every term is bracketed, the bracket is returned):

* pmfs: P[Bin(m, p) = k] on a window from the mode's value (scipy.stats.binom.pmf, relative error
  <= REL_SPECIAL, engine/common.py) times exp of cumulative sums of ln of the ratios
  (m - k) p / ((k + 1)(1 - p)): each ratio's log within 4u (|ln(m - k)| + |ln(k + 1)| +
  |ln odds| + 1), partial sums add u |sum| per step. The anchor's error is one factor per row
  (REL_SPECIAL on h_t and on the row's x-sum); the others act term by term;
* suffix sums of non-negative terms: (window length) u relative; A P + d E[B 1] cancels, so
  the term-by-term errors are bounded relative to |A| P + d E[B 1] (not to h);
* values: |computed A - A| <= e = 8u (|c_b| t + |c_j| x + d (t + 1)) moves h by at most
  e P[B >= k* - 1] (h is convex in A with slope P[A + d B > 0], and e < d);
* mass outside the windows (T: t_plan's 1e-22 tails; X and B: binomial tails from
  scipy.stats.binom, relative error REL_SPECIAL): bounded by the mass times the largest
  S_+ there, sum of the positive c_k times the counts, added to the upper side only.

The result's relative width is ~4 REL_SPECIAL: the eps search then stops on its own tolerance.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

from shufflesim.protocols.bounds.engine.common import REL_SPECIAL, REL_SUM, TINY, Categories, U
from shufflesim.protocols.bounds.engine.conditioning import choose_roles
from shufflesim.protocols.bounds.engine.plans import t_plan

#: half-width of the X and B windows in standard deviations (the rest is bounded, not dropped)
K_SD = 12.0
#: largest number of (t, x) leaves for which the exact sum is used (auto method)
MAX_LEAVES = 120_000
#: categories lighter than this are folded into the others with a bounded error (_reduced)
TINY_MASS = 1e-13


def _pool(cat: Categories):
    """(roles, j, other, q) when the pool is empty (j = -1), one category j (q = 1), or two
    categories j and ``other`` (X ~ Bin(m, q) users in j, q = w_j / (w_j + w_other)); None
    otherwise."""
    roles = choose_roles(cat)
    pool = list(roles.pool)
    if not pool:
        return roles, -1, -1, 0.0
    if len(pool) == 1:
        return roles, pool[0], -1, 1.0
    if len(pool) == 2:
        j, other = pool
        if cat.c[j] == 0.0:
            j, other = other, j
        q = float(cat.w[j] / (cat.w[j] + cat.w[other]))
        if 0.0 < q < 1.0:
            return roles, j, other, q
    return None


def _reduced(cat: Categories) -> tuple[Categories, float]:
    """``cat`` without the categories of mass <= TINY_MASS (e.g. the zero atom of weight 2e-16
    that the rounding of 1 - sum w leaves in 000 Thm 14's atoms), renormalized, and the
    distance d with |E[S_+] - E[S'_+]| <= d: with probability eps (their total mass) a user is in
    one of them, otherwise drawn from the renormalized law; replacing those users by draws of
    the renormalized law changes S by at most max|c| + max|c'| per replaced user, so
    d = n eps (max|c| + max|c'|) (E|S - S'| bounds the change of E[S_+], (.)_+ being
    1-Lipschitz)."""
    small = cat.w <= TINY_MASS
    if not small.any() or small.all():
        return cat, 0.0
    keep = ~small
    eps = float(cat.w[small].sum())
    w = cat.w[keep] / float(cat.w[keep].sum())
    c = cat.c[keep]
    reduced = Categories(c, w, cat.count, cat.c_err)
    spread = float(np.abs(cat.c).max()) + float(np.abs(c).max())
    return reduced, cat.count * eps * spread * (1 + 8 * U)


def _window(m: np.ndarray, p: float, k_sd: float) -> tuple[np.ndarray, int]:
    """Per-row windows [lo, lo + width) of Bin(m, p) around the mean, clipped to [0, m]."""
    mean = m * p
    sd = np.sqrt(m * p * (1.0 - p))
    half = int(math.ceil(k_sd * float(sd.max(initial=0.0)))) + 2
    lo = np.clip(np.floor(mean) - half, 0.0, None)
    width = 2 * half + 1
    return lo, width


def _window_pmf(m: np.ndarray, p: float, lo: np.ndarray, width: int):
    """P[Bin(m, p) = lo + i], i < width (rows: entries of m), 0 beyond m; and the relative
    error bound of each entry *besides* the row's common factor: every row is anchored at its
    mode with scipy (relative error REL_SPECIAL, the same factor for the whole row, which the
    caller applies to row sums), the rest by cumulative log ratios."""
    m = np.asarray(m, dtype=float)
    ks = lo[:, None] + np.arange(width)[None, :]
    mode = np.clip(np.floor((m + 1.0) * p), lo, np.minimum(lo + width - 1, m))
    anchor = stats.binom.pmf(mode, m, p)
    log_odds = math.log(p) - math.log1p(-p)
    with np.errstate(divide="ignore", invalid="ignore"):
        # ln P(k+1)/P(k) for k = lo + i, i < width - 1
        step = np.log(m[:, None] - ks[:, :-1]) - np.log(ks[:, :-1] + 1.0) + log_odds
    step = np.where(ks[:, :-1] < m[:, None], step, -np.inf)
    cum = np.concatenate([np.zeros((m.size, 1)), np.cumsum(step, axis=1)], axis=1)
    idx = (mode - lo).astype(np.int64)
    rel = cum - cum[np.arange(m.size), idx][:, None]
    with np.errstate(invalid="ignore", over="ignore"):
        pmf = anchor[:, None] * np.exp(rel)
    pmf = np.where((ks <= m[:, None]) & np.isfinite(pmf), pmf, 0.0)
    # Each computed log ratio is within 4u (|ln(m - k)| + |ln(k + 1)| + |ln odds| + 1) of its
    # value; a partial sum of i of them within i times that plus i u |partial sum|; exp adds 2u.
    finite = np.where(np.isfinite(cum), np.abs(cum), 0.0)
    step_err = 4 * U * (2 * math.log(float(m.max(initial=0.0)) + 2.0) + abs(log_odds) + 1.0)
    shape_err = width * (step_err + U * float(finite.max(initial=0.0))) * 2.0 + 4 * U
    return ks, pmf, shape_err


def _tails(m: np.ndarray, p: float, lo: np.ndarray, width: int) -> np.ndarray:
    """Upper bound on P[Bin(m, p) outside [lo, lo + width - 1]] per row."""
    hi = lo + width - 1
    below = np.where(lo > 0, stats.binom.cdf(lo - 1, m, p), 0.0)
    above = np.where(hi < m, stats.binom.sf(hi, m, p), 0.0)
    return (below + above) * (1 + REL_SPECIAL) + TINY


def applicable(cat: Categories) -> bool:
    """The pool is binomial (module docstring), possibly after folding categories of mass
    <= TINY_MASS, and the sum has at most MAX_LEAVES leaves."""
    cat, _ = _reduced(cat)
    if cat.c.size < 2 or not (cat.c.min() < 0 < cat.c.max()):
        return False
    found = _pool(cat)
    if found is None:
        return False
    roles, j, _, q = found
    w_pair = float(cat.w[roles.a] + cat.w[roles.b])
    rho = float(cat.w[roles.a]) / w_pair
    if not (0.0 < rho < 1.0) or not (0.0 < w_pair < 1.0 or not roles.pool):
        return False
    n = cat.count
    sd_t = math.sqrt(n * w_pair * (1 - w_pair))
    t_size = 2 * 11 * sd_t + 3
    x_size = 2 * K_SD * math.sqrt(n * q * (1 - q)) + 5 if 0.0 < q < 1.0 else 1
    b_size = 2 * K_SD * math.sqrt(n * w_pair * rho * (1 - rho)) + 5
    return t_size * max(x_size, b_size) <= MAX_LEAVES


def exact_pool_bounds(cat: Categories) -> tuple[float, float]:
    """Guaranteed (lower, upper) of E[S_+] for one group with a binomial pool (module
    docstring)."""
    cat, folded = _reduced(cat)
    roles, j, other, q = _pool(cat)
    c = cat.c
    n = cat.count
    ca, cb = float(c[roles.a]), float(c[roles.b])
    d = ca - cb
    w_pair = 1.0 if not roles.pool else float(cat.w[roles.a] + cat.w[roles.b])
    rho = float(cat.w[roles.a]) / float(cat.w[roles.a] + cat.w[roles.b])
    # V = c_other m + (c_j - c_other) X  (c_other = 0 without a second pool category)
    c_other = float(c[other]) if other >= 0 else 0.0
    cj = float(c[j]) - c_other if j >= 0 else 0.0
    tp = t_plan(n, w_pair)
    t = tp.t
    m = n - t
    pos_max = float(np.maximum(c, 0.0).max())

    # B | t on a window: pmf and suffix sums of pmf and k pmf
    b_lo, b_w = _window(t, rho, K_SD)
    kb, pb, err_b = _window_pmf(t, rho, b_lo, b_w)
    sp = np.cumsum(pb[:, ::-1], axis=1)[:, ::-1]
    sk = np.cumsum((kb * pb)[:, ::-1], axis=1)[:, ::-1]
    sp = np.concatenate([sp, np.zeros((t.size, 1))], axis=1)
    sk = np.concatenate([sk, np.zeros((t.size, 1))], axis=1)
    b_tail = _tails(t, rho, b_lo, b_w)

    # V | t: X on a window (or a constant)
    if j >= 0 and q < 1.0:
        x_lo, x_w = _window(m, q, K_SD)
        kx, px, err_x = _window_pmf(m, q, x_lo, x_w)
        x_tail = _tails(m, q, x_lo, x_w)
    else:
        kx = (m if j >= 0 else np.zeros_like(m))[:, None]
        px = np.ones((t.size, 1))
        err_x, x_tail = 0.0, np.zeros(t.size)
    v = cj * kx + c_other * m[:, None]                      # (t, x)
    a_val = cb * t[:, None] + v                             # A = c_b t + v
    kstar = np.floor(-a_val / d) + 1.0                      # first k with A + d k > 0
    idx = np.clip(kstar - b_lo[:, None], 0, b_w).astype(np.int64)
    rows = np.arange(t.size)[:, None]
    p_ge, k_ge = sp[rows, idx], sk[rows, idx]
    h = a_val * p_ge + d * k_ge
    scale = np.abs(a_val) * p_ge + d * k_ge
    # a k* inside the window that is off by one (A + d k* within rounding of 0) changes h by
    # at most |A + d k*| P[B = k*] <= the value error below
    value_err = 8 * U * (abs(cb) * t[:, None] + abs(cj) * np.abs(kx)
                         + abs(c_other) * m[:, None] + d * (t[:, None] + 1))
    # the anchor's error is a common factor of the row (REL_SPECIAL on h); the shape errors
    # and the suffix sums' rounding act on each term, hence on |A| P + d E[B 1] (cancellation)
    rel = err_b + 8 * U * (b_w + 2)
    # h is convex in A with slope P[A + d B > 0]: for a value error e < d (always: e ~ 1e-12 d)
    # it moves h by at most e P[B >= k* - 1] (also covering a k* off by one)
    slope = sp[rows, np.maximum(idx - 1, 0)] * (1 + rel + REL_SPECIAL) + b_tail[:, None]
    slope = np.minimum(np.where(idx > 0, slope, 1.0), 1.0)
    h_err = (scale * rel + np.abs(a_val * p_ge + d * k_ge) * REL_SPECIAL
             + 2.0 * value_err * slope)
    # B outside its window: at most P[outside] (A + d t)_+ (lower side: dropped terms >= 0)
    h_hi_tail = b_tail[:, None] * np.maximum(a_val + d * t[:, None], 0.0)
    h = np.maximum(h, 0.0)
    inner = (px * h).sum(axis=1)
    err_x = err_x + REL_SPECIAL if j >= 0 and q < 1.0 else 0.0     # shape + the row's anchor
    inner_err = (px * (h_err + h_hi_tail)).sum(axis=1)
    # X outside its window: S_+ <= pos_max * n
    inner_hi = inner * (1 + err_x) + inner_err + x_tail * pos_max * n
    inner_lo = np.maximum(inner * (1 - err_x) - (px * h_err).sum(axis=1), 0.0)
    lower = float((tp.pt * (1 - REL_SPECIAL)) @ inner_lo)
    upper = float((tp.pt * (1 + REL_SPECIAL)) @ inner_hi)
    # T outside its window
    upper += (pos_max * n * tp.tail_p) * (1 + 8 * U)
    n_terms = t.size * (kx.shape[1] + b_w)
    lower = max(lower * (1 - REL_SUM - n_terms * U) - folded, 0.0)
    upper = upper * (1 + REL_SUM + n_terms * U) + folded + TINY
    return lower, upper
