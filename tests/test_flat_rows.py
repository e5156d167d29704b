"""engine/flat_rows.py: rows_of(table, rows)(cols) equals table[rows[:, None], cols] exactly, on
contiguous tables and on the strided views exact_band's plans hold (a slice of
band_recurrence's (rows, 2, width) table)."""

import numpy as np

from shufflesim.protocols.bounds.engine.flat_rows import rows_of


def test_matches_fancy_indexing_on_contiguous_and_strided_tables():
    rng = np.random.default_rng(7)
    block = rng.random((300, 2, 41))
    tables = [rng.random((300, 17)), block[:, 0], block[:, 1], block[5:250, 1, 3:],
              rng.random((17, 300)).T]
    for table in tables:
        rows = rng.integers(0, table.shape[0], 500)
        cols = rng.integers(0, table.shape[1], (500, 9))
        assert np.array_equal(rows_of(table, rows)(cols), table[rows[:, None], cols])

