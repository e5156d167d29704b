"""Shared base of the metric-DP (d_X-private) randomizers: 001 Sec. 4.1, Table 2.

Metric privacy (Chatzikokolakis et al., 001 ref. [13]): R is d_X-private when
R(a)(S) <= e^{d_X(a, b)} R(b)(S) for all inputs a, b and events S. The three randomizers here
use d_X(a, b) = eps |a - b| (l1 on R, l2 on R^2), eps the *metric budget per unit distance*.

What ``epsilon0`` means
-----------------------
Every input domain here is bounded (an interval or a box) with diameter D, so a d_X-private
randomizer is also (eps D)-LDP over its domain, and the whole project (the generic bounds, the
engine, the auditor's eps0 check) reads ``epsilon0`` as the local budget that holds for *every*
pair of inputs. So ``epsilon0`` is that local budget over the domain, and the metric budget per
unit distance is

    eps = epsilon0 / D                          (property ``metric_epsilon``)

(the witch hat's privacy loss is min(eps d, m) <= epsilon0, so epsilon0 stays a valid, possibly
loose, local budget for it). With this reading every existing eps0-LDP bound stays valid for the
worst pair of the domain; the pair-specific bounds of 001 Table 2 come from
:meth:`MetricRandomizer.metric_variation_ratio`.

The pair
--------
Metric privacy is a statement per pair of inputs: neighbouring datasets differ in user 1's input,
x0 -> x1, the others anywhere in the domain. Each randomizer takes its pair as parameters
(``pair_x0``, ``pair_x1``; planar: ``pair_x0, pair_y0, pair_x1, pair_y1``; default: the two ends
of the domain's diameter). Then (001 Table 2, in input units):

    d01   = |x0 - x1|                            (``pair_distance``)
    d_max = max over x in the domain of max(|x - x0|, |x - x1|)   (``pair_reach``: an interval's
            farthest endpoint, a box's farthest corner)

and 001's parameters are p = e^{L(d01)}, beta = TV(R(x0), R(x1)), q = e^{L(d_max)}, with L(d) the
privacy loss at distance d (eps d; the witch hat: min(eps d, m)).
"""

from __future__ import annotations

import math
from abc import abstractmethod
from typing import ClassVar

import numpy as np

from shufflesim.protocols.errors import require
from shufflesim.protocols.randomizers.analysis import VariationRatioRow
from shufflesim.protocols.randomizers.base import Randomizer

#: A source label of the pair-specific rows.
TABLE2 = "001 Table 2"


def check_finite(field: str, value) -> float:
    require(isinstance(value, (int, float, np.floating)) and not isinstance(value, bool)
            and math.isfinite(value), field, value, "must be a finite number")
    return float(value)


def check_interval(low, high) -> tuple[float, float]:
    low, high = check_finite("low", low), check_finite("high", high)
    require(low < high, "high", high, f"must exceed low = {low}")
    return low, high


class MetricRandomizer(Randomizer):
    """A d_X-private randomizer on a bounded domain (see the module docstring)."""

    output_kind = "continuous"
    #: Marks metric-DP randomizers (bounds per pair: protocols.bounds.numerical.metric).
    metric_privacy: ClassVar[bool] = True

    # -- geometry ----------------------------------------------------------------------------
    @property
    @abstractmethod
    def diameter(self) -> float:
        """D: the largest distance between two inputs of the domain (input units)."""

    @property
    def metric_epsilon(self) -> float:
        """eps = epsilon0 / D: the metric budget per unit distance."""
        return float(self.epsilon0) / self.diameter

    @property
    @abstractmethod
    def pair(self) -> tuple:
        """The neighbouring pair (x0, x1) of the pair-specific bounds."""

    @property
    def pair_distance(self) -> float:
        """d01 = |x0 - x1| in input units."""
        x0, x1 = self.pair
        return float(abs(x1 - x0))

    @property
    @abstractmethod
    def pair_reach(self) -> float:
        """d_max = max over the domain of max(|x - x0|, |x - x1|), in input units."""

    def privacy_loss(self, distance: float) -> float:
        """L(d): the largest log ratio R(a)(y)/R(b)(y) over |a - b| = d (eps d; tight)."""
        return self.metric_epsilon * float(distance)

    @abstractmethod
    def total_variation(self, distance: float) -> float:
        """TV(R(a), R(b)) at |a - b| = ``distance`` (input units), rounded up."""

    # -- 001 Table 2 ---------------------------------------------------------------------------
    def metric_variation_ratio(self, d01: float | None = None,
                               d_max: float | None = None) -> VariationRatioRow:
        """001 Table 2 at the pair distance ``d01`` and reach ``d_max`` (input units; default:
        the declared pair's, ``pair_distance`` and ``pair_reach``): p = e^{L(d01)},
        beta = TV at d01, q = e^{L(d_max)}. d_max comes from the input domain: the largest
        distance from either pair input to a point of the domain (module docstring)."""
        d01 = self.pair_distance if d01 is None else float(d01)
        d_max = self.pair_reach if d_max is None else float(d_max)
        require(0 < d01 <= self.diameter * (1 + 1e-12), "d01", d01,
                f"must lie in (0, D = {self.diameter:g}]")
        require(d01 <= d_max * (1 + 1e-12) and d_max <= self.diameter * (1 + 1e-12), "d_max",
                d_max, f"must lie in [d01, D] = [{d01:g}, {self.diameter:g}]")
        p = math.exp(self.privacy_loss(d01))
        q = math.exp(self.privacy_loss(d_max))
        beta = min(self.total_variation(d01), (p - 1.0) / (p + 1.0))
        return VariationRatioRow(p, beta, q, f"{TABLE2}, {self.name}, d01 = {d01:g}, "
                                             f"d_max = {d_max:g}")

    def variation_ratio_parameters(self) -> VariationRatioRow:
        """The domain-wide row: the worst pair of the domain, d01 = d_max = D (p = q = e^eps0
        except for the witch hat, whose loss is capped at m); TV grows with the distance."""
        return self.metric_variation_ratio(self.diameter, self.diameter)

    # -- a post-processing of a concrete pair (001 Thm 5.1) ------------------------------------
    @abstractmethod
    def distinguishing_masses(self, x0, x1, reference) -> tuple[tuple, tuple, tuple]:
        """Masses of the two events A = {R(x0)(y) > R(x1)(y)}, B = {R(x1)(y) > R(x0)(y)} under
        R(x0), R(x1) and R(reference): ((u_A, u_B), (v_A, v_B), (s_A, s_B))."""

    @abstractmethod
    def lower_references(self) -> tuple:
        """Inputs tried as the other users' common input x* of the pair lower bound."""

    # -- estimators ------------------------------------------------------------------------------
    def aggregate(self, outputs):
        """Sum of the reports over the user (last) axis."""
        outputs = np.asarray(outputs)
        if not np.iscomplexobj(outputs):
            outputs = outputs.astype(float)
        return outputs.sum(axis=-1)

    @property
    def dimension(self) -> int:
        """1 for inputs on R, 2 for points of R^2 (carried as complex numbers x + iy)."""
        return 1

    @property
    @abstractmethod
    def location_affine(self) -> tuple[float, float]:
        """(a, b) with E[y | x] = a + b x (read by protocols.estimators.location)."""

    @abstractmethod
    def location_variance(self, x, epsilon=None):
        """E|y - E[y | x]|^2 given x, summed over the coordinates."""

    def coordinate_variance(self, x, epsilon=None):
        """Var of one coordinate of a report given x (equal for both coordinates in 2-D)."""
        return np.asarray(self.location_variance(x, epsilon), dtype=float) / self.dimension
