"""Conditioning method: E[(S)_+] for one large group of i.i.d. GPARVs, exact up to a bracket.

Setting (000 Thm 12-14). One group of n users; the values of G are the categories c_1 < ... < c_K
(the zero atom is a category with c = 0) with probabilities w_k, so the counts N are
Multinomial(n; w) and S = sum_k c_k N_k. Optional independent extra shifts s (a few enumerated
outcomes of other small groups) are added: the target is E[(S + s)_+].

Decomposition (derived here; every step is exact or bracketed):

1. A pair. Pick a category a with c_a > 0 and b with c_b < 0 (those carrying most of the
   variance). Let T = N_a + N_b ~ Bin(n, w_a + w_b). Given T = t, N_a ~ Bin(t, rho) with
   rho = w_a / (w_a + w_b), and the other m = n - t users fall in the remaining "pool"
   categories, Multinomial(m; w_k / (1 - w_a - w_b)), independently of N_a. Hence
       S = c_b t + d B + V,   d = c_a - c_b > 0,   B ~ Bin(t, rho),   V = pool sum,
   and h_t(v) = E[(c_b t + v + d B)_+] has a closed form with binomial tails
   (common.leaf_positive_part). T is summed exactly over a window that leaves at most
   1e-22 of its mass on each side; that mass is bounded by E[sum of positive parts | T].
2. The pool sum V (independent of B given t). h_t is convex and piecewise linear, with kinks
   kappa_k = -(c_b t + d k) of size P[B = k]. For mu = E V:
     lower:  E h_t(V) >= h_t(mu)                                            (Jensen)
     upper:  E h_t(V) = h_t(mu) + E D(V), and by Taylor's formula with integral remainder
             E D(V) = sum_{kappa > mu} P[B=k] E(V - kappa)_+
                      + sum_{kappa <= mu} P[B=k] E(kappa - V)_+,
             each term bounded by min(phi, Chernoff): phi(a) = (sqrt(Var V + a^2) - a)/2 is the
             sharp mean-variance bound of E(Y - a)_+, and E(Y - a)_+ <= E e^{lam (Y - a)}/(lam e)
             with a bound on the log-MGF of Y = V - mu. The 2J kinks nearest to mu are summed one
             by one (pmf by the ratio recurrence); the others, on each side, by a geometric series
             (Chernoff at a fixed lam) times the largest pmf of that side (B is unimodal).
   The pool is split into a "main" category j, X = N_j ~ Bin(m, q), and a remainder R (the other
   pool categories, m - X i.i.d. bounded terms given X), V = m m_R + alpha X + R~ with
   alpha = c_j - m_R and R~ centred given X. Log-MGF bounds: exact binomial for alpha (X - mq),
   Hoeffding on a block of X, Bennett for R~ (at most m - lo terms, variance v_R, |term| <= M_R).
   "single" style: one block, the exact law of X. "multi" style: X cut into blocks (probability
   and moments from the identity E[(X - mq) f(X)] = mq(1-q) E[f(X'+1) - f(X')], X' ~
   Bin(m-1, q)); the same Jensen / kink bound holds for each block's conditional law. The two
   outermost blocks (beyond +-9 sd) and blocks too improbable for reliable moments get the
   monotone bound h(v_min) <= E h(V) <= h(v_max) + (kink sum of R~). The bracket shrinks like
   (sd of V within a block / sd of d B)^2.

Regime: any single group with values of both signs. Cost: one binomial tail and a few pmfs per
(t, block, shift), t over ~ 20 sd(T) values (~ 9e4 at n = 1e8 for 10-RR); the eps-independent
parts (windows, block moments) are cached per (n, weights).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from shufflesim.protocols.bounds.engine.common import (
    BINOM_PMF,
    REL_SPECIAL,
    REL_SUM,
    TINY,
    Categories,
    U,
    chernoff_upper,
    leaf_with_slope,
    mode_pmf_on_range,
)
from shufflesim.protocols.bounds.engine.deviation import Deviation as _Deviation
from shufflesim.protocols.bounds.engine.deviation import far_side as _far_side
from shufflesim.protocols.bounds.engine.deviation import tail_bound as _tail_bound
from shufflesim.protocols.bounds.engine.plans import (
    T_WINDOW_MIN_ROWS,
    MultiPlan,
    multi_plan,
    t_plan,
)
from shufflesim.protocols.lazy import lazy_module

kink_table = lazy_module("shufflesim.protocols.bounds.engine.kink_table")  # on first use
t_window = lazy_module("shufflesim.protocols.bounds.engine.t_window")
pool_law = lazy_module("shufflesim.protocols.bounds.engine.pool_law")

J_MAX = 16            # at most this many kinks summed one by one on each side of the mean
J_SD = 4.0            # ... enough to reach J_SD sd of V
CHUNK = 100_000       # leaf evaluations per vectorized chunk (memory bound)
KINK_TABLE_ROWS = 4096   # rows from which the single style's kink sum uses one table
_KEPT = None             # (key, pieces) of the latest single-style rows (_single_terms)


@dataclass(frozen=True)
class Roles:
    """Indices into Categories.c: the pair (a, b), the main pool category (-1: none) and the
    remainder categories."""

    a: int
    b: int
    main: int
    rest: tuple[int, ...]
    pool: tuple[int, ...]


def choose_roles(cat: Categories) -> Roles:
    """Pair = the positive and the negative category of largest w c^2; main pool category =
    the pool category of largest w (c - pool mean)^2.

    One engine evaluation asks this 5-8 times of the same group (the method's dispatch,
    exact_band's shape, the conditioning itself; issue 32: ~20 % of a band evaluation went to
    such repeats), so the roles are memoised by the exact bytes of (c, w): a pure function of
    its key, so a result can never serve other inputs."""
    c = np.ascontiguousarray(cat.c, dtype=np.float64)
    w = np.ascontiguousarray(cat.w, dtype=np.float64)
    return _roles(c.tobytes(), w.tobytes())


@lru_cache(maxsize=64)
def _roles(c_bytes: bytes, w_bytes: bytes) -> Roles:
    """:func:`choose_roles` of the float64 arrays c and w given by their bytes."""
    c, w = np.frombuffer(c_bytes), np.frombuffer(w_bytes)
    score = w * c * c
    neg = np.flatnonzero(c < 0)
    b = int(neg[np.argmax(score[neg])]) if neg.size else int(np.argmin(c))
    cand = np.flatnonzero(c > 0)
    if not cand.size:
        cand = np.flatnonzero(c > c[b])
    a = int(cand[np.argmax(score[cand])]) if cand.size else int(np.argmax(c))
    pool = tuple(k for k in range(c.size) if k not in (a, b))
    if len(pool) < 2:
        return Roles(a, b, -1, (), pool)
    idx = np.array(pool)
    wp = w[idx] / w[idx].sum()
    mean = float(wp @ c[idx])
    main = int(idx[np.argmax(w[idx] * (c[idx] - mean) ** 2)])
    rest = tuple(k for k in pool if k != main)
    return Roles(a, b, main, rest, pool)


def main_pool_share(cat: Categories) -> float:
    """Share of the pool sum's variance carried by the main pool category (what the multi
    style's blocks can remove); 1 when the pool has at most one category besides it."""
    roles = choose_roles(cat)
    if roles.main < 0:
        return 1.0
    k = _coeffs(cat, roles)
    main_var = k.alpha ** 2 * k.q * (1 - k.q)
    rest_var = (1 - k.q) * k.v_r
    total = main_var + rest_var
    return main_var / total if total > 0 else 1.0


def well_posed(cat: Categories) -> bool:
    """False when a binomial parameter of the decomposition rounds to 0 or 1 although both of
    its categories carry mass (rho = w_a / (w_a + w_b) or q = 1 for a pool of two categories;
    e.g. the piecewise mechanism at eps0 = 40, whose extreme atoms weigh ~1e-18 of the others):
    the count laws would then be degenerate in float, and the method does not apply."""
    roles = choose_roles(cat)
    k = _coeffs(cat, roles)
    if not 0.0 < k.rho < 1.0:
        return False
    return roles.main < 0 or 0.0 < k.q < 1.0 or not roles.rest


# ---------------------------------------------------------------------------------------------
# evaluation
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class _Coeffs:
    cb: float
    d: float
    rho: float
    pool_mean: float      # E[value] of one pool user (0 if no pool)
    alpha: float          # c_main - m_R
    m_r: float
    v_r: float
    bound_r: float
    q: float              # P[pool user in main]
    pos_pair: float       # rho (c_a)+ + (1 - rho)(c_b)+
    pos_pool: float       # E[(value)+] of one pool user


def _coeffs(cat: Categories, roles: Roles) -> _Coeffs:
    c, w = cat.c, cat.w
    ca, cb = float(c[roles.a]), float(c[roles.b])
    wa, wb = float(w[roles.a]), float(w[roles.b])
    rho = wa / (wa + wb)
    pool = np.array(roles.pool, dtype=int)
    if pool.size:
        wp = w[pool] / w[pool].sum()
        pool_mean = float(wp @ c[pool])
        pos_pool = float(wp @ np.maximum(c[pool], 0.0))
    else:
        pool_mean = pos_pool = 0.0
    alpha = m_r = v_r = bound_r = q = 0.0
    if roles.main >= 0:
        q = float(w[roles.main] / w[pool].sum())
        rest = np.array(roles.rest, dtype=int)
        wr = w[rest] / w[rest].sum()
        m_r = float(wr @ c[rest])
        v_r = float(wr @ (c[rest] - m_r) ** 2)
        bound_r = float(np.abs(c[rest] - m_r).max())
        alpha = float(c[roles.main]) - m_r
    pos_pair = rho * max(ca, 0.0) + (1 - rho) * max(cb, 0.0)
    return _Coeffs(cb, ca - cb, rho, pool_mean, alpha, m_r, v_r, bound_r, q, pos_pair, pos_pool)


def _kink_sum(t, mu, e_v, dev: _Deviation, k: _Coeffs, keep: bool = False):
    """Upper bound on E D(V) (module docstring, step 2). ``mu`` is the computed mean of V,
    within ``e_v`` of the true one (e_v <= d): distances to kinks are reduced by e_v, and a kink
    within e_v of mu may lie on either side of the true mean, which adds at most e_v times its
    mass. With ``keep``, also the parts that :func:`_pool_kinks` finishes."""
    shape = np.broadcast(t, mu, dev.var).shape
    t = np.broadcast_to(t, shape)
    bstar = -(k.cb * t + mu) / k.d                # kappa_k - mu = d (b* - k)
    sd_max = float(np.sqrt(np.max(dev.var, initial=0.0)))
    jj = int(min(J_MAX, max(2, np.ceil(J_SD * sd_max / k.d) + 1)))
    k0 = np.clip(np.floor(bstar), 0.0, t)
    p0 = BINOM_PMF(k0, t, k.rho)
    odds = k.rho / (1.0 - k.rho)
    total = np.zeros(shape)
    near_mass = np.zeros(shape)
    near = []                                     # (mass, a) per near kink, with ``keep``

    def add(kk, p):
        nonlocal total, near_mass
        valid = (kk >= 0) & (kk <= t)
        pk = np.where(valid, np.nan_to_num(p, nan=0.0, posinf=0.0), 0.0)
        a = k.d * (bstar - kk)                     # > 0: kink above mu
        near_mass = near_mass + np.where(np.abs(a) <= e_v, pk, 0.0)
        dist = np.maximum(np.abs(a) - e_v, 0.0)
        total = total + pk * _tail_bound(dev, dist, np.where(a > 0, 1.0, -1.0))
        if keep:
            near.append((pk, a))
    # Near kinks k0 - J + 1, ..., k0 + J; pmf by P[k+1]/P[k] = (t-k)/(k+1) * rho/(1-rho).
    add(k0, p0)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        p, kk = p0, k0
        for _ in range(jj):
            p = np.where(kk < t, p * (t - kk) / (kk + 1.0) * odds, 0.0)
            kk = kk + 1.0
            add(kk, p)
        k_dn, p_dn = kk + 1.0, np.where(kk < t, p * (t - kk) / (kk + 1.0) * odds, 0.0)
        p, kk = p0, k0
        for _ in range(jj - 1):
            p = np.where(kk > 0, p * kk / (t - kk + 1.0) / odds, 0.0)
            kk = kk - 1.0
            add(kk, p)
        k_up, p_up = kk - 1.0, np.where(kk > 0, p * kk / (t - kk + 1.0) / odds, 0.0)
        # pmf ratios beyond the near set: P[k-1]/P[k] <= its value at k_up (k <= k_up);
        # P[k+1]/P[k] <= its value at k_dn (k >= k_dn).
        r_up = np.where(k_up > 0, k_up / (t - k_up + 1.0) / odds, 0.0) * (1 + 8 * U)
        r_dn = np.where(k_dn < t, (t - k_dn) / (k_dn + 1.0) * odds, 0.0) * (1 + 8 * U)
    dist_up = np.maximum(k.d * (bstar - k_up) - e_v, 0.0)
    dist_dn = np.maximum(k.d * (k_dn - bstar) - e_v, 0.0)
    far_up = _far_side(dev, dist_up, 1.0, p_up, r_up, k.d,
                       lambda m: mode_pmf_on_range(0.0, k_up[m], t[m], k.rho))
    far_dn = _far_side(dev, dist_dn, -1.0, p_dn, r_dn, k.d,
                       lambda m: mode_pmf_on_range(k_dn[m], t[m], t[m], k.rho))
    far_up = np.where(k_up >= 0, far_up, 0.0)
    far_dn = np.where(k_dn <= t, far_dn, 0.0)
    rel = 1 + REL_SPECIAL + 8 * U * (jj + 4)
    # Kinks within e_v of mu: counted among the near ones; all kinks (mass <= 1) if e_v could
    # reach beyond the near set.
    within = np.where(e_v < (jj - 1) * k.d, np.minimum(near_mass * rel, 1.0), 1.0)
    upper = (total + far_up + far_dn) * rel + e_v * within
    if not keep:
        return upper
    return upper, (near, far_up + far_dn, rel, e_v * within, e_v)


def _pool_kinks(parts, law):
    """(upper, lower) of E D(V) with the near kinks' terms from engine/pool_law.py's tables
    (the caller intersects with the plain style): the lower from the near kinks whose side is
    certain (every term is >= 0), the far sides as in :func:`_kink_sum`."""
    near, far, rel, slack, e_v = parts
    pk, a = np.stack([x[0] for x in near]), np.stack([x[1] for x in near])
    up = a > 0
    upper = (pk * law.upper(np.maximum(np.abs(a) - e_v, 0.0), up)).sum(axis=0)
    lower = law.lower(np.where(np.abs(a) > e_v, np.abs(a) + e_v, np.inf), up)
    return (upper + far) * rel + slack, (pk * lower).sum(axis=0) * (2 - rel)


def _leaf_bounds(t, mu, e_v, k: _Coeffs):
    """Bounds of h(true mean) and of h(mu) + s (true mean - mu) for a computed mean ``mu``
    within ``e_v`` of the true one (the Jensen lower bound and the first two terms of the upper
    bound), using the leaf's slope bound when e_v <= d and slope 1 otherwise."""
    h, h_err, slope = leaf_with_slope(t, mu, k.cb, k.d, k.rho)
    shift = e_v * np.where(e_v <= k.d, slope, 1.0)
    return np.maximum(h - h_err - shift, 0.0), h + h_err + shift


def _single_terms(t, m, k: _Coeffs, has_main: bool, shifts_v, shifts_err,
                  kink_sum: bool = True, law=None):
    """Per (t, shift): bounds of E[h_t(V + s)] with the exact law of X (one block); without
    ``kink_sum`` the upper side is that of h_t(E V + s) only (engine/screen.py adds its own
    bound of the pool's spread); ``law``: engine/pool_law.py's tables (both sides)."""
    mm = m[:, None]
    tt = t[:, None]
    if has_main:
        mean_x = mm * k.q
        mu = mm * k.m_r + k.alpha * mean_x
        e_v = 8 * U * (np.abs(mm * k.m_r) + abs(k.alpha) * mean_x)
        var_v = k.alpha ** 2 * mean_x * (1 - k.q) + mm * (1 - k.q) * k.v_r
    else:
        mu = mm * k.pool_mean
        e_v = 8 * U * np.abs(mu)
        var_v = np.zeros_like(mu)
    v = mu + shifts_v[None, :]
    e_v = e_v + shifts_err[None, :]
    dev = _Deviation(var=np.broadcast_to(var_v, v.shape))
    if has_main:
        dev.binom_m, dev.binom_q, dev.alpha = mm, k.q, k.alpha
        dev.bennett_n, dev.bennett_v, dev.bennett_m = mm, k.v_r, k.bound_r
    if not kink_sum:
        return _leaf_bounds(tt, v, e_v, k)
    if law is None and has_main and t.size >= KINK_TABLE_ROWS and np.all(var_v > 0) \
            and np.max(e_v) < k.d / 2:
        lower, upper = _leaf_bounds(tt, v, e_v, k)
        return lower, upper + _tabled_kink_sum(tt, mm, v, e_v, var_v, k)
    # the plain style's pieces, kept for an exact-pool call on the same rows (a memo of a
    # pure function: the same numbers either way)
    global _KEPT
    key = (k, float(t[0]), float(t[-1]), t.size, float(m[0]), shifts_v.tobytes(),
           shifts_err.tobytes(), has_main)
    kept = _KEPT                       # one read: another thread may replace it
    if kept is not None and kept[0] == key:
        lower, upper, add, parts = kept[1]
    else:
        lower, upper = _leaf_bounds(tt, v, e_v, k)
        add, parts = _kink_sum(tt, v, e_v, dev, k, keep=True)
        _KEPT = (key, (lower, upper, add, parts))
    if law is None:
        return lower, upper + add
    add_up, add_lo = _pool_kinks(parts, law.rows(mm))
    return lower + add_lo, upper + add_up


def _tabled_kink_sum(tt, mm, v, e_v, var_v, k: _Coeffs):
    """The kink sum of many rows from one table of the log-MGF bound (engine/kink_table.py):
    psi_t <= psi at the largest m of the rows."""
    m_max = float(np.max(mm))
    bound = _Deviation(var=np.zeros(kink_table.GRID), binom_m=m_max, binom_q=k.q,
                       alpha=k.alpha, bennett_n=m_max, bennett_v=k.v_r, bennett_m=k.bound_r)
    return kink_table.rows_kink_sum(tt, v, e_v, var_v, k.cb, k.d, k.rho, bound.psi)


def _multi_terms(sl, t, plan: MultiPlan, k: _Coeffs, shifts_v, shifts_err):
    """Per (t, block, shift) bounds, summed over blocks -> (t, shift)."""
    mm = plan.m[sl][:, :, None]
    lo, hi = plan.lo[sl][:, :, None], plan.hi[sl][:, :, None]
    p = plan.p[sl][:, :, None]
    p_err = plan.p_err[sl][:, :, None]
    mu_x = plan.mu[sl][:, :, None]
    mu_err = plan.mu_err[sl][:, :, None]
    var_x = plan.var_ub[sl][:, :, None]
    crude = plan.crude[sl][:, :, None]
    sv = shifts_v[None, None, :]
    tt = t[:, None, None]
    base = mm * k.m_r
    mu = base + k.alpha * mu_x + sv
    e_v = (abs(k.alpha) * mu_err + 8 * U * (np.abs(base) + abs(k.alpha) * mu_x)
           + shifts_err[None, None, :])
    count_r = np.maximum(mm - lo, 0.0)
    var_v = k.alpha ** 2 * var_x + count_r * k.v_r
    width = np.maximum(hi - lo, 0.0)
    dev = _Deviation(var=np.broadcast_to(var_v, mu.shape), hoeffding_range=abs(k.alpha) * width,
                     bennett_n=count_r, bennett_v=k.v_r, bennett_m=k.bound_r)
    h_lo, h_hi = _leaf_bounds(tt, mu, e_v, k)
    ed = _kink_sum(tt, mu, e_v, dev, k)
    p_lo = np.maximum(p - p_err, 0.0)
    p_hi = np.minimum(p + p_err, 1.0)
    lower = np.where(crude, 0.0, p_lo * h_lo)
    upper = np.where(crude, 0.0, p_hi * (h_hi + ed))
    shape = mu.shape
    mask = np.broadcast_to(crude & (p_hi > 0), shape)
    if mask.any():
        # Monotone bound (h is non-decreasing): on the block, V lies between
        # base + min(alpha lo, alpha hi) + R~ and base + max(...) + R~ with R~ centred given X,
        # so h(v_min) <= E h(V) <= h(v_max) + (kink sum of R~ around v_max).
        a_lo, a_hi = k.alpha * lo, k.alpha * hi
        v_min = np.broadcast_to(base + np.minimum(a_lo, a_hi) + sv, shape)[mask]
        v_max = np.broadcast_to(base + np.maximum(a_lo, a_hi) + sv, shape)[mask]
        e_c = np.broadcast_to(8 * U * (np.abs(base) + np.abs(a_lo) + np.abs(a_hi))
                              + shifts_err[None, None, :], shape)[mask]
        t_c = np.broadcast_to(tt, shape)[mask]
        n_r = np.broadcast_to(count_r, shape)[mask]
        low_c, _ = _leaf_bounds(t_c, v_min, e_c, k)
        _, up_c = _leaf_bounds(t_c, v_max, e_c, k)
        if k.v_r > 0:
            dev_r = _Deviation(var=n_r * k.v_r, bennett_n=n_r, bennett_v=k.v_r,
                               bennett_m=k.bound_r)
            up_c = up_c + _kink_sum(t_c, v_max, e_c, dev_r, k)
        lower = lower.copy()
        upper = upper.copy()
        lower[mask] = np.broadcast_to(p_lo, shape)[mask] * low_c
        upper[mask] = np.broadcast_to(p_hi, shape)[mask] * up_c
    upper = np.where(p_hi > 0, upper, 0.0)
    return lower.sum(axis=1), upper.sum(axis=1)


def _narrow_window(cat: Categories, roles: Roles, tp, shifts_v, shifts_p, shifts_err):
    """(first row, last row + 1, bound of the rest) of a narrower window of T
    (engine/t_window.py), or None."""
    if not roles.pool or tp.t.size < T_WINDOW_MIN_ROWS:
        return None
    n = cat.count
    mean = n * cat.mean
    var = n * cat.variance
    if not var > 0:
        return None
    lam = (-mean + math.sqrt(mean * mean + 4 * var)) / (2 * var)
    return t_window.narrowed(cat, (roles.a, roles.b), tp.t, shifts_v, shifts_p, shifts_err,
                             lam, chernoff_upper([cat]))


def conditioning_bounds(cat: Categories, shifts_v: np.ndarray, shifts_p: np.ndarray,
                        shifts_err: np.ndarray, n_blocks: int = 0,
                        exact_pool: float = 0.0) -> tuple[float, float]:
    """Guaranteed (lower, upper) for E[(S + s)_+], S the group's sum and s an independent
    shift taking ``shifts_v[i]`` (known to +-shifts_err[i]) with probability ``shifts_p[i]``.

    ``n_blocks = 0`` uses the single style, otherwise the multi style with that many fine
    blocks; ``exact_pool`` > 0: the single style with the near kinks' terms also from the exact
    law of the main pool count (engine/pool_law.py), for a request of that relative width.
    """
    roles = choose_roles(cat)
    k = _coeffs(cat, roles)
    n = cat.count
    w_pair = 1.0 if not roles.pool else float(cat.w[roles.a] + cat.w[roles.b])
    tp = t_plan(n, w_pair)
    has_main = roles.main >= 0
    use_multi = n_blocks > 0 and has_main
    plan = multi_plan(n, w_pair, k.q, n_blocks) if use_multi else None
    n_blk = plan.lo.shape[1] if use_multi else 1
    step = max(1, CHUNK // (n_blk * shifts_v.size))
    law = None            # engine/pool_law.py's tables for the rows of the T plan, in chunks
    if exact_pool and not use_multi and has_main:     # of relative m range ~ the request
        m_rows = n - tp.t[::-1]
        chunks = min(8, math.ceil((m_rows[-1] - m_rows[0]) / m_rows[-1] / exact_pool))
        law = pool_law.pool_law(m_rows, k.q, k.alpha, k.v_r, k.bound_r, max(1, int(chunks)))
    window = _narrow_window(cat, roles, tp, shifts_v, shifts_p, shifts_err)
    first, last = (0, tp.t.size) if window is None else window[:2]
    lower = upper = 0.0
    for start in range(first, last, step):
        sl = slice(start, min(start + step, last))
        t = tp.t[sl]
        if use_multi:
            lo_t, up_t = _multi_terms(sl, t, plan, k, shifts_v, shifts_err)
        else:
            lo_t, up_t = _single_terms(t, n - t, k, has_main, shifts_v, shifts_err,
                                       law=law)
        pt = tp.pt[sl]
        lower += float((pt * (1 - REL_SPECIAL)) @ (lo_t @ shifts_p))
        upper += float((pt * (1 + REL_SPECIAL)) @ (up_t @ shifts_p))
    if window is None:
        # T outside its window: E[(S + s)_+ | T] <= pos_pair T + pos_pool (n - T) + E[s_+].
        s_pos = float(shifts_p @ (np.maximum(shifts_v, 0.0) + shifts_err))
        tail = k.pos_pair * tp.tail_et + (k.pos_pool * n + s_pos) * tp.tail_p
    else:
        tail = window[2]            # engine/t_window.py: joint Chernoff bound outside
    upper += tail * (1 + 8 * U)
    lower = max(lower * (1 - REL_SUM), 0.0)
    upper = upper * (1 + REL_SUM) + TINY
    return lower, upper
