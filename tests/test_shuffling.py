"""The batch path's shuffler (simulator/shuffling.py) and threaded randomization
(simulator/batch.randomize_in_pieces, simulator/threads.py).

Exactness is checked on tiny settings, where every arrangement can be enumerated, with the
two-stage method's block size and thresholds shrunk so that several blocks are involved; long
rows are checked for their multiset and for uniform positions. Goodness-of-fit tests reject at
alpha = 1e-4 with fixed seeds.
"""

import itertools
from collections import Counter

import numpy as np
import pytest
from scipy import stats

from shufflesim.simulator.batch import shuffling, threads
from shufflesim.simulator.batch.run import BatchSetup, randomize_in_pieces
from shufflesim.simulator.batch.shuffling import shuffle_reports
from shufflesim.simulator.scenario.loader import parse_scenario

ALPHA = 1e-4


@pytest.fixture
def small_blocks(monkeypatch):
    """The two-stage method on rows of >= 4 reports, in blocks of 2 positions."""
    monkeypatch.setattr(shuffling, "MULTISET_MIN", 4)
    monkeypatch.setattr(shuffling, "BLOCK", 2)
    monkeypatch.setattr(shuffling, "GROUP_BLOCKS", 3)


def _arrangement_counts(rows: np.ndarray) -> Counter:
    return Counter(map(tuple, rows.tolist()))


def test_uniform_permutation_of_distinct_reports():
    reps, n = 48_000, 4
    reports = np.broadcast_to(np.arange(n), (reps, n)).copy()
    shuffled = shuffle_reports(reports, np.random.default_rng(1))
    np.testing.assert_array_equal(np.sort(shuffled, axis=1), reports)
    seen = _arrangement_counts(shuffled)
    assert len(seen) == 24
    assert stats.chisquare(list(seen.values())).pvalue > ALPHA
    # Independent across repetitions: the first positions of consecutive rows.
    table = np.zeros((n, n))
    np.add.at(table, (shuffled[:-1:2, 0], shuffled[1::2, 0]), 1)
    assert stats.chi2_contingency(table).pvalue > ALPHA


def test_two_stage_arrangement_is_uniform_over_arrangements(small_blocks):
    # Multiset {0, 0, 1, 2, 2} over blocks of 2, 2 and 1 positions: 30 arrangements.
    reps = 30_000
    row = np.array([2, 0, 2, 1, 0])
    reports = np.tile(row, (reps, 1))
    shuffled = shuffle_reports(reports, np.random.default_rng(5))
    assert shuffled.dtype == reports.dtype
    seen = _arrangement_counts(shuffled)
    expected = set(itertools.permutations(row.tolist()))
    assert set(seen) == expected and len(expected) == 30
    assert stats.chisquare(list(seen.values())).pvalue > ALPHA


def test_two_stage_arrangement_keeps_negative_values_and_single_values(small_blocks):
    rng = np.random.default_rng(6)
    reports = np.array([[-3, 5, -3, 0, 5, 5, 1], [4, 4, 4, 4, 4, 4, 4]])
    shuffled = shuffle_reports(reports, rng)
    np.testing.assert_array_equal(np.sort(shuffled, axis=1), np.sort(reports, axis=1))


def test_two_stage_arrangement_catches_a_biased_shuffle(small_blocks, monkeypatch):
    # Negative control: skip the in-block permutation; the arrangements are no longer uniform.
    monkeypatch.setattr(shuffling, "_shuffle_group", lambda pieces, rng: None)
    reports = np.tile(np.array([2, 0, 2, 1, 0]), (30_000, 1))
    seen = _arrangement_counts(shuffle_reports(reports, np.random.default_rng(5)))
    counts = [seen.get(a, 0) for a in set(itertools.permutations([2, 0, 2, 1, 0]))]
    assert stats.chisquare(counts).pvalue < ALPHA


def test_long_rows_keep_their_multiset_and_spread_every_value_uniformly():
    n = 1 << 19  # above MULTISET_MIN: the two-stage method, 16 blocks
    values = np.repeat(np.arange(5), [n - 4000, 1000, 1000, 1000, 1000])
    reports = np.stack([values, values[::-1]])
    shuffled = shuffle_reports(reports, np.random.default_rng(3))
    assert shuffled.dtype == np.int64
    np.testing.assert_array_equal(np.sort(shuffled, axis=1), np.sort(reports, axis=1))
    assert not np.array_equal(shuffled[0], shuffled[1])
    for v in range(1, 5):  # positions of a rare value: uniform over 64 equal bins
        positions = np.flatnonzero(shuffled[0] == v)
        assert stats.chisquare(np.bincount(positions * 64 // n, minlength=64)).pvalue > ALPHA


def test_wide_and_float_rows_are_permuted_whole():
    rng = np.random.default_rng(4)
    wide = rng.integers(-(10**9), 10**9, size=(2, 1 << 18))
    floats = rng.random((3, 50))
    for reports in (wide, floats):
        shuffled = shuffle_reports(reports, rng)
        assert shuffled.dtype == reports.dtype
        np.testing.assert_array_equal(np.sort(shuffled, axis=1), np.sort(reports, axis=1))
        assert not np.array_equal(shuffled, reports)


def test_vector_reports_move_whole():
    rng = np.random.default_rng(2)
    reports = rng.integers(0, 2, (5, 7, 3))
    shuffled = shuffle_reports(reports, rng)
    for r in range(5):
        assert sorted(map(tuple, shuffled[r])) == sorted(map(tuple, reports[r]))


def test_input_is_not_modified():
    reports = np.tile(np.arange(10), (1, 1 << 15))
    before = reports.copy()
    shuffle_reports(reports, np.random.default_rng(0))
    np.testing.assert_array_equal(reports, before)


def test_shuffle_does_not_depend_on_the_number_of_threads(monkeypatch):
    reports = np.tile(np.arange(7), (2, 1 << 17))
    many = shuffle_reports(reports, np.random.default_rng(11))
    monkeypatch.setattr(threads, "MAX_THREADS", 1)
    threads._pool.cache_clear()
    try:
        one = shuffle_reports(reports, np.random.default_rng(11))
    finally:
        threads._pool.cache_clear()
    np.testing.assert_array_equal(many, one)


def test_bad_shape_is_refused():
    with pytest.raises(ValueError, match="repetitions, users"):
        shuffle_reports(np.arange(5), np.random.default_rng(0))


# ---------------------------------------------------------------------------------------------
# Randomizing in threads
# ---------------------------------------------------------------------------------------------
def _krr_setup(n: int) -> BatchSetup:
    text = f"""
name = "pieces"
[population]
n = {n}
data = {{ distribution = "uniform", domain_size = 4 }}
budget = {{ distribution = "constant", epsilon0 = 1.0 }}
[randomizer]
name = "krr"
domain_size = 4
[estimator]
name = "frequency"
"""
    return BatchSetup.from_settings(parse_scenario(text).points[0].settings)


def test_pieces_follow_the_declared_distribution_and_ignore_threads(monkeypatch):
    monkeypatch.setattr("shufflesim.simulator.batch.run.PIECE_BYTES", 4096)  # many pieces
    setup = _krr_setup(40_000)
    values = np.tile(np.repeat(np.arange(4), 10_000), (2, 1))
    reports = randomize_in_pieces(setup, values, None, np.random.default_rng(8))
    assert reports.shape == values.shape
    for x in range(4):
        observed = np.bincount(reports[:, values[0] == x].ravel(), minlength=4)
        pmf = np.exp(setup.randomizer.log_prob(x, np.arange(4)))
        assert stats.chisquare(observed, observed.sum() * pmf).pvalue > ALPHA
    monkeypatch.setattr(threads, "MAX_THREADS", 1)
    threads._pool.cache_clear()
    try:
        again = randomize_in_pieces(setup, values, None, np.random.default_rng(8))
    finally:
        threads._pool.cache_clear()
    np.testing.assert_array_equal(reports, again)
    assert not np.array_equal(reports[0], reports[1])
