"""Planar Laplace on R^2 (geo-indistinguishability, Andres et al. CCS 2013; 001 Table 2, row
"planar Laplace [3]").

Points are carried as complex numbers x + iy (users stay on the last axis, one array element per
point). Inputs lie in the box [low, high] x [low_y, high_y] (diameter D its diagonal); with
eps = epsilon0 / D the metric budget per unit distance (protocols.randomizers.metric.base),

    R(x)(y) = (eps^2 / 2 pi) exp(-eps ||y - x||_2).

Exact sampling in polar form: a uniform angle and a radius r ~ Gamma(2, 1/eps) (the radial density
eps^2 r e^{-eps r}). By the triangle inequality the log ratio is at most eps ||a - b||, attained on
the ray beyond b away from a: the metric guarantee is tight. E[y | x] = x, E||y - x||^2 =
E r^2 = 6/eps^2, so each coordinate has variance 3/eps^2.

Projection. The projection of the noise on a unit direction, Z, has density
(eps^2 |t| / pi) K_1(eps |t|) (integrate the density along the orthogonal line:
int e^{-a sqrt(t^2 + s^2)} ds = 2 |t| K_1(a |t|)). The events that distinguish a pair (x0, x1)
are the two half-planes of the bisector, so every mass the bounds need is a value of the cdf of
Z, and TV(R(x0), R(x1)) = P(|Z| < d/2) = 2 int_0^{eps d/2} (t / pi) K_1(t) dt, 001 Table 2's
double integral with the inner one done (computed by quadrature, rounded up by its error).

The input domain is not an interval, so the decomposition-based bounds (engine) do not apply
(the randomizer declares no decomposition); the pair bounds of protocols.bounds.numerical.metric
do.
"""

from __future__ import annotations

import importlib
import math
from dataclasses import dataclass

import numpy as np
from scipy import special

from shufflesim.protocols.errors import ParameterError, require
from shufflesim.protocols.randomizers.analysis import NeighbourCandidates
from shufflesim.protocols.randomizers.metric.base import (
    MetricRandomizer,
    check_finite,
    check_interval,
)
from shufflesim.protocols.randomizers.registry import register


@dataclass(frozen=True)
class Box:
    """The input box [low, high] x [low_y, high_y] (points as complex numbers)."""

    low: float
    high: float
    low_y: float
    high_y: float

    def corners(self) -> tuple[complex, ...]:
        return (complex(self.low, self.low_y), complex(self.high, self.low_y),
                complex(self.low, self.high_y), complex(self.high, self.high_y))

    def contains(self, z: np.ndarray) -> np.ndarray:
        return ((z.real >= self.low) & (z.real <= self.high)
                & (z.imag >= self.low_y) & (z.imag <= self.high_y))


def _quad(*args, **kwargs):
    """scipy.integrate.quad, imported on first use: scipy.integrate costs ~0.07 s of CPU at
    import on top of scipy.optimize (0.5 s alone), in every process whose randomizer registry
    loads this module, while only the planar bounds integrate (issue 32, import cost)."""
    return importlib.import_module("scipy.integrate").quad(*args, **kwargs)


def _unit_density(t: float) -> float:
    """Density of the projection of unit-budget planar Laplace noise: |t| K_1(|t|) / pi."""
    t = abs(t)
    return 1.0 / math.pi if t == 0.0 else t * special.k1(t) / math.pi


def projection_central(t: float) -> tuple[float, float]:
    """P(0 < Z < t) for t >= 0 (unit budget), with the quadrature's error bound."""
    if t <= 0.0:
        return 0.0, 0.0
    value, error = _quad(_unit_density, 0.0, t, epsabs=1e-14, epsrel=1e-12, limit=200)
    return value, error + 1e-15


def projection_cdf(t: float) -> float:
    """P(Z <= t) for the unit-budget projection (tails by their own quadrature)."""
    if abs(t) > 3.0:
        tail, _ = _quad(_unit_density, abs(t), math.inf, epsabs=1e-16, epsrel=1e-12,
                                 limit=200)
        return 1.0 - tail if t > 0 else tail
    central, _ = projection_central(abs(t))
    return 0.5 + central if t >= 0 else 0.5 - central


def projection_cdf_array(t) -> np.ndarray:
    """P(Z <= t) for arrays (unit budget), in closed form: with K_1 = -K_0' and
    int_0^x K_0 = (pi x/2)(K_0(x) L_{-1}(x) + K_1(x) L_0(x)) (L the modified Struve functions,
    L_{-1} = L_1 + 2/pi), P(0 < Z < x) = (int_0^x K_0 - x K_0(x)) / pi. Absolute error ~1e-15 up to
    |t| = 30; beyond, the tail (< 1e-12) is dropped. For the bounds' masses the quadrature of
    :func:`projection_cdf` is used (relative accuracy in the tails)."""
    t = np.asarray(t, dtype=float)
    x = np.minimum(np.abs(t), 30.0)
    k0, k1 = special.k0(x), special.k1(x)
    l0, l1 = special.modstruve(0, x), special.modstruve(1, x)
    with np.errstate(invalid="ignore"):
        central = (0.5 * math.pi * x * (k0 * (l1 + 2.0 / math.pi) + k1 * l0) - x * k0) / math.pi
    central = np.where(x == 0.0, 0.0, np.clip(central, 0.0, 0.5))
    central = np.where(np.abs(t) >= 30.0, 0.5, central)
    return 0.5 + np.sign(t) * central


@register
@dataclass(frozen=True)
class PlanarLaplace(MetricRandomizer):
    """eps-geo-indistinguishable planar Laplace on a box (eps = epsilon0 / diagonal)."""

    epsilon0: float
    low: float = 0.0
    high: float = 1.0
    low_y: float | None = None
    high_y: float | None = None
    pair_x0: float | None = None
    pair_y0: float | None = None
    pair_x1: float | None = None
    pair_y1: float | None = None

    name = "planar_laplace"
    #: Example parameters (the conformance suites build it from them).
    example = dict(epsilon0=1.3, high=2.0, low_y=0.0, high_y=1.0)
    report_dtype = np.complex128

    def __post_init__(self) -> None:
        super().__post_init__()
        check_interval(self.low, self.high)
        ly = self.low if self.low_y is None else self.low_y
        hy = self.high if self.high_y is None else self.high_y
        try:
            check_interval(ly, hy)
        except ParameterError as error:
            raise ParameterError(error.field + "_y", error.value, error.requirement) from None
        box = self.input_domain
        for field in ("pair_x0", "pair_y0", "pair_x1", "pair_y1"):
            value = getattr(self, field)
            if value is not None:
                check_finite(field, value)
        x0, x1 = self.pair
        for field, z in (("pair_x0", x0), ("pair_x1", x1)):
            require(bool(box.contains(np.asarray(z))), field, (z.real, z.imag),
                    "the pair's points must lie in the input box")
        require(x0 != x1, "pair_x1", (x1.real, x1.imag), "must differ from the first point")

    # -- geometry ------------------------------------------------------------------------------
    @property
    def input_domain(self) -> Box:
        ly = self.low if self.low_y is None else self.low_y
        hy = self.high if self.high_y is None else self.high_y
        return Box(float(self.low), float(self.high), float(ly), float(hy))

    @property
    def dimension(self) -> int:
        return 2

    @property
    def diameter(self) -> float:
        box = self.input_domain
        return math.hypot(box.high - box.low, box.high_y - box.low_y)

    @property
    def pair(self) -> tuple[complex, complex]:
        box = self.input_domain
        x0 = complex(box.low if self.pair_x0 is None else self.pair_x0,
                     box.low_y if self.pair_y0 is None else self.pair_y0)
        x1 = complex(box.high if self.pair_x1 is None else self.pair_x1,
                     box.high_y if self.pair_y1 is None else self.pair_y1)
        return x0, x1

    @property
    def pair_reach(self) -> float:
        """The farthest corner of the box from either pair point."""
        return max(abs(c - x) for c in self.input_domain.corners() for x in self.pair)

    def check_values(self, values):
        values = np.asarray(values)
        require(np.issubdtype(values.dtype, np.number), "values", values.dtype,
                "planar inputs are numbers x + iy")
        values = values.astype(np.complex128)
        if values.size and not np.isfinite(values).all():
            raise ParameterError("values", complex(values[~np.isfinite(values)].flat[0]),
                                 "must be finite")
        inside = self.input_domain.contains(values)
        if values.size and not inside.all():
            bad = complex(values[~inside].flat[0])
            box = self.input_domain
            raise ParameterError("values", (bad.real, bad.imag),
                                 f"must lie in the box [{box.low:g}, {box.high:g}] x "
                                 f"[{box.low_y:g}, {box.high_y:g}]")
        return values

    # -- sampling and density ------------------------------------------------------------------
    def randomize(self, values, rng, epsilon=None):
        values = self.check_values(values)
        self._epsilon_array(values, epsilon)
        shape = values.shape
        radius = rng.gamma(2.0, 1.0 / self.metric_epsilon, size=shape)
        angle = rng.uniform(0.0, 2.0 * math.pi, size=shape)
        return values + radius * np.exp(1j * angle)

    def log_prob(self, x, y):
        """log(eps^2 / 2 pi) - eps ||y - x||."""
        eps = self.metric_epsilon
        return math.log(eps * eps / (2.0 * math.pi)) - eps * np.abs(np.asarray(y) - np.asarray(x))

    def radius_cdf(self, r):
        """P[||R(x) - x|| <= r] = 1 - e^{-eps r}(1 + eps r) (Gamma(2, 1/eps))."""
        u = self.metric_epsilon * np.maximum(np.asarray(r, dtype=float), 0.0)
        return -np.expm1(-u) - u * np.exp(-u)

    @property
    def audit_direction(self) -> complex:
        """e = (x1 - x0)/|x1 - x0| for the declared pair."""
        x0, x1 = self.pair
        return (x1 - x0) / abs(x1 - x0)

    def audit_statistic(self, outputs) -> np.ndarray:
        """<y, e>: the projection of a report on the pair's direction (the auditor's 1-D
        statistic; it is all that distinguishes R(x0) from R(x1) in 001 Thm 5.1's events)."""
        return (np.asarray(outputs) * np.conj(self.audit_direction)).real

    def cdf(self, x, t):
        """P[<R(x), e> <= t] (the declared law of ``audit_statistic``): the projection's cdf at
        eps (t - <x, e>)."""
        shift = (np.asarray(x, dtype=complex) * np.conj(self.audit_direction)).real
        u = self.metric_epsilon * (np.asarray(t, dtype=float) - shift)
        return projection_cdf_array(u)

    def total_variation(self, distance: float) -> float:
        """P(|Z| < eps d/2) = 2 int_0^{eps d/2} t K_1(t)/pi dt (module docstring), rounded up by
        the quadrature's error."""
        value, error = projection_central(0.5 * self.metric_epsilon * float(distance))
        return min(1.0, 2.0 * (value + error) * (1 + 1e-12))

    def distinguishing_masses(self, x0, x1, reference):
        """Half-planes of the bisector of (x0, x1): A nearer x0, B nearer x1; a centre c puts
        P(Z < eps <m - c, e>) on A, e = (x1 - x0)/|x1 - x0|, m the midpoint."""
        x0, x1, reference = complex(x0), complex(x1), complex(reference)
        e = (x1 - x0) / abs(x1 - x0)
        mid = 0.5 * (x0 + x1)
        out = []
        for c in (x0, x1, reference):
            tau = ((mid - c) * e.conjugate()).real
            a = projection_cdf(self.metric_epsilon * tau)
            out.append((a, 1.0 - a))
        return tuple(out)

    def lower_references(self) -> tuple:
        x0, x1 = self.pair
        return tuple(dict.fromkeys((x0, x1, 0.5 * (x0 + x1), *self.input_domain.corners())))

    def neighbour_candidates(self, pair_grid: int | None = None) -> NeighbourCandidates:
        """The declared pair (the box's worst pair by default: its diagonal)."""
        x0, x1 = self.pair
        return NeighbourCandidates(((x0, x1),), ((x0, x1, x0), (x0, x1, x1)), (x0,), False,
                                   "planar_laplace-pair", "the declared metric pair only")

    # -- moments ----------------------------------------------------------------------------------
    @property
    def location_affine(self) -> tuple[float, float]:
        """E[y | x] = x. (No ``report_affine``: the real-valued mean and sum estimators do not
        take points of the plane; location_mean does.)"""
        return 0.0, 1.0

    def location_variance(self, x, epsilon=None):
        """E||y - x||^2 = E r^2 = 6/eps^2 (3/eps^2 per coordinate)."""
        return np.zeros(np.shape(x)) + 6.0 / self.metric_epsilon ** 2
