"""Tables of ln v over integer ranges, read through sliding windows: the log ratios
ln((m - k) / (k + 1)) of consecutive binomial pmfs, row by row (engine/exact_band.py's
window_pmf builds a band of binomial rows from them; issue 32)."""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

__all__ = ["LogTable", "log_ratios"]


class LogTable:
    """ln v for the integers v that ln(m - k) and ln(k + 1) need, k = lo + j, j < width - 1,
    over the rows m: both logs are read through sliding windows (a row of the first is a
    reversed window, of the second a forward one), ~2x faster than a log over the whole 2-D
    array. Each table covers only the values its rows reach (a band of rows at n = 1e8 needs
    two ranges of ~1e5 values, not 0 ... 1e8: 2.3 GB before)."""

    def __init__(self, m: np.ndarray, lo: np.ndarray, width: int) -> None:
        lo = np.asarray(lo, dtype=np.int64)
        span = np.asarray(m, dtype=np.int64) - lo               # m - k at k = lo
        if lo.size == 0:
            lo = span = np.zeros(1, dtype=np.int64)
        # forward: ln(k + 1) for k + 1 in [lo_min + 1, lo_max + width - 1]
        self.f0 = int(lo.min()) + 1
        self.forward = sliding_window_view(
            _logs(np.arange(self.f0, int(lo.max()) + width + 1, dtype=float)), width - 1)
        # backward: ln(m - k) for m - k in [span_min - width + 2, span_max], largest first
        self.b1 = int(span.max())
        self.backward = sliding_window_view(
            _logs(np.arange(self.b1, int(span.min()) - width, -1, dtype=float)), width - 1)

    def ratios(self, m: np.ndarray, lo: np.ndarray) -> np.ndarray:
        """ln(m - k) - ln(k + 1) for k = lo + j, j < width - 1 (rows: entries of m; -inf where
        m - k <= 0)."""
        lo = np.asarray(lo, dtype=np.int64)
        span = np.asarray(m, dtype=np.int64) - lo
        log_mk = self.backward[self.b1 - span]
        log_mk -= self.forward[lo + 1 - self.f0]
        return log_mk


def _logs(v: np.ndarray) -> np.ndarray:
    """ln v, -inf for v <= 0."""
    with np.errstate(divide="ignore"):
        return np.log(np.where(v >= 1.0, v, 0.0))


def log_ratios(m: np.ndarray, lo: np.ndarray, width: int) -> np.ndarray:
    """ln(m - k) - ln(k + 1) for k = lo + j, j < width - 1 (:class:`LogTable`)."""
    return LogTable(m, lo, width).ratios(m, lo)
