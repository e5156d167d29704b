"""Everything the mathematics offers, reachable from every entry point (issue 28, item 2):
Renyi DP curves of the shuffled mechanism (002 Sec. 6.1), personalized bounds, 004's summation
protocol from a central (eps, delta) target, and calibration, each from Python, the command
line and a scenario, with the same numbers. (Composition modes: tests/test_compose_call.py.)"""

from __future__ import annotations

import pytest
from test_api import cli_error, cli_json, rows, untimed

import shufflesim

BASE = """
name = "reach"
seed = 1
repetitions = 1
[population]
n = {n}
data = {data}
budget = {budget}
[randomizer]
{randomizer}
[estimator]
name = "{estimator}"
{section}
"""
KRR2 = dict(data='{ distribution = "uniform", domain_size = 2 }',
            randomizer='name = "krr"\ndomain_size = 2', estimator="frequency")


def scenario(section: str, n: int = 1000, budget: str | None = None, **kind) -> str:
    values = {**KRR2, **kind}
    budget = budget or '{ distribution = "constant", epsilon0 = 1.0 }'
    return BASE.format(n=n, budget=budget, section=section, **values)


def test_rdp_curves_from_python_cli_and_scenario():
    table = shufflesim.rdp("krr", epsilon0=1.0, domain_size=2, n=1000, rounds=10,
                           orders=[2, 8, 32], delta=1e-6)
    records = cli_json("rdp", "--randomizer", "krr", "--domain-size", 2, "--epsilon0", 1,
                       "--n", 1000, "--rounds", 10, "--order", 2, "--order", 8, "--order", 32,
                       "--delta", 1e-6, "--json", "-q")
    assert rows(table) == untimed(records)
    section = '[rdp]\norders = [2, 8, 32]\ndelta = 1e-6\nrounds = 10\n'
    written = shufflesim.run(scenario(section), workers=1)["rdp"]
    assert written.rdp_epsilon.tolist() == table.rdp_epsilon.tolist()
    blanket = table[table.method == "rdp-blanket"].rdp_epsilon.to_numpy()
    clone = table[table.method == "rdp-clone"].rdp_epsilon.to_numpy()
    assert (blanket <= clone).all() and (blanket[:-1] <= blanket[1:]).all()
    assert (table.rdp_epsilon <= 10 * 1.0).all()
    # the best order of the curve is what compose's rdp-blanket reports (finer grid there)
    composed = shufflesim.compose([{"randomizer": "krr", "epsilon0": 1.0, "domain_size": 2,
                                    "n": 1000, "repeat": 10}], delta=1e-6,
                                  method="rdp-blanket").epsilon[0]
    assert composed <= table[table.method == "rdp-blanket"].epsilon.min() + 1e-12
    # a randomizer without the blanket pair: the clone curve, and the reason for the other
    oue = shufflesim.rdp("oue", epsilon0=1.0, domain_size=4, n=1000, orders=2)
    assert oue.error[oue.method == "rdp-blanket"].str.contains("supports only").all()
    assert oue.rdp_epsilon[oue.method == "rdp-clone"].notna().all()
    assert cli_error("rdp", "--randomizer", "krr", "--domain-size", 2, "--epsilon0", 1,
                     "--n", 1000, "--order", 0.5).startswith("error: --order = 0.5: ")


def test_personalized_bounds_from_python_cli_and_scenario():
    methods = ["optimal-blanket-personalized", "exact-lower-personalized",
               "baseline-min-budget"]
    table = shufflesim.bounds("krr", domain_size=2, budgets={0.5: 30, 2.0: 70}, delta=1e-6,
                              methods=methods)
    flags = sum((["--method", m] for m in methods), [])
    records = cli_json("bound", "--randomizer", "krr", "--domain-size", 2, "--budgets",
                       "0.5:30,2:70", "--delta", 1e-6, *flags, "--json", "-q")
    assert rows(table) == untimed(records)
    upper, lower, baseline = table.epsilon
    assert lower <= upper
    # the baseline is another protocol: never flagged against the mechanism's lower bound
    assert not table.below_proven_lower.any()
    budget = ('{ distribution = "groups", epsilons = [0.5, 2.0], fractions = [0.3, 0.7] }')
    section = '[bounds]\ndelta = 1e-6\nmethods = ' + str(methods).replace("'", '"') + "\n"
    written = shufflesim.run(scenario(section, n=100, budget=budget,
                                      estimator="gspa_frequency"), workers=1)["bounds"]
    assert written.epsilon.tolist() == table.epsilon.tolist()
    assert cli_error("bound", "--randomizer", "krr", "--domain-size", 2, "--budgets",
                     "0.5:30,2:70", "--n", 5, "--delta", 1e-6).startswith("error: --n = 5: ")


def test_summation_from_a_central_target_from_python_cli_and_scenario():
    table = shufflesim.calibrate("summation", precision=10, target_epsilon=0.5, delta=1e-6,
                                 n=100_000, methods=["004-thm3.1", "optimal-blanket"])
    records = cli_json("calibrate", "--randomizer", "summation", "--param", "precision=10",
                       "--target-epsilon", 0.5, "--delta", 1e-6, "--n", 100_000, "--method",
                       "004-thm3.1", "--method", "optimal-blanket", "--json", "-q")
    assert rows(table) == untimed(records)
    recipe = table.iloc[0]
    assert recipe.method == "004-thm3.1" and "gamma = " in recipe.note
    # 004's gamma for Thm 3.1 (14 k log(2/delta) / ((n-1) eps^2), k = 11) -> eps0
    from shufflesim.protocols.randomizers.summation import Summation
    assert recipe.value == Summation.for_shuffle(100_000, 0.5, 1e-6, 10).epsilon0
    # the randomizer at that eps0 is (0.5, 1e-6)-DP by a proven numerical bound too
    check = shufflesim.bounds("summation", epsilon0=recipe.value, precision=10, n=100_000,
                              delta=1e-6, methods="optimal-blanket").epsilon[0]
    assert check <= 0.5
    data = '{ distribution = "continuous_uniform", low = 0.0, high = 1.0 }'
    section = ('[calibrate]\ntarget_epsilon = 0.5\ndelta = 1e-6\n'
               'methods = ["004-thm3.1", "optimal-blanket"]\n')
    written = shufflesim.run(scenario(section, n=100_000, data=data,
                                      randomizer='name = "summation"\nprecision = 10',
                                      estimator="sum"), workers=1)["calibrate"]
    assert written.value.tolist() == table.value.tolist()
    with pytest.raises(ValueError, match="^method = '004-thm3.1': is 004's recipe"):
        shufflesim.calibrate("krr", domain_size=2, target_epsilon=0.5, delta=1e-6, n=100,
                             methods="004-thm3.1")


def test_lifetime_calibration_from_a_scenario_equals_python():
    table = shufflesim.calibrate("krr", domain_size=2, target_epsilon=1.0, delta=1e-6, n=1000,
                                 rounds=30, methods="fmt21-clone")
    section = ('[calibrate]\ntarget_epsilon = 1.0\ndelta = 1e-6\nrounds = 30\n'
               'methods = "fmt21-clone"\n')
    written = shufflesim.run(scenario(section), workers=1)["calibrate"]
    assert written.value.tolist() == table.value.tolist()
    assert written.rounds.tolist() == [30]
