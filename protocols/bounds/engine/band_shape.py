"""Which groups engine/exact_band.py sums exactly, and how large its tables would be: the
questions the method choice (engine/methods.py) asks before any table is built (000 Thm 12-14:
the conditioning sums S = alpha_t + d B + e X over a pair (a, b) and a pool of at most two
categories; exact_band's module docstring). Kept apart from the tables and their evaluation so
that a bound whose groups are too large for the band sum never compiles them (issue 32).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from shufflesim.protocols.bounds.engine.bernstein_width import _half_width
from shufflesim.protocols.bounds.engine.common import Categories, U
from shufflesim.protocols.bounds.engine.conditioning import choose_roles

__all__ = ["applicable", "reduced"]

#: largest table (T rows x (B window + X window)) for which the method is used
MAX_CELLS = 4_000_000
#: categories lighter than this are folded into the others with a bounded error (:func:`reduced`)
TINY_MASS = 1e-13
#: rows of one chain of the one-user recurrence (engine/band_recurrence.py's chain_tables: its
#: error grows by ROUNDINGS_PER_ROW u a row); the tables' sizes count it (mixture_shape._sizes)
CHAIN_ROWS = 32


def reduced(cat: Categories) -> tuple[Categories, float, float]:
    """``cat`` without the categories of mass <= TINY_MASS (e.g. the zero atom of weight 2e-16
    that the rounding of 1 - sum w leaves in 000 Thm 14's atoms), renormalized, and (down, up)
    with E[S'_+] - down <= E[S_+] <= E[S'_+] + up.

    Coupling: a user's value is Y = c_s (a small category s, with probability w_s) or else
    Y' ~ the renormalized law, drawn independently of the choice; S' uses Y' for every user.
    S_+ - S'_+ <= sum_i (Y_i - Y'_i)_+ and S'_+ - S_+ <= sum_i (Y'_i - Y_i)_+, so
    up = n sum_s w_s E[(c_s - Y')_+] and down = n sum_s w_s E[(Y' - c_s)_+]. Only values the
    small categories can push over 0 count: for a zero atom, up = n w_0 E[Y'_-]."""
    small = cat.w <= TINY_MASS
    if not small.any() or small.all():
        return cat, 0.0, 0.0
    keep = ~small
    w = cat.w[keep] / float(cat.w[keep].sum())
    c = cat.c[keep]
    out = Categories(c, w, cat.count, cat.c_err)
    diff = cat.c[small][:, None] - c[None, :]
    margin = (1 + 16 * U + c.size * U) * (1 + 8 * U)
    up = cat.count * float(cat.w[small] @ (np.maximum(diff, 0.0) @ w)) * margin
    down = cat.count * float(cat.w[small] @ (np.maximum(-diff, 0.0) @ w)) * margin
    # rounding of c_s - c: at most u |c_s - c|, covered by the margin's 16u; a negative part
    # computed as 0 is below u max|c| per term
    slack = cat.count * float(cat.w[small].sum()) * 4 * U * float(np.abs(cat.c).max())
    return out, down + slack, up + slack


@dataclass(frozen=True)
class _Shape:
    """S = alpha_t + d B + e X with alpha_t = c_b t + base m (exact_band's module docstring)."""

    cb: float
    d: float
    base: float          # coefficient of m = n - t in alpha_t
    e: float             # <= 0 (0: no X)
    w_pair: float
    rho: float
    q: float             # X ~ Bin(m, q); 1.0 when there is no X


def _shape(cat: Categories) -> _Shape | None:
    """The group's decomposition when its pool is empty, one category or two (None
    otherwise, or when a binomial parameter is degenerate)."""
    if cat.c.size < 2 or not (cat.c.min() < 0 < cat.c.max()):
        return None
    roles = choose_roles(cat)
    c, w = cat.c, cat.w
    ca, cb = float(c[roles.a]), float(c[roles.b])
    wa, wb = float(w[roles.a]), float(w[roles.b])
    rho = wa / (wa + wb)
    w_pair = 1.0 if not roles.pool else wa + wb
    if not (0.0 < rho < 1.0) or not (0.0 < w_pair < 1.0 or not roles.pool):
        return None
    pool = list(roles.pool)
    if not pool:
        return _Shape(cb, ca - cb, 0.0, 0.0, w_pair, rho, 1.0)
    if len(pool) == 1:
        return _Shape(cb, ca - cb, float(c[pool[0]]), 0.0, w_pair, rho, 1.0)
    if len(pool) != 2:
        return None
    j, other = pool
    q = float(w[j] / (w[j] + w[other]))
    if not 0.0 < q < 1.0:
        return None
    base, e = float(c[other]), float(c[j]) - float(c[other])
    if e > 0:                       # X -> m - X: e X = e m - e (m - X)
        base, e, q = base + e, -e, 1.0 - q
    return _Shape(cb, ca - cb, base, e, w_pair, rho, q)


def _cells(n: int, shape: _Shape) -> float:
    """Table cells of :func:`band_plan`, from the standard deviations (before building it)."""
    sd_t = math.sqrt(n * shape.w_pair * (1.0 - shape.w_pair))
    rows = 2 * float(_half_width(np.array(sd_t))) + 3
    t_max = min(n, n * shape.w_pair + rows)
    b_w = 2 * float(_half_width(np.array(math.sqrt(t_max * shape.rho * (1 - shape.rho))))) + 3
    x_w = 1.0
    if shape.q < 1.0:
        x_w = 2 * float(_half_width(np.array(math.sqrt(n * shape.q * (1 - shape.q))))) + 3
    return rows * (b_w + x_w)


def applicable(cat: Categories) -> bool:
    """The pool is binomial (exact_band's module docstring), possibly after folding categories
    of mass <= TINY_MASS, and the tables have at most MAX_CELLS cells."""
    cat = reduced(cat)[0]
    shape = _shape(cat)
    return shape is not None and _cells(cat.count, shape) <= MAX_CELLS
