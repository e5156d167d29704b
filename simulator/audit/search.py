"""A search over neighbouring inputs and output events for a lower bound on the local eps0 of a
black-box randomizer (issue 17, item 3).

The implementation is any vectorized callable ``sample(values, rng) -> reports`` (reports have
``values.shape`` leading; simulator/audit/implementation.py adapts a user's code to it). Pure
eps0-LDP means P[R(a) in E] <= e^eps0 P[R(b) in E] for all inputs a, b and events E, so any
event E fixed before the samples that measure it gives, with one-sided Clopper-Pearson limits
(confidence.py),

    eps0 >= ln((lower(P[E | a]) - delta) / upper(P[E | b]))      (delta = 0 for pure LDP).

Two stages (a pair or event chosen on some samples is certified on others):

1. *Selection* (``holdout_fraction`` of the trials, per candidate input). Candidate inputs:
   every value of a categorical domain of at most ``max_inputs`` values; otherwise its two ends
   and a seeded random sample of the others (``max_inputs`` in all); on an interval, a grid of
   ``max_inputs`` points, ends included. Every ordered pair of candidates is searched. Event
   families, each scored on the selection samples by the bound it is predicted to give on the
   evaluation samples (counts shrunk to their one-sided limits at events.SELECTION_ALPHA,
   scaled, given the evaluation's limits):

   * ``cells``: outputs are keyed by a 64-bit hash of their bytes (binary vectors packed to
     bits first). The distinct keys seen at least twice in the selection samples, at most
     ``max_cells`` of the most frequent, are cells of their own; every other output falls in one
     of ``buckets`` hash buckets (or one "other" cell when every selection output had its own
     cell). Continuous scalars are cut at ``buckets`` quantiles instead. There is no table over
     the output space, so no cap on its size. For a pair (a, b) the cells are ranked by their
     selection ratio and the events are the top-t cells.
   * ``coordinates`` (vector outputs): {y_j > m_j} and its complement for every coordinate j,
     m_j the coordinate's pooled selection mean (for unary encodings: bit j is 1 / is 0).
   * ``learned`` (vector outputs, at most MAX_LEARNED_FEATURES coordinates): DP-Sniper's attack
     (classifier.py) on the ``learned_pairs`` best pairs so far: logistic regression trained on
     one half of the selection samples of a and b (features: the coordinates and their sum),
     its score's threshold {score >= t} / {score <= t} chosen on the other half.
   * ``support`` (when a ``support(reports, x) -> bool`` function is given: the frequency
     oracle's decoder, "report y supports value x"): {supports a and not b} and {supports a}.
     Local hashing needs it: its reports carry a fresh hash seed and are all distinct.

   The ``certify`` best (pair, event) candidates over all families go to stage 2.
2. *Certification*: fresh samples (``trials`` minus the selection trials, from their own random
   streams) of the inputs of those candidates; each event's two limits at error level
   alpha / (2 * certify), alpha = 1 - confidence (Bonferroni over everything certified). The
   selection stage looks only at its own samples and spends no confidence. The maximum of the
   certified bounds is a lower bound on eps0 with confidence >= ``confidence``, whatever the
   implementation does.

Selection samples are kept in memory (candidates x selection trials x report size, in the
smallest exact dtype); certification streams through chunks.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

import numpy as np
from scipy import stats

from shufflesim.protocols.errors import ParameterError, require
from shufflesim.protocols.randomizers.domains import Categorical, Interval
from shufflesim.simulator.audit.classifier import LogisticModel, fit_logistic, linear
from shufflesim.simulator.audit.confidence import (
    ErrorBudget,
    clopper_pearson_lower,
    clopper_pearson_upper,
    epsilon_from_limits,
)
from shufflesim.simulator.audit.events import SELECTION_ALPHA
from shufflesim.simulator.audit.levels import Level, register_attack
from shufflesim.simulator.audit.sampling import child, chunk_sizes
from shufflesim.simulator.audit.tables import _row, implementation_records
from shufflesim.simulator.audit.verdicts import ldp_verdict

Sample = Callable[[np.ndarray, np.random.Generator], np.ndarray]
Support = Callable[[np.ndarray, object], np.ndarray]

FAMILIES = ("cells", "coordinates", "learned", "support")
#: The learned attack is trained on at most this many coordinates (plus their sum).
MAX_LEARNED_FEATURES = 256
#: Training samples per input of the learned attack (the rest of its half is not used).
MAX_TRAINING = 50_000
#: Threshold candidates of the learned score (quantiles of the pooled scores).
SCORE_BINS = 256
_PRIME = np.uint64(0x9E3779B97F4A7C15)
_MIX = np.uint64(0xBF58476D1CE4E5B9)


# ------------------------------------------------------------------------------------------
# Options and results
# ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class SearchOptions:
    """trials: samples per audited input (selection + certification); confidence: of the
    maximum certified bound; holdout_fraction: share of the trials used for selection;
    certify: candidates certified (the error level is split over them); max_inputs: candidate
    inputs; max_cells, buckets: the cells family; learned_pairs: pairs given a classifier;
    families: event families searched; delta: subtracted from the lower limit (the bound
    ln((P_a_lo - delta) / P_b_hi)); objective: "epsilon" ranks candidates by that bound,
    "delta" by P_a_lo - e^epsilon0 P_b_hi (approximate.py); chunk: samples per random stream
    chunk."""

    trials: int
    confidence: float = 0.95
    holdout_fraction: float = 0.5
    certify: int = 4
    max_inputs: int = 16
    max_cells: int = 4096
    buckets: int = 1024
    learned_pairs: int = 4
    families: tuple[str, ...] = FAMILIES
    delta: float = 0.0
    objective: str = "epsilon"
    epsilon0: float = 0.0
    chunk: int = 1 << 18

    def __post_init__(self) -> None:
        require(isinstance(self.trials, int) and self.trials >= 20, "trials", self.trials,
                "must be an integer >= 20")
        ErrorBudget(self.confidence)
        f = self.holdout_fraction
        require(isinstance(f, (int, float)) and 0 < f < 1, "holdout_fraction", f,
                "must lie in (0, 1)")
        require(4 <= self.selection_trials < self.trials, "holdout_fraction", f,
                f"leaves too few selection or certification samples out of {self.trials}")
        for name, low in (("certify", 1), ("max_inputs", 2), ("max_cells", 1), ("buckets", 2),
                          ("learned_pairs", 0), ("chunk", 1)):
            value = getattr(self, name)
            require(isinstance(value, int) and not isinstance(value, bool) and value >= low,
                    name, value, f"must be an integer >= {low}")
        families = tuple(self.families)
        object.__setattr__(self, "families", families)
        for fam in families:
            require(fam in FAMILIES, "families", fam, f"unknown event family; choose from "
                    f"{list(FAMILIES)}")
        require(len(families) >= 1, "families", list(families), "needs at least one family")
        require(0 <= self.delta < 1, "delta", self.delta, "must lie in [0, 1)")
        require(self.objective in ("epsilon", "delta"), "objective", self.objective,
                "must be epsilon or delta")
        require(math.isfinite(self.epsilon0) and self.epsilon0 >= 0, "epsilon0",
                self.epsilon0, "must be a finite number >= 0")

    @property
    def selection_trials(self) -> int:
        return int(round(self.holdout_fraction * self.trials))

    @property
    def evaluation_trials(self) -> int:
        return self.trials - self.selection_trials

    @property
    def limit_alpha(self) -> float:
        """Error level of each Clopper-Pearson limit (two per certified candidate)."""
        return (1.0 - self.confidence) / (2 * self.certify)


@dataclass(frozen=True)
class Certified:
    """One certified candidate: inputs (x, x_prime), its event, counts among ``trials`` fresh
    samples of each input, the limits and the bounds they give."""

    x: object
    x_prime: object
    family: str
    event: str
    predicted: float
    trials: int
    count_a: int
    count_b: int
    p_a_lower: float
    p_b_upper: float
    epsilon: float  # ln((p_a_lower - delta) / p_b_upper), clipped at 0

    def delta_gap(self, epsilon0: float) -> float:
        """p_a_lower - e^epsilon0 p_b_upper: a lower bound on the delta of (epsilon0, delta)."""
        return self.p_a_lower - math.exp(epsilon0) * self.p_b_upper


@dataclass(frozen=True)
class SearchResult:
    options: SearchOptions
    inputs: tuple
    pairs: int
    candidates: int
    certified: tuple[Certified, ...]
    seconds: float

    @property
    def confidence(self) -> float:
        return self.options.confidence

    @property
    def best(self) -> Certified:
        return max(self.certified, key=lambda c: c.epsilon)

    @property
    def epsilon_lb(self) -> float:
        """A lower bound on the implementation's eps0 (at delta = options.delta) holding with
        probability >= confidence."""
        return self.best.epsilon

    def violates(self, epsilon0: float) -> bool:
        return self.epsilon_lb > epsilon0 * (1 + 1e-12)

    def verdict(self, epsilon0: float) -> str:
        b = self.best
        if not self.violates(epsilon0):
            return (f"consistent with {epsilon0:g}-LDP: lower bound {self.epsilon_lb:.4g} "
                    f"at confidence {self.confidence:g} ({len(self.inputs)} inputs, "
                    f"{self.pairs} pairs, {self.candidates} events searched)")
        return (f"the implementation is not {epsilon0:g}-LDP: lower bound {b.epsilon:.4g} at "
                f"confidence {self.confidence:g} on inputs ({b.x}, {b.x_prime}), event "
                f"{b.event}")


# ------------------------------------------------------------------------------------------
# Inputs and samples
# ------------------------------------------------------------------------------------------
def candidate_inputs(domain, max_inputs: int, rng: np.random.Generator) -> list:
    """The audited inputs: a categorical domain (``Categorical`` or its size) in full when it
    has at most ``max_inputs`` values, else its ends and a random sample; an ``Interval`` (or
    ``(low, high)`` floats) as a grid; a list of values as given."""
    if isinstance(domain, Interval) or (isinstance(domain, tuple) and len(domain) == 2 and
                                        all(isinstance(v, float) for v in domain)):
        low, high = (domain.low, domain.high) if isinstance(domain, Interval) else domain
        require(math.isfinite(low) and math.isfinite(high) and low < high, "interval",
                (low, high), "needs finite ends, low < high")
        return [float(v) for v in np.linspace(low, high, max_inputs)]
    if isinstance(domain, (Categorical, int, np.integer)) and not isinstance(domain, bool):
        d = int(domain.size if isinstance(domain, Categorical) else domain)
        require(d >= 2, "domain_size", d, "needs at least two inputs")
        if d <= max_inputs:
            return list(range(d))
        inner = rng.choice(d - 2, size=max_inputs - 2, replace=False) + 1
        return [0, *sorted(int(v) for v in inner), d - 1]
    values = list(domain)
    require(len(values) >= 2 and len(set(values)) == len(values), "inputs", values,
            "needs at least two distinct inputs")
    return values


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
            shown = [_show(self.cells.examples[i]) for i in np.flatnonzero(self.member)]
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
        s = _score(self.model, rows)
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


def _show(row: np.ndarray) -> str:
    """A report for a description: its value, or its nonzero coordinates (long vectors)."""
    if row.size == 1:
        return f"{row[0]:g}"
    if row.size <= 8:
        return "(" + ", ".join(f"{v:g}" for v in row) + ")"
    nz = np.flatnonzero(row)
    return f"nonzero at {nz[:8].tolist()}{'...' if nz.size > 8 else ''}"


def _score(model: LogisticModel, rows: np.ndarray) -> np.ndarray:
    """model.score(_features(rows)) without building the features (coordinates, their sum)."""
    w, b = model.raw_weights
    x = rows.astype(np.float64)
    return linear(x, w[:-1]) + x.sum(axis=1) * w[-1] + b


def _features(rows: np.ndarray) -> np.ndarray:
    x = rows.astype(float)
    return np.hstack([x, x.sum(axis=1, keepdims=True)])


# ------------------------------------------------------------------------------------------
# Selection
# ------------------------------------------------------------------------------------------
@dataclass
class _Candidate:
    predicted: float
    a: int
    b: int
    family: str
    event: object = field(compare=False)


def _wilson(k: np.ndarray, n: np.ndarray, z: float, upper: bool) -> np.ndarray:
    """One-sided Wilson score limit (the selection stage's fast stand-in for Clopper-Pearson;
    it only ranks candidates, certification uses the exact limits)."""
    p = k / n
    centre = p + z * z / (2 * n)
    spread = z * np.sqrt(np.maximum(p * (1 - p) / n + z * z / (4 * n * n), 0.0))
    limit = (centre + spread if upper else centre - spread) / (1 + z * z / n)
    return np.clip(limit, 0.0, 1.0)


def predict(k_a, k_b, sel_a: int, sel_b: int, options: SearchOptions) -> np.ndarray:
    """The bound each event is predicted to give on the certification samples (module
    docstring), from its counts k_a of sel_a and k_b of sel_b selection samples."""
    k_a = np.asarray(k_a, dtype=float)
    k_b = np.asarray(k_b, dtype=float)
    n = float(options.evaluation_trials)
    shrink = float(stats.norm.isf(SELECTION_ALPHA))
    z = float(stats.norm.isf(options.limit_alpha))
    lo = _wilson(k_a, float(sel_a), shrink, upper=False)
    hi = _wilson(k_b, float(sel_b), shrink, upper=True)
    lo = _wilson(lo * n, n, z, upper=False)
    hi = _wilson(hi * n, n, z, upper=True)
    if options.objective == "delta":
        return lo - math.exp(options.epsilon0) * hi
    return epsilon_from_limits(lo, hi, options.delta)


def _best_prefix(order_a: np.ndarray, order_b: np.ndarray, sel_a, sel_b, options):
    """Best top-t prefix of cells in the given order: (predicted, t)."""
    pa = predict(np.cumsum(order_a), np.cumsum(order_b), sel_a, sel_b, options)
    t = int(np.argmax(pa))
    return float(pa[t]), t


def _cell_map(pooled: list[np.ndarray], options: SearchOptions) -> CellMap:
    rows = np.concatenate(pooled)
    if rows.shape[1] == 1 and rows.dtype == np.float64:
        distinct = np.unique(rows[:, 0])
        if distinct.size > options.max_cells:
            q = np.quantile(rows[:, 0], np.linspace(0, 1, options.buckets + 1)[1:-1])
            return CellMap(np.zeros(0, dtype=np.uint64), 1, np.unique(q))
    keys, first, counts = np.unique(row_keys(rows), return_index=True, return_counts=True)
    if keys.size <= options.max_cells:
        return CellMap(keys, 1, examples=rows[first])
    frequent = np.flatnonzero(counts >= 2)
    frequent = np.sort(frequent[np.argsort(-counts[frequent], kind="stable")
                                [: options.max_cells]])
    return CellMap(keys[frequent], options.buckets, examples=rows[first[frequent]])


def _pairs(c: int):
    return [(a, b) for a in range(c) for b in range(c) if a != b]


def _cells_family(fit, val, options, out: list[_Candidate]) -> None:
    """Cells from the fit samples, ranked per pair by their fit ratio; the top-t prefix with
    the best prediction on the validation samples."""
    cmap = _cell_map(fit, options)
    c_fit = [np.bincount(cmap(rows), minlength=cmap.size) for rows in fit]
    c_val = [np.bincount(cmap(rows), minlength=cmap.size) for rows in val]
    for a, b in _pairs(len(fit)):  # a loop over pairs, vectorized over cells
        ratio = np.log(c_fit[a] + 0.5) - np.log(c_fit[b] + 0.5)
        order = np.argsort(-ratio, kind="stable")
        value, t = _best_prefix(c_val[a][order], c_val[b][order], len(val[a]), len(val[b]),
                                options)
        member = np.zeros(cmap.size, dtype=bool)
        member[order[: t + 1]] = True
        out.append(_Candidate(value, a, b, "cells", CellEvent(cmap, member)))


def _choose(k_fit_a, k_fit_b, k_val_a, k_val_b, fit_sizes, val_sizes, options):
    """The event with the best prediction on the fit counts, and its validation prediction."""
    i = int(np.argmax(predict(k_fit_a, k_fit_b, *fit_sizes, options)))
    value = predict(k_val_a[i:i + 1], k_val_b[i:i + 1], *val_sizes, options)[0]
    return i, float(value)


def _coordinates_family(fit, val, options, out: list[_Candidate]) -> None:
    width = fit[0].shape[1]
    if width < 2:
        return
    total = sum(rows.sum(axis=0, dtype=float) for rows in fit)
    mean = total / sum(len(rows) for rows in fit)

    def counts(rows):
        above = (rows > mean).sum(axis=0)
        return np.concatenate([above, len(rows) - above])

    k_fit = [counts(rows) for rows in fit]
    k_val = [counts(rows) for rows in val]
    for a, b in _pairs(len(fit)):
        i, value = _choose(k_fit[a], k_fit[b], k_val[a], k_val[b],
                           (len(fit[a]), len(fit[b])), (len(val[a]), len(val[b])), options)
        j = i % width
        out.append(_Candidate(value, a, b, "coordinates",
                              CoordinateEvent(j, float(mean[j]), i < width)))


def _support_counts(rows_list, inputs, support):
    """single[i][x]: reports of input i supporting x; exclusive[i][a, b]: supporting a, not b."""
    c = len(inputs)
    single, exclusive = [], []
    for rows in rows_list:
        s = np.stack([np.asarray(support(rows, x), dtype=bool) for x in inputs], axis=1)
        if s.shape != (len(rows), c):
            raise ParameterError("support", s.shape, "must return one bool per report")
        single.append(s.sum(axis=0))
        exclusive.append(np.rint(s.T.astype(np.float64) @ (~s).astype(np.float64)))
    return single, exclusive


def _support_family(fit, val, inputs, support, options, out: list[_Candidate]) -> None:
    f_single, f_excl = _support_counts(fit, inputs, support)
    v_single, v_excl = _support_counts(val, inputs, support)
    for a, b in _pairs(len(inputs)):
        i, value = _choose(np.array([f_excl[a][a, b], f_single[a][a]]),
                           np.array([f_excl[b][a, b], f_single[b][a]]),
                           np.array([v_excl[a][a, b], v_single[a][a]]),
                           np.array([v_excl[b][a, b], v_single[b][a]]),
                           (len(fit[a]), len(fit[b])), (len(val[a]), len(val[b])), options)
        out.append(_Candidate(value, a, b, "support",
                              SupportEvent(inputs[a], inputs[b], i == 0)))


def _midpoint_edges(scores: np.ndarray) -> np.ndarray:
    """Thresholds at about SCORE_BINS quantiles of the scores, each moved to the midpoint
    between two consecutive distinct scores: with discrete reports (few distinct scores) no
    report scores within rounding error of a threshold, so whether it is in the event does not
    depend on how its score was summed."""
    distinct = np.unique(scores)
    if distinct.size < 2:
        return np.zeros(0)
    q = np.quantile(scores, np.linspace(0, 1, SCORE_BINS + 1)[1:-1])
    idx = np.unique(np.clip(np.searchsorted(distinct, q, side="left"), 1, distinct.size - 1))
    return (distinct[idx - 1] + distinct[idx]) / 2


def _learned_family(fit, val, options, pairs, out: list[_Candidate]) -> None:
    """Trained on the fit samples, its threshold chosen (and predicted) on the validation
    samples."""
    if fit[0].shape[1] < 2 or fit[0].shape[1] > MAX_LEARNED_FEATURES:
        return
    for a, b in pairs:
        model = fit_logistic(_features(fit[a][:MAX_TRAINING]),
                             _features(fit[b][:MAX_TRAINING]))
        sa = _score(model, val[a])
        sb = _score(model, val[b])
        edges = _midpoint_edges(np.concatenate([sa, sb]))
        if edges.size == 0:
            continue
        ca = np.bincount(np.searchsorted(edges, sa, side="right"), minlength=edges.size + 1)
        cb = np.bincount(np.searchsorted(edges, sb, side="right"), minlength=edges.size + 1)
        # upper[t] = {score >= edges[t]} = bins > t; lower[t] = {score <= edges[t]} = bins <= t
        # (no score equals an edge)
        up_a, up_b = np.cumsum(ca[::-1])[::-1][1:], np.cumsum(cb[::-1])[::-1][1:]
        lo_a, lo_b = np.cumsum(ca)[:-1], np.cumsum(cb)[:-1]
        pred = predict(np.concatenate([up_a, lo_a]), np.concatenate([up_b, lo_b]), len(sa),
                       len(sb), options)
        i = int(np.argmax(pred))
        t = i % edges.size
        event = ScoreEvent(model, float(edges[t]), i < edges.size)
        out.append(_Candidate(float(pred[i]), a, b, "learned", event))


# ------------------------------------------------------------------------------------------
# The search
# ------------------------------------------------------------------------------------------
def search(sample: Sample, domain, options: SearchOptions,
           seed: np.random.SeedSequence | int, *, support: Support | None = None,
           inputs: Sequence | None = None) -> SearchResult:
    """Search pairs of ``domain`` and events for the largest certified eps0 lower bound of
    ``sample`` (module docstring). ``inputs`` overrides the candidate inputs."""
    start = time.perf_counter()
    seq = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
    if inputs is None:
        inputs = candidate_inputs(domain, options.max_inputs,
                                  np.random.default_rng(child(seq, 2)))
    else:
        inputs = candidate_inputs(list(inputs), options.max_inputs, None)
    families = options.families
    require("support" not in families or support is not None or
            families != ("support",), "support", None,
            "the support family needs a support(reports, x) function")
    m = options.selection_trials
    sel = [np.concatenate(list(draw(sample, x, m, child(seq, 0, i), options.chunk)))
           for i, x in enumerate(inputs)]
    width = {rows.shape[1] for rows in sel}
    require(len(width) == 1, "implementation", sorted(width),
            "returned reports of different sizes for different inputs")
    half = [len(rows) // 2 for rows in sel]
    fit = [rows[:h] for rows, h in zip(sel, half, strict=True)]
    val = [rows[h:] for rows, h in zip(sel, half, strict=True)]
    found = _select(fit, val, inputs, support, options)
    if options.objective == "delta" and options.certify >= 2:
        # half the certified slots for the best eps at delta0 (module docstring of
        # approximate.py): ranked by the epsilon objective on the same selection samples
        also = _select(fit, val, inputs, support, replace(options, objective="epsilon"),
                       learned=False)
        chosen = _best(found, (options.certify + 1) // 2) + _best(also, options.certify // 2)
        searched = len(found) + len(also)
    else:
        chosen, searched = _best(found, options.certify), len(found)
    pairs = len(inputs) * (len(inputs) - 1)
    return _certify(sample, inputs, chosen, options, seq, support, pairs, searched,
                    time.perf_counter() - start)


def _best(found: list[_Candidate], k: int) -> list[_Candidate]:
    return sorted(found, key=lambda c: -c.predicted if math.isfinite(c.predicted)
                  else math.inf)[:k]


def _select(fit, val, inputs, support, options, learned: bool = True) -> list[_Candidate]:
    """Every family's candidates (one per pair and family), predicted under
    ``options.objective``."""
    families = options.families
    found: list[_Candidate] = []
    if "cells" in families:
        _cells_family(fit, val, options, found)
    if "coordinates" in families:
        _coordinates_family(fit, val, options, found)
    if "support" in families and support is not None:
        _support_family(fit, val, inputs, support, options, found)
    if learned and "learned" in families and options.learned_pairs:
        by_pair = {pair: -np.inf for pair in _pairs(len(fit))}
        for cand in found:
            key = (cand.a, cand.b)
            by_pair[key] = max(by_pair[key], cand.predicted)
        ranked = sorted(by_pair, key=lambda k: -by_pair[k])[: options.learned_pairs]
        _learned_family(fit, val, options, ranked, found)
    require(found, "families", list(families), "found no event to search for these reports")
    return found


def _certify(sample, inputs, chosen, options, seq, support, pairs, searched,
             elapsed) -> SearchResult:
    """Counts of each chosen event on fresh samples of its two inputs, and the limits."""
    start = time.perf_counter()
    n = options.evaluation_trials
    needed = sorted({c.a for c in chosen} | {c.b for c in chosen})
    counts = {(k, i): 0 for k in range(len(chosen)) for i in needed}
    for i in needed:  # a loop over the few certified inputs, chunked over samples
        for rows in draw(sample, inputs[i], n, child(seq, 1, i), options.chunk):
            for k, cand in enumerate(chosen):
                if i in (cand.a, cand.b):
                    counts[k, i] += int(np.count_nonzero(cand.event(rows, support)))
    alpha = options.limit_alpha
    certified = []
    for k, cand in enumerate(chosen):
        ka, kb = counts[k, cand.a], counts[k, cand.b]
        lo = float(clopper_pearson_lower(ka, n, alpha))
        hi = float(clopper_pearson_upper(kb, n, alpha))
        eps = float(epsilon_from_limits(lo, hi, options.delta))
        certified.append(Certified(inputs[cand.a], inputs[cand.b], cand.family,
                                   cand.event.describe(), cand.predicted, n, ka, kb, lo, hi,
                                   max(eps, 0.0) if math.isfinite(eps) else 0.0))
    return SearchResult(options, tuple(inputs), pairs, searched, tuple(certified),
                        elapsed + time.perf_counter() - start)


def search_records(result: SearchResult, epsilon0: float, context: dict,
                   implementation: str = "", attack: str = "search") -> list[dict]:
    """Rows of the audit table (tables.py): one attack row per certified event, then the
    verdict ``implementation-ldp-search`` ("the implementation is not eps0-LDP: lower bound X
    at confidence C on inputs (a, b), event E", or consistent)."""
    rows = []
    for c in result.certified:
        rows.append(_row(
            context, delta=result.options.delta, level="randomizer", row_type="attack",
            pair=f"({c.x}, {c.x_prime})", attack=f"{attack}:{c.family}",
            direction=f"{c.x} vs {c.x_prime}", event=c.event, trials=c.trials,
            selection_trials=result.options.selection_trials, count0=c.count_a,
            count1=c.count_b, p0=c.count_a / c.trials, p1=c.count_b / c.trials,
            p0_limit=c.p_a_lower, p1_limit=c.p_b_upper, epsilon_lb=c.epsilon,
            confidence=result.confidence, ratio=c.epsilon / epsilon0 if epsilon0 else None,
            seconds=result.seconds,
            note=f"{len(result.inputs)} inputs, {result.pairs} pairs, {result.candidates} "
                 f"events searched; {len(result.certified)} certified (Bonferroni)"))
    b = result.best
    verdict = replace(ldp_verdict(result.epsilon_lb, epsilon0, result.confidence,
                                  (b.x, b.x_prime), b.event, result.options.delta),
                      check=f"ldp-{attack}")
    return rows + implementation_records([verdict], {**context, "delta": result.options.delta},
                                         "randomizer", implementation,
                                         seconds=result.seconds)


@register_attack("search", levels=(Level.RANDOMIZER,),
                 description="a search over neighbouring input pairs and output events (exact "
                             "and hashed output cells, coordinates, a learned classifier, the "
                             "oracle's support) for an eps0 lower bound of a black box",
                 note="simulator/audit/search.py")
class InputEventSearch:
    """The randomizer-level search attack (module docstring): ``run`` is :func:`search`,
    ``rows`` runs it and returns its audit-table rows."""

    name = "search"
    run = staticmethod(search)

    @staticmethod
    def rows(sample: Sample, domain, *, epsilon0: float, trials: int, confidence: float,
             seed, context: dict, implementation: str = "", delta0: float = 0.0,
             support: Support | None = None, **options) -> list[dict]:
        """Search ``sample`` (eps0 at delta0, the claim) and return the rows."""
        opts = SearchOptions(trials, confidence, delta=float(delta0), **options)
        result = search(sample, domain, opts, seed, support=support)
        return search_records(result, epsilon0, context, implementation)
