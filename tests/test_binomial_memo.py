"""engine/binomial_memo.RowMemo: remembered binomial values are the values, bit for bit, and
only entries whose k moved are computed again (issue 18, fifth round)."""

from __future__ import annotations

import numpy as np
import pytest

from shufflesim.protocols.bounds.engine import binomial_memo, common, conditioning
from shufflesim.protocols.bounds.engine.binomial_memo import RowMemo
from shufflesim.protocols.bounds.numerical import decompositions as dec
from shufflesim.protocols.distributions import binom
from shufflesim.protocols.randomizers import make_randomizer


def test_recomputes_only_the_entries_whose_k_moved():
    memo = RowMemo(common.binom_ge)
    rng = np.random.default_rng(7)
    t = np.arange(5000.0, 7000.0)
    k = np.floor(0.3 * t)
    first = memo(k, t, 0.3)
    assert np.array_equal(first, common.binom_ge(k, t, 0.3))
    assert memo.computed == t.size
    for _ in range(5):
        moved = rng.random(t.size) < 0.01
        k = k + moved
        before = memo.computed
        got = memo(k, t, 0.3)
        assert np.array_equal(got, common.binom_ge(k, t, 0.3))      # bit for bit
        assert memo.computed - before == int(moved.sum())


def test_other_parameters_or_rows_are_computed_afresh():
    memo = RowMemo(binom.pmf)
    t = np.arange(100.0, 200.0)
    k = np.floor(0.5 * t)
    memo(k, t, 0.5)
    for args in [(k, t, 0.25), (k[:-1], t[:-1], 0.5), (k, t + 1.0, 0.5)]:
        before = memo.computed
        assert np.array_equal(memo(*args), binom.pmf(*args))
        assert memo.computed - before == args[0].size
    # a nan k compares unequal: recomputed, and nan as binom.pmf gives it
    k_nan = k.copy()
    k_nan[3] = np.nan
    assert np.array_equal(memo(k_nan, t, 0.5), binom.pmf(k_nan, t, 0.5), equal_nan=True)


def test_returned_arrays_are_copies():
    """A caller writing into a result must not change what the memo remembers."""
    memo = RowMemo(binom.pmf)
    t = np.arange(10.0, 60.0)
    k = np.floor(0.5 * t)
    out = memo(k, t, 0.5)
    out[:] = -1.0
    assert np.array_equal(memo(k, t, 0.5), binom.pmf(k, t, 0.5))


def test_large_or_broadcast_arguments_bypass_the_memo(monkeypatch):
    monkeypatch.setattr(binomial_memo, "MAX_SIZE", 10)
    memo = RowMemo(binom.pmf)
    t = np.arange(100.0, 200.0)
    k = np.floor(0.5 * t)
    assert np.array_equal(memo(k, t, 0.5), binom.pmf(k, t, 0.5))
    assert not memo.entries
    assert np.array_equal(memo(k[:5], 50.0, 0.5), binom.pmf(k[:5], 50.0, 0.5))
    assert not memo.entries


@pytest.mark.parametrize("eps0, n", [(0.01, 10**6), (1.0, 10**5)])
def test_conditioning_values_are_the_same_with_and_without_memory(eps0, n):
    """The conditioning method at three nearby eps: with the memo warm (as in a search) and
    with it cleared before each call, the brackets are identical bit for bit."""
    r = make_randomizer("krr", epsilon0=eps0, domain_size=10)
    atoms = dec.blanket_atoms(r, 0, 1)
    base = {0.01: 1.9003606e-06, 1.0: 0.0066385}[eps0]
    points = [base, base * (1 + 1e-7), base * (1 - 3e-7)]

    def bracket(eps):
        cat = common.categories(atoms, n, eps)
        return conditioning.conditioning_bounds(cat, np.zeros(1), np.ones(1), np.zeros(1), 0)

    warm = [bracket(e) for e in points]
    cold = []
    for e in points:
        common.BINOM_GE.clear()
        common.BINOM_PMF.clear()
        cold.append(bracket(e))
    assert warm == cold


def test_threads_sharing_a_memo_get_the_right_values():
    """Four threads over different rows and moving k (more (p, t) keys than ENTRIES): every
    value is the direct one and the bookkeeping never fails."""
    from concurrent.futures import ThreadPoolExecutor

    memo = RowMemo(common.binom_ge)

    def work(seed):
        rng = np.random.default_rng(seed)
        bad = 0
        for i in range(40):
            t = np.arange(100.0, 400.0) + 300 * (i % 5)
            k = np.floor(0.4 * t) + rng.integers(0, 2, t.size)
            bad += not np.array_equal(memo(k, t, 0.4), common.binom_ge(k, t, 0.4))
        return bad

    with ThreadPoolExecutor(4) as pool:
        assert sum(pool.map(work, range(4))) == 0
