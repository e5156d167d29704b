"""Bounds per neighbouring pair for metric-DP randomizers (001 Sec. 4.1, Table 2).

A metric randomizer (protocols.randomizers.metric) declares a pair (x0, x1): the neighbouring
datasets differ in user 1's input, x0 -> x1, the other n - 1 users anywhere in the domain. Two
bounds are registered here:

* ``metric-variation-ratio`` (upper): 001 Alg. 1 (Thm 4.2 + Thm 4.6) with Table 2's parameters
  for that pair, p = e^{L(d01)}, beta = TV(R(x0), R(x1)), q = e^{L(d_max)}
  (``MetricRandomizer.metric_variation_ratio``; d01 and d_max from the pair and the domain). The
  numerics are those of protocols.bounds.numerical.variation_ratio (reused). Status
  ``relies-on-stronger-clone-reduction`` like every bound through 001 Thm 4.2 (000 Sec. 3.3).
* ``metric-pair-lower`` (lower, proven): 001 Thm 5.1's post-processing applied to a concrete
  dataset pair X0 = (x0, x*, ..., x*), X1 = (x1, x*, ..., x*): each message is mapped to A
  (more likely under x0), B (more likely under x1) or elsewhere; the two counts' divergence is a
  lower bound on the shuffled mechanism's for that pair (data processing), computed exactly by
  the two-count kernel (protocols.bounds.numerical.two_count); maximised over a few x*
  (``lower_references``). The masses come from the randomizers' closed-form cdfs (planar Laplace:
  a quadrature of K_1 with error ~1e-14, far below the kernel's own slack).

Where no proven upper bound exists: for ``planar_laplace`` and ``witch_hat`` no decomposition is
declared (2-D inputs; a bounded support that the LOG_LINEAR family does not cover), so the engine's
proven blanket bound (000 Thm 13) does not apply; the only proven upper bounds are the generic
eps0-LDP ones for the domain's worst pair (eps0 = the local budget over the domain), which ignore
the pair. For ``laplace_metric`` the engine's ``optimal-blanket`` is proven for the declared pair
(its candidates are that pair) and ``exact-lower`` is 000 Thm 14's exact value for the triple.
"""

from __future__ import annotations

import math
import time

from shufflesim.protocols.bounds.numerical import variation_ratio as vr
from shufflesim.protocols.bounds.numerical.two_count import TwoCountPair, two_count_delta
from shufflesim.protocols.bounds.result import BoundKind, BoundResult, BoundStatus
from shufflesim.protocols.bounds.spec import BoundSpec
from shufflesim.protocols.errors import require, require_int_at_least, require_probability_open

REFERENCE_UPPER = "001 Thm 4.2 + Thm 4.6, Alg. 1 with Table 2 (d01, d_max)"
REFERENCE_LOWER = "001 Thm 5.1 post-processing of a concrete metric pair"


def is_metric(randomizer) -> bool:
    """Randomizers declaring metric privacy (``metric_variation_ratio``)."""
    return bool(getattr(randomizer, "metric_privacy", False)) and hasattr(
        randomizer, "metric_variation_ratio")


def _check(randomizer) -> None:
    require(is_metric(randomizer), "randomizer", getattr(randomizer, "name", randomizer),
            "is not a metric-DP randomizer (no metric_variation_ratio)")


def metric_parameters(randomizer, d01: float | None = None,
                      d_max: float | None = None) -> vr.VariationRatioParameters:
    """(p, beta, q) of 001 Table 2 for the randomizer's pair (or the given distances, input
    units)."""
    _check(randomizer)
    row = randomizer.metric_variation_ratio(d01, d_max)
    return vr.VariationRatioParameters(row.p, row.beta, row.q, row.source)


def _pair_text(randomizer) -> str:
    x0, x1 = randomizer.pair
    return (f"pair {x0:g} -> {x1:g}, d01 = {randomizer.pair_distance:.6g}, "
            f"d_max = {randomizer.pair_reach:.6g} (input units), "
            f"eps/unit = {randomizer.metric_epsilon:.6g}")


def metric_variation_ratio_bound(randomizer, n: int, delta: float, *,
                                 d01: float | None = None,
                                 d_max: float | None = None) -> BoundResult:
    """001 Alg. 1 with Table 2's (p, beta, q) for the pair: eps(delta) on the conservative side
    (the variation-ratio module's bracketing), capped at log p = L(d01)."""
    started = time.perf_counter()
    params = metric_parameters(randomizer, d01, d_max)
    vr.check_epsilon0(randomizer)
    search = vr.numerical_epsilon(params, n, delta)
    cap = math.log(params.p)
    epsilon, error, note = search.value, search.error, ""
    if epsilon > cap:
        epsilon, error, note = cap, 0.0, "; capped at log p: no amplification shown"
    return BoundResult(method="metric-variation-ratio", kind=BoundKind.UPPER,
                       epsilon=float(epsilon), delta=float(delta), epsilon_error=float(error),
                       status=BoundStatus.STRONGER_CLONE, reference=REFERENCE_UPPER,
                       seconds=time.perf_counter() - started,
                       note=f"{params.describe()}; {_pair_text(randomizer)}{note}")


def pair_lower_candidates(randomizer, n: int) -> list[vr.LowerCandidate]:
    """One two-count pair per reference input x* (both directions are taken by the kernel's
    caller through :func:`lower_delta`)."""
    _check(randomizer)
    x0, x1 = randomizer.pair
    candidates = []
    exhaustive = bool(getattr(randomizer, "events_exhaustive", True))
    for index, ref in enumerate(randomizer.lower_references()):
        u, v, s = randomizer.distinguishing_masses(x0, x1, ref)
        if s[0] <= 0 or s[1] <= 0:
            continue
        pair = TwoCountPair(int(n), (float(s[0]), float(s[1])), tuple(map(float, u)),
                            tuple(map(float, v)), exhaustive=exhaustive)
        candidates.append(vr.LowerCandidate(0, 1, index, pair))
        candidates.append(vr.LowerCandidate(1, 0, index, pair.swapped()))
    require(bool(candidates), "randomizer", randomizer.name,
            "no reference input puts mass on both distinguishing events")
    return candidates


def metric_pair_lower_bound(randomizer, n: int, delta: float) -> BoundResult:
    """The proven lower bound of the module docstring, on its conservative side."""
    started = time.perf_counter()
    require_int_at_least("n", n, 2)
    require_probability_open("delta", delta)
    vr.check_epsilon0(randomizer)
    candidates = pair_lower_candidates(randomizer, n)
    eps_max = max(randomizer.privacy_loss(randomizer.pair_distance), 1e-12)
    search = vr.invert(lambda e: vr.lower_delta(candidates, e), delta, "lower", eps_max)
    best = max(candidates, key=lambda c: two_count_delta(c.pair, search.value).lower)
    refs = randomizer.lower_references()
    ref = refs[best.x_star]
    return BoundResult(method="metric-pair-lower", kind=BoundKind.LOWER,
                       epsilon=float(search.value), delta=float(delta),
                       epsilon_error=float(search.error), status=BoundStatus.PROVEN,
                       reference=REFERENCE_LOWER, seconds=time.perf_counter() - started,
                       note=f"{_pair_text(randomizer)}; others at {ref:g}")


SPECS: tuple[BoundSpec, ...] = (
    BoundSpec(
        "metric-variation-ratio", BoundKind.UPPER, REFERENCE_UPPER, BoundStatus.STRONGER_CLONE,
        "metric-DP randomizers (laplace_metric, planar_laplace, witch_hat), for the declared pair "
        "(--param pair_x0=.. pair_x1=..), n >= 2", is_metric, metric_variation_ratio_bound,
        scope="specific"),
    BoundSpec(
        "metric-pair-lower", BoundKind.LOWER, REFERENCE_LOWER, BoundStatus.PROVEN,
        "metric-DP randomizers, for the declared pair, n >= 2", is_metric, metric_pair_lower_bound,
        scope="specific"),
)
