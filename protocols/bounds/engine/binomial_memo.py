"""Binomial values remembered across the evaluations of an eps search (issue 18, fifth round).

The conditioning method (engine/conditioning.py) evaluates, per eps, P[Bin(t, rho) >= k] and
P[Bin(t - 1, rho) = k - 1] over the window of T (t ~ 1e4 rows at n = 1e6), with k = k(t, eps)
the first count past the leaf's kink. The eps search's evaluations near the crossing differ
by ~1e-7 relative in eps, and k moves in few rows or none: the binomial tails (Boost's
incomplete beta, 3-8 us each at t ~ 1e5-1e6) were ~70% of an evaluation at n = 1e6.

:class:`RowMemo` keeps the last arguments and values of one elementwise function f(k, t, p) per
(p, shape, first and last t) and recomputes only the entries whose k changed. The function is
elementwise (each value depends on its own arguments only), so the values are the same, bit
for bit, as computing them all.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable

import numpy as np

__all__ = ["RowMemo"]

#: arrays larger than this are computed without the memo (memory: at most ENTRIES of them)
MAX_SIZE = 200_000
#: (p, t) arrays remembered per function: the chunks of one evaluation (conditioning.CHUNK) and
#: both directions of a candidate pair
ENTRIES = 8


class RowMemo:
    """f(k, t, p) for float arrays k, t of one shape and a float p, remembering the latest
    values per (p, t): a call with the same p and t recomputes only where k differs."""

    def __init__(self, fn: Callable[[np.ndarray, np.ndarray, float], np.ndarray]) -> None:
        self.fn = fn
        self.entries: OrderedDict[tuple, tuple[np.ndarray, np.ndarray, np.ndarray]] = \
            OrderedDict()
        self.computed = 0            # entries computed (for tests and benchmarks)
        self.lock = threading.Lock()

    def __call__(self, k, t, p: float) -> np.ndarray:
        k = np.asarray(k, dtype=float)
        t = np.asarray(t, dtype=float)
        if k.shape != t.shape or k.ndim == 0 or k.size > MAX_SIZE or not np.isscalar(p):
            self.computed += int(np.broadcast(k, t).size)
            return np.asarray(self.fn(k, t, p), dtype=float)
        key = (float(p), k.shape, float(t.flat[0]), float(t.flat[-1]))
        with self.lock:
            entry = self.entries.get(key)
        if entry is not None and np.array_equal(entry[0], t):
            old_k, old_values = entry[1], entry[2]
            changed = old_k != k             # nan compares unequal: recomputed
            values = old_values.copy()
            if changed.any():
                values[changed] = self.fn(k[changed], t[changed], p)
                self.computed += int(changed.sum())
            self._store(key, (entry[0], k.copy(), values))
            return values.copy()
        values = np.asarray(self.fn(k, t, p), dtype=float)
        self.computed += values.size
        self._store(key, (t.copy(), k.copy(), values.copy()))
        return values

    def _store(self, key: tuple, entry: tuple) -> None:
        """Remember ``entry`` (t, k, values; never written to afterwards) under ``key``. The
        lock keeps the bookkeeping whole when threads share the memo (an entry is read and
        replaced as a whole, so a thread never sees another's half-written one)."""
        with self.lock:
            self.entries[key] = entry
            self.entries.move_to_end(key)
            while len(self.entries) > ENTRIES:
                self.entries.popitem(last=False)

    def clear(self) -> None:
        with self.lock:
            self.entries.clear()
