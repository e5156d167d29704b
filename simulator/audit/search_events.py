"""Reports and the events of the search (search.py): reports as compact 2-D arrays drawn in
seeded chunks, a 64-bit hash of each report that depends on the report alone, and the event
classes, each a fixed function of a report chosen on selection samples.

Events (each ``event(rows, support) -> bool per row`` and ``describe()``): :class:`CellEvent`
(a set of output cells of a :class:`CellMap`: frequent reports of their own, hash buckets for
the rest, or quantile bins of a continuous scalar), :class:`CoordinateEvent` (one coordinate
above or below a threshold), :class:`ScoreEvent` (a learned classifier's score thresholded,
classifier.py) and :class:`SupportEvent` (the frequency oracle's decoder: the report supports
a, and not b).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from shufflesim.protocols.errors import ParameterError
from shufflesim.simulator.audit.classifier import LogisticModel, linear
from shufflesim.simulator.audit.sampling import child, chunk_sizes

Sample = Callable[[np.ndarray, np.random.Generator], np.ndarray]
Support = Callable[[np.ndarray, object], np.ndarray]

_PRIME = np.uint64(0x9E3779B97F4A7C15)
_MIX = np.uint64(0xBF58476D1CE4E5B9)


def _compact(flat: np.ndarray) -> np.ndarray:
    """The reports as a 2-D array in the smallest dtype that holds them exactly."""
    if flat.dtype == bool:
        return flat.astype(np.uint8)
    if flat.dtype.kind in "iu":
        if flat.size and flat.min() >= 0 and flat.max() <= 255:
            return flat.astype(np.uint8)
        return flat.astype(np.int64)
    if flat.dtype.kind == "f":
        f = flat.astype(np.float64)
        if f.size and np.all(np.isfinite(f)) and np.all(f == np.round(f)) and \
                f.min() >= 0 and f.max() <= 255:
            return f.astype(np.uint8)
        return f + 0.0  # -0.0 -> 0.0
    raise ParameterError("reports", str(flat.dtype), "must be numeric (bool, int or float)")


def draw(sample: Sample, x, size: int, seed: np.random.SeedSequence, chunk: int):
    """``size`` reports of input ``x`` as 2-D arrays, one per chunk (chunk c from its own
    stream ``child(seed, c)``)."""
    for c, m in enumerate(chunk_sizes(size, chunk)):
        out = np.asarray(sample(np.full(m, x), np.random.default_rng(child(seed, c))))
        if out.ndim == 0 or out.shape[0] != m:
            raise ParameterError("implementation", getattr(out, "shape", None),
                                 f"returned no leading axis of {m} reports")
        yield _compact(out.reshape(m, -1))


def _hash_words(words: np.ndarray) -> np.ndarray:
    h = np.full(words.shape[0], np.uint64(0x243F6A8885A308D3), dtype=np.uint64)
    with np.errstate(over="ignore"):
        for j in range(words.shape[1]):  # a loop over the words of one report
            h ^= words[:, j]
            h *= _PRIME
            h ^= h >> np.uint64(31)
            h *= _MIX
    return h


def _as_words(raw: np.ndarray) -> np.ndarray:
    m = raw.shape[0]
    raw = raw.reshape(m, -1)
    pad = (-raw.shape[1]) % 8
    if pad:
        raw = np.hstack([raw, np.zeros((m, pad), dtype=np.uint8)])
    return np.ascontiguousarray(raw).view(np.uint64)


def row_keys(rows: np.ndarray) -> np.ndarray:
    """A 64-bit hash of each row's values, a function of the row alone: the values as float64
    (so the dtype a chunk happens to have does not matter), or, for rows of more than 8 values
    that are all 0 or 1, their bits packed (marked apart from the float64 hashes)."""
    rows = np.asarray(rows)
    m = rows.shape[0]
    values = np.ascontiguousarray(rows, dtype=np.float64) + 0.0  # -0.0 -> 0.0
    keys = np.empty(m, dtype=np.uint64)
    binary = np.zeros(m, dtype=bool)
    if rows.shape[1] > 8:
        binary = np.all((values == 0) | (values == 1), axis=1)
    if binary.any():
        bits = np.packbits(values[binary] == 1, axis=1)
        keys[binary] = _hash_words(_as_words(bits)) ^ np.uint64(0x5BD1E995)
    if (~binary).any():
        keys[~binary] = _hash_words(_as_words(values[~binary].view(np.uint8)))
    return keys


# ------------------------------------------------------------------------------------------
# Events: fixed functions of a report (chosen on selection samples)
# ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class CellMap:
    """Report -> cell: its own cell for the ``keys`` (sorted), else a hash bucket (or the one
    "other" cell, ``buckets`` = 1), or quantile bins of a continuous scalar (``edges``)."""

    keys: np.ndarray
    buckets: int
    edges: np.ndarray | None = None
    examples: np.ndarray | None = None  # a report of each key (for descriptions)

    @property
    def size(self) -> int:
        if self.edges is not None:
            return int(self.edges.size) + 1
        return int(self.keys.size) + self.buckets

    def __call__(self, rows: np.ndarray) -> np.ndarray:
        if self.edges is not None:
            return np.searchsorted(self.edges, rows[:, 0].astype(float), side="right")
        h = row_keys(rows)
        n = self.keys.size
        if n:
            pos = np.minimum(np.searchsorted(self.keys, h), n - 1)
            hit = self.keys[pos] == h
        else:
            pos = np.zeros(h.shape, dtype=np.int64)
            hit = np.zeros(h.shape, dtype=bool)
        with np.errstate(over="ignore"):
            bucket = ((h * _MIX) >> np.uint64(40)) % np.uint64(self.buckets)
        return np.where(hit, pos, n + bucket.astype(np.int64))


@dataclass(frozen=True)
class CellEvent:
    cells: CellMap
    member: np.ndarray  # bool per cell

    def __call__(self, rows, support=None) -> np.ndarray:
        return self.member[self.cells(rows)]

    def describe(self) -> str:
        k = int(self.member.sum())
        if self.cells.edges is not None:
            return f"{k} of {self.cells.size} quantile bins of the report"
        own = int(self.member[: self.cells.keys.size].sum())
        if k == own and k <= 3 and self.cells.examples is not None:
            shown = [show(self.cells.examples[i]) for i in np.flatnonzero(self.member)]
            return f"report in {{{', '.join(shown)}}}"
        return (f"{k} output cells ranked by the selection ratio ({own} distinct reports, "
                f"{k - own} hash buckets)")


@dataclass(frozen=True)
class CoordinateEvent:
    j: int
    threshold: float
    above: bool

    def __call__(self, rows, support=None) -> np.ndarray:
        v = rows[:, self.j] > self.threshold
        return v if self.above else ~v

    def describe(self) -> str:
        return f"coordinate {self.j} {'>' if self.above else '<='} {self.threshold:.4g}"


@dataclass(frozen=True)
class ScoreEvent:
    model: LogisticModel
    threshold: float
    above: bool

    def __call__(self, rows, support=None) -> np.ndarray:
        s = score_rows(self.model, rows)
        return s >= self.threshold if self.above else s <= self.threshold

    def describe(self) -> str:
        op = ">=" if self.above else "<="
        return f"{self.model.describe()} {op} {self.threshold:.4g}"


@dataclass(frozen=True)
class SupportEvent:
    a: object
    b: object
    exclusive: bool

    def __call__(self, rows, support) -> np.ndarray:
        s = np.asarray(support(rows, self.a), dtype=bool)
        if self.exclusive:
            s = s & ~np.asarray(support(rows, self.b), dtype=bool)
        return s

    def describe(self) -> str:
        tail = f" and not {self.b}" if self.exclusive else ""
        return f"report supports {self.a}{tail}"


def show(row: np.ndarray) -> str:
    """A report for a description: its value, or its nonzero coordinates (long vectors)."""
    if row.size == 1:
        return f"{row[0]:g}"
    if row.size <= 8:
        return "(" + ", ".join(f"{v:g}" for v in row) + ")"
    nz = np.flatnonzero(row)
    return f"nonzero at {nz[:8].tolist()}{'...' if nz.size > 8 else ''}"


def score_rows(model: LogisticModel, rows: np.ndarray) -> np.ndarray:
    """model.score(features(rows)) without building the features (coordinates, their sum)."""
    w, b = model.raw_weights
    x = rows.astype(np.float64)
    return linear(x, w[:-1]) + x.sum(axis=1) * w[-1] + b


def features(rows: np.ndarray) -> np.ndarray:
    x = rows.astype(float)
    return np.hstack([x, x.sum(axis=1, keepdims=True)])

