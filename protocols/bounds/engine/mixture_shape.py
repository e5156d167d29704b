"""Which groups engine/zero_mixture.py sums exactly, and how many rows and table cells it would
take: the questions the method choice (engine/methods.py) asks before any table is built. The
groups are the blanket GPARVs of two-level randomizers (000 Sec. 4-5 and Thm 13): an exact zero
category beside exact_band's shape with a two-category pool (000 Thm 12-14; zero_mixture's
module docstring). Kept apart from the tables and their evaluation so that a bound whose groups
are not of this kind never compiles them (issue 32).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from shufflesim.protocols.bounds.engine import band_shape
from shufflesim.protocols.bounds.engine.bernstein_width import _half_width
from shufflesim.protocols.bounds.engine.common import Categories
from shufflesim.protocols.bounds.engine.conditioning import choose_roles

__all__ = ["applicable"]

#: largest number of rows (t, m), and of users, for which the method is used: on issue 32's
#: sweep (8 randomizers x eps0 0.5, 1, 4) it was faster than the former methods at every point
#: with n <= 1389 (e.g. 0.8-6.2 s -> 0.12-0.52 s there), slower at 10 of 24 with n = 2683
#: (subset d = 6, eps0 = 0.5: 0.016 -> 0.39 s, where the single style sufficed)
MAX_ROWS = 200_000
MAX_USERS = 2000
#: beyond MAX_USERS users, the method is used while its tables have at most band_shape.MAX_CELLS
#: cells and its rows are at most WIDE_ROWS (up to WIDE_USERS users) or LARGE_ROWS (beyond):
#: where the pool's rarer category is rare (eps0 >= 4). On issue 32's sweep (8 randomizers,
#: delta = 1e-6, n = 2683 - 1e6) it won there by up to 300x (OUE d = 4, eps0 = 8, n = 5179:
#: 8.5 -> 0.035 s; HR d = 16, eps0 = 8, n = 71969: 1.06 -> 0.036 s; eps0 = 4, n = 2683:
#: 0.185 -> 0.027 s) and lost up to 2x beyond these limits, where the exact-pool single style
#: (engine/pool_law.py) is narrow enough (eps0 = 4, n = 37276: 0.023 -> 0.064 s; eps0 = 8,
#: n = 517947, RAPPOR: 0.031 -> 0.053 s); inside them its worst loss was 0.024 -> 0.040 s
WIDE_USERS = 6000
WIDE_ROWS = 65_536
LARGE_ROWS = 22_000


@dataclass(frozen=True)
class _Mixture:
    """The shape of the non-zero categories, and the parameters of T and of M given T."""

    shape: band_shape._Shape
    w_pair: float        # P[a user is in the pair (a, b)]
    s: float             # P[a user outside the pair is in r] (the rows' category)
    pool_pos: float      # max(c_r, c_x, 0)
    c_a: float           # the pair's positive value
    c_r: float           # the value of the rows' category


def _mixture(cat: Categories) -> _Mixture | None:
    """The decomposition of zero_mixture's module docstring, or None when ``cat`` (already
    reduced) has no exact zero category of positive mass or its other categories lack
    exact_band's shape with a two-category pool."""
    zero = np.flatnonzero(cat.c == 0.0)
    if zero.size != 1 or cat.c.size != 5:
        return None
    z = int(zero[0])
    w0 = float(cat.w[z])
    keep = np.arange(cat.c.size) != z
    w_rest = cat.w[keep]
    rest = Categories(cat.c[keep], w_rest / float(w_rest.sum()), cat.count, cat.c_err)
    pair = band_shape._shape(rest)
    if pair is None or pair.q >= 1.0:
        return None
    roles = choose_roles(rest)
    w_pair = float(w_rest[roles.a] + w_rest[roles.b])
    j, o = roles.pool
    w_j, w_o = float(w_rest[j]), float(w_rest[o])
    outside = w_j + w_o + w0
    var_j, var_o = (w_j / outside) * (1 - w_j / outside), (w_o / outside) * (1 - w_o / outside)
    r, x, w_r, w_x = (j, o, w_j, w_o) if var_j <= var_o else (o, j, w_o, w_j)
    s = w_r / outside
    q = w_x / (w_x + w0)
    if not (0.0 < w_pair < 1.0 and 0.0 < s < 1.0 and 0.0 < q < 1.0):
        return None
    base, e = 0.0, float(rest.c[x])
    if e > 0:                       # X -> m - X, as in band_shape._shape
        base, e, q = e, -e, 1.0 - q
    shape = band_shape._Shape(pair.cb, pair.d, base, e, w_pair, pair.rho, q)
    pool_pos = max(float(rest.c[r]), float(rest.c[x]), 0.0)
    return _Mixture(shape, w_pair, s, pool_pos, float(rest.c[roles.a]), float(rest.c[r]))


def _sizes(n: int, mix: _Mixture) -> tuple[float, float]:
    """Rows (t, y) of the tables and their cells (B: rows of T x B's window; X: its rows m x
    X's window), from the standard deviations (before building them)."""
    def span(sd):
        return 2 * float(_half_width(np.array(sd))) + 3

    rows_t = span(math.sqrt(n * mix.w_pair * (1.0 - mix.w_pair)))
    t_max = min(n, n * mix.w_pair + rows_t)
    size = n * (1.0 - mix.w_pair) + rows_t
    rows_y = span(math.sqrt(size * mix.s * (1.0 - mix.s)))
    q = mix.shape.q
    b_cells = rows_t * span(math.sqrt(t_max * mix.shape.rho * (1.0 - mix.shape.rho)))
    x_cells = (rows_t + rows_y) * (span(math.sqrt(size * q * (1.0 - q))) + band_shape.CHAIN_ROWS)
    return rows_t * rows_y, b_cells + x_cells


class _Analysed(dict):
    """The last groups' :func:`_analyse` (the engine asks applicable() twice and then
    mixture_bounds() for the same group each evaluation); cleared with the caches."""

    def cache_clear(self) -> None:
        self.clear()


_analysed: _Analysed = _Analysed()


def _analyse(cat: Categories):
    """(reduced group, down, up, its decomposition or None, applicable)."""
    key = (cat.c.dtype.str, cat.c.tobytes(), cat.w.dtype.str, cat.w.tobytes(), cat.count,
           cat.c_err)
    got = _analysed.get(key)
    if got is not None:
        return got
    reduced, down, up = band_shape.reduced(cat)
    mix = None if band_shape._shape(reduced) is not None else _mixture(reduced)
    ok = False
    if mix is not None:
        rows, cells = _sizes(reduced.count, mix)
        if reduced.count <= MAX_USERS:
            ok = rows <= MAX_ROWS
        else:
            limit = WIDE_ROWS if reduced.count <= WIDE_USERS else LARGE_ROWS
            ok = rows <= limit and cells <= band_shape.MAX_CELLS
    if len(_analysed) >= 8:
        _analysed.clear()
    _analysed[key] = got = (reduced, down, up, mix, ok)
    return got


def applicable(cat: Categories) -> bool:
    """An exact zero category beside exact_band's shape (zero_mixture's module docstring), a
    group that exact_band does not take itself, at most MAX_USERS users and MAX_ROWS rows, or
    more users with MAX_CELLS table cells and WIDE_ROWS / LARGE_ROWS rows."""
    return _analyse(cat)[4]
