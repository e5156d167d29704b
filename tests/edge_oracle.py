"""High-precision reference oracle for the shuffle model at small n (test helper, mpmath).

For a categorical randomizer R and two neighbouring datasets X0 = (x0, o_2, ..., o_n) and
X1 = (x1, o_2, ..., o_n), the shuffled output is the multiset of reports. The oracle computes
the exact law of the histogram of reports over *output groups* under both datasets, in mpmath
at ``DPS`` digits, and the hockey-stick divergence

    D_{e^eps}(X0 || X1) = sum_h (P_X0(h) - e^eps P_X1(h))_+

in both directions. Nothing here uses protocols.bounds: the group probabilities come from the
randomizers' definitions (re-derived below), and the histogram law from a direct convolution of
the users' categorical laws (no GPARV identity of 000 Thm 12-14 is used).

Output groups: outputs whose probability is the same function of the input for every input
appearing in the pair are merged; the merged histogram is a sufficient statistic, because inside
a group every report has the same probability under each involved input up to a factor that does
not depend on the input (so the likelihood ratio of the two shuffled laws depends on the
histogram of groups only).

* k-RR over [k] (Kairouz et al.; 000 App. A): P[y = x] = e^eps0 / (e^eps0 + k - 1), else
  1 / (e^eps0 + k - 1). Groups: each involved input value, and the other k - m values together.
  Binary RR is k-RR with k = 2.
* Unary encodings over [d] (Wang et al. 2017; 000 App. A.2-A.3): bits independent,
  P[y_v = 1] = a if v = x, b otherwise. OUE: a = 1/2, b = 1/(e^eps0 + 1); RAPPOR:
  a = e^(eps0/2)/(1 + e^(eps0/2)), b = 1 - a. Groups: the patterns of the bits at the involved
  input values (the other d - m bits have the same law whatever the input, independently).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import mpmath as mp

DPS = 60


def _ctx():
    mp.mp.dps = DPS
    return mp


def group_rows(name: str, epsilon0: float, domain_size: int, inputs: Sequence[int]) -> dict:
    """{input: [P(group g | input) for g]} for the distinct ``inputs`` (mpf, DPS digits)."""
    _ctx()
    e = mp.exp(mp.mpf(epsilon0))
    distinct = sorted({int(x) for x in inputs})
    m = len(distinct)
    if name in ("krr", "brr"):
        k = 2 if name == "brr" else int(domain_size)
        assert m <= k
        top, low = e / (e + k - 1), 1 / (e + k - 1)
        rows = {}
        for x in distinct:
            row = [top if v == x else low for v in distinct]
            if k > m:
                row.append((k - m) * low)
            rows[x] = row
        return rows
    if name in ("oue", "rappor"):
        if name == "oue":
            a, b = mp.mpf(1) / 2, 1 / (e + 1)
        else:
            h = mp.exp(mp.mpf(epsilon0) / 2)
            a, b = h / (1 + h), 1 / (1 + h)
        rows = {}
        patterns = list(itertools.product((0, 1), repeat=m))
        for x in distinct:
            row = []
            for bits in patterns:
                p = mp.mpf(1)
                for v, bit in zip(distinct, bits, strict=True):
                    q = a if v == x else b
                    p *= q if bit else 1 - q
                row.append(p)
            rows[x] = row
        return rows
    raise KeyError(name)


def histogram_law(rows: Sequence[Sequence]) -> dict[tuple, mp.mpf]:
    """Law of the histogram of independent users with categorical laws ``rows`` (one per user),
    by direct convolution."""
    groups = len(rows[0])
    law = {(0,) * groups: mp.mpf(1)}
    for row in rows:
        new: dict[tuple, mp.mpf] = {}
        for h, p in law.items():
            for g in range(groups):
                if row[g] == 0:
                    continue
                key = h[:g] + (h[g] + 1,) + h[g + 1:]
                new[key] = new.get(key, 0) + p * row[g]
        law = new
    return law


@dataclass
class PairTruth:
    """Exact shuffled laws of one neighbouring pair; ``label`` describes it."""

    label: str
    p0: list
    p1: list

    def divergence(self, epsilon: float, forward: bool = True) -> mp.mpf:
        """D_{e^eps}(P_X0 || P_X1) (``forward``) or D_{e^eps}(P_X1 || P_X0)."""
        _ctx()
        e = mp.exp(mp.mpf(float(epsilon)))
        first, second = (self.p0, self.p1) if forward else (self.p1, self.p0)
        total = mp.mpf(0)
        for p, q in zip(first, second, strict=True):
            v = p - e * q
            if v > 0:
                total += v
        return total

    def delta(self, epsilon: float) -> mp.mpf:
        """max of the two directions."""
        return max(self.divergence(epsilon, True), self.divergence(epsilon, False))

    def epsilon(self, delta: float, top: float, iterations: int = 200) -> mp.mpf:
        """Smallest eps in [0, top] with delta(eps) <= delta (bisection in mpmath; delta(top)
        must be <= delta)."""
        _ctx()
        target = mp.mpf(float(delta))
        if self.delta(0.0) <= target:
            return mp.mpf(0)
        lo, hi = mp.mpf(0), mp.mpf(float(top))
        for _ in range(iterations):
            mid = (lo + hi) / 2
            if self._delta_mp(mid) <= target:
                hi = mid
            else:
                lo = mid
        return hi

    def _delta_mp(self, epsilon) -> mp.mpf:
        e = mp.exp(epsilon)
        best = mp.mpf(0)
        for first, second in ((self.p0, self.p1), (self.p1, self.p0)):
            total = mp.mpf(0)
            for p, q in zip(first, second, strict=True):
                v = p - e * q
                if v > 0:
                    total += v
            best = max(best, total)
        return best


def pair_truth(name: str, epsilon0: float, domain_size: int, x0: int, x1: int,
               others: Sequence[int]) -> PairTruth:
    """Exact shuffled laws for X0 = (x0, *others) and X1 = (x1, *others)."""
    rows = group_rows(name, epsilon0, domain_size, (x0, x1, *others))
    law0 = histogram_law([rows[x0]] + [rows[o] for o in others])
    law1 = histogram_law([rows[x1]] + [rows[o] for o in others])
    keys = sorted(set(law0) | set(law1))
    zero = mp.mpf(0)
    return PairTruth(f"x0={x0}, x1={x1}, others={tuple(others)}",
                     [law0.get(k, zero) for k in keys], [law1.get(k, zero) for k in keys])


def neighbour_pairs(name: str, domain_size: int, n: int, exhaustive_up_to: int = 5) -> list:
    """(x0, x1, others) configurations: for n <= ``exhaustive_up_to`` every multiset of the other
    n - 1 inputs over the values {0, 1, 2} (those present in the domain), otherwise the
    homogeneous ones (all 0, all 1, all 2) and an even split of 0 and 1. By the randomizers'
    symmetry under permutations of [d], any further value behaves like 2."""
    k = 2 if name == "brr" else int(domain_size)
    values = [v for v in (0, 1, 2) if v < k]
    rest = n - 1
    configs = []
    if n <= exhaustive_up_to:
        for combo in itertools.combinations_with_replacement(values, rest):
            configs.append(tuple(combo))
    else:
        configs = [(v,) * rest for v in values]
        configs.append((0,) * (rest // 2) + (1,) * (rest - rest // 2))
    return [(0, 1, others) for others in configs]


def triple_pair(name: str, epsilon0: float, domain_size: int, n: int, triple) -> PairTruth:
    """The pair of 000 Thm 14: X0 = (x0, x2, ..., x2), X1 = (x1, x2, ..., x2)."""
    x0, x1, x2 = (int(v) for v in triple)
    return pair_truth(name, epsilon0, domain_size, x0, x1, (x2,) * (n - 1))
