"""The batch path's shuffler: a uniform permutation of every repetition's reports.

Two exact methods, chosen by the reports' shape and values (the distribution is the same):

* Categorical rows (scalar integer reports taking at most ``MAX_CATEGORIES`` values, long
  rows): the output of a uniform permutation of scalar reports is a uniformly random
  *arrangement of their multiset*. It is drawn in two stages. (1) The row is cut into blocks of
  ``BLOCK`` positions and the block-by-value table of counts is drawn exactly: the positions of
  value v form a uniform subset of the positions not taken by the values before it, so its
  counts over the blocks are multivariate hypergeometric in the blocks' remaining capacities.
  (2) Each block is laid out from its counts and permuted uniformly (Fisher-Yates in cache).
  Given the table the arrangement inside every block is uniform and independent, so the whole
  row is a uniform arrangement. Blocks are permuted concurrently in threads (numpy's
  ``Generator.shuffle`` releases the GIL), which is what makes the literal shuffle cheap
  (about 10 ns per report on two cores against about 25-40 ns for one ``Generator.permuted``
  over a row of 10^7 reports, which is bound by random memory access).
* Everything else: ``Generator.permuted`` along the user axis, in the narrowest integer type
  holding the values for long integer rows; vector reports (unary encodings) move whole
  through a permuted index.

Reproducibility: blocks and their groups depend only on the array's shape, and every group has
its own generator seeded from ``rng``, so the result does not depend on the number of threads.
"""

from __future__ import annotations

import numpy as np

from shufflesim.simulator.batch.threads import child_generators, run_all

#: Rows shorter than this are permuted by ``Generator.permuted`` (the two-stage method only
#: pays off for long rows).
MULTISET_MIN = 1 << 18
#: Most distinct values of a row for the two-stage method (one hypergeometric vector each).
MAX_CATEGORIES = 1 << 12
#: Positions per block: a block of int8-int16 reports stays in the core's cache.
BLOCK = 1 << 15
#: Blocks per group of work (one generator and one thread task each).
GROUP_BLOCKS = 16
#: ``Generator.multivariate_hypergeometric(method="marginals")`` needs sum(colors) below this.
_MARGINALS_LIMIT = 10**9


def shuffle_reports(reports: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Permute the reports of each repetition (axis 1 of (r, n, *report_shape)) uniformly and
    independently across repetitions; vector reports move whole. Returns a new array."""
    reports = np.asarray(reports)
    if reports.ndim < 2:
        raise ValueError(f"reports must have shape (repetitions, users, ...), got {reports.shape}")
    r, n = reports.shape[:2]
    if reports.ndim > 2:
        order = rng.permuted(np.broadcast_to(np.arange(n), (r, n)), axis=1)
        return np.take_along_axis(reports, order.reshape((r, n) + (1,) * (reports.ndim - 2)),
                                  axis=1)
    if reports.size == 0 or not np.issubdtype(reports.dtype, np.integer):
        return rng.permuted(reports, axis=1)
    low, high = int(reports.min()), int(reports.max())
    if MULTISET_MIN <= n < _MARGINALS_LIMIT and high - low < MAX_CATEGORIES:
        return arrange_multisets(reports, low, high, rng).astype(reports.dtype, copy=False)
    narrow = _narrow_type(low, high)
    if narrow.itemsize < reports.dtype.itemsize and n >= MULTISET_MIN:
        small = reports.astype(narrow)
        rng.permuted(small, axis=1, out=small)
        return small.astype(reports.dtype)
    return rng.permuted(reports, axis=1)


def arrange_multisets(rows: np.ndarray, low: int, high: int,
                      rng: np.random.Generator) -> np.ndarray:
    """A uniformly random arrangement of each row's multiset of values in [low, high], in the
    narrowest integer type holding them (see the module docstring)."""
    r, n = rows.shape
    values = np.arange(low, high + 1)
    narrow = _narrow_type(low, high)
    blocks = -(-n // BLOCK)
    sizes = np.full(blocks, BLOCK, dtype=np.int64)
    sizes[-1] = n - BLOCK * (blocks - 1)
    out = np.empty((r, n), dtype=narrow)
    for i, row in enumerate(rows):  # repetitions of long rows: a few per call
        counts = np.bincount(row - low if low else row, minlength=values.size)
        table = _block_table(counts, sizes, rng)
        out[i] = np.repeat(np.tile(values.astype(narrow), blocks), table.ravel())
    pieces = [out[i, b * BLOCK:(b + 1) * BLOCK] for i in range(r) for b in range(blocks)]
    groups = [pieces[g: g + GROUP_BLOCKS] for g in range(0, len(pieces), GROUP_BLOCKS)]
    run_all(_shuffle_group, groups, child_generators(rng, len(groups)))
    return out


def _narrow_type(low: int, high: int) -> np.dtype:
    """The narrowest integer type holding every value in [low, high]."""
    return np.result_type(np.min_scalar_type(low), np.min_scalar_type(high))


def _block_table(counts: np.ndarray, sizes: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """The (blocks, values) counts of a uniform arrangement of ``counts`` into blocks of
    ``sizes``: each value's counts are multivariate hypergeometric in the remaining capacities."""
    table = np.zeros((sizes.size, counts.size), dtype=np.int64)
    remaining = sizes.copy()
    present = np.flatnonzero(counts)
    for v in present[:-1]:  # the last value present fills what remains
        table[:, v] = rng.multivariate_hypergeometric(remaining, int(counts[v]),
                                                      method="marginals")
        remaining -= table[:, v]
    if present.size:
        table[:, present[-1]] = remaining
    return table


def _shuffle_group(pieces: list[np.ndarray], rng: np.random.Generator) -> None:
    for piece in pieces:
        rng.shuffle(piece)
