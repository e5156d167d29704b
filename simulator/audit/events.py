"""Rejection events: tails of a binned statistic, chosen on held-out trials, evaluated on fresh
ones with Clopper-Pearson limits (docs/architecture.md, "The auditor").

For a statistic with bins 0..B-1 the candidate events are the upper tails {bin >= t} and the
lower tails {bin <= t}. Counts per bin in each world are all that is kept, so a candidate's
count is a cumulative sum.

Two ways to keep the bound valid although the event is chosen from data:

* ``holdout`` (``selection_trials > 0``): the event is chosen on selection trials only and
  evaluated on independent evaluation trials. The choice maximises the bound the evaluation is
  predicted to give: the selection counts are first shrunk to their one-sided limits at
  ``SELECTION_ALPHA`` (about one standard error, which keeps rare tails seen a handful of times
  from winning by noise), scaled to the evaluation size and given the evaluation's limits. The
  ``shortlist`` best events are evaluated with the error level split between them. Any rule
  that looks at selection trials only keeps the bound valid; this one only affects its power.
* ``split`` (no selection trials): every candidate is evaluated on all trials with the error
  level split over all 2B candidates (union bound).

A direction is the ordered pair of worlds (A, B): the bound is ln((P_A_lo(S) - delta) / P_B_hi(S)).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from shufflesim.protocols.errors import require
from shufflesim.simulator.audit.confidence import (
    clopper_pearson_lower,
    clopper_pearson_upper,
    epsilon_from_limits,
)

UPPER = "upper"
LOWER = "lower"


@dataclass(frozen=True)
class TailEvent:
    """{bin >= threshold} (side "upper") or {bin <= threshold} (side "lower")."""

    side: str
    threshold: int

    def count(self, per_bin: np.ndarray) -> int:
        if self.side == UPPER:
            return int(per_bin[self.threshold:].sum())
        return int(per_bin[: self.threshold + 1].sum())


def tail_counts(per_bin: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(upper[t] = #{bin >= t}, lower[t] = #{bin <= t}) for t in 0..B-1."""
    per_bin = np.asarray(per_bin, dtype=np.int64)
    lower = np.cumsum(per_bin)
    upper = lower[-1] - lower + per_bin
    return upper, lower


def _candidates(per_bin_a: np.ndarray, per_bin_b: np.ndarray):
    """Counts in worlds A and B of the distinct tail events, and the events (upper tails
    first). Tails at a bin that is empty in both worlds repeat a neighbour's counts (the same
    event on these data) and are left out; the union bound of the split strategy still counts
    all 2B candidates."""
    up_a, lo_a = tail_counts(per_bin_a)
    up_b, lo_b = tail_counts(per_bin_b)
    occupied = np.flatnonzero((np.asarray(per_bin_a) + np.asarray(per_bin_b)) > 0)
    if occupied.size == 0:
        occupied = np.array([0])
    events = [TailEvent(UPPER, int(t)) for t in occupied] + [TailEvent(LOWER, int(t))
                                                             for t in occupied]
    return (np.concatenate([up_a[occupied], lo_a[occupied]]),
            np.concatenate([up_b[occupied], lo_b[occupied]]), events)


@dataclass(frozen=True)
class EventBound:
    """The evaluated bound of one direction: the best of the evaluated events.

    count_a, count_b: the event's counts among ``trials`` evaluation trials per world;
    p_a_lower, p_b_upper: the one-sided limits at ``limit_alpha``; epsilon: ln((p_a_lower -
    delta) / p_b_upper), clipped at 0 (eps >= 0 always holds); events: number of events the
    error level was split over; confidence: 1 - 2 * events * limit_alpha.
    """

    event: TailEvent
    trials: int
    selection_trials: int
    count_a: int
    count_b: int
    p_a_lower: float
    p_b_upper: float
    epsilon: float
    events: int
    limit_alpha: float

    @property
    def confidence(self) -> float:
        return 1.0 - 2 * self.events * self.limit_alpha

    @property
    def p_a(self) -> float:
        return self.count_a / self.trials

    @property
    def p_b(self) -> float:
        return self.count_b / self.trials


def _bounds(k_a, k_b, trials: float, delta: float, alpha: float) -> np.ndarray:
    lo = clopper_pearson_lower(k_a, trials, alpha)
    hi = clopper_pearson_upper(k_b, trials, alpha)
    return epsilon_from_limits(lo, hi, delta)


#: Shrinkage of the selection counts (one-sided limits at this level; 0.5 = no shrinkage).
SELECTION_ALPHA = 0.16


def select_events(sel_a: np.ndarray, sel_b: np.ndarray, selection_trials: int,
                  evaluation_trials: int, delta: float, limit_alpha: float,
                  shortlist: int = 1, selection_alpha: float | None = None) -> list[TailEvent]:
    """The ``shortlist`` tail events with the best predicted evaluation bound.

    The prediction applies the evaluation's limits to the selection counts shrunk to their
    limits at ``selection_alpha`` (default SELECTION_ALPHA) and scaled to the evaluation size
    (module docstring); events are ranked by it (ties: the smaller probability under A, i.e. the
    more extreme event, as it tends to give the larger ratio). When no event is predicted to
    give a positive bound, the events with the largest predicted P_A - e^0 P_B are taken.
    """
    require(selection_trials >= 1, "selection_trials", selection_trials, "must be >= 1")
    k_a, k_b, events = _candidates(sel_a, sel_b)
    scale = evaluation_trials / selection_trials
    sa = SELECTION_ALPHA if selection_alpha is None else selection_alpha
    if sa < 0.5:
        k_a_s = clopper_pearson_lower(k_a, float(selection_trials), sa) * selection_trials
        k_b_s = clopper_pearson_upper(k_b, float(selection_trials), sa) * selection_trials
    else:
        k_a_s, k_b_s = k_a, k_b
    predicted = _bounds(k_a_s * scale, k_b_s * scale, float(evaluation_trials), delta,
                        limit_alpha)
    if not np.isfinite(predicted).any():
        predicted = (k_a - k_b).astype(float)
    order = np.lexsort((k_a, -predicted))
    return [events[i] for i in order[:shortlist]]


def evaluate_events(events: list[TailEvent], ev_a: np.ndarray, ev_b: np.ndarray, trials: int,
                    delta: float, limit_alpha: float, selection_trials: int = 0) -> EventBound:
    """The best bound over ``events`` (fixed before the counts ``ev_a``, ``ev_b`` were drawn),
    each with its two limits at ``limit_alpha``."""
    require(len(events) >= 1, "events", events, "needs at least one event")
    k_a = np.array([e.count(ev_a) for e in events])
    k_b = np.array([e.count(ev_b) for e in events])
    return _best(events, k_a, k_b, trials, delta, limit_alpha, selection_trials)


def evaluate_all(ev_a: np.ndarray, ev_b: np.ndarray, trials: int, delta: float,
                 row_alpha: float) -> EventBound:
    """The ``split`` strategy: every tail event, error level ``row_alpha`` split over them."""
    k_a, k_b, events = _candidates(ev_a, ev_b)
    total = 2 * np.asarray(ev_a).shape[0]
    alpha = row_alpha / (2 * total)
    return _best(events, k_a, k_b, trials, delta, alpha, 0, total)


def _best(events, k_a, k_b, trials, delta, alpha, selection_trials,
          total: int | None = None) -> EventBound:
    lo = clopper_pearson_lower(k_a, float(trials), alpha)
    hi = clopper_pearson_upper(k_b, float(trials), alpha)
    eps = epsilon_from_limits(lo, hi, delta)
    i = int(np.argmax(eps)) if np.isfinite(eps).any() else int(np.argmax(k_a - k_b))
    value = float(eps[i]) if math.isfinite(eps[i]) else 0.0
    return EventBound(events[i], int(trials), int(selection_trials), int(k_a[i]), int(k_b[i]),
                      float(lo[i]), float(hi[i]), max(value, 0.0),
                      len(events) if total is None else total, alpha)
