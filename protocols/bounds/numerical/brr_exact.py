"""Binary randomized response shuffled: the exact privacy curve over *every* dataset, at any n.

The shuffled output of binary RR is (a post-processing-equivalent of) the number Y of reports
equal to 1. Let user 1 be the one that differs and let the n - 1 others hold k ones and
n - 1 - k zeros. With p = e^eps0 / (e^eps0 + 1), the others' count is

    Z_k = Bin(k, p) + Bin(n - 1 - k, 1 - p)        (independent),

and Y = Z_k + Bern(p) when user 1 holds 1 (law P1), Y = Z_k + Bern(1 - p) when it holds 0 (P0).
Flipping every bit maps (P1 || P0, k) to (P0 || P1, n - 1 - k), so the mechanism's privacy curve
is exactly

    delta(eps) = max_{0 <= k <= n-1} D_k(eps),   D_k(eps) = sum_y (P1(y) - e^eps P0(y))_+

(every neighbouring pair of datasets is one of these up to relabelling the users; this is the
truth that 000 Thm 13's blanket bound and 000 Thm 14's single pair, k = 0, bracket). With
g = pmf of Z_k and G(s) = P(Z_k >= s):

    P1(y) - e^eps P0(y) = A g(y - 1) - B g(y),  A = p - e^eps (1 - p),  B = e^eps p - (1 - p),

and, since Z_k is a sum of independent Bernoulli variables, g is log-concave, so the likelihood
ratio P1 / P0 is non-decreasing in y and D_k = max_t D_k,t with D_k,t = A G(t - 1) - B G(t)
(the partial sums of a sequence that changes sign once). For eps >= eps0, A <= 0 and D_k = 0.

**Every k at any n, proven.** Computing D_k for all n values of k costs n convolutions. Blocks
of k are covered instead by one dominating pair: for k in [J, J2], reveal to the adversary the
reports of k - J of the users holding 1 and of J2 - k of those holding 0 (a set that does not
depend on user 1's value). The revealed sum is independent of user 1 and has the same law under
both hypotheses, so by post-processing D_k(eps) <= D'(eps), the exact curve of the population
with n - (J2 - J) users whose others hold J ones and n - 1 - J2 zeros. A block is split (into
halves) until its upper estimate is within a relative ``ETA`` of the largest certified lower
estimate of a single k (or of a negligible ``ETA * threshold``), or until it is at most
``MIN_WIDTH_FRACTION * n`` wide (a population smaller by that fraction: eps moves by about
half that fraction). The result brackets the truth: lower = max over the single k evaluated
(each a real pair, hence a proven lower bound), upper = max over the blocks (proven upper).

**Certified numerics.** For each pair the two binomial pmfs are computed on windows (scipy's
Boost pmf, relative error <= REL_SPECIAL, protocols.bounds.engine.common) whose outside mass
P_out is computed from binomial tails and bounded; g on the windows is the exact convolution
(non-negative terms: relative error <= (terms) u). Restricting to the windows moves D_k,t by at
most max(A, B) P_out <= e^eps P_out, and the cancellation in A G - B G is bounded by a relative
error times A G + B G. Then D_k <= max_t upper(D_k,t^in) + e^eps P_out (D_k = D_k,t* for the
true threshold t*, and the maximum covers it) and D_k >= lower(D_k,t^in) - e^eps P_out for
every t. eps(delta) is inverted with the engine's certified search
(protocols.bounds.engine.eps_search.epsilon_of_delta).

**Large n (FFT).** Where the two windows are long (``FFT_MIN_WORK``), the convolution runs
through protocols.bounds.numerical.certified_fft: its error is bounded in the 2-norm (e), so a
suffix sum over S window entries moves by at most sqrt(S) e, which pair_delta adds to the
upper estimate and subtracts from the lower one (times A or B). The search allows it only where
that absolute slack stays below ``FFT_BUDGET * ETA * threshold`` (negligible against the
blocks' own slack); elsewhere, and without a threshold, the direct sum is used.

Cost: one convolution of two windows of about 28 sd each per block (sd = sqrt(k p (1 - p))),
cached across the eps search (O(w^2) directly, O(w log w) through the FFT); the blocks near
the two ends (small J) are cheap and carry the maximum. Bounds: ``brr-exact`` (upper, proven)
and ``brr-exact-lower`` (lower, proven: the best single dataset pair found, item 3 of issue 31
for binary RR).
"""

from __future__ import annotations

import functools
import heapq
import itertools
import math
import time
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

from shufflesim.protocols.bounds.engine.common import REL_SPECIAL, Estimate, U
from shufflesim.protocols.bounds.engine.eps_search import epsilon_of_delta
from shufflesim.protocols.bounds.numerical.certified_fft import fft_convolve, fft_error_bound
from shufflesim.protocols.bounds.result import BoundKind, BoundResult, BoundStatus
from shufflesim.protocols.bounds.spec import BoundSpec, named
from shufflesim.protocols.distributions import binom
from shufflesim.protocols.errors import require, require_int_at_least, require_probability_open

__all__ = ["brr_exact_delta", "brr_exact_epsilon", "brr_exact_lower_epsilon", "pair_delta"]

REFERENCE = ("exact over every dataset (count sufficient statistic; blocks of datasets "
             "dominated by revealing reports), derived in protocols/bounds/numerical/brr_exact.py")
#: relative slack of a block's upper estimate over the best single pair before it is accepted
ETA = 2e-2
#: relative eps bracket above which the search is redone with ETA / 10
FINE_GAP = 2e-3
#: blocks narrower than this fraction of n are not split further
MIN_WIDTH_FRACTION = 2e-5
#: single k evaluated at each end before any block
END_SINGLES = 4
#: blocks the middle range starts with
START_BLOCKS = 8
#: the windows leave at most this much binomial mass outside (bounded, not dropped)
OUT_TARGET = 1e-40
#: with a threshold, the windows may leave this fraction of it outside (charged in full: about
#: 1e-6 of the finer pass's slack ETA / 10)
OUT_FRACTION = 1e-9
#: relative error of eps0 -> p and of e^eps (a few ulps), generously
REL_PARAMETERS = 1e-12
#: a block may add this fraction of ETA * threshold for too few uniform reporters
TAIL_FRACTION = 1e-2
#: windows whose length product exceeds this are convolved through the FFT (when allowed)
FFT_MIN_WORK = 2_000_000
#: the FFT's absolute slack on a suffix sum may reach this fraction of ETA * threshold (1 % of
#: the blocks' own slack; at 1e-3 the finer pass refused the FFT for most uniform reporters'
#: convolutions at n = 1e7, whose bound is ~1.1x that, and convolved them directly)
FFT_BUDGET = 1e-2
#: randomizers whose shuffled curve is this one: binary RR, and Duchi et al.'s 1-D mechanism
#: (reports +-B with P[+B | x] = 1/2 + x tanh(eps0/2)/2: each report is a mixture of the two
#: extreme inputs' Bernoulli(p), Bernoulli(1 - p), i.e. of binary RR's. The others' mixtures are
#: a common mixture of both hypotheses and user 1's pair (lambda, lambda') gives
#: D(lambda M1 + (1 - lambda) M0 || lambda' M1 + (1 - lambda') M0) <= |lambda - lambda'|
#: max(D(M1 || M0), D(M0 || M1)) by joint convexity, so the worst pair is binary RR's; the
#: extreme inputs x = +-1 are binary RR exactly, so the curve is attained.)
BINARY_NAMES = ("brr", "duchi")
#: largest n accepted (the eps search's blocks cost ~n^(1/2) each; cost grows beyond)
MAX_N = 10**9


@dataclass(frozen=True)
class _PairPmf:
    """g = pmf of Z = Bin(ones, p) + Bin(zeros, 1 - p) on [lo, lo + len(g)), its suffix sums
    G (G[i] = sum_{j >= i} g[j], with G[len] = 0), a relative error bound ``rel`` of each
    entry of g and G, ``out``: an upper bound on the mass outside the windows, and ``abs2``: a
    bound on the 2-norm of g's absolute (FFT) error (0 for the direct sum); ``need``: the
    smallest FFT budget under which it was allowed (_convolve)."""

    lo: int
    g: np.ndarray
    rel: float
    out: float
    abs2: float = 0.0
    need: float = 0.0

    @property
    def G(self) -> np.ndarray:
        """The suffix sums, computed on each use (non-negative terms: relative error <= len(g)
        u, inside ``rel``); not stored, so that the cache holds twice as many pmfs (at n = 1e8
        the finer pass's ~1400 pmfs did not fit in PMF_CACHE_BYTES with both arrays)."""
        return np.concatenate([np.cumsum(self.g[::-1])[::-1], [0.0]])

    def suffix_error(self) -> np.ndarray:
        """Bound on the FFT's absolute error of G[i] (i = 0 .. len(g)): sqrt(len(g) - i) abs2
        (Cauchy-Schwarz over the summed entries)."""
        return np.sqrt(np.arange(len(self.g), -1, -1, dtype=float)) * self.abs2


def binomial_window(m: int, q: float, out_target: float, width: float = 14.0,
                    margin: int = 8, growth: float = 1.5) -> tuple[int, int, float]:
    """[lo, hi] holding Bin(m, q) (m >= 1) except for a mass <= ``out_target`` (or all of it),
    and an upper bound on that mass (Boost's tails, rounded up): mean -+ (width sd + margin),
    the width growing by ``growth`` until the outside mass is small enough."""
    mean = m * q
    sd = math.sqrt(m * q * (1.0 - q))
    while True:
        lo = max(0, int(math.floor(mean - width * sd - margin)))
        hi = min(m, int(math.ceil(mean + width * sd + margin)))
        out = 0.0
        if lo > 0:
            out += float(binom.cdf(lo - 1, m, q))
        if hi < m:
            out += float(binom.sf(hi, m, q))
        out *= 1.0 + 10 * REL_SPECIAL
        if out <= out_target or (lo == 0 and hi == m):
            return lo, hi, out
        width *= growth


@functools.lru_cache(maxsize=256)
def _window(m: int, q: float, out_target: float = OUT_TARGET) -> tuple[int, np.ndarray, float]:
    """Bin(m, q)'s pmf on a window [lo, lo + len) and an upper bound (<= ``out_target`` unless
    the window is everything) on the mass outside it. Cached (a split block shares its ones'
    window with its first half and its zeros' window with its second); read-only."""
    if m == 0:
        return 0, np.ones(1), 0.0
    lo, hi, out = binomial_window(m, q, out_target)
    pmf = np.asarray(binom.pmf(np.arange(lo, hi + 1), m, q), dtype=float)
    pmf.flags.writeable = False
    return lo, pmf, out


def _convolve(x: np.ndarray, y: np.ndarray, abs2: float, budget: float):
    """(x * y, its 2-norm error bound, need): through the FFT where it is long and its error,
    with the error carried in, keeps need = sqrt(len) * error within ``budget``; directly
    otherwise (need 0)."""
    if budget > 0 and len(x) * len(y) > FFT_MIN_WORK:
        err = fft_error_bound(x, y)
        need = math.sqrt(len(x) + len(y)) * (abs2 + err)
        if need <= budget:
            z, err = fft_convolve(x, y, err)
            return z, abs2 + err, need
    # direct sum: a carried error e of x becomes e * y, ||e * y||_2 <= ||e||_2 ||y||_1
    return np.convolve(x, y), abs2 * float(np.sum(y)) * (1 + 1e-12), 0.0


class _PmfCache:
    """The pair pmfs, LRU, bounded by their arrays' total size (at n = 1e8 one entry holds
    ~1-2 MB: a count bound could hold gigabytes). Keyed without the FFT budget: an entry serves
    every later budget its FFT slack fits (``need`` <= budget; a direct entry fits every
    budget), so the ETA and ETA / 10 passes of one search share their pmfs."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.store: OrderedDict = OrderedDict()
        self.size = 0

    def get(self, key, budget: float):
        hit = self.store.get(key)
        if hit is None or (hit.abs2 > 0 and hit.need > budget):
            return None
        self.store.move_to_end(key)
        return hit

    def put(self, key, value) -> None:
        old = self.store.pop(key, None)
        if old is not None:
            self.size -= old.g.nbytes
        self.store[key] = value
        self.size += value.g.nbytes
        while self.size > self.max_bytes and len(self.store) > 1:
            _, old = self.store.popitem(last=False)
            self.size -= old.g.nbytes

    def cache_clear(self) -> None:
        self.store.clear()
        self.size = 0


#: memory the pmf cache may hold (n = 1e8, eps0 = 1: ~1400 pmfs of ~0.8 MB in the finer pass)
PMF_CACHE_BYTES = 3 * 2**29
_PMFS = _PmfCache(PMF_CACHE_BYTES)


def _pair_pmf(ones: int, zeros: int, epsilon0: float, uniform: int = 0,
              budget: float = 0.0, out_target: float = OUT_TARGET) -> _PairPmf:
    """Z = Bin(ones, p) + Bin(zeros, 1 - p) + Bin(uniform, 1/2) on windows leaving at most
    ``out_target`` outside each (bounded, carried); ``budget`` > 0 allows the FFT where its
    absolute slack on a suffix sum stays below it. Cached (_PmfCache)."""
    key = (ones, zeros, float(epsilon0), uniform, float(out_target))
    hit = _PMFS.get(key, budget)
    if hit is not None:
        return hit
    p = 1.0 / (1.0 + math.exp(-epsilon0))
    q = 1.0 / (1.0 + math.exp(epsilon0))
    lo_x, px, out_x = _window(ones, p, out_target)
    lo_w, pw, out_w = _window(zeros, q, out_target)
    g, abs2, need = _convolve(px, pw, 0.0, budget)
    lo, out, terms = lo_x + lo_w, out_x + out_w, len(px) + len(pw) + len(g)
    if uniform:
        lo_u, pu, out_u = _window(uniform, 0.5, out_target)
        g, abs2, need2 = _convolve(g, pu, abs2, budget)
        need = max(need, need2)
        lo, out, terms = lo + lo_u, out + out_u, terms + len(pu) + len(g)
    rel = 3.3 * REL_SPECIAL + 4 * (terms + len(g)) * U
    value = _PairPmf(lo, g, rel, out, abs2, need)
    _PMFS.put(key, value)
    return value


_pair_pmf.cache_clear = _PMFS.cache_clear


def pair_delta(epsilon: float, epsilon0: float, ones: int, zeros: int,
               uniform: int = 0, budget: float = 0.0,
               out_target: float = OUT_TARGET) -> Estimate:
    """D(eps) of one pair (user 1 holds 1 vs 0; the others hold ``ones`` ones and ``zeros``
    zeros, plus ``uniform`` users reporting a uniform bit), bracketed: lower <= D <= upper
    (module docstring; ``budget``: the FFT's allowed absolute slack, 0 for none;
    ``out_target``: the windows' outside mass, charged in full)."""
    if epsilon >= epsilon0:
        return Estimate(0.0, 0.0, 0.0, "brr-exact")
    pmf = _pair_pmf(ones, zeros, float(epsilon0), uniform, budget, out_target)
    e = math.exp(epsilon)
    p = 1.0 / (1.0 + math.exp(-epsilon0))
    q = 1.0 / (1.0 + math.exp(epsilon0))
    a = p - e * q
    b = e * p - q
    # D_t for t = lo .. lo + len(g) + 1: A G(t - 1) - B G(t) on the window (G(lo - 1) = G(lo)).
    G = pmf.G
    g_prev = np.concatenate([[G[0]], G])        # G(t - 1), t = lo .. lo + len(g)
    g_here = np.concatenate([G, [0.0]])         # G(t)
    d = a * g_prev - b * g_here
    # error relative to the magnitudes before cancellation: A = p - e q and B = e p - q carry
    # the rounding of p, q and e^eps relative to p + e q and e p + q
    size = (p + e * q) * g_prev + (e * p + q) * g_here
    rel = pmf.rel + REL_PARAMETERS + 16 * U
    slack = rel * size
    if pmf.abs2 > 0:
        err = pmf.suffix_error()
        err_prev = np.concatenate([[err[0]], err])
        err_here = np.concatenate([err, [0.0]])
        slack = slack + ((p + e * q) * err_prev + (e * p + q) * err_here) * (1 + 1e-12)
    out = (e + 1.0) * pmf.out
    upper = float(np.max(d + slack)) * (1 + 4 * U) + out
    lower = max(0.0, float(np.max(d - slack)) * (1 - 4 * U) - out)
    upper = max(upper, lower)
    return Estimate(upper, lower, upper, "brr-exact")


@functools.lru_cache(maxsize=4096)
def _kept_uniform(width: int, epsilon0: float, tail: float) -> tuple[int, float]:
    """(m, t): at least m of ``width`` users report a uniform bit except with probability
    t <= ``tail`` (the blanket count is Bin(width, 2 / (e^eps0 + 1)))."""
    gamma = 2.0 / (1.0 + math.exp(epsilon0))
    if width == 0 or gamma <= 0:
        return 0, 0.0
    m = int(binom.ppf(tail, width, gamma))
    while m > 0:
        below = float(binom.cdf(m - 1, width, gamma)) * (1 + 10 * REL_SPECIAL)
        if below <= tail:
            return m, below
        m -= 1
    return 0, 0.0


def _block_upper(epsilon: float, epsilon0: float, n: int, first: int, last: int,
                 tail: float, budget: float = 0.0, out_target: float = OUT_TARGET) -> float:
    """Upper estimate of max_{first <= k <= last} D_k(eps) by one dominating pair: the
    last - first in-between users are revealed except those that report a uniform bit (a
    blanket draw, probability gamma = 2 / (e^eps0 + 1) each); D is non-increasing in the number
    of uniform reporters (adding an independent bit is post-processing), so the block's D is at
    most the pair's D with m of them plus P(fewer than m)."""
    m, below = _kept_uniform(last - first, float(epsilon0), tail)
    return (pair_delta(epsilon, epsilon0, first, n - 1 - last, m, budget, out_target).upper
            + below)


def brr_exact_delta(epsilon: float, epsilon0: float, n: int,
                    threshold: float = 0.0, eta: float = ETA,
                    memo: dict | None = None) -> Estimate:
    """delta(eps) of shuffled binary RR over every dataset, bracketed (module docstring).

    ``threshold`` (optional): blocks whose upper estimate is below ETA * threshold are not
    refined (the answer to "is delta(eps) <= threshold?" does not depend on them).
    ``memo`` (optional, one eps search): the blocks this call ends with are stored there and
    the next call starts from them instead of START_BLOCKS blocks (any partition of the k
    range into blocks gives a valid bracket; the search's evaluations at nearby eps need
    nearly the same partition, and its pmfs are cached)."""
    if epsilon >= epsilon0:
        return Estimate(0.0, 0.0, 0.0, "brr-exact")
    lower = 0.0
    upper = 0.0
    singles = sorted(set(range(min(END_SINGLES, n))) | set(range(max(0, n - END_SINGLES), n)))
    out_target = max(OUT_TARGET, OUT_FRACTION * threshold)
    for k in singles:
        est = pair_delta(epsilon, epsilon0, k, n - 1 - k, out_target=out_target)
        lower = max(lower, est.lower)
        upper = max(upper, est.upper)
    first, last = END_SINGLES, n - 1 - END_SINGLES
    heap: list[tuple[float, int, int]] = []
    floor = eta * threshold
    # tail mass of "too few uniform reporters" a block may add: negligible against the
    # threshold (or against the largest single pair when there is none)
    # the tail and the windows depend on the threshold only (not on eta), so that both passes
    # of a search share their blocks' pmfs (_PmfCache); the tail is the finer pass's
    tail = max(TAIL_FRACTION * (ETA / 10) * threshold, 1e-300) if threshold > 0 else 1e-30
    budget = FFT_BUDGET * floor
    leaves: list[tuple[int, int]] = []

    def push(a: int, b: int) -> None:
        """Queue block [a, b] with its upper estimate; its middle k, a real pair, raises the
        certified lower end (so that a flat stretch of D_k is accepted without splitting)."""
        nonlocal lower, upper
        middle = pair_delta(epsilon, epsilon0, (a + b) // 2, n - 1 - (a + b) // 2,
                            budget=budget, out_target=out_target)
        lower = max(lower, middle.lower)
        if a == b:
            upper = max(upper, middle.upper)
            leaves.append((a, b))
            return
        heapq.heappush(heap, (-_block_upper(epsilon, epsilon0, n, a, b, tail, budget,
                                            out_target), a, b))

    if first <= last and memo is not None and memo.get("blocks"):
        for a, b in memo["blocks"]:
            push(a, b)
    elif first <= last:
        edges = np.unique(np.linspace(first, last + 1, START_BLOCKS + 1).astype(int))
        for a, b in itertools.pairwise(edges):
            push(int(a), int(b) - 1)
    min_width = max(1, int(MIN_WIDTH_FRACTION * n))
    while heap:
        neg, a, b = heapq.heappop(heap)
        up = -neg
        if up <= max(lower * (1 + eta), floor) or b - a + 1 <= min_width:
            upper = max(upper, up)
            leaves.append((a, b))
            continue
        mid = (a + b) // 2
        push(a, mid)
        push(mid + 1, b)
    if memo is not None:
        memo["blocks"] = sorted(leaves)
    return Estimate(upper, lower, upper, "brr-exact")


def _check(randomizer, n: int, delta: float) -> float:
    require_int_at_least("n", n, 1)
    require(n <= MAX_N, "n", n, f"brr-exact accepts n <= {MAX_N}")
    require_probability_open("delta", delta)
    epsilon0 = float(randomizer.epsilon0)
    require(0 < epsilon0 <= 700, "epsilon0", epsilon0, "brr-exact needs 0 < eps0 <= 700")
    return epsilon0


def _search(randomizer, n: int, delta: float, side: str):
    """The certified eps search; where the blocks' slack ETA leaves a bracket wider than
    FINE_GAP (relative), once more with ETA / 10 from that bracket (a flat delta(eps), e.g. at
    delta = 1e-4 and small eps0, turns a small delta slack into a large eps slack)."""
    epsilon0 = _check(randomizer, n, delta)

    memo: dict = {}      # the blocks, carried from one evaluation to the next

    def run(eta: float, bracket=None):
        return epsilon_of_delta(
            lambda eps: brr_exact_delta(eps, epsilon0, n, threshold=delta, eta=eta, memo=memo),
            delta,
            side, eps_max=epsilon0, rtol=1e-7, xtol=1e-12, max_evaluations=80,
            bracket=bracket)

    found = run(ETA)
    if (math.isfinite(found.upper) and found.lower > 0
            and found.upper > found.lower * (1 + FINE_GAP)):
        found = run(ETA / 10, bracket=(found.lower, found.upper))
    return found


def brr_exact_epsilon(randomizer, n: int, delta: float) -> BoundResult:
    """Upper bound: the smallest certified eps with delta(eps) <= delta over every dataset."""
    start = time.perf_counter()
    est = _search(randomizer, n, delta, "upper")
    value = min(est.value, float(randomizer.epsilon0))
    return BoundResult("brr-exact", BoundKind.UPPER, value, float(delta),
                       float(max(0.0, value - est.lower)), BoundStatus.PROVEN, REFERENCE,
                       time.perf_counter() - start,
                       "exact curve over every dataset (blocks dominated by revealing reports)")


def brr_exact_lower_epsilon(randomizer, n: int, delta: float) -> BoundResult:
    """Lower bound: the largest eps certified to have delta(eps) > delta for some dataset pair
    (the best single pair the block search evaluated)."""
    start = time.perf_counter()
    est = _search(randomizer, n, delta, "lower")
    return BoundResult("brr-exact-lower", BoundKind.LOWER, est.value, float(delta),
                       float(max(0.0, est.upper - est.value)), BoundStatus.PROVEN, REFERENCE,
                       time.perf_counter() - start,
                       "best dataset pair over every count of ones among the others")


SPECS: tuple[BoundSpec, ...] = (
    BoundSpec(
        "brr-exact", BoundKind.UPPER, "exact privacy curve of shuffled binary RR over every "
        "dataset (count statistic, 000 Thm 12 sufficiency; blocks of datasets dominated by "
        "revealing reports)",
        BoundStatus.PROVEN, "binary RR or Duchi's 1-D mechanism, n >= 1, 0 < eps0 <= 700",
        named(*BINARY_NAMES), brr_exact_epsilon, scope="specific",
        # the search's finer slack (ETA / 10), so that calibration certifies as far as the bound
        delta_at=lambda randomizer, n, eps, threshold: brr_exact_delta(
            float(eps), float(randomizer.epsilon0), n, threshold=threshold, eta=ETA / 10).upper),
    BoundSpec(
        "brr-exact-lower", BoundKind.LOWER, "best dataset pair of shuffled binary RR over every "
        "count of ones among the other users (000 Thm 14 generalized to mixed others)",
        BoundStatus.PROVEN, "binary RR or Duchi's 1-D mechanism, n >= 1, 0 < eps0 <= 700",
        named(*BINARY_NAMES), brr_exact_lower_epsilon, scope="specific"),
)
