"""Clopper-Pearson limits, the eps lower bound from them, the error budget, and tail events."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from shufflesim.protocols.errors import ParameterError
from shufflesim.simulator.audit.confidence import (
    ErrorBudget,
    clopper_pearson_lower,
    clopper_pearson_upper,
    epsilon_from_limits,
    epsilon_lower_bound,
)
from shufflesim.simulator.audit.events import (
    LOWER,
    UPPER,
    TailEvent,
    evaluate_all,
    evaluate_events,
    select_events,
    tail_counts,
)


@pytest.mark.parametrize("trials", [1, 20, 137])
@pytest.mark.parametrize("alpha", [0.2, 0.05, 0.001])
def test_exact_coverage_of_both_limits(trials, alpha):
    """Exact coverage by summing the binomial pmf: P_p[lower(K) <= p] >= 1 - alpha for every p
    on a fine grid and just beside every limit (where the coverage jumps)."""
    k = np.arange(trials + 1)
    lo = clopper_pearson_lower(k, trials, alpha)
    hi = clopper_pearson_upper(k, trials, alpha)
    grid = np.concatenate([np.linspace(1e-6, 1 - 1e-6, 2001), lo[1:] * (1 + 1e-9),
                           lo[1:] * (1 - 1e-9), hi[:-1] * (1 + 1e-9), hi[:-1] * (1 - 1e-9)])
    grid = grid[(grid > 0) & (grid < 1)]
    pmf = stats.binom.pmf(k[None, :], trials, grid[:, None])
    cover_lo = (pmf * (lo[None, :] <= grid[:, None])).sum(axis=1)
    cover_hi = (pmf * (hi[None, :] >= grid[:, None])).sum(axis=1)
    assert cover_lo.min() >= 1 - alpha - 1e-9
    assert cover_hi.min() >= 1 - alpha - 1e-9
    # Not wastefully conservative: the worst case comes close to 1 - alpha (CP is exact at the
    # limits; a limit built at alpha / 2 would stay far above).
    assert cover_lo.min() <= 1 - alpha + 0.6 * alpha
    assert cover_hi.min() <= 1 - alpha + 0.6 * alpha


def test_closed_forms_at_the_ends():
    t, alpha = 50, 0.05
    assert clopper_pearson_lower(0, t, alpha)[()] == 0.0
    assert clopper_pearson_upper(t, t, alpha)[()] == 1.0
    assert clopper_pearson_upper(0, t, alpha)[()] == pytest.approx(1 - alpha ** (1 / t), rel=1e-8)
    assert clopper_pearson_lower(t, t, alpha)[()] == pytest.approx(alpha ** (1 / t), rel=1e-8)


def test_limits_bracket_the_frequency_and_are_monotone():
    k = np.arange(0, 101)
    lo = clopper_pearson_lower(k, 100, 0.01)
    hi = clopper_pearson_upper(k, 100, 0.01)
    assert (lo <= k / 100).all() and (hi >= k / 100).all()
    assert (np.diff(lo) > 0).all() and (np.diff(hi) > 0).all()
    # A stricter level gives wider limits.
    assert (clopper_pearson_lower(k, 100, 0.001)[1:] < lo[1:]).all()


def test_non_integer_counts_interpolate():
    lo = clopper_pearson_lower([10.0, 10.5, 11.0], 100, 0.05)
    assert lo[0] < lo[1] < lo[2]


@pytest.mark.parametrize("k, t, alpha", [(-1, 10, 0.05), (11, 10, 0.05), (1, 0, 0.05),
                                         (1, 10, 0.0), (1, 10, 1.0), (np.nan, 10, 0.05)])
def test_bad_inputs_name_the_field(k, t, alpha):
    with pytest.raises(ParameterError):
        clopper_pearson_lower(k, t, alpha)


def test_epsilon_from_limits():
    out = epsilon_from_limits([0.5, 1e-7, 0.2], [0.1, 0.1, 0.0], 1e-6)
    assert out[0] == pytest.approx(np.log((0.5 - 1e-6) / 0.1))
    assert out[1] == -np.inf and out[2] == -np.inf
    direct = epsilon_lower_bound(400, 1000, 100, 1000, 0.0, 0.01, 0.01)
    lo = clopper_pearson_lower(400, 1000, 0.01)
    hi = clopper_pearson_upper(100, 1000, 0.01)
    assert direct[()] == pytest.approx(np.log(lo / hi)[()])


def test_error_budget_splits_by_union_bound():
    b = ErrorBudget(0.95, rows=4, events=3)
    assert b.alpha == pytest.approx(0.05)
    assert b.row_alpha == pytest.approx(0.0125)
    assert b.row_confidence == pytest.approx(0.9875)
    assert b.limit_alpha == pytest.approx(0.05 / 24)
    for bad in (dict(confidence=1.0), dict(confidence=0.5, rows=0), dict(confidence=0.5,
                                                                          events=1.5)):
        with pytest.raises(ParameterError):
            ErrorBudget(**bad)


def test_tail_counts_and_events():
    per_bin = np.array([3, 0, 5, 2])
    upper, lower = tail_counts(per_bin)
    assert upper.tolist() == [10, 7, 7, 2]
    assert lower.tolist() == [3, 3, 8, 10]
    assert TailEvent(UPPER, 2).count(per_bin) == 7
    assert TailEvent(LOWER, 1).count(per_bin) == 3


def test_selection_finds_the_separating_tail_and_evaluation_is_consistent():
    rng = np.random.default_rng(3)
    bins = 30
    a = rng.multinomial(20000, np.r_[np.full(20, 0.02), np.full(10, 0.06)])
    b = rng.multinomial(20000, np.r_[np.full(20, 0.045), np.full(10, 0.01)])
    events = select_events(a, b, 20000, 180000, 0.0, 0.01, shortlist=2)
    assert events[0].side == UPPER and 15 <= events[0].threshold <= 22
    ea = rng.multinomial(180000, np.r_[np.full(20, 0.02), np.full(10, 0.06)])
    eb = rng.multinomial(180000, np.r_[np.full(20, 0.045), np.full(10, 0.01)])
    bound = evaluate_events(events, ea, eb, 180000, 0.0, 0.005)
    true = np.log(0.6 / 0.1)
    assert 0.9 * true < bound.epsilon < true
    assert bound.confidence == pytest.approx(1 - 4 * 0.005)
    split = evaluate_all(ea, eb, 180000, 0.0, 0.02)
    assert split.events == 2 * bins
    assert 0.85 * true < split.epsilon <= bound.epsilon + 0.05
