"""The generalized privacy amplification random variable (GPARV) as a finite set of atoms.

For a decomposition of the randomizer relative to a neighbour pair (x1^0, x1^1) (000, Sec. 4-5),
the GPARV is

    G_eps = a_j - e^eps * b_j   with probability weight_j   (j = 1..m),
    G_eps = 0                   with probability 1 - sum_j weight_j,

where (a_j, b_j) are the ratios R(x1^0)(y)/m(y) and R(x1^1)(y)/m(y) on the j-th group of outputs
and weight_j is the group's mass under the reference component m (the blanket for upper bounds,
R(x2) for the exact lower bound of 000 Thm 14). Keeping (a, b) instead of G's values lets one
object serve every eps.

delta(eps) = (1/n) E[(G_1 + ... + G_n)_+]   (000 Thm 13 / Thm 14).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

import numpy as np


class Rounding(StrEnum):
    """How a discretized atom set relates to the true variable."""

    EXACT = "exact"
    #: Every value rounded up: the atom set stochastically dominates G (sound for upper bounds).
    UP = "up"
    #: Every value rounded down: dominated by G (sound for lower bounds).
    DOWN = "down"


@dataclass(frozen=True)
class RatioAtoms:
    """Atoms (a_j, b_j, weight_j) of a GPARV; the remaining mass is the atom G = 0."""

    a: np.ndarray
    b: np.ndarray
    weight: np.ndarray
    rounding: Rounding = Rounding.EXACT

    def __post_init__(self) -> None:
        a, b, w = (np.asarray(v, dtype=float) for v in (self.a, self.b, self.weight))
        if not (a.shape == b.shape == w.shape and a.ndim == 1):
            raise ValueError("RatioAtoms: a, b and weight must be 1-D arrays of equal length")
        if (w < 0).any() or w.sum() > 1 + 1e-12:
            raise ValueError("RatioAtoms: weights must be >= 0 and sum to at most 1")
        object.__setattr__(self, "a", a)
        object.__setattr__(self, "b", b)
        object.__setattr__(self, "weight", w)

    @property
    def zero_weight(self) -> float:
        """Probability of the atom G = 0 (the part outside the reference component)."""
        return max(0.0, 1.0 - float(self.weight.sum()))

    def values(self, epsilon: float) -> np.ndarray:
        """The values a_j - e^eps b_j of the atoms at this eps."""
        return self.a - np.exp(epsilon) * self.b

    def swapped(self) -> RatioAtoms:
        """The atoms of the reverse direction (x1^1, x1^0)."""
        return RatioAtoms(self.b, self.a, self.weight, self.rounding)
