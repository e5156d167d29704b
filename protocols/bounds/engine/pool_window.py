"""The window of the main pool count X ~ Bin(m, q) that engine/pool_law.py tables, and whether
its tables apply (:func:`applies`): the question the conditioning method's choice of style asks
of every question (engine/methods.py), before any table is made. Bernstein's inequality
(Boucheron, Lugosi and Massart, Concentration Inequalities, Thm 2.10) picks a window with at
most TAIL of X's mass outside.

Its own module (issue 32, session 16) so that this question does not compile the tables
(engine/pool_law.py, which re-exports these names)."""

from __future__ import annotations

import math

#: mass of X outside the window (Bernstein's inequality picks the window)
TAIL = 1e-20
#: windows of X larger than this are not tabled (the former bound stays)
MAX_WINDOW = 20_000


def _bernstein(var: float, s: float) -> float:
    """g(s) = s^2 / (2 (var + s / 3)): P[X - mq >= s], P[mq - X >= s] <= e^{-g(s)}."""
    return s * s / (2 * (var + s / 3))


def _window(m: int, q: float) -> tuple[int, int, float]:
    """[lo, hi] of X ~ Bin(m, q) with P[outside] <= TAIL (Bernstein), and a bound of
    E[|X - mq|; X outside]: with g convex (s^2 over a linear function),
    E[|Y|; |Y| >= s] <= 2 e^{-g(s)} (s + 1 / g'(s))."""
    var = m * q * (1 - q)
    c = math.log(2.0 / TAIL)
    s = (2 * c / 3 + math.sqrt((2 * c / 3) ** 2 + 8 * c * var)) / 2
    mean = m * q
    lo, hi = max(0, math.floor(mean - s)), min(m, math.ceil(mean + s))
    g = _bernstein(var, s)
    slope = (2 * s * var + s * s / 3) / (2 * (var + s / 3) ** 2)
    return lo, hi, 2 * math.exp(-g) * (s + 1 / slope) * (1 + 1e-6)


def applies(m: int, q: float, alpha: float) -> bool:
    """A lattice (alpha != 0, 0 < q < 1) and a window of at most MAX_WINDOW points."""
    if not (alpha != 0 and math.isfinite(alpha) and 0 < q < 1 and m >= 1):
        return False
    lo, hi, _ = _window(m, q)
    return hi - lo + 1 <= MAX_WINDOW
