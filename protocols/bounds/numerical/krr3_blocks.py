"""Shuffled 3-RR at any n: the exact curve over every dataset, by blocks of datasets dominated by
revealing reports (the 2-D analogue of brr_exact's blocks).

**Statistic (krr_exact.py).** 3-RR reports its input x with probability p = e^eps0 / (e^eps0 + 2)
and each other value with q = 1 / (e^eps0 + 2). A dataset pair is (n0, n1, nr): user 1 holds x0
(law P0) or x1 (P1), the others hold n0 copies of x0, n1 of x1 and nr of the third value. For
k = 3 the pair of counts Y = (reports x0, reports x1) is the whole histogram, so (000 Thm 12)
delta(eps) = max over n0 + n1 <= n - 1 of D_{n0,n1}(eps) = sum_y (P0(y) - e^eps P1(y))_+, one
direction only (swapping x0 and x1 maps P1 || P0 at (n0, n1) to P0 || P1 at (n1, n0)).

**Blocks.** Every report law is a mixture R(x) = gamma U + (1 - gamma) 1_x with U uniform on the
three values and gamma = 3q (000 Table 1, k-RR's optimal decomposition). Take the rectangle
B = [a0, b0] x [a1, b1] of (n0, n1) (intersected with n0 + n1 <= n - 1) and c = max(0,
n - 1 - b0 - b1). Every dataset in B has at least a0 others at x0, a1 at x1 and c at the third
value; call the remaining w = n - 1 - a0 - a1 - c users the in-between ones. Reveal to the
adversary, for each in-between user, whether it drew from U and, if not, its report (which is
then its own value). That set of revealed facts does not depend on user 1, has the same law under
both hypotheses, and the original histogram is a function of (revealed reports, histogram of the
hidden users' reports): the revealed view dominates (post-processing). Given that b of the
in-between users drew from U, the hidden population is a0 + a1 + c users plus b uniform reporters
plus user 1, whose histogram is again summarized exactly by Y (k = 3). Hence

    D_{n0,n1}(eps) <= sum_b P(Bin(w, gamma) = b) D(a0, a1, c, b; eps)
                   <= D(a0, a1, c, m; eps) + P(Bin(w, gamma) < m)   for every m,

because D is non-increasing in the number of uniform reporters (adding an independent uniform
report to the histogram is a post-processing). A one-point block (w = 0) is the exact pair. The
search refines blocks until each one's certified upper estimate is <= delta at the eps tried (then
every dataset pair's D(eps) <= delta: eps is a proven upper bound), and stops an eps as soon as a
one-point block's certified lower estimate is > delta (a real pair: eps is then a proven lower
bound on the truth) or the refinement budget runs out.

**Certified numerics.** Each class's trinomial Tri(m; a, b) (counts in x0 and in x1) is the
product of two Boost binomial pmfs, P[A = i] P[B = j | A = i] with B | A=i ~ Bin(m - i,
b / (1 - a)), on the windows of its binomial marginals (mass outside bounded by binomial tails and
carried as ``out``). The relative error of each entry: 2 REL_SPECIAL for the two pmfs, the
product's rounding, and the parameters' rounding (d/d theta log Bin(j; m, theta) = (j - m theta) /
(theta (1 - theta)), so a relative rounding c u of theta or of 1 - theta moves the log pmf by at
most c u |j - m theta| / min(theta, 1 - theta)). The classes are convolved in 2-D directly (shift
and add of non-negative terms: relative error <= (terms + 2) u) or, where that is too long,
through the flattened certified FFT (protocols.bounds.numerical.certified_fft; a 2-D convolution
is a 1-D one of the rows laid out with a stride >= the sum of the widths; its 2-norm error e
moves a sum over N cells by at most sqrt(N) e). With T(y) = P0(y) - e^eps P1(y) computed as c(y)
and its error bounded by rho S(y) (S the same combination with absolute coefficients) plus the
absolute FFT part, D is bracketed by sum (c - rho S)_+ and sum (c + rho S)_+ plus the absolute
parts, the windows' outside mass times the coefficients' sum, and the summation's rounding.

**k > 3 (pairs only).** ``population``, ``population_delta`` and ``pair_bracket`` also take k:
there the count pair (x0, x1) of a dataset whose nr others hold values outside {x0, x1} is a
post-processing of its histogram, so a pair's certified lower end is a proven *lower* bound
(krr_exact's ``krr-exact-lower``); the blocks are not used for k > 3 (module krr_exact: the
count pair is not sufficient there).

Cost: one 2-D convolution per block (cached across the eps tried); the blocks near the corner
(n0, n1) = (n - 1, 0) carry the maximum at large eps0. The blocks' work grows like
(n p q)^2 per pair, so the search is used where the windows are small (``MAX_CELLS``); n <= 100
is krr_exact's full enumeration.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass

import numpy as np

from shufflesim.protocols.bounds.engine.common import REL_SPECIAL, U
from shufflesim.protocols.bounds.numerical.brr_exact import binomial_window
from shufflesim.protocols.bounds.numerical.certified_fft import fft_convolve, fft_error_bound
from shufflesim.protocols.distributions import binom

__all__ = ["BlockSearch", "block_cells", "population_delta"]

#: the windows leave at most this fraction of delta outside (bounded, not dropped)
OUT_FRACTION = 1e-6
#: tail P(fewer than m uniform reporters) a block may add, as a fraction of delta
TAIL_FRACTION = 1e-3
#: a 2-D convolution whose direct work exceeds this goes through the certified FFT
DIRECT_MAX_WORK = 300_000_000
#: relative error of eps0 -> p, q and of e^eps (a few ulps), generously
REL_PARAMETERS = 1e-12
#: the blocks the (n0, n1) square starts with along each side
START_SIDE = 8
#: largest window (cells of one class's trinomial at n - 1 users) the search accepts
MAX_CELLS = 12_000


def probabilities(epsilon0: float, k: int = 3) -> tuple[float, float]:
    """(p, q) of k-RR."""
    e0 = math.exp(epsilon0)
    return e0 / (e0 + k - 1.0), 1.0 / (e0 + k - 1.0)


def _binomial_window(m: int, theta: float, out_target: float) -> tuple[int, int, float]:
    """[lo, hi] holding Bin(m, theta) except for a bounded mass <= ``out_target`` (or all of
    it), and that mass."""
    if m == 0:
        return 0, 0, 0.0
    return binomial_window(m, theta, out_target, width=6.0, margin=4, growth=1.25)


@dataclass(frozen=True)
class _Grid:
    """A non-negative 2-D pmf piece z on [lo0, lo0 + rows) x [lo1, lo1 + cols): each entry within
    a relative ``rel`` of its exact value plus an absolute error of 2-norm <= ``abs2``; the
    exact law's mass outside the window is <= ``out``."""

    lo0: int
    lo1: int
    z: np.ndarray
    rel: float
    abs2: float
    out: float


def _trinomial(m: int, a: float, b: float, out_target: float) -> _Grid:
    """Tri(m; a, b): (counts in x0, counts in x1) of m users each counting in x0 with
    probability a and in x1 with b (module docstring)."""
    if m == 0:
        return _Grid(0, 0, np.ones((1, 1)), 0.0, 0.0, 0.0)
    lo0, hi0, out0 = _binomial_window(m, a, 0.5 * out_target)
    lo1, hi1, out1 = _binomial_window(m, b, 0.5 * out_target)
    i = np.arange(lo0, hi0 + 1)[:, None]
    j = np.arange(lo1, hi1 + 1)[None, :]
    theta = b / (1.0 - a)
    rest = m - i
    ok = j <= rest
    first = np.asarray(binom.pmf(i, m, a), dtype=float)
    second = np.asarray(binom.pmf(np.where(ok, j, 0), np.maximum(rest, 0), theta), dtype=float)
    z = np.where(ok, first * second, 0.0)
    dev_a = max(abs(lo0 - m * a), abs(hi0 - m * a)) + 1.0
    dev_b = float(np.max(np.abs(np.where(ok, j - rest * theta, 0.0)))) + 1.0
    param = 16 * U * (dev_a / min(a, 1.0 - a) + dev_b / min(theta, 1.0 - theta))
    return _Grid(lo0, lo1, z, 2 * REL_SPECIAL + 4 * U + param, 0.0, out0 + out1)


def _shift_add(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Direct 2-D convolution of non-negative arrays, looping over y's non-zero entries (y the
    smaller one)."""
    rows, cols = x.shape[0] + y.shape[0] - 1, x.shape[1] + y.shape[1] - 1
    out = np.zeros((rows, cols))
    for r, c in zip(*np.nonzero(y)):
        out[r:r + x.shape[0], c:c + x.shape[1]] += y[r, c] * x
    return out


def _convolve(g: _Grid, h: _Grid, direct: bool = False) -> _Grid:
    """The law of the sum of two independent 2-D counts (module docstring for the errors);
    ``direct``: never through the FFT."""
    x, y = (g.z, h.z) if g.z.size >= h.z.size else (h.z, g.z)
    rel = g.rel + h.rel
    # a carried absolute error e of one factor becomes e * (other): 2-norm <= ||e||_2 (mass <= 1)
    abs2 = (g.abs2 + h.abs2) * (1 + 1e-12)
    if direct or x.size * y.size <= DIRECT_MAX_WORK:
        z = _shift_add(x, y)
        rel += (y.size + 2) * U
    else:
        stride = x.shape[1] + y.shape[1] - 1
        fx = np.zeros((x.shape[0], stride))
        fx[:, : x.shape[1]] = x
        fy = np.zeros((y.shape[0], stride))
        fy[:, : y.shape[1]] = y
        flat, err = fft_convolve(fx.ravel(), fy.ravel(), fft_error_bound(fx.ravel(), fy.ravel()))
        rows = x.shape[0] + y.shape[0] - 1
        z = np.zeros(rows * stride)
        z[: min(len(flat), z.size)] = flat[: z.size]
        z = z.reshape(rows, stride)
        abs2 += err
    return _Grid(g.lo0 + h.lo0, g.lo1 + h.lo1, z, rel, abs2, g.out + h.out)


def user_one_shifts(z: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The others' 2-D count law z placed for user 1's report: (z, z shifted by one x0
    report, z shifted by one x1 report), each on the grid one larger in both counts."""
    rows, cols = z.shape
    zz = np.zeros((rows + 1, cols + 1))
    s0 = np.zeros_like(zz)
    s1 = np.zeros_like(zz)
    zz[:-1, :-1] = z
    s0[1:, :-1] = z
    s1[:-1, 1:] = z
    return zz, s0, s1


def population(epsilon0: float, a0: int, a1: int, c: int, m: int, out_target: float,
               direct: bool = False, k: int = 3) -> _Grid:
    """Z: the counts (x0, x1) of a0 users at x0, a1 at x1, c at the third value and m uniform
    reporters (``direct``: every convolution by the direct sum, no absolute error)."""
    p, q = probabilities(epsilon0, k)
    third = 1.0 / k
    parts = [_trinomial(cnt, a, b, out_target / 4)
             for cnt, a, b in ((a0, p, q), (a1, q, p), (c, q, q), (m, third, third)) if cnt > 0]
    if not parts:
        return _Grid(0, 0, np.ones((1, 1)), 0.0, 0.0, 0.0)
    parts.sort(key=lambda g: -g.z.size)
    out = parts[0]
    for g in parts[1:]:
        out = _convolve(out, g, direct)
    return out


def population_delta(epsilon: float, epsilon0: float, z: _Grid,
                     k: int = 3) -> tuple[float, float]:
    """(lower, upper) of D(eps) = sum_y (P0 - e^eps P1)_+ with user 1 added to population z
    (k-RR's user 1: x0 w.p. p, x1 w.p. q, neither w.p. r = 1 - p - q)."""
    if epsilon >= epsilon0:
        return 0.0, 0.0
    p, q = probabilities(epsilon0, k)
    r = max(1.0 - p - q, 0.0)
    e = math.exp(epsilon)
    zz, s0, s1 = user_one_shifts(z.z)
    t = (p - e * q) * s0 + (q - e * p) * s1 + (r - e * r) * zz
    scale = (p + e * q) * s0 + (q + e * p) * s1 + (r + e * r) * zz
    rho = z.rel + REL_PARAMETERS + 8 * U
    cells = t.size
    weight = (p + e * q) + (q + e * p) + (r + e * r)
    absolute = weight * (math.sqrt(z.z.size) * z.abs2 + z.out) * (1 + 1e-12)
    upper = float(np.sum(np.maximum(t + rho * scale, 0.0))) * (1 + (cells + 4) * U) + absolute
    lower = float(np.sum(np.maximum(t - rho * scale, 0.0))) * (1 - (cells + 4) * U) - absolute
    return max(lower, 0.0), upper


def block_cells(epsilon0: float, n: int) -> float:
    """Cells of the largest class window at n - 1 users (the search's cost per pair)."""
    p, q = probabilities(epsilon0)
    m = max(n - 1, 1)
    sd0 = math.sqrt(m * p * (1 - p))
    sd1 = math.sqrt(m * q * (1 - q))
    return (2 * 9 * sd0 + 9) * (2 * 9 * sd1 + 9)


class BlockSearch:
    """The block refinement of one (eps0, n, delta) (module docstring). ``certify(eps)`` returns
    True when every block's certified upper D(eps) is <= delta (eps is then a proven upper bound
    on the curve's eps(delta)); ``best_lower`` is the largest eps at which a single dataset pair
    was certified to have D > delta (a proven lower bound), ``where`` that pair."""

    def __init__(self, epsilon0: float, n: int, delta: float, max_blocks: int = 4000,
                 k: int = 3) -> None:
        self.epsilon0, self.n, self.delta, self.k = float(epsilon0), int(n), float(delta), int(k)
        self.max_blocks = max_blocks
        self.out_target = OUT_FRACTION * self.delta
        self.tail = TAIL_FRACTION * self.delta
        _, q = probabilities(self.epsilon0, self.k)
        self.gamma = self.k * q
        self._pops: dict = {}
        self._kept: dict = {}
        side = max(1, min(START_SIDE, n))
        edges = np.unique(np.linspace(0, n, side + 1).astype(int))
        self.blocks = [(int(a0), int(b0) - 1, int(a1), int(b1) - 1)
                       for a0, b0 in zip(edges[:-1], edges[1:])
                       for a1, b1 in zip(edges[:-1], edges[1:]) if a0 + a1 <= n - 1]
        self.best_lower = 0.0
        self.where: tuple[int, int, int] | None = None
        self.evaluations = 0

    def _kept_uniform(self, width: int) -> tuple[int, float]:
        """(m, t): at least m of ``width`` in-between users draw from U except with probability
        t <= tail."""
        if width in self._kept:
            return self._kept[width]
        m, below = 0, 0.0
        if width > 0 and self.gamma > 0:
            m = int(binom.ppf(self.tail, width, self.gamma))
            while m > 0:
                below = float(binom.cdf(m - 1, width, self.gamma)) * (1 + 10 * REL_SPECIAL)
                if below <= self.tail:
                    break
                m -= 1
            if m == 0:
                below = 0.0
        self._kept[width] = (m, below)
        return m, below

    def _population(self, a0: int, a1: int, c: int, m: int, direct: bool = False) -> _Grid:
        key = (a0, a1, c, m)
        z = self._pops.get(key)
        if z is None or (direct and z.abs2 > 0):
            z = population(self.epsilon0, a0, a1, c, m, self.out_target, direct, self.k)
            self._pops[key] = z
            self.evaluations += 1
        return z

    def block_delta(self, epsilon: float, block) -> tuple[float, float]:
        """(lower, upper): lower is a real pair's certified lower D (one-point blocks only, else
        0), upper bounds D(eps) of every dataset pair in the block."""
        a0, b0, a1, b1 = block
        n = self.n
        c = max(0, n - 1 - b0 - b1)
        width = n - 1 - a0 - a1 - c
        if width == 0:
            z = self._population(a0, a1, c, 0)
            lower, upper = population_delta(epsilon, self.epsilon0, z, self.k)
            if z.abs2 > 0 and lower <= self.delta < upper:
                # the FFT's absolute slack decides: the direct sum has none
                z = self._population(a0, a1, c, 0, direct=True)
                lower, upper = population_delta(epsilon, self.epsilon0, z, self.k)
            return lower, upper
        m, below = self._kept_uniform(width)
        _, upper = population_delta(epsilon, self.epsilon0, self._population(a0, a1, c, m),
                                    self.k)
        return 0.0, upper + below

    def certify(self, epsilon: float) -> bool:
        """Refine the blocks at eps (module docstring); the partition reached is kept for the
        next call (any partition gives a valid bound)."""
        heap = []
        accepted = []
        for block in self.blocks:
            lower, upper = self.block_delta(epsilon, block)
            heap.append((-upper, lower, block))
        heapq.heapify(heap)
        ok = True
        while heap:
            neg, lower, block = heapq.heappop(heap)
            if -neg <= self.delta:
                accepted.append(block)
                continue
            a0, b0, a1, b1 = block
            if a0 == b0 and a1 == b1:
                if lower > self.delta and epsilon > self.best_lower:
                    self.best_lower = epsilon
                    self.where = (a0, a1, self.n - 1 - a0 - a1)
                ok = False
            elif self.evaluations > self.max_blocks:
                ok = False
            if not ok:
                accepted.append(block)
                accepted.extend(b for _, _, b in heap)
                break
            for half in _split(block, self.n):
                lo, up = self.block_delta(epsilon, half)
                heapq.heappush(heap, (-up, lo, half))
        self.blocks = accepted
        return ok


def _split(block, n: int):
    """The two halves of a rectangle along its longer side, those meeting n0 + n1 <= n - 1."""
    a0, b0, a1, b1 = block
    if b0 - a0 >= b1 - a1:
        mid = (a0 + b0) // 2
        halves = [(a0, mid, a1, b1), (mid + 1, b0, a1, b1)]
    else:
        mid = (a1 + b1) // 2
        halves = [(a0, b0, a1, mid), (a0, b0, mid + 1, b1)]
    return [h for h in halves if h[0] + h[2] <= n - 1]


def pair_bracket(search: BlockSearch, config: tuple[int, int, int]) -> tuple[float, float]:
    """(lower, upper) of one dataset pair's eps(delta) by bisection on its certified curve:
    lower = an eps with certified D > delta (0 if none), upper = one with D <= delta. For
    k > 3 the pair is the count statistic (x0, x1) of a dataset whose nr others hold values
    outside {x0, x1}: a post-processing, so ``lower`` is a proven lower bound there too."""
    n0, n1, nr = config
    z = search._population(n0, n1, nr, 0)
    lo, hi = 0.0, search.epsilon0
    low0, up0 = population_delta(0.0, search.epsilon0, z, search.k)
    if up0 <= search.delta:
        return 0.0, 0.0
    if low0 <= search.delta:
        return 0.0, hi
    for _ in range(60):
        if hi - lo <= 1e-10 * hi:
            break
        mid = 0.5 * (lo + hi)
        lower, upper = population_delta(mid, search.epsilon0, z, search.k)
        if lower > search.delta:
            lo = mid
        elif upper <= search.delta:
            hi = mid
        else:
            break
    return lo, hi


def pair_epsilon(search: BlockSearch, config: tuple[int, int, int]) -> float:
    """Certified lower end of one dataset pair's eps(delta) (pair_bracket)."""
    return pair_bracket(search, config)[0]


def krr3_epsilon(epsilon0: float, n: int, delta: float, corners, rtol: float = 1e-6):
    """(lower, upper, worst pair, pairs evaluated) of shuffled 3-RR's eps(delta) over every
    dataset: lower = the best of ``corners`` (dataset pairs) and of the pairs the refinement
    certified above delta; upper = the smallest eps the block refinement certified."""
    search = BlockSearch(epsilon0, n, delta)
    best, where = 0.0, None
    for cfg in corners:
        value = pair_epsilon(search, cfg)
        if value > best:
            best, where = value, cfg
    failed, upper = best, float(epsilon0)
    for step in (1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 3e-2, 1e-1, 3e-1):
        trial = best * (1 + step) if best > 0 else step
        if trial >= epsilon0:
            break
        if search.certify(trial):
            upper = trial
            break
        failed = max(failed, trial)
    for _ in range(12):
        if upper - failed <= rtol * upper:
            break
        mid = 0.5 * (failed + upper)
        if search.certify(mid):
            upper = mid
        else:
            failed = mid
    if search.best_lower > best:
        best, where = search.best_lower, search.where
    return best, upper, where, search.evaluations
