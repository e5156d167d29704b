"""Row gathers through one flat view of a table's memory, for the band sums of
engine/exact_band.py (issue 32): ``rows_of(table, rows)(cols)`` is ``table[rows[:, None],
cols]``, the same elements and hence the same numbers, with numpy's 1-D ``take`` instead of its
2-D fancy indexing (2048 x 10 look-ups: ~108 against ~180 us). ``cols`` must lie in
[0, table.shape[1]) (the callers clip them): a flat index does not check its column."""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import as_strided


def rows_of(table: np.ndarray, rows: np.ndarray):
    """A function cols -> table[rows[:, None], cols] (module docstring)."""
    item = table.itemsize
    s0, s1 = table.strides
    if table.ndim != 2 or table.size == 0 or s0 % item or s1 % item or s0 < 0 or s1 < 0:
        return lambda cols: table[rows[:, None], cols]
    r, c = table.shape
    span = (r - 1) * (s0 // item) + (c - 1) * (s1 // item) + 1
    flat = as_strided(table, shape=(span,), strides=(item,), writeable=False)
    base = (rows.astype(np.int64) * (s0 // item))[:, None]
    step = s1 // item
    if step == 1:
        return lambda cols: np.take(flat, base + cols)
    return lambda cols: np.take(flat, base + cols * step)
