"""Dataset-pair search for a proven lower bound (issue 31, "search dataset pairs, not one
triple"), for single-message randomizers with categorical inputs and a finite output.

Every neighbouring pair X0 = (x0, D), X1 = (x1, D) (D a multiset of the other n - 1 inputs)
gives a lower bound on the shuffled mechanism's delta(eps), and so does every post-processing
of its shuffled output (data processing). 000 Thm 14 takes D = (x2, ..., x2) with the full
statistic; here D is any mixture of three groups: m0 users at x0, m1 at x1 and mr at x2. The
post-processing is 001 Thm 5.1's: each report y goes to category 0 if R(x0)(y) > R(x1)(y), 1 if
R(x1)(y) > R(x0)(y), else 2, and the statistic is the pair of counts (A, B). A user at input z
lands in the categories w.p. s(z) = (s0, s1, 1 - s0 - s1), so

    (A, B) = c(user 1) + T(m0; s(x0)) + T(m1; s(x1)) + T(mr; s(x2))

with T the trinomial counts, and D_{e^eps}(P_X0 || P_X1) >= sum_{a,b} (P(a, b) - e^eps Q(a, b))_+
with P = u * O, Q = v * O (u = s(x0), v = s(x1) the distinguished user's, O the others' law).
For k-RR with k = 3 the categories are the whole histogram, so the search over (m0, m1, mr)
reaches the exact curve there (krr_exact); for binary RR likewise (brr_exact).

Certified evaluation: each trinomial pmf is a product of two binomial pmfs (relative error
below ``_PMF_SLACK`` each, ``_CELL_RELATIVE`` per cell after the convolution); the groups are
convolved directly when one is small (non-negative sums), else by FFT with the 2-norm error
bound of certified_fft (a 2-D convolution is a 1-D one of the row-major flattened arrays with
a row stride that leaves no wrap-around). A cell's computed term differs from the exact one by
at most r (P + e^eps Q) + (1 + e^eps) E (E the 2-norm bound, which also bounds every entry);
cells whose computed term is below minus that bound are 0 on both sides, and the others
contribute at most their share, with the FFT part summed by Cauchy-Schwarz. The lower estimate
subtracts all of it (and the rounding of the sum). The relative part charges up to about
2 _CELL_RELATIVE ~ 1.2e-10 in all, so the search certifies little at delta below ~1e-9.

Cost: (n + 1)^2 cells per dataset, so n <= MAX_N.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from shufflesim.protocols.bounds.engine.common import Estimate
from shufflesim.protocols.bounds.numerical import variation_ratio as vr
from shufflesim.protocols.bounds.numerical.certified_fft import fft_convolve
from shufflesim.protocols.bounds.numerical.decompositions import neighbour_candidates
from shufflesim.protocols.bounds.result import BoundKind, BoundResult, BoundStatus
from shufflesim.protocols.distributions import binom
from shufflesim.protocols.errors import require, require_int_at_least, require_probability_open

REFERENCE = ("000 Thm 14 generalized to mixed others, post-processed as 001 Thm 5.1 "
             "(data processing on concrete dataset pairs)")
#: largest n (the statistic has (n + 1)^2 cells)
MAX_N = 2000
#: relative error allowed for each binomial pmf value: a few ulps of scipy's pmf, plus the
#: effect of the category masses' own rounding (relative ~1e-15 each, times up to n = 2000
#: trials in the exponent)
_PMF_SLACK = 1e-11
#: relative error of a cell of P or Q: three groups, two pmfs each, multiplied in the
#: convolution's terms (sums of non-negative terms keep the relative bound), plus the rounding
#: of those products and sums (up to (_DIRECT + 1)^2 direct terms) and of the user's mixture
_CELL_RELATIVE = 6 * _PMF_SLACK + 256 * 2.0 ** -53
#: groups up to this size are convolved directly
_DIRECT = 8
_U = 2.0 ** -53


@dataclass(frozen=True)
class Dataset:
    """The distinguished user's pair (x0, x1) and the others: m0 at x0, m1 at x1, mr at x2."""

    x0: int
    x1: int
    x2: int
    m0: int
    m1: int
    mr: int

    def label(self) -> str:
        return (f"(x0, x1, x2) = ({self.x0}, {self.x1}, {self.x2}), others "
                f"(m0, m1, mr) = ({self.m0}, {self.m1}, {self.mr})")


def category_masses(randomizer, x0: int, x1: int, inputs) -> np.ndarray:
    """rows (s0, s1) for each input in ``inputs``: the masses of the outputs more likely under
    x0 and under x1 (exact sums of the randomizer's output pmf)."""
    anchors = (int(x0), int(x1)) + tuple(int(z) for z in inputs)
    mass = np.asarray(randomizer.output_groups(anchors).mass, dtype=float)
    higher0, higher1 = mass[0] > mass[1], mass[1] > mass[0]
    return np.stack([mass[:, higher0].sum(axis=1), mass[:, higher1].sum(axis=1)], axis=1)[2:]


def trinomial(m: int, s0: float, s1: float) -> np.ndarray:
    """P(A = a, B = b) for m users each in category 0 w.p. s0, 1 w.p. s1, shape (m+1, m+1):
    Bin(a; m, s0) Bin(b; m - a, s1 / (1 - s0)) (0 above the anti-diagonal)."""
    a = np.arange(m + 1)
    out = np.zeros((m + 1, m + 1))
    pa = binom.pmf(a, m, s0)
    rest = 1.0 - s0
    if rest <= 0:
        out[m, 0] = 1.0
        return out
    ratio = min(1.0, s1 / rest)
    b = np.arange(m + 1)
    cond = binom.pmf(b[None, :], (m - a)[:, None], ratio)
    cond[b[None, :] > (m - a)[:, None]] = 0.0
    return pa[:, None] * cond


def _convolve2(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, float]:
    """(z, e): the 2-D convolution of non-negative x and y, and a bound e on the 2-norm of its
    error beyond the inputs' own relative error (0 for the direct sum)."""
    rows, cols = x.shape[0] + y.shape[0] - 1, x.shape[1] + y.shape[1] - 1
    if min(x.size, y.size) <= (_DIRECT + 1) ** 2:
        small, big = (x, y) if x.size <= y.size else (y, x)
        z = np.zeros((rows, cols))
        for (i, j) in zip(*np.nonzero(small), strict=True):
            z[i:i + big.shape[0], j:j + big.shape[1]] += small[i, j] * big
        return z, 0.0
    xf = np.zeros((x.shape[0], cols))
    xf[:, :x.shape[1]] = x
    yf = np.zeros((y.shape[0], cols))
    yf[:, :y.shape[1]] = y
    flat, error = fft_convolve(xf.ravel(), yf.ravel())
    z = np.zeros(rows * cols)
    z[:flat.size] = flat[:rows * cols]
    return z.reshape(rows, cols), error


@dataclass(frozen=True)
class PairStatistic:
    """The others' law O of (A, B) (with its FFT error bound) and the distinguished user's
    category probabilities u (at x0) and v (at x1), each (p0, p1, p_else)."""

    dataset: Dataset
    others: np.ndarray
    fft_error: float
    u: tuple
    v: tuple


def pair_statistic(randomizer, dataset: Dataset) -> PairStatistic:
    d = dataset
    s = category_masses(randomizer, d.x0, d.x1, (d.x0, d.x1, d.x2))
    others, error = np.ones((1, 1)), 0.0
    for m, (s0, s1) in zip((d.m0, d.m1, d.mr), s, strict=True):
        if m > 0:
            others, e = _convolve2(others, trinomial(m, float(s0), float(s1)))
            error += e
    u = (float(s[0][0]), float(s[0][1]), max(0.0, 1.0 - float(s[0][0]) - float(s[0][1])))
    v = (float(s[1][0]), float(s[1][1]), max(0.0, 1.0 - float(s[1][0]) - float(s[1][1])))
    return PairStatistic(d, others, error, u, v)


def _with_user(others: np.ndarray, w: tuple) -> np.ndarray:
    rows, cols = others.shape
    out = np.zeros((rows + 1, cols + 1))
    out[1:, :-1] += w[0] * others
    out[:-1, 1:] += w[1] * others
    out[:-1, :-1] += w[2] * others
    return out


def pair_divergence(stat: PairStatistic, epsilon: float, reverse: bool = False) -> Estimate:
    """Bracket of D_{e^eps}(P || Q) of the statistic (P: user at x0; reverse swaps the roles),
    a lower bound on the dataset pair's divergence (module docstring for the error)."""
    p, q = _with_user(stat.others, stat.u), _with_user(stat.others, stat.v)
    if reverse:
        p, q = q, p
    scale = math.exp(epsilon)
    term = p - scale * q
    # every cell: |computed - exact| <= r (P + e^eps Q) + (1 + e^eps) E
    relative = _CELL_RELATIVE * (p + scale * q)
    fft = (1.0 + scale) * stat.fft_error
    live = term > -(relative + fft)
    value = float(np.sum(np.maximum(term, 0.0)))
    error = float(np.sum(relative[live])) + fft * math.sqrt(float(np.count_nonzero(live)))
    error += 4 * _U * term.size * value
    return Estimate(value, max(0.0, value - error), value + error, "pair-search")


def _compositions(n: int, grid: int) -> list[tuple[int, int, int]]:
    """(m0, m1, mr) with m0 + m1 + mr = n - 1: a grid of fractions of the simplex plus each
    corner's neighbourhood (up to 3 users off the corner)."""
    m = n - 1
    seen = set()
    steps = sorted({round(m * i / grid) for i in range(grid + 1)})
    for a in steps:
        for b in steps:
            if a + b <= m:
                seen.add((a, b, m - a - b))
    for corner in ((m, 0, 0), (0, m, 0), (0, 0, m)):
        for da in range(-3, 4):
            for db in range(-3, 4):
                a, b = corner[0] + da, corner[1] + db
                if a >= 0 and b >= 0 and a + b <= m:
                    seen.add((a, b, m - a - b))
    return sorted(seen)


def applies(randomizer) -> bool:
    """Categorical input, finite output (the output groups can be counted)."""
    return hasattr(getattr(randomizer, "input_domain", None), "size") \
        and getattr(randomizer, "output_kind", "discrete") == "discrete"


def pair_search_epsilon(randomizer, n: int, delta: float, *, grid: int = 4,
                        refine: int = 6) -> BoundResult:
    """Proven lower bound on the shuffled eps(delta): the best dataset pair found among
    (x0, x1, x2) from the randomizer's candidate triples and the others' compositions
    (m0, m1, mr) on a grid of the simplex plus the corners' neighbourhoods, then refined by a
    local search around the best (``refine`` rounds of halving steps). Each pair's value is
    its certified lower end (module docstring); the note names the best pair."""
    start = time.perf_counter()
    require_int_at_least("n", n, 2)
    require(n <= MAX_N, "n", n, f"the pair search evaluates (n + 1)^2 cells: n <= {MAX_N}")
    require_probability_open("delta", delta)
    require(applies(randomizer), "randomizer.name", getattr(randomizer, "name", None),
            "needs a categorical input and a finite output")
    eps0 = float(randomizer.epsilon0)
    cache: dict[Dataset, PairStatistic] = {}

    def stat_of(d: Dataset) -> PairStatistic:
        if d not in cache:
            cache[d] = pair_statistic(randomizer, d)
        return cache[d]

    def lower_delta(d: Dataset, eps: float) -> Estimate:
        s = stat_of(d)
        a, b = pair_divergence(s, eps), pair_divergence(s, eps, reverse=True)
        return a if a.lower >= b.lower else b

    triples = {(int(t[0]), int(t[1]), int(t[2])) for t in neighbour_candidates(randomizer).triples}
    datasets = [Dataset(x0, x1, x2, *c) for (x0, x1, x2) in sorted(triples)
                for c in _compositions(n, grid)]

    best_eps, best = 0.0, None

    def consider(d: Dataset) -> None:
        nonlocal best_eps, best
        if best is not None and not lower_delta(d, best_eps).lower > delta:
            return  # cannot certify anything above the best so far
        search = vr.invert(lambda e: lower_delta(d, e), delta, "lower", eps0)
        if search.value > best_eps or best is None:
            best_eps, best = float(search.value), d
        if len(cache) > 64:  # keep memory bounded (each law has (n + 1)^2 cells)
            for key in list(cache)[:32]:
                if key != best:
                    del cache[key]

    for d in datasets:
        consider(d)
    step = max(1, (n - 1) // (2 * grid))
    for _ in range(refine):
        if best is None:
            break
        centre = best
        for da, db in ((step, 0), (-step, 0), (0, step), (0, -step), (step, -step),
                       (-step, step)):
            m0, m1 = centre.m0 + da, centre.m1 + db
            mr = n - 1 - m0 - m1
            if min(m0, m1, mr) >= 0:
                consider(Dataset(centre.x0, centre.x1, centre.x2, m0, m1, mr))
        if best == centre:
            if step == 1:
                break
            step = max(1, step // 2)
    where = best.label() if best is not None else "none"
    return BoundResult("pair-search-lower", BoundKind.LOWER, float(min(best_eps, eps0)),
                       float(delta), 0.0, BoundStatus.PROVEN, REFERENCE,
                       time.perf_counter() - start, f"best dataset pair found: {where}")
