"""What the numeric randomizers with unbiased reports share (laplace, laplace_binary, piecewise,
duchi, gaussian): E[report | x] = x, declared once as ``report_affine = (0, 1)``, which the mean
and sum estimators read (protocols.estimators.mean). Each randomizer still declares its own
``report_variance``."""

from __future__ import annotations


class UnbiasedReports:
    """Mixin of a numeric randomizer whose report is an unbiased estimate of its input."""

    @property
    def report_affine(self) -> tuple[float, float]:
        """(a, b) with E[report | x] = a + b x: the report is unbiased, (0, 1)."""
        return 0.0, 1.0
