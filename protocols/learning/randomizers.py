"""Local randomizers for clipped gradient vectors (issue 19), vectorized over clients.

Each client's input is a vector ``g`` in the L2 ball of radius ``C`` (per-example clipping,
see :mod:`protocols.learning.clipping`); the randomizers take an array ``(clients, P)`` and
per-client budgets (scalars or arrays of length ``clients``) and return ``(clients, P)``
reports whose mean is an unbiased estimate of the mean of the inputs.

* :class:`GaussianGradient`: ``g + N(0, sigma^2 I)``, (eps0, delta0)-LDP with sigma from the
  analytic Gaussian mechanism (Balle and Wang, ICML 2018, Theorem 8). This is the local
  randomizer of 002 Sec. 5.2 (each step of shuffled DP-SGD an (eps0, delta0) local randomizer,
  Thm 3.8 / Prop. 5.3) and of 003 Algorithm 3 (whose line 7 uses the classical
  sigma = Delta sqrt(2 log(1.25/delta)) / eps of Dwork and Roth Thm A.1, valid for eps < 1 only;
  ``calibration="classical"`` reproduces it). The analytic calibration lives in
  protocols.randomizers.gaussian (shared with the ``gaussian`` local randomizer for means).
* :class:`DuchiL2`: Duchi, Jordan and Wainwright (JASA 2018, Sec. 4.2.3, the L2-ball
  mechanism), pure eps0-LDP with an exact output density.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import special

from shufflesim.protocols.errors import require, require_positive_finite
from shufflesim.protocols.learning.clipping import CLIP_POINTS
from shufflesim.protocols.randomizers.gaussian import (  # the one home of the calibration
    analytic_gaussian_sigma,
    gaussian_delta,
    log_gaussian_delta,
)

__all__ = ["DuchiL2", "GaussianGradient", "analytic_gaussian_sigma", "classical_gaussian_sigma",
           "gaussian_delta", "log_gaussian_delta", "mean_abs_coordinate"]


def classical_gaussian_sigma(epsilon, delta, sensitivity=1.0) -> np.ndarray:
    """Dwork and Roth (2014) Thm A.1: sigma = Delta sqrt(2 log(1.25/delta)) / eps (eps < 1);
    the noise of 003 Algorithm 3 line 7 with Delta = 2C/m."""
    e, d, s = np.broadcast_arrays(np.asarray(epsilon, float), np.asarray(delta, float),
                                  np.asarray(sensitivity, float))
    return s * np.sqrt(2.0 * np.log(1.25 / d)) / e


@dataclass(frozen=True)
class GaussianGradient:
    """Gaussian local randomizer on the L2 ball of radius ``clip``: y = g + N(0, sigma_i^2 I).

    Any two inputs of the ball differ by at most ``sensitivity = 2 clip`` (client-level LDP:
    replacement of the client's whole input). With ``privacy_unit="example"`` and ``m`` examples
    per client (per-example clipping), one example moves the mean by at most 2 clip / m (003's
    sensitivity). ``calibration``: ``"analytic"`` (Balle-Wang, exact) or ``"classical"``.
    ``clip_point`` (protocols.learning.clipping): ``"example"`` or ``"client-mean"`` (003 Alg.
    3 line 12 as printed); it does not change sigma (003 calibrates to 2 clip / m either way)
    but it changes the sensitivity that holds (:attr:`unit_sensitivity`).
    Unbiased: E[y | g] = g; E||y - g||^2 = P sigma^2."""

    clip: float
    calibration: str = "analytic"
    examples_per_client: int = 1
    privacy_unit: str = "client"
    clip_point: str = "example"

    def __post_init__(self):
        require_positive_finite("clip", float(self.clip))
        require(self.calibration in ("analytic", "classical"), "calibration", self.calibration,
                "must be 'analytic' or 'classical'")
        require(self.privacy_unit in ("client", "example"), "privacy_unit", self.privacy_unit,
                "must be 'client' or 'example'")
        require(self.clip_point in CLIP_POINTS, "clip_point", self.clip_point,
                f"must be one of {list(CLIP_POINTS)}")

    @property
    def sensitivity(self) -> float:
        """The L2 sensitivity sigma is calibrated to: 2 clip, or 2 clip / m per example."""
        m = self.examples_per_client if self.privacy_unit == "example" else 1
        return 2.0 * self.clip / m

    @property
    def unit_sensitivity(self) -> float:
        """The L2 sensitivity that *holds* for the privacy unit: :attr:`sensitivity`, except
        with example-level calibration and client-mean clipping, where one example can move the
        clipped mean anywhere in the ball of radius clip (2 clip; clipping module)."""
        if self.clip_point == "client-mean":
            return 2.0 * self.clip
        return self.sensitivity

    def sigma(self, epsilon0, delta0) -> np.ndarray:
        if self.calibration == "classical":
            return classical_gaussian_sigma(epsilon0, delta0, self.sensitivity)
        return analytic_gaussian_sigma(epsilon0, delta0, self.sensitivity)

    def randomize(self, g, rng: np.random.Generator, epsilon0, delta0) -> np.ndarray:
        g = np.asarray(g, dtype=float)
        sigma = np.broadcast_to(self.sigma(epsilon0, delta0), g.shape[:1])
        return g + sigma[:, None] * rng.standard_normal(g.shape)


# ---------------------------------------------------------------- Duchi et al., L2 ball
def mean_abs_coordinate(dim: int) -> float:
    """E|z_1| for z uniform on the unit sphere S^{dim-1}: Gamma(d/2) / (sqrt(pi) Gamma((d+1)/2)).

    (z_1^2 ~ Beta(1/2, (d-1)/2), so E|z_1| = B(1, (d-1)/2) / B(1/2, (d-1)/2).)"""
    return math.exp(special.gammaln(dim / 2.0) - special.gammaln((dim + 1) / 2.0)) / math.sqrt(
        math.pi)


@dataclass(frozen=True)
class DuchiL2:
    """Duchi, Jordan and Wainwright (2018), Sec. 4.2.3: eps0-LDP for the L2 ball of radius C.

    For input v (||v|| <= C) in dimension P:

    1. v~ = +C v/||v|| with probability 1/2 + ||v||/(2C), else -C v/||v|| (v = 0: a fixed unit
       direction, both signs with probability 1/2);
    2. with probability pi = e^eps/(e^eps + 1) draw z uniformly on the hemisphere
       {z in S^{P-1}: <z, v~> > 0}, else on the opposite hemisphere;
    3. report y = B z with B = C (e^eps + 1)/(e^eps - 1) / E|z_1|.

    Unbiased: E[z | v~] = (2 pi - 1) E|z_1| v~/C and E[v~] = v, so E[y] = v. (Derived here
    rather than copied from the garbled text; in Gamma functions 1/E|z_1| =
    sqrt(pi) P Gamma((P-1)/2 + 1) / (2 Gamma(P/2 + 1)), the form the paper's B takes;
    tests/test_learning.py checks both the identity and the unbiasedness by Monte Carlo.)
    Exact output law: z has density, w.r.t. the uniform law on the sphere,

        f(z | v) = 2 [q(v) pi + (1 - q(v)) (1 - pi)]   if <z, v> > 0,
                   2 [q(v) (1 - pi) + (1 - q(v)) pi]   otherwise,   q(v) = 1/2 + ||v||/(2C),

    which lies in [2 (1 - pi), 2 pi]: the density ratio of any output under any two inputs is
    at most pi/(1 - pi) = e^eps (pure eps-LDP), attained by v = C u vs v' = -C u.
    Second moment: ||y|| = B always, so E||y||^2 = B^2.
    """

    clip: float

    def __post_init__(self):
        require_positive_finite("clip", float(self.clip))

    def scale(self, epsilon0, dim: int) -> np.ndarray:
        """B per client (shape of epsilon0)."""
        e = np.asarray(epsilon0, dtype=float)
        return self.clip / np.tanh(e / 2.0) / mean_abs_coordinate(dim)

    @staticmethod
    def _directions(v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        norms = np.linalg.norm(v, axis=-1)
        u = np.zeros_like(v)
        u[..., 0] = 1.0
        nz = norms > 0
        u[nz] = v[nz] / norms[nz, None]
        return u, norms

    def randomize(self, g, rng: np.random.Generator, epsilon0) -> np.ndarray:
        g = np.asarray(g, dtype=float)
        n, dim = g.shape
        require(dim >= 2, "dimension", dim, "must be >= 2 for the L2-ball mechanism")
        eps = np.broadcast_to(np.asarray(epsilon0, dtype=float), (n,))
        require(bool(np.all((eps > 0) & np.isfinite(eps))), "epsilon0", epsilon0,
                "must be finite and > 0")
        u, norms = self._directions(g)
        require(bool(np.all(norms <= self.clip * (1 + 1e-9))), "gradient norm",
                float(norms.max()), f"must be <= clip = {self.clip} (clip first)")
        q = 0.5 + np.minimum(norms / self.clip, 1.0) / 2.0
        sign_v = np.where(rng.random(n) < q, 1.0, -1.0)
        pi = special.expit(eps)  # e^eps / (e^eps + 1)
        side = np.where(rng.random(n) < pi, 1.0, -1.0)
        target = (sign_v * side)[:, None] * u  # z must satisfy <z, target> >= 0
        z = rng.standard_normal((n, dim))
        z /= np.linalg.norm(z, axis=1, keepdims=True)
        proj = np.einsum("ij,ij->i", z, target)
        z = np.where((proj < 0)[:, None], z - 2.0 * proj[:, None] * target, z)  # reflect
        return self.scale(eps, dim)[:, None] * z

    def density(self, y, v, epsilon0) -> np.ndarray:
        """Density of reports ``y`` (..., P) under inputs ``v`` (..., P), w.r.t. the uniform law
        on the sphere of radius B (broadcast over leading axes)."""
        y = np.asarray(y, float)
        v = np.asarray(v, float)
        u, norms = self._directions(np.broadcast_to(v, np.broadcast_shapes(v.shape, y.shape))
                                    .copy())
        q = 0.5 + np.minimum(norms / self.clip, 1.0) / 2.0
        pi = special.expit(np.asarray(epsilon0, float))
        pos = np.einsum("...j,...j->...", y, u) > 0
        p_pos = q * pi + (1 - q) * (1 - pi)
        return 2.0 * np.where(pos, p_pos, 1.0 - p_pos)

    def projection_cdf(self, t, v, epsilon0, dim: int) -> np.ndarray:
        """Exact CDF of <z, v/||v||> (z = y/B) under input ``v`` != 0: the sign is + with
        probability p = q pi + (1-q)(1-pi), and |<z, u>| is distributed as |z_1| of a uniform
        point on S^{P-1} (|z_1|^2 ~ Beta(1/2, (P-1)/2)) independently of the sign."""
        t = np.asarray(t, float)
        norm = float(np.linalg.norm(v))
        q = 0.5 + min(norm / self.clip, 1.0) / 2.0
        pi = float(special.expit(epsilon0))
        p_pos = q * pi + (1 - q) * (1 - pi)
        g = special.betainc(0.5, (dim - 1) / 2.0, np.minimum(t * t, 1.0))
        return np.where(t < 0, (1 - p_pos) * (1 - g), (1 - p_pos) + p_pos * g)


RANDOMIZERS = ("none", "gaussian", "duchi")
