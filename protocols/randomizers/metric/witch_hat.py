"""The (B, m, F)-WitchHat mechanism (001 Table 2, row "(B, m, F)-WitchHat [53]").

What 001 says and what is assumed
---------------------------------
001 cites the mechanism to [53] (Wang et al., "Metric differential privacy in the shuffle model",
"to be released") and says only that it "shapes like truncated-clipped Laplace distribution" and
is l1-metric private on R; its Table 2 row is p = e^{d01}, q = e^{d_max} and

    beta = 2 (e^m - e^{d01/F} + d01/F - m) / (F (e^m - 1) + 2B)        (printed; also in the
                                                                       authors' repository)

[53] is not available, so the definition below is ASSUMED, chosen as the simplest density that
is a clipped (floor), truncated (bounded support) Laplace with parameters named B, m, F:

    g(y | x) = exp(max(m - |y - x| / F, 0))   on O = [low - mF - B, high + mF + B], 0 outside;
    R(x)(y) = g(y | x) / Z,   Z = D + 2B + 2F(e^m - 1)   (D = high - low; Z independent of x).

A hat of height e^m and slope 1/F on a brim of level 1 that reaches B beyond the hats of the
extreme inputs. The privacy loss between inputs at distance d is L(d) = min(d/F, m) (tight: the
log ratio is d/F on the shared slope when d <= mF, and m at y = x1 when d > mF), so the metric
budget per unit distance is eps = 1/F; as for every metric randomizer here, epsilon0 = eps D
(protocols.randomizers.metric.base), i.e. F = D / epsilon0, and the mechanism is
min(epsilon0, m)-LDP over the domain.

Its exact total variation at distance d (derived: (g0 - g1)_+ is h(y - x0) - h(y - x1) on
y < (x0 + x1)/2 with h(s) = (e^{m - |s|/F} - 1)_+, whose integral telescopes to the hat's mass on
[-d/2, d/2]) is

    TV(d) = 2 (F (e^m - e^{m - s/F}) - s) / Z,   s = min(d/2, mF).

It is 0 at d = 0 and increasing, while the printed row is positive at d01 = 0 and decreasing in
d01 (zero at d01 = mF): the printed row is not a total variation of this mechanism and, without
[53], of none we could reconstruct; the bounds use the exact TV above (tests compare both).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from shufflesim.protocols.errors import ParameterError, require, require_positive_finite
from shufflesim.protocols.randomizers.base import Interval
from shufflesim.protocols.randomizers.metric.laplace_metric import IntervalPair
from shufflesim.protocols.randomizers.registry import register

#: Rejection rounds of the hat sampler before giving up (acceptance >= m/(2 + m) per round).
MAX_ROUNDS = 10_000


def printed_table2_beta(d01: float, m: float, F: float, B: float) -> float:
    """001 Table 2's printed WitchHat beta, as printed (for comparison only, see the module
    docstring; ``d01`` in metric units as in 001)."""
    return 2.0 * (math.exp(m) - math.exp(d01 / F) + d01 / F - m) / (F * math.expm1(m) + 2.0 * B)


@register
@dataclass(frozen=True)
class WitchHat(IntervalPair):
    """(B, m, F)-WitchHat on [low, high] (assumed definition: module docstring);
    ``height`` = m, ``brim`` = B, F = (high - low) / epsilon0."""

    epsilon0: float
    height: float = 1.0
    brim: float = 0.0
    low: float = 0.0
    high: float = 1.0
    pair_x0: float | None = None
    pair_x1: float | None = None

    name = "witch_hat"
    #: Example parameters (the conformance suites build it from them).
    example = dict(epsilon0=1.3, height=2.0, brim=0.4)
    #: the brim, where both densities are equal, carries mass (the pair lower bound's events)
    events_exhaustive: ClassVar[bool] = False

    def __post_init__(self) -> None:
        super().__post_init__()
        require_positive_finite("height", self.height)
        require(self.height <= 50.0, "height", self.height, "must be <= 50 (e^m a finite float)")
        require(isinstance(self.brim, (int, float)) and not isinstance(self.brim, bool)
                and 0.0 <= self.brim < math.inf, "brim", self.brim, "must be a finite number >= 0")
        self._check_geometry()

    # -- shape ---------------------------------------------------------------------------------
    @property
    def hat_scale(self) -> float:
        """F = 1/eps = D / epsilon0."""
        return 1.0 / self.metric_epsilon

    @property
    def hat_halfwidth(self) -> float:
        """m F: where the hat meets the brim."""
        return float(self.height) * self.hat_scale

    @property
    def output_domain(self) -> Interval:
        w = self.hat_halfwidth + float(self.brim)
        return Interval(float(self.low) - w, float(self.high) + w)

    @property
    def hat_mass(self) -> float:
        """H = int (e^{m - |s|/F} - 1)_+ ds = 2F(e^m - 1 - m)."""
        m = float(self.height)
        return 2.0 * self.hat_scale * (math.expm1(m) - m)

    @property
    def normalizer(self) -> float:
        """Z = |O| + H = D + 2B + 2F(e^m - 1)."""
        return self.diameter + 2.0 * float(self.brim) + 2.0 * self.hat_scale * math.expm1(
            float(self.height))

    def privacy_loss(self, distance: float) -> float:
        """min(d/F, m)."""
        return min(self.metric_epsilon * float(distance), float(self.height))

    # -- sampling and density ------------------------------------------------------------------
    def randomize(self, values, rng, epsilon=None):
        """Mixture: uniform on O w.p. |O|/Z, else x + sign * F(m - v) with v of density
        proportional to e^v - 1 on [0, m] (rejection from the density e^v: accept w.p.
        1 - e^{-v}; exact)."""
        values = self.check_values(values)
        self._epsilon_array(values, epsilon)
        values = np.asarray(values, dtype=float)
        out = self.output_domain
        m, F = float(self.height), self.hat_scale
        shape = np.shape(values)
        brim = rng.random(shape) < (out.high - out.low) / self.normalizer
        uniform = rng.uniform(out.low, out.high, size=shape)
        v = np.empty(shape)
        pending = np.ones(shape, dtype=bool)
        for _ in range(MAX_ROUNDS):
            count = int(pending.sum())
            if count == 0:
                break
            proposal = np.log1p(rng.random(count) * math.expm1(m))
            accept = rng.random(count) < -np.expm1(-proposal)
            index = np.flatnonzero(pending)[accept]
            v.flat[index] = proposal[accept]
            pending.flat[index] = False
        else:
            raise ParameterError("height", self.height, "hat sampler did not converge")
        sign = np.where(rng.random(shape) < 0.5, -1.0, 1.0)
        hat = values + sign * F * (m - v)
        return np.where(brim, uniform, hat)

    def log_prob(self, x, y):
        """max(m - |y - x|/F, 0) - log Z on O, -inf outside."""
        x = np.asarray(x, dtype=float)
        y = np.asarray(y, dtype=float)
        out = self.output_domain
        value = np.maximum(float(self.height) - np.abs(y - x) / self.hat_scale, 0.0)
        value = value - math.log(self.normalizer)
        return np.where((y >= out.low) & (y <= out.high), value, -np.inf)

    def cdf(self, x, t):
        """P[R(x) <= t]: the brim's share plus the hat's excess, both in closed form."""
        x = np.asarray(x, dtype=float)
        t = np.asarray(t, dtype=float)
        out = self.output_domain
        m, F, w = float(self.height), self.hat_scale, self.hat_halfwidth
        brim = np.clip(t, out.low, out.high) - out.low
        s = np.clip(t - x, -w, w)
        left = F * np.expm1(m + np.minimum(s, 0.0) / F) - (np.minimum(s, 0.0) + w)
        sp = np.maximum(s, 0.0)
        right = F * (math.exp(m) - np.exp(m - sp / F)) - sp
        excess = np.where(s <= 0.0, left, 0.5 * self.hat_mass + right)
        return np.clip((brim + excess) / self.normalizer, 0.0, 1.0)

    def total_variation(self, distance: float) -> float:
        """2 (F (e^m - e^{m - s/F}) - s) / Z, s = min(d/2, mF) (module docstring), rounded up."""
        m, F = float(self.height), self.hat_scale
        s = min(0.5 * float(distance), self.hat_halfwidth)
        tv = 2.0 * (F * math.exp(m) * -math.expm1(-s / F) - s) / self.normalizer
        return max(tv, 0.0) * (1 + 1e-12) + 1e-300

    def _events(self, x0: float, x1: float) -> tuple[float, float, float, float]:
        """{R(x0) > R(x1)}: y nearer x0 than x1 and inside x0's hat (both at the brim level
        elsewhere: equal)."""
        mid, w = 0.5 * (x0 + x1), self.hat_halfwidth
        if x0 < x1:
            return x0 - w, min(mid, x0 + w), max(mid, x1 - w), x1 + w
        return max(mid, x0 - w), x0 + w, x1 - w, min(mid, x1 + w)

    # -- moments ----------------------------------------------------------------------------------
    @property
    def _center(self) -> float:
        return 0.5 * (float(self.low) + float(self.high))

    @property
    def location_affine(self) -> tuple[float, float]:
        """E[y | x] = (|O| c + H x)/Z, c the centre of O: (a, b) = (|O| c/Z, H/Z)."""
        out = self.output_domain
        z = self.normalizer
        return (out.high - out.low) * self._center / z, self.hat_mass / z

    def location_variance(self, x, epsilon=None):
        """Var[y | x] = E[y'^2] - E[y']^2 with y' = y - c:
        E[y'^2] = (|O|^3/12 + H (x - c)^2 + H2)/Z, E[y'] = H (x - c)/Z,
        H2 = int s^2 (e^{m - |s|/F} - 1)_+ ds = 2F^3 (2e^m - 2 - 2m - m^2 - m^3/3)."""
        x = np.asarray(x, dtype=float) - self._center
        out = self.output_domain
        m, F, z, h = float(self.height), self.hat_scale, self.normalizer, self.hat_mass
        series = 2.0 * math.expm1(m) - 2.0 * m - m * m - m ** 3 / 3.0
        if m < 1e-2:  # the series' leading terms cancel: 2 sum_{k>=4} m^k/k!
            series = 2.0 * sum(m ** k / math.factorial(k) for k in range(4, 12))
        h2 = 2.0 * F ** 3 * series
        second = ((out.high - out.low) ** 3 / 12.0 + h * x * x + h2) / z
        first = h * x / z
        return second - first * first
