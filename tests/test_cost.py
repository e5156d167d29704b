"""Cost before work (simulator/calls/cost.py, issue 26): estimates from parameters, the limits and
their sources, and the numerical bounds' reach in n (no timing assertion: only estimates)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from shufflesim.protocols.bounds import catalogue
from shufflesim.protocols.bounds.engine.common import Categories
from shufflesim.protocols.bounds.engine.methods import ENUMERATE_BYTES_MAX, enumeration_bytes
from shufflesim.protocols.randomizers import make_randomizer
from shufflesim.simulator.calls import cost
from shufflesim.simulator.errors import UserError


@pytest.fixture(autouse=True)
def default_limits():
    cost.configure(max_seconds=cost.DEFAULT_MAX_SECONDS, max_bytes=None)
    yield
    cost.configure(max_seconds=cost.DEFAULT_MAX_SECONDS, max_bytes=None)


def test_sizes():
    assert cost.parse_size("4G") == 4 * 2**30
    assert cost.parse_size("512M") == 512 * 2**20
    assert cost.parse_size("800") == 800 * 2**20
    assert cost.parse_size("1.5 GiB") == 1.5 * 2**30
    with pytest.raises(UserError, match="--max-memory = 'lots'"):
        cost.parse_size("lots")


def test_audit_estimates_name_the_parameter_that_drives_them():
    trials = cost.audit_cost("randomizer", 10**15, None, None, False)
    assert trials.parameter == "--trials" and trials.seconds > cost.DEFAULT_MAX_SECONDS
    with pytest.raises(UserError, match=r"--trials = 1000000000000000: .* days .*--max-seconds"):
        cost.check(trials)
    n = cost.audit_cost("shuffle", 200, 10**29, 4, False)
    assert n.parameter == "--n" and n.value == 10**29
    small = cost.audit_cost("shuffle", 1000, 100, 4, False)
    assert small.seconds < 1 and cost.check(small) is small


def test_a_limit_names_where_it_came_from():
    estimate = cost.Cost(100.0, 0.0, "repetitions", 5, "lower repetitions")
    cost.configure(max_seconds=10, source="limits.max_seconds")
    with pytest.raises(UserError, match=r"\(limits.max_seconds\); lower repetitions"):
        cost.check(estimate)
    cost.configure(max_seconds=0)  # 0: no limit
    assert cost.check(estimate) is estimate


def test_memory_is_checked_per_worker():
    cost.configure(max_bytes=2**30, explicit=True)
    assert cost.worker_bytes(4) == 2**30  # --max-memory is per worker
    assert cost.memory_per_worker(4) == (2**30, "--max-memory")
    heavy = cost.Cost(0.0, 2**31, "population.n", 10**9, "lower population.n")
    with pytest.raises(UserError, match="population.n = 1000000000: needs at least 2.0 GiB"):
        cost.check(heavy)
    cost.configure(max_bytes=math.inf)
    assert cost.check(heavy) is heavy


def test_the_enumeration_is_refused_by_its_memory_not_only_its_rows():
    """laplace eps0 = 8, n = 2: hundreds of categories and 2 users (issue 26: 16 GB)."""
    cats = [Categories(np.linspace(-1, 1, 700), np.full(700, 1 / 700), 2, 0.0)]
    assert enumeration_bytes(cats) > ENUMERATE_BYTES_MAX
    small = [Categories(np.array([-1.0, 0.0, 1.0]), np.full(3, 1 / 3), 20, 0.0)]
    assert enumeration_bytes(small) < ENUMERATE_BYTES_MAX


@pytest.mark.parametrize("name", ["exact-lower", "fmt21_numerical", "optimal-blanket"])
def test_numerical_bounds_say_n_is_beyond_their_reach(name):
    krr = make_randomizer("krr", epsilon0=1.0, domain_size=4)
    evaluation = catalogue.evaluate(name, krr, 10**29, 1e-6)
    assert evaluation.result is None and "n = " in evaluation.error


def test_rounds_estimates_grow_with_the_rounds_and_name_the_flag():
    one = cost.rounds_cost(1)
    assert one.seconds == 0 and one.bytes == 0  # one round: nothing composed
    small, big = cost.rounds_cost(10**3), cost.rounds_cost(10**12)
    assert small.bytes < big.bytes and small.seconds < big.seconds
    assert big.bytes >= 10**12 * cost.PLD_POINT_BYTES * cost.PLD_POINTS_PER_ROUND
    cost.check(small)  # feasible work is not refused
    with pytest.raises(UserError, match=r"--rounds = 1000000000000: needs at least .*basic or "
                                        r"advanced composition"):
        cost.check(big)


def test_calibration_and_design_cost_several_evaluations():
    assert cost.calibrate_cost(10**6).seconds >= cost.CALIBRATION_STEPS * \
        cost.rounds_cost(10**6).seconds
    assert cost.design_cost(10**6, 3).seconds > cost.calibrate_cost(10**6).seconds
    cost.configure(max_seconds=1e-6, explicit=True)
    with pytest.raises(UserError, match=r"--rounds = 1000000: .*--max-seconds"):
        cost.check(cost.calibrate_cost(10**6))


def test_compose_counts_every_groups_repeat():
    parts = [{"repeat": 10**11}, {"repeat": 9 * 10**11}, {"randomizer": "krr"}]
    estimate = cost.compose_cost(parts)
    assert estimate.parameter == "--round" and estimate.value == f"repeat={10**12 + 1}"
    assert "repeat" in estimate.remedy
    with pytest.raises(UserError, match=r"--round = 'repeat=1000000000001'"):
        cost.check(estimate)


def test_learning_estimate_names_epochs():
    from shufflesim.simulator.learning.train import LearningOptions

    estimate = cost.learning_cost(LearningOptions(epochs=10**12))
    assert estimate.parameter == "learning.epochs" and estimate.value == 10**12
    assert estimate.seconds >= 10**12 * cost.STEP_SECONDS
    cost.check(cost.learning_cost(LearningOptions(epochs=10)))
    with pytest.raises(UserError, match=r"learning.epochs = 1000000000000: .* days"):
        cost.check(estimate)
    wide = cost.learning_cost(LearningOptions(clients_per_step=10**9, examples_per_client=10**6))
    assert wide.parameter == "learning.clients_per_step"
