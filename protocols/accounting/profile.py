"""A round's privacy profile delta(eps) read off its pessimistic PLD, on the PLD's own grid.

Input: the discretised pessimistic PLD(s) of one round (pld.py: a dominating pair of the
shuffled round, both directions when the pair is not swap-symmetric). Output:
:class:`RoundProfile`, the hockey-stick divergence of that dominating pair at every grid loss
eps_j = j * interval, j = 0 .. J (J * interval >= the largest loss), as an upper bound, and the
smallest grid eps at which it is at most a given delta (vectorized over many deltas).

For one direction with P-masses p_k at losses k * interval and mass m at +inf,

    delta(eps_j) = m + sum_{k > j} p_k (1 - e^{(j - k) interval})
                 = m + A_j - e^{eps_j} C_j,
    A_j = sum_{k > j} p_k,   C_j = sum_{k > j} p_k e^{-k interval}

(two suffix sums: O(grid) work, no loop over eps). Both sums have nonnegative terms, so
sequential summation errs by at most (grid size) ulp times A_j each; that, times 4, is added
to every value (the result stays an upper bound). The curve of both directions is their
maximum, made non-increasing from the right (a running maximum: larger, so still an upper
bound), so that the smallest certified eps is a search. Every value is then the exact
hockey-stick divergence of a dominating pair rounded up, i.e. a valid (eps_j, delta_j)
guarantee for the round (000 Thm 13 pair, Zhu-Dong-Wang 2022 for domination; pld.py).
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

from shufflesim.protocols.accounting.pld import RoundPLD, cached_round_plds

_ULP = float(np.finfo(float).eps)


@dataclass(frozen=True)
class RoundProfile:
    """``delta[j]``: an upper bound on the round's delta at eps = j * ``interval``
    (non-increasing in j); beyond the last entry delta stays at ``delta[-1]`` (the mass at
    infinity)."""

    interval: float
    delta: np.ndarray

    def epsilon_for(self, deltas) -> np.ndarray:
        """The smallest grid eps with delta(eps) <= each of ``deltas`` (inf where none)."""
        deltas = np.asarray(deltas, dtype=float)
        # delta is non-increasing: reverse it to a non-decreasing array for searchsorted
        rev = self.delta[::-1]
        count = np.searchsorted(rev, deltas, side="right")   # entries <= delta, from the end
        index = self.delta.size - count
        eps = index * self.interval
        return np.where(count > 0, eps, np.inf)


def _direction(pld: RoundPLD, size: int) -> np.ndarray:
    """Upper bounds on one direction's delta at eps_j = j interval, j = 0 .. size - 1."""
    k = np.arange(pld.probs.size) + pld.lower_index          # grid index of each mass
    p = np.asarray(pld.probs, dtype=float)
    losses = k * pld.interval
    # suffix sums over k > j, for j in the range of k: S[i] = sum_{k index >= i}
    a_suffix = np.cumsum(p[::-1])[::-1]
    c_suffix = np.cumsum((p * np.exp(-losses))[::-1])[::-1]
    j = np.arange(size)
    first = j + 1 - pld.lower_index                          # position of the first k > j
    inside = first < p.size
    pos = np.clip(first, 0, max(p.size - 1, 0))
    a = np.where(inside, a_suffix[pos] if p.size else 0.0, 0.0)
    c = np.where(inside, c_suffix[pos] if p.size else 0.0, 0.0)
    value = a - np.exp(j * pld.interval) * c
    slack = 4.0 * (p.size + 2) * _ULP * a
    return pld.infinity + np.maximum(value, 0.0) + slack


def profile_of(plds) -> RoundProfile:
    """The :class:`RoundProfile` of a round's pessimistic PLDs (one or both directions)."""
    interval = plds[0].interval
    top = max(int(p.lower_index + p.probs.size) for p in plds)
    size = max(top, 0) + 2
    curve = np.max([_direction(p, size) for p in plds], axis=0)
    curve = np.maximum.accumulate(curve[::-1])[::-1]        # non-increasing, rounded up
    curve = np.minimum(curve, 1.0)
    curve.flags.writeable = False
    return RoundProfile(float(interval), curve)


class _Profiles:
    """:func:`round_profile`'s cache (at most ``size`` entries, the oldest dropped first), with
    :meth:`peek`: a method that can use a profile but should not build one for itself asks
    whether another method built it (basic's per-round eps, baselines.py)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.data: OrderedDict = OrderedDict()

    def __call__(self, model, n: int, interval: float, tail: float,
                 weak_rtol: float) -> RoundProfile:
        key = (model, int(n), float(interval), float(tail), float(weak_rtol))
        if key not in self.data:
            # the arguments exactly as compose.compose_models passes them (the same cache
            # entry: optimal-blanket then composes this PLD without building it again)
            self.data[key] = profile_of(cached_round_plds(model, int(n), float(interval),
                                                          "upper", float(tail),
                                                          float(weak_rtol), False))
            while len(self.data) > self.size:
                self.data.popitem(last=False)
        return self.data[key]

    def peek(self, model, n: int, interval: float, tail: float,
             weak_rtol: float) -> RoundProfile | None:
        return self.data.get((model, int(n), float(interval), float(tail), float(weak_rtol)))

    def cache_clear(self) -> None:
        self.data.clear()


#: The profile of one round's pessimistic PLD (pld.cached_round_plds), cached:
#: round_profile(model, n, interval, tail, weak_rtol); round_profile.peek(...) the cached one
#: or None.
round_profile = _Profiles(16)
