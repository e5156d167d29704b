"""Gradient clients of the learning randomizers (issue 29 item 4): a clipped-gradient report
with Gaussian noise, audited at the randomizer, shuffle and pipeline levels through a 1-D
projection (at the pipeline level of the released vector messages: pipeline_vector.py).

**The claim** (:class:`GradientClaim`). The client takes clipped gradients ``g`` (an array
``(clients, dim)`` in the L2 ball of radius ``clip``) and returns ``g + N(0, sigma^2 I)``
with sigma = the analytic Gaussian sigma of (eps0, delta0) at L2 sensitivity
``Delta = 2 clip / m`` (Balle and Wang, ICML 2018, Thm 8; protocols.learning.randomizers.
GaussianGradient with ``calibration="analytic"``: m = ``examples_per_client`` for
example-level privacy, 1 for client-level).

**The reduction.** The two inputs are g_lo = -(Delta/2) e and g_hi = +(Delta/2) e for the unit
vector e = (1, ..., 1)/sqrt(dim): both lie in the ball (Delta/2 <= clip), and they differ by
exactly Delta. A scalar x in [0, 1] is sent as the gradient g_lo + x (g_hi - g_lo) (a point of
the segment, in the ball since it is convex), and the client's report y is mapped to

    s = e . (y - g_lo) / Delta.

Under the claim s = x + N(0, (sigma/Delta)^2), and sigma/Delta = the analytic sigma of
(eps0, delta0) at sensitivity 1: s is exactly the registered ``gaussian`` randomizer's report
on [0, 1] (protocols.randomizers.gaussian). The map from y to s is fixed before any trial
(the direction is the difference of the two inputs, not chosen on data), so it is a
post-processing of each report; applied to every message it commutes with the shuffle. Hence
a correct gradient client gives exactly the claimed scalar Gaussian at both levels, and the
scalar audit's verdicts (``implementation-profile`` at the randomizer level, the claim-pair
``implementation-shuffled`` at the shuffle level, t29s) keep their stated confidence; an
empirical lower bound above the scalar claim's eps convicts the gradient client, because
post-processing cannot raise a mechanism's privacy loss.

For an isotropic Gaussian the projection onto the inputs' difference is the likelihood ratio
(Neyman-Pearson optimal). A client that is not isotropic (less noise off e, or a leak in
another coordinate) is only tested along e: that is a limitation, not a false verdict.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np

from shufflesim.protocols.errors import require, require_positive_finite
from shufflesim.protocols.randomizers import make_randomizer
from shufflesim.simulator.audit.claim import Claim
from shufflesim.simulator.audit.claim_lr import claim_statistic
from shufflesim.simulator.audit.grading import METHOD, grade
from shufflesim.simulator.audit.learned_rows import learned_rows
from shufflesim.simulator.audit.pipeline_vector import ProjectedGradientClient, client_reports
from shufflesim.simulator.audit.run import AuditSettings, audit_implementation, implementation_seed


@dataclass(frozen=True)
class GradientClaim:
    """A Gaussian gradient client's claim (module docstring): (eps0, delta0)-LDP at L2
    sensitivity 2 clip / m with the analytic sigma, on gradients of ``dim`` coordinates."""

    epsilon0: float
    delta0: float
    clip: float
    dim: int
    examples_per_client: int = 1

    def __post_init__(self) -> None:
        require_positive_finite("epsilon0", float(self.epsilon0))
        require(0 < float(self.delta0) < 1, "delta0", self.delta0,
                "must lie in the open interval (0, 1)")
        require_positive_finite("clip", float(self.clip))
        require(isinstance(self.dim, (int, np.integer)) and self.dim >= 1, "dim", self.dim,
                "must be a positive integer (coordinates of one gradient)")
        require(isinstance(self.examples_per_client, (int, np.integer))
                and self.examples_per_client >= 1, "examples_per_client",
                self.examples_per_client, "must be a positive integer")

    @property
    def sensitivity(self) -> float:
        """Delta = 2 clip / m (003 Alg. 3; GaussianGradient.sensitivity)."""
        return 2.0 * float(self.clip) / int(self.examples_per_client)

    @property
    def scalar(self):
        """The registered scalar randomizer the projected client must equal."""
        return make_randomizer("gaussian", epsilon0=float(self.epsilon0),
                               delta0=float(self.delta0), low=0.0, high=1.0)

    @property
    def sigma(self) -> float:
        """The claimed per-coordinate sigma (analytic Gaussian at sensitivity Delta)."""
        return float(self.scalar.sigma) * self.sensitivity

    def inputs(self) -> tuple[np.ndarray, np.ndarray]:
        """g_lo, g_hi: the two clipped gradients, Delta apart along e."""
        e = np.full(int(self.dim), 1.0 / math.sqrt(int(self.dim)))
        half = 0.5 * self.sensitivity
        return -half * e, half * e


def projected_client(client, claim: GradientClaim, source: str | None = None):
    """The scalar client x -> e . (client(g_lo + x (g_hi - g_lo)) - g_lo) / Delta (module
    docstring), vectorized over any shape of x; the gradient client is called once per batch
    with an array (reports, dim) and must return the same shape of finite numbers."""
    g_lo, g_hi = claim.inputs()
    step = g_hi - g_lo
    unit = step / np.linalg.norm(step)
    delta = claim.sensitivity
    source = source or getattr(client, "__name__", repr(client))

    def projected(values, rng):
        x = np.asarray(values, dtype=float)
        gradients = g_lo + x.reshape(-1, 1) * step
        reports = client_reports(client, source, gradients, rng)
        return ((reports - g_lo) @ unit / delta).reshape(x.shape)

    projected.__name__ = f"{source} (projected onto the inputs' difference)"
    return projected


def audit_gradient(client, claim: GradientClaim, *, trials: int, level: str = "randomizer",
                   n: int | None = None, delta=(), seed: int = 0, learned: bool = True,
                   **options) -> list[dict]:
    """Audit a Gaussian gradient client (``(gradients (k, dim), rng) -> reports (k, dim)``)
    against ``claim`` at ``level`` ("randomizer", "shuffle" or "pipeline"): the scalar audit of its
    projection (module docstring) against the registered ``gaussian`` claim on [0, 1]. Rows
    as :func:`simulator.audit.run.audit_implementation`'s; each row's ``note`` says what was
    projected.

    At the shuffle level (``learned``, default true) the rows of the learned attack on the
    *full* gradient reports are added (learned_rows.py): a direction chosen on held-out
    trials, so a leak orthogonal to the inputs' difference is seen, and the test at delta*
    against the scalar claim's profile at the pair (0 vs 1), which is that of the gradient
    pair: under the claim a report is (e . y) e plus noise orthogonal to e with the same law
    in both worlds, so the vector multiset and the scalar one have the same privacy profile.
    All rows are graded as one Holm family."""
    require(level in ("randomizer", "shuffle", "pipeline"), "level", level,
            "a gradient client is audited at the randomizer, shuffle or pipeline level")
    require(options.pop("vectorized", True) is not False, "vectorized", False,
            "the projected gradient client is always called with a batch of gradients")
    scalar = claim.scalar
    wrapped = (ProjectedGradientClient(client, claim) if level == "pipeline"  # vector messages
               else projected_client(client, claim))  # (pipeline_vector.py)
    rows = audit_implementation(wrapped, Claim(scalar), trials=trials,
                                level=level, n=n, delta=delta, seed=seed, vectorized=True,
                                learned=learned and level == "pipeline",  # there: the
                                **options)  # vectors (pipeline_learned.py); else on full reports
    if level == "shuffle" and learned:
        rows = _with_learned(rows, client, claim, n, delta, trials, seed, options)
    note = (f"gradient client (dim {claim.dim}, clip {claim.clip:g}, m "
            f"{claim.examples_per_client}, sigma {claim.sigma:.6g}) projected onto the "
            f"difference of its two inputs (Delta {claim.sensitivity:g}): audited as "
            f"gaussian(eps0 = {claim.epsilon0:g}, delta0 = {claim.delta0:g}) on [0, 1]")
    for row in rows:
        row.setdefault("gradient_projection", note)
    return rows


def _with_learned(rows: list[dict], client, claim: GradientClaim, n, delta, trials: int,
                  seed: int, options: dict) -> list[dict]:
    """``rows`` (graded) with the learned rows of the full reports added, graded again as one
    family (audit_gradient's docstring)."""
    g_lo, g_hi = claim.inputs()
    step = g_hi - g_lo
    unit = step / np.linalg.norm(step)
    scalar = claim.scalar
    source = getattr(client, "__name__", repr(client))
    settings = AuditSettings(trials=trials, level="shuffle", delta=delta, **{
        k: v for k, v in options.items() if k in ("confidence", "holdout_fraction",
                                                 "shortlist")})
    opts = settings.options()

    def draw(world: int, size: int, rng: np.random.Generator) -> np.ndarray:
        gradients = np.empty((size, n, g_lo.size))
        gradients[:] = g_hi
        gradients[:, 0] = g_lo if world == 0 else g_hi
        gradients = gradients.reshape(-1, g_lo.size)
        return client_reports(client, source, gradients, rng).reshape(size, n, g_lo.size)

    def claim_lr(reports: np.ndarray) -> np.ndarray:
        return claim_statistic(scalar, 0.0, 1.0, (reports - g_lo) @ unit / claim.sensitivity)

    context = {k: rows[0].get(k) for k in ("randomizer", "epsilon0", "n")} if rows else {}
    extra = learned_rows(draw, scalar, n, settings.delta, opts, implementation_seed(seed),
                         context, x0=0.0, x1=1.0, source=source,
                         claimed=f"gradient client (dim {claim.dim}) of {scalar.name}",
                         pair="(g_lo, g_hi, g_hi)", fixed={"claim-lr": claim_lr})
    note = (f"gradient client (dim {claim.dim}, clip {claim.clip:g}, m "
            f"{claim.examples_per_client}): its full reports, a learned direction; judged by "
            "the scalar claim's profile at the pair (0 vs 1)")
    for r in extra:
        r["gradient_projection"] = note
    for r in rows:  # graded once already: grade again from the rows' own reasons
        r["reason"] = _ungraded(r.get("reason"))
    return grade(rows + extra, opts.confidence)


def _ungraded(reason):
    """A verdict row's reason without what grading.grade added to it."""
    if not isinstance(reason, str):
        return reason
    head = "not significant family-wise ("
    if reason.startswith(head) and "; alone: " in reason:
        reason = reason.split("; alone: ", 1)[1]
    return re.sub(rf" \[{METHOD}-adjusted p = [^\]]*\]$", "", reason)
