"""Exact hockey-stick divergences of the count statistics of multi-message shuffle protocols.

Plain-parameter mathematics (no randomizer objects): the adapter in
:mod:`shufflesim.protocols.bounds.multi_message.models` maps a randomizer to these models.

Every function returns an :class:`~shufflesim.protocols.bounds.engine.common.Estimate`
``(lower, upper)`` that contains the exact divergence of its model: pmfs are evaluated in log
space (``scipy.stats.binom.logpmf``) on windows of +-~10 standard deviations whose outside mass
is computed exactly and charged to the conservative side; every sum of terms carries a relative
slack of :data:`RELATIVE_SLACK` times the sum of the absolute terms; points whose side of the
region {P > e^eps Q} rounding could misjudge are charged to the upper side.

Two model families (derivations in the docstrings):

* :func:`symmetric_cells_delta` -- two *cells* (message groups) that every other message hits
  with the same probability s_g (group g), the distinguished user in cell 0 / cell 1 /
  elsewhere w.p. (u0, u1, uw) under X0 and (u1, u0, uw) under X1 (DUMP, balls-into-bins; with
  several groups of other messages: blanket messages and the other users' input messages);
* :func:`product_delta` -- two independent coordinates a and b (Cheu et al.'s bit columns),
  P0 = A0(a) B0(b), P1 = A1(a) B1(b).

Single-group cell models with asymmetric cells (Balcer et al.'s binary summation) go through
001's two-count kernel (:mod:`shufflesim.protocols.bounds.numerical.two_count`), reused.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from shufflesim.protocols.bounds.engine.common import Estimate
from shufflesim.protocols.distributions import binom
from shufflesim.protocols.errors import require

#: Relative error allowed for each evaluated pmf / tail (they are accurate to a few ulps).
RELATIVE_SLACK = 1e-10
#: Relative tolerance for the location of a region boundary (log-likelihood ratios).
BOUNDARY_TOLERANCE = 1e-9
#: Target mass of a binomial left outside its window (the exact outside mass is charged).
TAIL_TARGET = 1e-24
#: The same for the dense (M, a, b) sums of :func:`thinned_product_delta` (its cost is cubic in
#: the window; 1e-15 is far below any delta it is asked about, and charged exactly).
THINNED_TAIL = 1e-15


def interval(lower: float, upper: float, method: str) -> Estimate:
    """A guaranteed bracket clipped to [0, 1]; ``value`` is the upper end."""
    lo = float(min(1.0, max(0.0, lower)))
    hi = float(min(1.0, max(lo, upper)))
    return Estimate(hi, lo, hi, method)


# ------------------------------------------------------------------------------------------
# Discrete laws on integer windows
# ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Law:
    """A sub-probability pmf on {start, ..., start + len(pmf) - 1}; ``outside`` bounds the mass
    of the full law that is not represented (truncated tails)."""

    start: int
    pmf: np.ndarray
    outside: float = 0.0

    @property
    def support(self) -> np.ndarray:
        return np.arange(self.start, self.start + self.pmf.size)

    def plus_bernoulli(self, u: float) -> Law:
        """The law of X + Bern(u), X independent."""
        padded = np.concatenate([self.pmf, [0.0]])
        shifted = np.concatenate([[0.0], self.pmf])
        return Law(self.start, (1.0 - u) * padded + u * shifted, self.outside)

    def convolve(self, other: Law) -> Law:
        """The law of the sum of two independent variables."""
        return Law(self.start + other.start, np.convolve(self.pmf, other.pmf),
                   self.outside + other.outside)

    def at(self, points: np.ndarray) -> np.ndarray:
        """pmf at integer points (0 outside the window)."""
        index = np.asarray(points, dtype=np.int64) - self.start
        inside = (index >= 0) & (index < self.pmf.size)
        out = np.zeros(index.shape)
        out[inside] = self.pmf[index[inside]]
        return out


def binomial_window(trials: int, prob: float, tail: float = TAIL_TARGET) -> tuple[int, int]:
    """[lo, hi] holding all but ~``tail`` of Bin(trials, prob) (Bernstein)."""
    var = trials * prob * (1.0 - prob)
    log_term = math.log(2.0 / tail)
    t = log_term / 3.0 + math.sqrt((log_term / 3.0) ** 2 + 2.0 * var * log_term)
    mean = trials * prob
    return max(0, int(math.floor(mean - t)) - 1), min(trials, int(math.ceil(mean + t)) + 1)


def binomial_law(trials: int, prob: float, tail: float = TAIL_TARGET) -> Law:
    """Bin(trials, prob) on its window, from log-space pmfs; exact outside mass."""
    require(trials >= 0, "trials", trials, "must be >= 0")
    require(0.0 <= prob <= 1.0, "prob", prob, "must lie in [0, 1]")
    if trials == 0 or prob == 0.0:
        return Law(0, np.ones(1))
    if prob == 1.0:
        return Law(int(trials), np.ones(1))
    lo, hi = binomial_window(int(trials), prob, tail)
    k = np.arange(lo, hi + 1)
    pmf = np.exp(binom.logpmf(k, trials, prob))
    outside = float(binom.cdf(lo - 1, trials, prob) + binom.sf(hi, trials, prob))
    return Law(lo, pmf, outside)


def binomial_sum_law(groups) -> Law:
    """Law of sum_g Bin(N_g, s_g) for groups [(N_g, s_g), ...] (windowed, convolved)."""
    law = Law(0, np.ones(1))
    for trials, prob in groups:
        law = law.convolve(binomial_law(int(trials), float(prob)))
    return law


# ------------------------------------------------------------------------------------------
# Symmetric two-cell model (DUMP, balls-into-bins)
# ------------------------------------------------------------------------------------------
def symmetric_cells_delta(groups, user: tuple[float, float, float],
                          epsilon: float) -> Estimate:
    """D_{e^eps}(P0 || P1) (= D(P1 || P0) by the mirror symmetry) for the count pair (a, b).

    Model: other messages in groups [(N_g, s_g)]: each message of group g lands in cell 0 w.p.
    s_g, in cell 1 w.p. s_g, elsewhere otherwise, independently. The distinguished user's
    message lands in (cell 0, cell 1, elsewhere) w.p. (u0, u1, uw) under P0 and (u1, u0, uw)
    under P1. Write C for the others in the two cells: C ~ sum_g Bin(N_g, 2 s_g) =: w, and,
    because every group is symmetric, A | C ~ Bin(C, 1/2) whatever the groups. On the slice
    t = a + b of the view (derivation: C(t-1, a-1) = (a/t) C(t, a)),

        P0(a, t) = Bin(a; t, 1/2) [ (2 w(t-1)/t) (u0 a + u1 (t - a)) + uw w(t) ],

    and P1 with u0, u1 exchanged, so P0 - e^eps P1 is Bin(a; t, 1/2) times a function linear and
    increasing in a (for u0 > u1): the region is {a >= k_t}, and with
    S_c(k) = P[Bin(c, 1/2) >= k], sum_{a >= k} a Bin(a; t) = (t/2) S_{t-1}(k-1) and
    sum_{a >= k} (t - a) Bin(a; t) = (t/2) S_{t-1}(k), the slice contributes

        w(t-1) [(u0 - e^eps u1) S_{t-1}(k_t - 1) + (u1 - e^eps u0) S_{t-1}(k_t)]
            + uw (1 - e^eps) w(t) S_t(k_t)

    (001 Thm 4.6's form, here with any symmetric mixture law of C). Vectorized over t.
    """
    u0, u1, uw = (float(x) for x in user)
    require(min(u0, u1, uw) >= 0 and u0 + u1 + uw <= 1 + 1e-12, "user", user,
            "must be probabilities summing to at most 1")
    if u0 < u1:
        u0, u1 = u1, u0
    if u0 == u1:
        return interval(0.0, 0.0, "symmetric-cells")
    e = math.exp(epsilon)
    law = binomial_sum_law([(n, 2.0 * s) for n, s in groups])
    # slices t with w(t-1) or w(t) inside the window
    t = np.arange(max(law.start, 1), law.start + law.pmf.size + 1)
    w_prev = law.at(t - 1)
    w_here = law.at(t)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(w_prev > 0, w_here * t / (2.0 * w_prev), np.inf)
        theta = ((e * u0 - u1) * t + uw * (e - 1.0) * ratio) / ((1.0 + e) * (u0 - u1))
    # where w(t-1) = 0 only the elsewhere component remains: it is never in the region
    theta = np.where(np.isfinite(theta), theta, t + 2.0)
    theta = np.clip(theta, -2.0, t + 2.0)
    k = np.floor(theta) + 1.0
    nearest = np.round(theta)
    ambiguous = np.abs(theta - nearest) <= BOUNDARY_TOLERANCE * (np.abs(theta) + 1.0)

    def tail(c, kk):
        return np.where(kk <= 0, 1.0, binom.sf(kk - 1, c, 0.5))

    s_prev_k1 = tail(t - 1, k - 1)
    s_prev_k = tail(t - 1, k)
    s_here_k = tail(t, k)
    terms = [(u0 - e * u1) * w_prev * s_prev_k1, (u1 - e * u0) * w_prev * s_prev_k,
             uw * (1.0 - e) * w_here * s_here_k]
    value = float(sum(np.sum(x) for x in terms))
    absolute = float(sum(np.sum(np.abs(x)) for x in terms))
    extra = 0.0
    if ambiguous.any():
        # there P0 - e^eps P1 = Bin(j; t) * slope * (j - theta_true) with
        # |j - theta_true| <= |j - theta| + (the tolerance): charge that much
        tt, jj, th = t[ambiguous], nearest[ambiguous], theta[ambiguous]
        slope = 2.0 * w_prev[ambiguous] / tt * (1.0 + e) * (u0 - u1)
        gap = np.abs(jj - th) + 2.0 * BOUNDARY_TOLERANCE * (np.abs(th) + 1.0)
        extra = float(np.sum(binom.pmf(jj, tt, 0.5) * slope * gap))
    slack = RELATIVE_SLACK * absolute
    lower = value - slack - e * law.outside
    upper = value + slack + extra + law.outside
    return interval(lower, upper, "symmetric-cells")


# ------------------------------------------------------------------------------------------
# Product model (Cheu et al.: independent bit columns)
# ------------------------------------------------------------------------------------------
def _log_ratio(p0: np.ndarray, p1: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.log(p0) - np.log(p1)


def _aligned(first: Law, second: Law) -> tuple[np.ndarray, np.ndarray]:
    """Both laws' pmfs on the union of their windows."""
    lo = min(first.start, second.start)
    hi = max(first.start + first.pmf.size, second.start + second.pmf.size)
    points = np.arange(lo, hi)
    return first.at(points), second.at(points)


def product_tables(a_laws: tuple[Law, Law], b_laws: tuple[Law, Law]) -> dict:
    """The eps-independent arrays of :func:`product_delta` (both laws aligned, the log-ratios,
    the b's sorted by l_b with the cumulative sums of B0 and B1 in that order, and the windows'
    outside masses): a search over eps builds them once per pair of laws (issue 32)."""
    a0, a1 = _aligned(*a_laws)
    b0, b1 = _aligned(*b_laws)
    keep_a = (a0 > 0) | (a1 > 0)
    keep_b = (b0 > 0) | (b1 > 0)
    a0, a1, b0, b1 = a0[keep_a], a1[keep_a], b0[keep_b], b1[keep_b]
    la, lb = _log_ratio(a0, a1), _log_ratio(b0, b1)
    order = np.argsort(-lb, kind="stable")
    lb_sorted = lb[order]
    return {
        "a": (a0, a1, la),
        "size_b": lb.size,
        "cum0": np.concatenate([[0.0], np.cumsum(b0[order])]),
        "cum1": np.concatenate([[0.0], np.cumsum(b1[order])]),
        "ascending": lb_sorted[::-1],
        "scale": max(1.0, float(np.max(np.abs(la[np.isfinite(la)]), initial=0.0)),
                     float(np.max(np.abs(lb[np.isfinite(lb)]), initial=0.0))),
        "outside0": sum(law.outside for law in (a_laws[0], b_laws[0])),
        "outside1": sum(law.outside for law in (a_laws[1], b_laws[1])),
    }


def product_delta(a_laws: tuple[Law, Law], b_laws: tuple[Law, Law], epsilon: float) -> Estimate:
    """D_{e^eps}(P0 || P1) for P0 = A0 x B0 and P1 = A1 x B1 (independent coordinates).

    With l_a = log A0/A1 and l_b = log B0/B1 the region is {l_a(a) + l_b(b) > eps}: the b's are
    sorted by l_b once, with cumulative sums of B0 and B1 in that order, and each a reads its
    part with one binary search: delta = sum_a [A0(a) B0(b: l_b > eps - l_a(a))
    - e^eps A1(a) B1(same)]. O(W log W) for windows of W points. Upper side: the region with
    eps lowered by a tolerance t, plus 2 t e^eps P1(that region) (every point added has
    P0 >= e^{eps - 2t} P1), plus the windows' outside mass.
    """
    return product_table_delta(product_tables(a_laws, b_laws), epsilon)


def product_table_delta(tables: dict, epsilon: float) -> Estimate:
    """:func:`product_delta` at eps from its :func:`product_tables`."""
    a0, a1, la = tables["a"]
    cum0, cum1, ascending = tables["cum0"], tables["cum1"], tables["ascending"]
    e = math.exp(epsilon)

    def region(threshold: float):
        # number of b with l_b > threshold - l_a, for every a
        with np.errstate(invalid="ignore"):
            cut = threshold - la
        count = tables["size_b"] - np.searchsorted(ascending, cut, side="right")
        count = np.where(np.isnan(cut), 0, count)
        mass0 = float(np.sum(a0 * cum0[count]))
        mass1 = float(np.sum(a1 * cum1[count]))
        return mass0, mass1

    tol = BOUNDARY_TOLERANCE * max(tables["scale"], abs(epsilon))
    m0, m1 = region(epsilon)
    m0w, m1w = region(epsilon - tol)
    outside0, outside1 = tables["outside0"], tables["outside1"]
    lower = m0 - e * m1 - RELATIVE_SLACK * (m0 + e * m1) - e * outside1
    upper = (m0w - e * m1w + RELATIVE_SLACK * (m0w + e * m1w) + 2.0 * tol * e * m1w
             + outside0)
    return interval(lower, upper, "product")


def max_estimate(estimates) -> Estimate:
    """The maximum of several bracketed quantities (e.g. both directions)."""
    estimates = list(estimates)
    return interval(max(x.lower for x in estimates), max(x.upper for x in estimates),
                    estimates[0].method if estimates else "")


# ------------------------------------------------------------------------------------------
# Thinned product model (Cheu et al.: the other users' messages marked by a third column)
# ------------------------------------------------------------------------------------------
def thinned_product_delta(retained: Law, keep_user: float, columns: tuple[float, float],
                          first: tuple[float, float], second: tuple[float, float],
                          epsilon: float, batch: int = 16) -> Estimate:
    """D_{e^eps}(P0 || P1) for the view (M, A, B) of the *retained* messages.

    Model: the analyzer keeps the messages outside a marker set (Cheu et al.: bit x* = 0) and
    reads M = how many it kept and (A, B) = their column counts. The other messages it keeps
    number M_o ~ ``retained`` and have independent columns Bern(columns[0]), Bern(columns[1])
    (independent of being kept); user 1's message is kept w.p. ``keep_user`` under both inputs,
    its columns then Bern(first[k]) under P0 and Bern(second[k]) under P1. So

        P_j(M, a, b) = keep_user w(M - 1) A_j^(M-1)(a) B_j^(M-1)(b)
                       + (1 - keep_user) w(M) Bin(a; M, pa) Bin(b; M, pb),

    A_j^(m) = Bin(m, pa) + Bern(first/second[0]) (likewise B_j). The sum of positive parts is
    evaluated densely on (a, b) windows, slice by slice in M (vectorized over batches of M).
    """
    e = math.exp(epsilon)
    pa, pb = columns
    m_values = np.arange(retained.start, retained.start + retained.pmf.size + 1)
    w_prev, w_here = retained.at(m_values - 1), retained.at(m_values)
    m_max = int(m_values[-1])
    grids = []
    outside_cols = 0.0
    for p in (pa, pb):
        lo_small, _ = binomial_window(max(int(m_values[0]) - 1, 0), p, THINNED_TAIL)
        _, hi_large = binomial_window(m_max, p, THINNED_TAIL)
        grids.append(np.arange(lo_small, hi_large + 2))
        # the lower tail is largest at the smallest M, the upper tail at the largest
        outside_cols += (float(binom.cdf(lo_small - 1, max(int(m_values[0]) - 1, 0), p))
                         + float(binom.sf(hi_large, m_max, p)))
    ga, gb = grids

    def pmfs(m, grid, p):
        with np.errstate(invalid="ignore"):
            values = np.exp(binom.logpmf(grid[None, :], m[:, None], p))
        return np.nan_to_num(values, nan=0.0)  # m = -1: no mass

    def plus(base_prev, base_prev_shift, u):
        return (1.0 - u) * base_prev + u * base_prev_shift

    positive = 0.0
    absolute = 0.0
    for start in range(0, m_values.size, batch):
        m = m_values[start:start + batch].astype(float)
        wp, wh = w_prev[start:start + batch], w_here[start:start + batch]
        a_prev, a_shift = pmfs(m - 1, ga, pa), pmfs(m - 1, ga - 1, pa)
        b_prev, b_shift = pmfs(m - 1, gb, pb), pmfs(m - 1, gb - 1, pb)
        a_here, b_here = pmfs(m, ga, pa), pmfs(m, gb, pb)
        a0, a1 = plus(a_prev, a_shift, first[0]), plus(a_prev, a_shift, second[0])
        b0, b1 = plus(b_prev, b_shift, first[1]), plus(b_prev, b_shift, second[1])
        c1 = (keep_user * wp)[:, None, None]
        c2 = ((1.0 - keep_user) * wh)[:, None, None]
        p0 = c1 * a0[:, :, None] * b0[:, None, :] + c2 * a_here[:, :, None] * b_here[:, None, :]
        p1 = c1 * a1[:, :, None] * b1[:, None, :] + c2 * a_here[:, :, None] * b_here[:, None, :]
        diff = p0 - e * p1
        positive += float(np.sum(np.maximum(diff, 0.0)))
        absolute += float(np.sum(p0) + e * np.sum(p1))
    outside = retained.outside + 2.0 * outside_cols
    slack = RELATIVE_SLACK * absolute
    return interval(positive - slack - e * outside, positive + slack + outside,
                    "thinned-product")


#: Offsets c of the regions {l_a(a) + l_b(b) > eps + c} tried on every slice M by
#: :func:`thinned_product_lower` (the mixture's own threshold lies a little above eps).
THRESHOLD_OFFSETS = (0.0, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0)
#: the offsets are tried in increasing order and the first one (after this many) that improves
#: no slice ends the loop: cheu d = 16, n = 1e4 takes 0.01 / 0.02 almost everywhere and 0.05
#: in two slices of ~900 (6 offsets instead of 9)
OFFSETS_AT_LEAST = 3


#: log-ratios are clipped to +-LOG_CLIP (e^1e4 is infinite for every purpose here), and the
#: rows of the flattened sorted l_b are shifted apart by 4 LOG_CLIP: the smaller the shift, the
#: finer the resolution of l_b + shift (1e6 left 5e-7 at row 1000; 1e4: 7e-9 at row 1400).
#: Rounding only moves a region's boundary, and every region gives a valid lower estimate.
LOG_CLIP = 1e4
#: slices M whose total mass (both components) is at most this are left out of the dense
#: tables (their terms are >= 0, so the lower estimate stays valid; it loses at most this)
THINNED_ROW_DROP = 1e-15


def _heavy_rows(mass: np.ndarray) -> slice:
    """The rows [first, last] left after dropping the lightest ends whose masses sum to at most
    THINNED_ROW_DROP / 2 on each side (cheu d = 16, n = 1e4: 1397 -> ~800 slices)."""
    left = np.cumsum(mass)
    right = np.cumsum(mass[::-1])
    first = int(np.searchsorted(left, 0.5 * THINNED_ROW_DROP, side="right"))
    last = mass.size - int(np.searchsorted(right, 0.5 * THINNED_ROW_DROP, side="right"))
    if last <= first:
        return slice(0, mass.size)
    return slice(first, last)


def _consecutive_pmfs(first: int, rows: int, lo: int, hi: int, p: float) -> np.ndarray:
    """Bin(first + i, p) at the points lo, ..., hi - 1, rows i = 0, ..., rows - 1 (first = -1:
    a row of zeros). The first row with a positive count comes from log-space pmfs, the next
    ones by adding one trial at a time, Bin(c + 1, p) = (1 - p) Bin(c, p) + p Bin(c, p)(. - 1)
    on the same points (the point lo - 1 taken as 0): the rows are then the pmfs of a
    sub-measure whose missing mass is the first row's below lo (a convolution keeps a deficit
    and adds none), with a relative error growing by 4u per row (two non-negative products and
    a sum, and the rounding of 1 - p): 4e-13 at 900 rows, far inside RELATIVE_SLACK. Issue 32:
    the pmf table of cheu d = 16, n = 1e4 (910 x 885 per column) 0.1 s of logpmf -> ~3 ms."""
    table = np.zeros((rows, hi - lo))
    points = np.arange(lo, hi)
    begin = 1 if first < 0 else 0                      # Bin(-1): no mass
    with np.errstate(invalid="ignore"):
        table[begin] = np.nan_to_num(np.exp(binom.logpmf(points, first + begin, p)))
    stay = 1.0 - p
    step = np.empty(hi - lo - 1)
    for i in range(begin + 1, rows):
        np.multiply(table[i - 1], stay, out=table[i])
        np.multiply(table[i - 1, :-1], p, out=step)
        table[i, 1:] += step
    return table


def thinned_tables(retained: Law, keep_user: float, columns: tuple[float, float],
                   first: tuple[float, float], second: tuple[float, float]) -> dict:
    """The eps-independent arrays of :func:`thinned_product_lower` (one row per slice M on a
    common grid): user-kept component laws, log-ratios ln(law0 / law1) (rounding only moves a
    region's boundary), l_b sorted per row with cumulative sums, the windows' outside mass."""
    pa, pb = columns
    m = (retained.support + 1).astype(float)
    c1 = keep_user * retained.pmf
    c2 = (1.0 - keep_user) * retained.at(retained.support + 1)
    rows = _heavy_rows(c1 + c2)
    m, c1, c2 = m[rows], c1[rows], c2[rows]
    tables = {"c1": c1, "c2": c2}
    outside = retained.outside
    for name, p, u, v in (("a", pa, first[0], second[0]), ("b", pb, first[1], second[1])):
        lo, _ = binomial_window(max(int(m[0]) - 1, 0), p, THINNED_TAIL)
        _, hi = binomial_window(int(m[-1]), p, THINNED_TAIL)
        # the slices' M are consecutive and the grid is contiguous, so Bin(M - 1) at the grid
        # and one below it and Bin(M) at the grid are windows of one table (same arguments,
        # hence the same values as three separate tables, in a third of the pmf evaluations)
        table = _consecutive_pmfs(int(m[0]) - 1, m.size + 1, lo - 1, hi + 2, p)
        prev, shift, here = table[:-1, 1:], table[:-1, :-1], table[1:, 1:]
        # the windows' tails (lower: largest at the smallest M, upper: at the largest), and
        # the start row's lower tail once more (_consecutive_pmfs' missing mass)
        low_tail = float(binom.cdf(lo - 1, max(int(m[0]) - 1, 0), p))
        outside += 2.0 * (2.0 * low_tail + float(binom.sf(hi, int(m[-1]), p)))
        law0, law1 = (1 - u) * prev, (1 - v) * prev      # + u shift, + v shift, in place
        law0 += u * shift
        law1 += v * shift
        with np.errstate(divide="ignore", invalid="ignore", over="ignore", under="ignore"):
            np.log(ratio := np.divide(law0, law1), out=ratio)  # one log (issue 32)
        np.minimum(np.fmax(ratio, -LOG_CLIP, out=ratio), LOG_CLIP, out=ratio)  # nan: -LOG_CLIP
        tables[name] = (law0, law1, here, ratio)
    pmf_table = table                       # the b side's: ``gb`` is its window
    b0, b1, _, lb = tables["b"]
    order = np.argsort(lb, axis=1, kind="stable")  # ascending per row
    height, width = lb.shape
    # flat positions of each row's cells in descending l_b: in b0, b1, lb (rows of width) and
    # in the pmf table that ``gb`` is a window of (row i + 1, column j + 1 of width + 1)
    where = order[:, ::-1] + (np.arange(height) * width)[:, None]
    where_g = order[:, ::-1] + ((np.arange(height) + 1) * (width + 1) + 1)[:, None]
    # the a side in descending l_a per row: the cuts eps + c - l_a of thinned_product_lower
    # are then ascending along the flattened rows, and searchsorted runs over sorted keys
    # (issue 32: ~4x faster on cheu d = 16); the sums over a row do not depend on its order.
    # l_a = ln((1 - u + u r) / (1 - v + v r)) with r = Bin(M - 1)(a - 1) / Bin(M - 1)(a)
    # increasing in a is monotone (increasing iff u > v): reversed views where it increases,
    # instead of a sort and four gathers (only cells without mass, clipped, fall out of order)
    first_a, second_a = first[0], second[0]
    if first_a > second_a:
        tables["a"] = tuple(x[:, ::-1] for x in tables["a"])
    # eps-independent parts of thinned_product_lower: the sorted l_b of every row, shifted by
    # row and flattened (one searchsorted for all rows), and the cumulative sums from the top
    # (largest l_b first: top[k] = mass of the k largest) of b0, b1 and gb, each gathered by
    # one take of flat positions. The b side's own arrays are not kept.
    tables["shape"] = lb.shape
    shift = (np.arange(lb.shape[0]) * (4 * LOG_CLIP))[:, None]
    tables["flat"] = np.add(gathered := lb.take(where[:, ::-1]), shift, out=gathered).ravel()
    tables["shift"] = shift
    tops, gathered = [], np.empty(lb.shape)        # one buffer for the three gathers
    for x, at in ((b0, where), (b1, where), (pmf_table, where_g)):
        top = np.zeros((height, width + 1))
        np.cumsum(x.take(at, out=gathered, mode="clip"), axis=1, out=top[:, 1:])  # at: valid
        tops.append(top)
    tables["tops"] = tuple(tops)
    del tables["b"]
    tables["outside"] = outside
    return tables


def thinned_product_lower(tables: dict, epsilon: float) -> float:
    """A guaranteed lower estimate of :func:`thinned_product_delta`'s divergence from
    :func:`thinned_tables`: on each slice M the region is {l_a(a) + l_b(b) > eps + c} for the
    user-kept component's log-ratios, with the best c of :data:`THRESHOLD_OFFSETS` per slice
    (any region gives a lower bound: the sum over it of P0 - e^eps P1 is at most the
    divergence). Vectorized over slices: one searchsorted per offset on the row-shifted sorted
    l_b."""
    e = math.exp(epsilon)
    a0, a1, ga, la = tables["a"]
    rows, width = tables["shape"]
    flat, shift, tops = tables["flat"], tables["shift"], tables["tops"]
    c1, c2 = tables["c1"][:, None], tables["c2"][:, None]
    w0, w1, wg = c1 * a0, c1 * a1, c2 * ga
    r = np.arange(rows)[:, None]
    best = np.zeros(rows)
    for tried, offset in enumerate(THRESHOLD_OFFSETS):
        cut = np.clip(epsilon + offset - la, -2 * LOG_CLIP, 2 * LOG_CLIP) + shift
        below = np.searchsorted(flat, cut.ravel(), side="right").reshape(cut.shape)
        count = np.clip(width - (below - r * width), 0, width)
        top0, top1, top_g = (top[r, count] for top in tops)      # (rows, a window)
        shared = wg * top_g
        p0 = np.sum(w0 * top0 + shared, axis=1)
        p1 = np.sum(w1 * top1 + shared, axis=1)
        value = p0 - e * p1
        if tried >= OFFSETS_AT_LEAST and not (value > best).any():
            break                    # past every slice's best offset (speed only: any subset
                                     # of regions gives a valid lower estimate)
        best = np.maximum(best, value)
    return float(best.sum()) - RELATIVE_SLACK * (1.0 + e) - e * tables["outside"]
