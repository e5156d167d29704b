"""The FFT method's grid and its predicted bracket (engine/fft.py; 000 Alg. 7 with this
package's randomized rounding): the cap on the grid, the window's half-width in sd of S, and
:func:`expected_gap`, the rough relative width of the bracket on a grid of a given length,
which the engine's method choice reads (engine/core.py) before any convolution is run.

Its own module (issue 32, session 16) so that choosing a method does not compile the FFT
method itself; engine/fft.py re-exports these names."""

from __future__ import annotations

import math

from shufflesim.protocols.bounds.engine.common import Categories

L_MAX = 1 << 23
K_WINDOW = 12.0
SPREAD_GAP_FACTOR = 8.0   # relative bracket ~ 8 n h^2 z^2 / sd^2 with randomized rounding


def _shape(cats: list[Categories]) -> tuple[int, float, float, float]:
    n_users = sum(cat.count for cat in cats)
    mean = sum(cat.count * cat.mean for cat in cats)
    sd = max(math.sqrt(sum(cat.count * cat.variance for cat in cats)), 1e-300)
    spread = max(float(cat.c.max() - cat.c.min()) for cat in cats)
    return n_users, max(1.0, -mean / sd), sd, spread


def expected_gap(cats: list[Categories], length: int) -> float:
    """Rough relative width of the bracket (randomized rounding) on a grid of ``length``
    points: E[D] ~ Var W * density of S at 0, relative to E[S_+] ~ sd P[S > 0] / z: about
    SPREAD_GAP_FACTOR * n h^2 z^2 / sd^2."""
    n_users, z, sd, spread = _shape(cats)
    h = (2 * K_WINDOW * sd + 4 * spread) / length
    return SPREAD_GAP_FACTOR * n_users * (h * z / sd) ** 2
