"""Metric-DP (d_X-private) randomizers of 001 Table 2: Laplace on R (l1), planar Laplace on R^2
(l2, geo-indistinguishability) and the (B, m, F)-WitchHat; see base.py for what epsilon0 and the
pair mean."""

from shufflesim.protocols.randomizers.metric import (
    laplace_metric,  # noqa: F401  (registers)
    planar,  # noqa: F401  (registers)
    witch_hat,  # noqa: F401  (registers)
)
from shufflesim.protocols.randomizers.metric.base import MetricRandomizer

__all__ = ["MetricRandomizer"]
