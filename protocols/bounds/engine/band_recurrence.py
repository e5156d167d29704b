"""Prefix-sum tables of Bin(m, q) for consecutive m by the one-user recurrence (issue 32), used
by protocols.bounds.engine.exact_band for its X tables (000 Thm 12-14's conditioning sums).

Bin(m + 1, q) = Bin(m, q) * ((1 - q) delta_0 + q delta_1), and the convolution carries over to
every prefix sum on a common window starting at L: CX_{m+1}(x) = (1 - q) CX_m(x) + q CX_m(x - 1)
with CX(L - 1) = 0, and likewise CCX(x) = sum_{L <= y <= x} CX(y). Started from a row restricted
to the window, the rows are the prefix sums of a sub-measure of the exact law whose missing mass
is the start row's (a convolution keeps a deficit and adds none; mass only moves right, so none
crosses L). Every entry is a sum of two non-negative products: its relative error grows by at
most 4u per row (three roundings and that of 1 - q; 5u with ``leftward``).
"""

from __future__ import annotations

import numpy as np

#: relative error added per row, in units of the unit roundoff
ROUNDINGS_PER_ROW = 5


def prefix_tables(start: np.ndarray, start_row: int, order: np.ndarray, q: float,
                  rows: int, leftward: bool = False) -> np.ndarray:
    """Table (rows, 2, width) of (CX, CCX) whose row ``order[0]`` (= ``start_row``) is
    ``start`` (column 0 the values just below the window, 0 for the start row) and whose row
    ``order[i]`` is one user more than row ``order[i - 1]`` (module docstring). Two vector
    operations per row (10-RR, eps0 = 4, n = 1e5: 1076 rows x 2 x 2182, 34 -> 18 ms against
    window_pmf and two cumulative sums per row).

    ``leftward``: the columns of each row are shifted by one user, z = x - (m - m_0), so the
    law moves left by 1 - q a row instead of right by q: CX_{m+1}(z) = (1 - q) CX_m(z + 1)
    + q CX_m(z), and likewise CCX. No mass ever lies above the start row's window (it only moves
    left), so the value past the last column is the last one (CX) or the last one plus the
    last CX (CCX); the mass that moves below the window stays in column 0 (prefix sums from
    -inf). The sub-measure is the same as without the shift, and each entry is still a sum of
    non-negative products (one rounding more in the last CCX column: 5u a row)."""
    if order[0] != start_row:
        raise ValueError("the recurrence starts at the row with the fewest users")
    table = np.zeros((rows, *start.shape))
    table[start_row] = start
    stay = 1.0 - q
    step = np.empty((start.shape[0], start.shape[1] - 1))
    for prev, nxt in zip(order[:-1], order[1:], strict=True):
        old, new = table[prev], table[nxt]
        if not leftward:
            np.multiply(old, stay, out=new)
            np.multiply(old[:, :-1], q, out=step)
            np.add(new[:, 1:], step, out=new[:, 1:])
            continue
        np.multiply(old[:, 1:], stay, out=new[:, :-1])
        np.multiply(old[:, :-1], q, out=step)
        np.add(new[:, :-1], step, out=new[:, :-1])
        new[0, -1] = old[0, -1] * stay + old[0, -1] * q
        new[1, -1] = (old[1, -1] + old[0, -1]) * stay + old[1, -1] * q
    return table
