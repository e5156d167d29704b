"""Bernstein's half-width of a binomial window: how far the windows of the exact band sums
(engine/binomial_window.py; 000 Thm 12-14's conditioning sums, issue 32) reach from the mean,
for a mass of at most TAIL outside each side. The method choice sizes the band sum's tables from
it before any is built (engine/band_shape.py, mixture_shape.py), so it is kept apart from the
windows' pmfs. Bernstein's inequality for a sum of independent Bernoulli variables of variance
sd^2: P[Y - E Y >= s] <= exp(-s^2 / (2 (sd^2 + s/3))).
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["TAIL"]

#: mass of B (and of X) left outside its window, per side (bounded, not dropped)
TAIL = 1e-20


def _half_width(sd: np.ndarray, tail: float = TAIL) -> np.ndarray:
    """Window half-width s with P[|Y - E Y| >= s] <= ``tail`` per side for a sum of independent
    Bernoulli variables of variance sd^2 (Bernstein: exp(-s^2 / (2 (sd^2 + s/3))) = tail). It
    only sizes the windows: the mass outside is computed and bounded."""
    log_t = math.log(1.0 / tail)
    return log_t / 3.0 + np.sqrt(log_t * log_t / 9.0 + 2.0 * log_t * sd * sd)
