"""The domains of a randomizer's inputs and outputs, and its output groups: plain data that the
randomizer interface (base.py) and its declared analysis (analysis.py) both speak in."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Categorical:
    """The finite domain {0, 1, ..., size - 1}."""

    size: int


@dataclass(frozen=True)
class Interval:
    """The closed real interval [low, high] (``high`` may be ``inf`` for outputs)."""

    low: float
    high: float


@dataclass(frozen=True)
class OutputGroups:
    """The output distribution grouped relative to a tuple of anchor inputs.

    Outputs are partitioned into groups such that, inside a group, every output has the same
    probability under each anchor input and the same minimum probability over *all* inputs.
    Groups are stored by their total mass, which avoids enumerating huge output spaces (e.g. the
    2^d reports of unary encodings).

    mass[a, g]: total probability of group g under anchors[a].
    mass_min[g]: sum over the outputs y of group g of min_x R(x)(y) (the blanket mass, 000 Sec. 4).
    """

    anchors: tuple
    mass: np.ndarray
    mass_min: np.ndarray

    def __post_init__(self) -> None:
        if self.mass.ndim != 2 or self.mass.shape != (len(self.anchors), self.mass_min.shape[0]):
            raise ValueError("OutputGroups: mass must have shape (len(anchors), n_groups)")
