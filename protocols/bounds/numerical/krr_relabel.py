"""Shuffled k-RR, k >= 3: a proven upper bound over every dataset pair from the concentrated
ones, by a relabelling kernel (issue 31; derived here, no published source).

**Setting.** k-RR reports its input with probability p = e^eps0 / (e^eps0 + k - 1), each other
value with q = 1 / (e^eps0 + k - 1). User 1 holds x0 (law P) or x1 (law Q); of the n - 1 others,
n0 hold x0, n1 hold x1 and m = n - 1 - n0 - n1 (the "rest") hold values in V' = [k] minus
{x0, x1}, d = k - 2 values, in any configuration. The shuffled output is the histogram (000
Thm 12); write c = (c0, c1) for its counts at x0, x1 and H for its counts on V',
s = n - c0 - c1 of them.

**Regions.** Every user first lands in X = {x0, x1} or in V', then picks a position inside:

- a rest user (any value v in V') lands in X w.p. 2q, there at x0 or x1 w.p. 1/2 each, and in
  V' w.p. 1 - 2q, there at d-RR(v): v w.p. A = p / (1 - 2q), each other value of V' w.p.
  q / (1 - 2q). Neither step depends on v;
- a user at x0 or x1 (user 1 included) lands in V' w.p. (k - 2) q, there uniformly ("uniform
  items"); in X its position is what distinguishes P from Q.

Given the set of users landing in V', their positions there are independent of everything in
X. So with J = the number of uniform items in V' and L = s - J the number of rest users there,

    P(c, H) = sum_J w_P(c, J) F(J, L)(H),       Q likewise with w_Q,

where F(J, L) is the law of J uniform items plus the d-RR items of a uniformly random L-subset
of the rest (every rest user lands in V' with the same probability, so given L the subset is
uniform), and w_P, w_Q depend on (n0, n1, m) only, not on where in V' the rest sits.

**The kernel (s <= m).** Given H (s items), place the s items in a uniformly random order into
s distinct slots drawn uniformly from the m rest users, and relabel an item in the slot of a
rest user at v by the transposition (z v) of V' (z a fixed value of V'). Applied to the
*concentrated* rest (all m at z) this gives, for every J at once, the law F(J, L) of any other
configuration: the L d-RR(z) items occupy a uniformly random L-subset of the slots and become
d-RR(v) of their slot's user (a transposition maps d-RR(z) to d-RR(v)); the uniform items stay
uniform and independent. So for each c with s <= m, the pair of sub-measures (P(c, .),
Q(c, .)) of any configuration is a post-processing of the concentrated one's, and its
hockey-stick contribution sum_H (P - e^eps Q)_+ is at most the concentrated one's (data
processing holds for each c's restriction, the kernel not touching c).

**The excess (s > m).** Then at least e = s - m of the V' items are uniform (L <= m). Reveal e
of the uniform items, chosen uniformly among them, with their labels: the observation only
grows (H is the sum), the revealed labels are i.i.d. uniform whatever J is (ancillary), and the
m unrevealed items, J - e uniform plus L d-RR, are mapped from the concentrated rest by the
kernel above with m slots (a bijection). So the bound uses, for the concentrated rest, the
statistic (c0, c1, y') with y' the count at z among the unrevealed items:

    y' ~ Bin(L, A) + Bin(J - e, 1/d),     e = max(0, s - m)

(the other values of V' carry no information given y': uniform items and d-RR(z) items off z
are both uniform on V' minus z). For s <= m, e = 0 and this is the concentrated dataset's own
law; the reveal costs only where s > m, which needs every rest user in V'.

**Theorem.** For every dataset pair with counts (n0, n1, m) and every eps,
D_{e^eps}(P || Q) <= sum_{c, y'} (P~(c, y') - e^eps Q~(c, y'))_+, the laws above. The upper
bound on the shuffled eps(delta) is the maximum over (n0, n1) (one direction suffices: swapping
x0 and x1 maps Q || P at (n0, n1) to P || Q at (n1, n0)). Taking e = 0 everywhere gives the
concentrated dataset's exact law, a real pair: its eps(delta) is a proven lower bound. For
k = 3 (d = 1) both coincide with krr_exact's exact curve.

Tested (tests/test_krr_relabel.py) against a 50-digit brute force over every dataset's full
histogram for k = 4, 5, 6 at n = 5-7, spread configurations included, against the small_n_truth
module for k = 4, 5, 10, and against krr_exact for k = 3.

**Certified numerics.** Every category probability is computed from e0 = e^eps0 without a
subtraction (p = e0 / (e0 + k - 1), q, (k - 2) q, 1 - 2q = (e0 + k - 3) / (e0 + k - 1),
A = e0 / (e0 + k - 3), 1 - A = (k - 3) / (e0 + k - 3)): relative error <= 8u each. The
trinomials of the x0-users, x1-users and the rest and G's binomials are built by adding one user
at a time (non-negative sums; REL_PMF), so no log-gamma error enters. The x-users' 2-D
convolution, the joint (sigma, t, c0) law by Toeplitz products, user 1 and the matrix products
with G_{s,J}(y') = (Bin(L, A) * Bin(J - e, 1/d))(y') are sums of non-negative terms: every entry
of P~, Q~ is within REL relative, plus TINY_MASS in all for underflow.
krr_exact.WindowedCurve brackets the divergence and the eps bisection.

Cost: about (n + 1)^2 (m + 1) / 2 cells per configuration and n (n + 1) / 2 configurations,
each screened by one unsorted evaluation at the running maximum: 0.003 s CPU per configuration
at n = 40, ~0.02 s at n = 100 (~100 CPU s in all). The catalogue declares it up to
CATALOGUE_MAX_N; krr_relabel_epsilon runs to MAX_N.
"""

from __future__ import annotations

import math
import time

import numpy as np

from shufflesim.protocols.bounds.engine.common import U
from shufflesim.protocols.bounds.numerical.krr_exact import (
    WindowedCurve,
    _check,
    _corner_configs,
)
from shufflesim.protocols.bounds.result import BoundKind, BoundResult, BoundStatus
from shufflesim.protocols.bounds.spec import BoundSpec, named
from shufflesim.protocols.errors import require

__all__ = ["CATALOGUE_MAX_N", "MAX_N", "krr_relabel_epsilon", "relabel_curves", "relabel_terms",
           "upper_delta"]

REFERENCE = ("exact over the concentrated dataset pairs of shuffled k-RR, dominating every other "
             "configuration by a relabelling kernel (derived in "
             "protocols/bounds/numerical/krr_relabel.py)")
#: every configuration (n0, n1) is evaluated up to this n (n = 100: ~2 CPU minutes)
MAX_N = 100
#: the catalogue's regime (every audit of k-RR, k >= 4, evaluates it): n = 40 costs ~3 CPU s
CATALOGUE_MAX_N = 40


class _Laws:
    """The closed-form-free pmfs of one (eps0, k): every category probability computed directly
    from e0 = e^eps0 (no subtraction: relative error <= 8u each, module docstring), and the
    trinomials / binomials of N <= MAX_N users by adding one user at a time (each entry a sum of
    at most three non-negative products per step), so every entry is within REL_PMF relative;
    entries below the smallest normal float may underflow (absolute slack TINY_MASS)."""

    def __init__(self, epsilon0: float, k: int) -> None:
        e0 = math.exp(epsilon0)
        den = e0 + (k - 1)
        self.p, self.q, self.v = e0 / den, 1.0 / den, (k - 2) / den
        d = k - 2
        self.d = d
        # (a, b, rest) per class: x0-users, x1-users, rest users (to V' w.p. (e0 + k - 3) / den)
        self.classes = {"x0": (self.p, self.q, self.v), "x1": (self.q, self.p, self.v),
                        "rest": (self.q, self.q, (e0 + (k - 3)) / den)}
        self.tri: dict[str, list[np.ndarray]] = {c: [np.ones((1, 1))] for c in self.classes}
        # G's binomials: d-RR(z) at z w.p. A = e0 / (e0 + k - 3); uniform at z w.p. 1 / d
        big_a, not_a = e0 / (e0 + (k - 3)), (k - 3) / (e0 + (k - 3))
        self.bins = {"A": ((not_a, big_a), [np.ones(1)]),
                     "U": (((d - 1) / d, 1.0 / d), [np.ones(1)])}
        self.memo: dict[tuple[int, int], np.ndarray] = {}
        self.g_memo: dict[tuple[int, int, int, int], np.ndarray] = {}

    def trinomial(self, cls: str, count: int) -> np.ndarray:
        """T[i, j] = P(i of ``count`` users of class ``cls`` report x0, j report x1)."""
        a, b, c = self.classes[cls]
        table = self.tri[cls]
        while len(table) <= count:
            old = table[-1]
            size = old.shape[0] + 1
            new = np.zeros((size, size))
            new[:-1, :-1] = c * old
            new[1:, :-1] += a * old
            new[:-1, 1:] += b * old
            table.append(new)
        return table[count]

    def binomial(self, kind: str, count: int) -> np.ndarray:
        (miss, hit), table = self.bins[kind]
        while len(table) <= count:
            old = table[-1]
            new = np.zeros(old.size + 1)
            new[:-1] = miss * old
            new[1:] += hit * old
            table.append(new)
        return table[count]

    def law(self, rest: int, uniform: int) -> np.ndarray:
        """The law of y': Bin(rest, A) * Bin(uniform, 1/d)."""
        key = (rest, uniform)
        if key not in self.memo:
            self.memo[key] = np.convolve(self.binomial("A", rest), self.binomial("U", uniform))
        return self.memo[key]

    def matrix(self, s: int, e: int, nx: int, m: int) -> np.ndarray:
        """G_s[t, y'] for s items in V' (e of them revealed), t = x-users in X: row t has
        J = nx - t uniform items and L = s - J rest users (zero where impossible)."""
        key = (s, e, nx, m)
        if key not in self.g_memo:
            if len(self.g_memo) > 4 * (nx + m + 2):
                self.g_memo.clear()             # configurations come grouped by nx
            g = np.zeros((nx + 1, s - e + 1))
            for t in range(nx + 1):
                jj, ll = nx - t, s - (nx - t)
                if 0 <= ll <= m and jj >= e:
                    g[t] = self.law(ll, jj - e)
            self.g_memo[key] = g
        return self.g_memo[key]


def _x_users(laws: _Laws, n0: int, n1: int) -> np.ndarray:
    """T[a, b]: the law of the reports x0 (a), x1 (b) of the n0 users at x0 and n1 at x1 (the
    others of them, n0 + n1 - a - b, are uniform items in V')."""
    t0, t1 = laws.trinomial("x0", n0), laws.trinomial("x1", n1)
    if n1 > n0:
        t0, t1, n0, n1 = t1, t0, n1, n0
    out = np.zeros((n0 + n1 + 1, n0 + n1 + 1))
    for i, j in zip(*np.nonzero(t1), strict=True):
        out[i:i + n0 + 1, j:j + n0 + 1] += t1[i, j] * t0
    return out


def _joint(x_law: np.ndarray, rest_law: np.ndarray, n: int) -> np.ndarray:
    """Z[sigma, t, c0] of the others: sigma = c0 + c1 (reports in X), t = reports in X of the
    x-users (x_law's a + b); one more t and sigma row for user 1. For each t, the c0 axis is
    the convolution of the x-users' row (a = c0's share) with the rest's (r0), a matrix product
    with a Toeplitz matrix (sums of non-negative terms)."""
    nx = x_law.shape[0] - 1
    nm = rest_law.shape[0] - 1                 # m
    r0 = np.arange(nm + 1)
    rest = np.zeros((nm + 1, nm + 1))          # rest[sigma_r, r0]
    for sig in range(nm + 1):
        rest[sig, : sig + 1] = rest_law[r0[: sig + 1], sig - r0[: sig + 1]]
    z = np.zeros((n + 1, nx + 2, n + 1))
    a = np.arange(nx + 1)
    c0 = np.arange(n + 1)
    for t in range(nx + 1):
        row = np.zeros(nx + 1)
        row[: t + 1] = x_law[a[: t + 1], t - a[: t + 1]]
        lag = c0[:, None] - r0[None, :]         # toeplitz[c0, r0] = row[c0 - r0]
        ok = (lag >= 0) & (lag <= nx)
        toeplitz = np.where(ok, row[np.clip(lag, 0, nx)], 0.0)
        z[t:t + nm + 1, t, :] = (toeplitz @ rest.T).T
    return z


def _user_one(z: np.ndarray, sigma: int, p: float, q: float, r_v: float) -> np.ndarray:
    """Z'[sigma, t, c0] (c0 <= sigma) after adding user 1 (p at x0, q at x1,
    r_v = (k - 2) q into V'): its X reports raise sigma and t, at x0 also c0; three
    non-negative terms per entry."""
    out = r_v * z[sigma, :, : sigma + 1]
    if sigma > 0:
        below = z[sigma - 1]
        out[1:, 1:] += p * below[:-1, :sigma]
        out[1:, :] += q * below[:-1, : sigma + 1]
    return out


def relabel_terms(epsilon0: float, k: int, n0: int, n1: int, m: int, reveal: bool,
                  laws: _Laws | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(P~, Q~) of configuration (n0, n1, m) on the cells (c0, c1, y'), direction P || Q, each
    entry within relative REL: with ``reveal`` the upper pair (excess items revealed; it
    dominates every dataset with these counts: module docstring's theorem), without it the
    concentrated dataset's exact pair (a lower bound). ``laws`` shares the pmfs across
    configurations of one (eps0, k)."""
    require(k >= 3, "domain_size", k, "krr-relabel needs k >= 3 (2-RR: use brr-exact)")
    laws = laws or _Laws(epsilon0, k)
    p, q, v = laws.p, laws.q, laws.v
    n = n0 + n1 + m + 1
    nx = n0 + n1 + 1                          # x-users including user 1
    others = _joint(_x_users(laws, n0, n1), laws.trinomial("rest", m), n)
    p_terms, q_terms = [], []
    for s in range(n + 1):
        sigma = n - s
        g = laws.matrix(s, max(0, s - m) if reveal else 0, nx, m)
        p_terms.append((_user_one(others, sigma, p, q, v).T @ g).ravel())
        q_terms.append((_user_one(others, sigma, q, p, v).T @ g).ravel())
    return np.concatenate(p_terms), np.concatenate(q_terms)


def relabel_curves(epsilon0: float, k: int, n0: int, n1: int, m: int
                   ) -> tuple[WindowedCurve, WindowedCurve]:
    """(upper, lower) certified curves of configuration (n0, n1, m), direction P || Q
    (:func:`relabel_terms` with and without the reveal)."""
    laws = _Laws(epsilon0, k)
    return tuple(_curve(*relabel_terms(epsilon0, k, n0, n1, m, reveal, laws))
                 for reveal in (True, False))


def _curve(p_terms: np.ndarray, q_terms: np.ndarray) -> WindowedCurve:
    """The certified curve: relative error REL per entry, absolute TINY_MASS in all."""
    return WindowedCurve(p_terms, q_terms, REL, TINY_MASS)


def upper_delta(p_terms: np.ndarray, q_terms: np.ndarray, epsilon: float) -> float:
    """A certified upper end of sum (P - e^eps Q)_+ without sorting (the search's screen):
    each true term is <= (p (1 + REL) - e^eps q (1 - REL))_+, computed with a few roundings
    (4u relative, and e^eps within 2u), summed with relative error <= (terms) u, plus the
    underflow slack (1 + e^eps) TINY_MASS."""
    e = math.exp(epsilon) * (1 - 2 * U)
    terms = np.maximum(p_terms * (1 + REL + 4 * U) - e * q_terms * (1 - REL - 4 * U), 0.0)
    return (float(terms.sum()) * (1 + (terms.size + 2) * U)
            + (1 + math.exp(epsilon)) * TINY_MASS * (1 + 1e-12))


#: relative error of a pmf entry: category probabilities within 8u (module docstring), raised
#: to at most MAX_N factors, plus <= 3u of rounding per added user
REL_PMF = 12 * MAX_N * U
#: relative error of an entry of P~, Q~: five pmfs (trinomials of the x0-users, the x1-users
#: and the rest, G's two binomials), then products and non-negative sums: the x-users' 2-D
#: convolution adds up to (MAX_N + 2)^2 terms per cell, the joint, G's convolution and the
#: matrix product up to MAX_N + 4 each, user 1 three with its probabilities within 8u (each
#: sum of N non-negative terms within (N + 1) u); doubled for the compounding of these factors
REL = 5 * REL_PMF + 2 * ((MAX_N + 2) ** 2 + 8 * (MAX_N + 4)) * U
#: total absolute error from underflow: entries below the smallest normal float (2.2e-308) lose
#: their relative accuracy; fewer than 1e9 operations touch them, each off by <= 2^-1074 plus
#: the entry itself, so 1e-290 covers the sum over <= 1e7 cells with a wide margin
TINY_MASS = 1e-290


def _search(epsilon0: float, k: int, n: int, delta: float):
    """max over (n0, n1) of the certified eps(delta) ends: (upper, lower, where). A
    configuration whose certified D at the running maximum is <= delta cannot raise it (D is
    non-increasing in eps) and is skipped after that one unsorted evaluation."""
    corners = [(a, b) for a, b, _ in _corner_configs(n)]
    seen = set(corners)
    configs = corners + [(a, b) for a in range(n) for b in range(n - a) if (a, b) not in seen]
    laws = _Laws(epsilon0, k)
    best_hi, best_lo, where = 0.0, 0.0, configs[0]
    for n0, n1 in configs:
        m = n - 1 - n0 - n1
        terms = relabel_terms(epsilon0, k, n0, n1, m, True, laws)
        if best_hi > 0 and upper_delta(*terms, best_hi) <= delta:
            continue
        hi = _curve(*terms).epsilon(delta, epsilon0)[1]
        lower_curve = _curve(*relabel_terms(epsilon0, k, n0, n1, m, False, laws))
        lo = lower_curve.epsilon(delta, epsilon0)[0]
        best_hi = max(best_hi, hi)
        if lo > best_lo:
            best_lo, where = lo, (n0, n1, m)
    return min(best_hi, epsilon0), best_lo, where


def krr_relabel_epsilon(randomizer, n: int, delta: float, limit: int = MAX_N) -> BoundResult:
    """Upper bound for k-RR (k >= 3) over every dataset pair: the concentrated configurations'
    curves with the excess reveal (module docstring), maximised over every (n0, n1), for
    n <= ``limit`` (<= MAX_N). Its epsilon_error reaches down to the best concentrated pair's
    certified lower end (a real dataset pair: a proven lower bound)."""
    start = time.perf_counter()
    _check(randomizer, n, delta, min(limit, MAX_N))
    k = int(randomizer.domain_size)
    require(k >= 3, "domain_size", k, "krr-relabel needs k >= 3 (2-RR: use brr-exact)")
    upper, lower, where = _search(float(randomizer.epsilon0), k, n, delta)
    return BoundResult("krr-relabel", BoundKind.UPPER, float(upper), float(delta),
                       float(max(0.0, upper - lower)), BoundStatus.PROVEN, REFERENCE,
                       time.perf_counter() - start,
                       f"every (n0, n1) dominated by its concentrated pair; best pair (n0, n1, "
                       f"m) = {where}")


def _catalogue_epsilon(randomizer, n: int, delta: float) -> BoundResult:
    """The catalogue's krr-relabel: n <= CATALOGUE_MAX_N, where it costs a few CPU seconds."""
    return krr_relabel_epsilon(randomizer, n, delta, CATALOGUE_MAX_N)


def _is_krr_beyond_three(randomizer) -> bool:
    """k-RR with k >= 4 (k = 3 is krr-exact's, which it equals)."""
    return named("krr")(randomizer) and int(getattr(randomizer, "domain_size", 0)) >= 4


SPECS: tuple[BoundSpec, ...] = (
    BoundSpec(
        "krr-relabel", BoundKind.UPPER, "shuffled k-RR over every dataset pair: the "
        "concentrated pairs (rest at one value) dominate every configuration by a relabelling "
        "kernel, excess items revealed (derived in numerical/krr_relabel.py)",
        BoundStatus.PROVEN, f"k-RR with k >= 4, n <= {CATALOGUE_MAX_N} (the module's "
        f"krr_relabel_epsilon runs to n = {MAX_N}, ~2 CPU minutes there)", _is_krr_beyond_three,
        _catalogue_epsilon, scope="specific"),
)
