"""run_masses.run_interval_masses (issue 32): binomial interval masses of consecutive numbers
of trials by the recurrence F_N(k) = F_{N+1}(k) + p f_N(k), S_{N+1}(k) = S_N(k) + p f_N(k)
from Boost anchors. It must give enumeration.interval_mass's values (Boost's cdf and sf at
every end) within a few ulp of the tails, on both sides of the mean, on empty intervals, on
ends below 0 and at N, with ends that stay equal for runs of rows (where the recurrence is
used) and change every row (where every value is an anchor)."""

from __future__ import annotations

import numpy as np
import pytest

from shufflesim.protocols.accounting import aggregate_parts, enumeration, pairs, run_masses
from shufflesim.protocols.randomizers import make_randomizer


def _bins(N, p, tail, inner, every):
    """neutral_bins' layout: two tail bins and ``inner`` equal bins of a window that changes
    every ``every`` rows."""
    picks = np.arange(0, N.size, every)
    lo_s, hi_s = enumeration.window(N[picks], p, tail)
    lo = np.repeat(lo_s, every)[:N.size]
    hi = np.minimum(np.repeat(hi_s, every)[:N.size] + every, N)
    return aggregate_parts.bin_edges(N, lo, hi, inner)


def _relative(ours, plain):
    assert np.array_equal(ours == 0.0, plain == 0.0)
    live = plain > 0
    return float(np.max(np.abs(ours[live] - plain[live]) / plain[live]))


@pytest.mark.parametrize(("n_min", "n_max", "p", "inner", "every"), [
    (82_000, 83_700, 0.823, 11, 8),      # the 10-RR blanket pair's rows at n = 1e5
    (300, 900, 0.2, 7, 5),
    (5, 60, 0.6, 5, 3),                  # small N: ends below 0 and at N
    (1000, 1040, 0.37, 9, 1),            # ends change (almost) every row: mostly anchors
    (2000, 2400, 0.5, 6, 40),            # runs longer than MAX_STEPS
])
def test_run_interval_masses_match_interval_mass(n_min, n_max, p, inner, every):
    N = np.arange(n_min, n_max + 1, dtype=float)
    blo, bhi = _bins(N, p, 1e-15, inner, every)
    NN = np.broadcast_to(N[:, None], blo.shape)
    plain = enumeration.interval_mass(blo, bhi, NN, p)
    ours = run_masses.run_interval_masses(blo, bhi, N, p)
    assert _relative(ours, plain) < 1e-11
    assert np.all(ours[blo > bhi] == 0.0)
    # the recurrence was used where ends stay equal for runs of rows
    steps = run_masses._steps_to_anchor(bhi, 1)
    assert steps.max() > 0 or every == 1
    assert steps.max() <= run_masses.MAX_STEPS


def test_run_tails_are_the_binomial_tails():
    """Each tail on its own (not only the differences): cdf and sf at ends inside, below 0 and
    at or beyond N, against Boost, with runs of equal ends."""
    from shufflesim.protocols.distributions import binom

    N = np.arange(40, 140, dtype=float)
    k = np.repeat(np.array([[-1.0, 0.0, 10.0, 25.0, 39.0, 60.0, 140.0]]), N.size, axis=0)
    k[::7, 3] += 1                       # breaks some runs
    NN = np.broadcast_to(N[:, None], k.shape)
    for upper, tail in ((False, binom.cdf), (True, binom.sf)):
        ours = run_masses.run_tails(k, N, 0.3, upper)
        plain = tail(k, NN, 0.3)
        assert _relative(ours, plain) < 1e-12


@pytest.mark.parametrize(("k", "eps0", "n"), [(10, 1.0, 100_000), (3, 1.0, 20_000)])
def test_neutral_bins_masses_match_the_boost_masses(k, eps0, n):
    """enumeration.neutral_bins (through run_masses) against interval_mass on its own bins."""
    model = pairs.blanket_model(make_randomizer("krr", epsilon0=eps0, domain_size=k))
    rho = model.w_neutral / (model.w_neutral + model.w_null)
    n_min, n_max = int(0.8 * n), int(0.85 * n)
    bins = enumeration.neutral_bins(model, n, n_min, n_max, 1e-15, 0.002)
    N = np.arange(n_min, n_max + 1, dtype=float)
    NN = np.broadcast_to(N[:, None], bins.lo.shape)
    empty = (bins.lo == 0) & (bins.hi == 0) & (bins.mass == 0)   # neutral_bins' empty bins
    plain = enumeration.interval_mass(bins.lo, bins.hi, NN, rho)
    plain[empty] = 0.0
    assert _relative(bins.mass, plain) < 1e-11
