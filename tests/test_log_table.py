"""engine/log_table.py: the log ratios ln(m - k) - ln(k + 1) of a band of binomial rows come
from tables that cover only the values the rows reach (issue 32: a band at n = 1e8 built a table
over 0 ... 1e8, 2.3 GB and 4-7 s; now ~1e5 values), and equal the direct computation."""

from __future__ import annotations

import numpy as np
import pytest

from shufflesim.protocols.bounds.engine.log_table import LogTable, log_ratios


def _direct(m, lo, width):
    k = lo[:, None] + np.arange(width - 1)[None, :]
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.log(np.where(m[:, None] - k >= 1, m[:, None] - k, 0.0)) - np.log(k + 1.0)


@pytest.mark.parametrize(("base", "width"), [(5, 4), (40, 60), (10**4, 300), (10**8, 500)])
def test_ratios_equal_the_direct_logs(base, width):
    rng = np.random.default_rng(base)
    m = (base + rng.integers(0, max(2, base // 100), 20)).astype(float)
    lo = np.maximum(0, (m * 0.3).astype(np.int64) - rng.integers(0, width, 20))
    np.testing.assert_array_equal(log_ratios(m, lo, width), _direct(m, lo, width))


def test_tables_cover_only_the_rows_values():
    m = 10**8 + np.arange(0, 2000, 10, dtype=float)
    lo = (m * 0.5).astype(np.int64) - 300
    table = LogTable(m, lo, 600)
    values = table.forward.shape[0] + table.backward.shape[0]      # windows of the two tables
    assert values < 10_000                                        # not 1e8
    np.testing.assert_array_equal(table.ratios(m[5:9], lo[5:9]), _direct(m[5:9], lo[5:9], 600))


def test_past_the_support_is_minus_infinity():
    m, lo = np.array([10.0]), np.array([8])
    out = log_ratios(m, lo, 5)
    assert np.isfinite(out[0, :2]).all() and np.isneginf(out[0, 2:]).all()
