"""Amplification bounds for users with personalized budgets (heterogeneous users).

This module starts with :class:`BudgetProfile`, the budget multiset the bounds take.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from protocols.errors import ParameterError, require


@dataclass(frozen=True)
class BudgetProfile:
    """A multiset of n local budgets: distinct (epsilon, local delta) pairs and their counts.

    ``epsilons`` and ``deltas`` are aligned 1-D arrays sorted by (epsilon, delta); ``counts``
    are positive integers. Build it with :meth:`from_budgets` (one entry per user) or
    :meth:`from_groups`.
    """

    epsilons: np.ndarray
    counts: np.ndarray
    deltas: np.ndarray

    def __post_init__(self) -> None:
        eps = np.asarray(self.epsilons, dtype=float).reshape(-1)
        counts = np.asarray(self.counts).reshape(-1)
        deltas = np.asarray(self.deltas, dtype=float).reshape(-1)
        require(eps.size >= 1 and eps.shape == counts.shape == deltas.shape, "budgets",
                (eps.size, counts.size, deltas.size),
                "need aligned non-empty arrays of budgets, counts and local deltas")
        bad = ~(np.isfinite(eps) & (eps > 0))
        if bad.any():
            raise ParameterError("epsilons", float(eps[bad][0]), "must be finite numbers > 0")
        if not np.issubdtype(counts.dtype, np.integer) or (counts < 1).any():
            raise ParameterError("counts", counts.tolist()[:5], "must be integers >= 1")
        bad = ~((deltas >= 0) & (deltas < 1))
        if bad.any():
            raise ParameterError("deltas", float(deltas[bad][0]), "must lie in [0, 1)")
        object.__setattr__(self, "epsilons", eps)
        object.__setattr__(self, "counts", counts.astype(np.int64))
        object.__setattr__(self, "deltas", deltas)

    @classmethod
    def from_budgets(cls, epsilons, deltas=None) -> BudgetProfile:
        """The profile of one budget (and local delta, default 0) per user."""
        eps = np.asarray(epsilons, dtype=float).reshape(-1)
        require(eps.size >= 1, "epsilons", eps.size, "needs at least one user")
        dl = np.zeros_like(eps) if deltas is None else np.broadcast_to(
            np.asarray(deltas, dtype=float).reshape(-1), eps.shape)
        pairs, counts = np.unique(np.stack([eps, dl], axis=1), axis=0, return_counts=True)
        return cls(pairs[:, 0], counts, pairs[:, 1])

    @classmethod
    def from_groups(cls, epsilons, counts, deltas=None) -> BudgetProfile:
        """The profile of groups of ``counts`` users with budgets ``epsilons`` (zero counts are
        dropped; equal budgets are merged)."""
        eps = np.asarray(epsilons, dtype=float).reshape(-1)
        counts = np.asarray(counts).reshape(-1)
        require(eps.shape == counts.shape, "counts", counts.tolist(), "need one count per budget")
        if not np.issubdtype(counts.dtype, np.integer) or (counts < 0).any():
            raise ParameterError("counts", counts.tolist()[:5], "must be integers >= 0")
        dl = np.zeros_like(eps) if deltas is None else np.broadcast_to(
            np.asarray(deltas, dtype=float).reshape(-1), eps.shape)
        keep = counts > 0
        require(keep.any(), "counts", counts.tolist(), "need at least one user")
        pairs, inverse = np.unique(np.stack([eps[keep], dl[keep]], axis=1), axis=0,
                                   return_inverse=True)
        merged = np.bincount(inverse.reshape(-1), weights=counts[keep], minlength=len(pairs))
        return cls(pairs[:, 0], merged.astype(np.int64), pairs[:, 1])

    @property
    def n(self) -> int:
        return int(self.counts.sum())

    @property
    def is_constant(self) -> bool:
        return np.unique(self.epsilons).size == 1

    def expanded(self) -> tuple[np.ndarray, np.ndarray]:
        """(budgets, local deltas), one entry per user, in profile order."""
        return np.repeat(self.epsilons, self.counts), np.repeat(self.deltas, self.counts)
