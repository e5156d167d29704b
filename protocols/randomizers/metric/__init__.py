"""Metric-DP (d_X-private) randomizers of 001 Table 2: Laplace on R (l1), planar Laplace on R^2
(l2, geo-indistinguishability) and the (B, m, F)-WitchHat; see base.py for what epsilon0 and the
pair mean. Each module registers itself when the randomizer registry imports it
(protocols/plugins.py RANDOMIZERS); the package imports none of them, so that looking up one
imports only its module (issue 32)."""

from shufflesim.protocols.randomizers.metric.base import MetricRandomizer

__all__ = ["MetricRandomizer"]
