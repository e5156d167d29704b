"""lower_grid.py (issue 32): the lower side's balanced merge onto the grid.

- Against brute force: binary RR's exact pair at n <= 20, composed over T <= 3 rounds by
  enumerating every outcome sequence, with grids as coarse as 0.3 (where the balance moves
  most): exact-lower never exceeds the true eps.
- Never below plain rounding down (first-order stochastic order of the P-law), same mass.
- On a smooth PLD the mean loss error is far below plain rounding's interval / 2 (fails for
  plain rounding).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy.stats import binom

from shufflesim.protocols.accounting import lower_grid
from shufflesim.protocols.accounting.compose import Round, compose_rounds
from shufflesim.protocols.randomizers import make_randomizer

DELTA = 1e-6


def _brr_pair(n: int, eps0: float, others: int) -> tuple[np.ndarray, np.ndarray]:
    """Laws of the number of 1-reports: user 1 holds 0 (P0) or 1 (P1), the others ``others``."""
    p = math.exp(eps0) / (1 + math.exp(eps0))
    rest = binom.pmf(np.arange(n), n - 1, p if others == 1 else 1 - p)
    P0, P1 = np.zeros(n + 1), np.zeros(n + 1)
    P0[:n] += p * rest
    P0[1:] += (1 - p) * rest
    P1[:n] += (1 - p) * rest
    P1[1:] += p * rest
    return P0, P1


def _true_epsilon(P: np.ndarray, Q: np.ndarray, rounds: int) -> float:
    """eps at DELTA of T rounds of (P, Q), every outcome sequence enumerated; bisection."""
    live = P > 0
    losses, masses = np.log(P[live] / Q[live]), P[live]
    L, w = np.zeros(1), np.ones(1)
    for _ in range(rounds):
        L = (L[:, None] + losses[None, :]).ravel()
        w = (w[:, None] * masses[None, :]).ravel()

    def delta(eps):
        return float(np.sum(w * np.clip(-np.expm1(eps - L), 0.0, None)))

    lo, hi = 0.0, 60.0
    if delta(0.0) <= DELTA:
        return 0.0
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if delta(mid) > DELTA else (lo, mid)
    return lo


@pytest.mark.parametrize("n,eps0,rounds", list(itertools.product((5, 20), (0.5, 3.0), (1, 3))))
def test_exact_lower_never_exceeds_the_brute_force_truth(n, eps0, rounds):
    truth = max(_true_epsilon(*pair, rounds)
                for others in (0, 1)
                for pair in (_brr_pair(n, eps0, others), _brr_pair(n, eps0, others)[::-1]))
    r = make_randomizer("brr", epsilon0=eps0)
    for options in ({}, {"interval": 0.003}, {"interval": 0.03}, {"interval": 0.3}):
        value = compose_rounds([Round(r, n, rounds)], DELTA, "exact-lower", **options).epsilon
        assert value <= truth * (1 + 1e-12) + 1e-15, (options, value, truth)
    # and close at the default grid
    value = compose_rounds([Round(r, n, rounds)], DELTA, "exact-lower").epsilon
    assert value >= truth * (1 - 2e-3)


def _smooth(size=4000, seed=3):
    rng = np.random.default_rng(seed)
    ell = np.sort(rng.normal(0.02, 0.01, size))
    mass = np.exp(-0.5 * ((ell - 0.02) / 0.01) ** 2) * rng.uniform(0.5, 1.5, size)
    mass /= mass.sum()
    other = mass * np.exp(-ell)
    return mass, other, ell


@pytest.mark.parametrize("interval", [1e-4, 1e-3, 4e-3])
def test_never_below_plain_rounding_and_mass_kept(interval):
    mass, other, ell = _smooth()
    low, probs = lower_grid.balanced_floor(mass, other, ell, interval, 1e-12)
    plain = np.bincount(np.floor(lower_grid._lowered(ell) / interval).astype(np.int64) - low,
                        weights=mass, minlength=probs.size)
    assert math.isclose(probs.sum(), mass.sum(), rel_tol=1e-12)
    # P-mass at or above each grid point: at least plain rounding's (stochastically larger)
    above, plain_above = np.cumsum(probs[::-1])[::-1], np.cumsum(plain[::-1])[::-1]
    assert np.all(above >= plain_above * (1 - 1e-12) - 1e-18)


def test_mean_error_is_second_order_on_a_smooth_pld():
    mass, other, ell = _smooth(size=200000)
    interval = 2e-3                        # 5 cells per standard deviation
    low, probs = lower_grid.balanced_floor(mass, other, ell, interval, 1e-12)
    grid = (low + np.arange(probs.size)) * interval
    exact = float(np.dot(mass, ell))
    ours = float(np.dot(probs, grid))
    plain = float(np.dot(mass, np.floor(ell / interval) * interval))
    assert exact - plain > 0.4 * interval                 # plain rounding: about interval / 2
    assert 0.0 <= exact - ours < 0.1 * interval           # balanced: a post-processing, close
