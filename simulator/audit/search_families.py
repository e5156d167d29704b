"""The selection stage of the search (search.py): for every ordered pair of candidate inputs
and every event family, the event with the best predicted certified bound, chosen on the
selection samples only (split into a fit half and a validation half).

The prediction (only ranks candidates; certification uses exact Clopper-Pearson limits on
fresh samples): counts shrunk to one-sided Wilson limits at events.SELECTION_ALPHA, scaled to
the certification size and given one-sided Wilson limits at the certification's error level;
then ln((lo - delta) / hi) (objective "epsilon") or lo - e^eps0 hi (objective "delta").
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from scipy import stats

from shufflesim.protocols.errors import ParameterError, require
from shufflesim.simulator.audit.classifier import fit_logistic
from shufflesim.simulator.audit.confidence import epsilon_from_limits
from shufflesim.simulator.audit.events import SELECTION_ALPHA
from shufflesim.simulator.audit.search_events import (
    CellEvent,
    CellMap,
    CoordinateEvent,
    ScoreEvent,
    SupportEvent,
    features,
    row_keys,
    score_rows,
)

#: The learned attack is trained on at most this many coordinates (plus their sum).
MAX_LEARNED_FEATURES = 256
#: Training samples per input of the learned attack (the rest of its half is not used).
MAX_TRAINING = 50_000
#: Threshold candidates of the learned score (quantiles of the pooled scores).
SCORE_BINS = 256


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


def predict(k_a, k_b, sel_a: int, sel_b: int, options) -> np.ndarray:
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


def _cell_map(pooled: list[np.ndarray], options) -> CellMap:
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
        model = fit_logistic(features(fit[a][:MAX_TRAINING]),
                             features(fit[b][:MAX_TRAINING]))
        sa = score_rows(model, val[a])
        sb = score_rows(model, val[b])
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



def best(found: list[_Candidate], k: int) -> list[_Candidate]:
    return sorted(found, key=lambda c: -c.predicted if math.isfinite(c.predicted)
                  else math.inf)[:k]


def select(fit, val, inputs, support, options, learned: bool = True) -> list[_Candidate]:
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

