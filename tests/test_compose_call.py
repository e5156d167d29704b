"""The ``compose`` capability (issue 28; simulator/calls/compose.py) from its three faces:
``shufflesim.compose``, ``shufflesim compose`` and a scenario's ``[compose]`` section give the
same records: heterogeneous rounds, and joint, parallel and Poisson-subsampled composition
within a round (000 Sec. 4)."""

from __future__ import annotations

import pandas as pd
import pytest
from test_api import cli_error, cli_json, rows, untimed

import shufflesim
from shufflesim.simulator.scenario.loader import parse_scenario

YEAR = [{"randomizer": "krr", "epsilon0": 1.0, "domain_size": 2, "n": 1000, "repeat": 30},
        {"randomizer": "krr", "epsilon0": 0.5, "domain_size": 2, "n": 2000, "repeat": 6}]
YEAR_FLAGS = ["--round", "randomizer=krr,epsilon0=1,domain_size=2,n=1000,repeat=30",
              "--round", "randomizer=krr,epsilon0=0.5,domain_size=2,n=2000,repeat=6"]
SCENARIO = """
name = "lifetime"
seed = 1
repetitions = 1
[population]
n = 100
data = {{ distribution = "uniform", domain_size = 2 }}
budget = {{ distribution = "constant", epsilon0 = 1.0 }}
[randomizer]
name = "krr"
domain_size = 2
[estimator]
name = "frequency"
[compose]
{section}
"""


def test_heterogeneous_rounds_equal_the_command_and_the_scenario(tmp_path):
    methods = ["fmt21-clone", "basic"]
    table = shufflesim.compose(YEAR, delta=1e-6, method=methods)
    records = cli_json("compose", "--delta", 1e-6, *YEAR_FLAGS, "--method", "fmt21-clone",
                       "--method", "basic", "--json", "-q")
    assert rows(table) == untimed(records)
    assert table.rounds.tolist() == [36] * 2
    assert table.attrs["call"] == "compose"
    fmt, basic = table.epsilon
    lower = shufflesim.compose(YEAR, delta=1e-6, method="exact-lower").epsilon[0]
    assert lower <= fmt < basic <= 30 * 1.0 + 6 * 0.5
    section = ('delta = 1e-6\nmethods = ["fmt21-clone", "basic"]\nrounds = ['
               + ", ".join(f'{{ randomizer = "krr", epsilon0 = {p["epsilon0"]}, domain_size = 2, '
                           f'n = {p["n"]}, repeat = {p["repeat"]} }}' for p in YEAR)
               + "]")
    scenario = parse_scenario(SCENARIO.format(section=section), tmp_path)
    out = shufflesim.run(scenario.text, workers=1)["compose"]
    assert out.epsilon.tolist() == table.epsilon.tolist()
    assert out.method.tolist() == methods


def test_one_round_modes_equal_the_command():
    sub = shufflesim.compose([{"randomizer": "krr", "epsilon0": 2.0, "domain_size": 2}],
                             delta=1e-6, mode="subsampled", n=1000, rate=0.1)
    records = cli_json("compose", "--mode", "subsampled", "--rate", 0.1, "--n", 1000, "--delta",
                       1e-6, "--component", "randomizer=krr,epsilon0=2,domain_size=2", "--json",
                       "-q")
    assert rows(sub) == untimed(records)
    full = shufflesim.bounds("krr", epsilon0=2.0, domain_size=2, n=1000, delta=1e-6,
                             methods="optimal-blanket").epsilon[0]
    assert sub.epsilon[0] < full  # subsampling amplifies
    # degenerate compositions equal the plain bounds (000 Thm 9 and 11 with one component)
    krr = {"randomizer": "krr", "epsilon0": 1.0, "domain_size": 2}
    plain = shufflesim.bounds("krr", epsilon0=1.0, domain_size=2, n=200, delta=1e-6,
                              methods=["optimal-blanket", "exact-lower"]).epsilon.tolist()
    halves = [{**krr, "probability": 0.5}, {**krr, "probability": 0.5}]
    par = shufflesim.compose(halves, delta=1e-6, mode="parallel", n=200)
    records = cli_json("compose", "--mode", "parallel", "--n", 200, "--delta", 1e-6,
                       *["--component", "randomizer=krr,epsilon0=1,domain_size=2,probability=0.5"]
                       * 2, "--json", "-q")
    assert rows(par) == untimed(records)
    assert par.epsilon.tolist() == plain
    joint = shufflesim.compose([krr], delta=1e-6, mode="joint", n=200)
    assert joint.epsilon.tolist() == plain


@pytest.mark.slow  # ~25 s of CPU: the engine on mixed and product atom sets
def test_parallel_and_joint_of_different_randomizers():
    krr = {"randomizer": "krr", "epsilon0": 1.0, "domain_size": 2}
    parts = [{**krr, "probability": 0.5},
             {"randomizer": "krr", "epsilon0": 0.5, "domain_size": 2, "probability": 0.5}]
    par = shufflesim.compose(parts, delta=1e-6, mode="parallel", n=200)
    assert par.epsilon[1] <= par.epsilon[0] <= 1.0
    joint = shufflesim.compose([krr, krr], delta=1e-6, mode="joint", n=100)
    assert joint.epsilon[1] <= joint.epsilon[0] <= 2.0 + 1e-12


@pytest.mark.parametrize(("kwargs", "field"), [
    ({"rounds": [{"randomizer": "krr", "epsilon0": 1.0, "domain_size": 2}]}, "rounds[0].n"),
    ({"rounds": [{"randomizer": "krr", "epsilon0": -1.0, "domain_size": 2, "n": 10}]},
     "rounds[0].epsilon0"),
    ({"rounds": [{"randomizer": "krx", "epsilon0": 1.0, "n": 10}]}, "rounds[0].randomizer"),
    ({"rounds": YEAR, "method": "optimal-blankt"}, "method"),
    ({"rounds": YEAR, "mode": "serial"}, "mode"),
    ({"rounds": [{"randomizer": "krr", "epsilon0": 1.0, "domain_size": 2}], "mode": "joint"},
     "n"),
])
def test_bad_input_is_one_value_error_naming_the_field(kwargs, field, tmp_path):
    rounds = kwargs.pop("rounds")
    with pytest.raises(ValueError) as raised:
        shufflesim.compose(rounds, delta=1e-6, **kwargs)
    assert str(raised.value).startswith(f"{field} = ")
    # the scenario refuses it at load time, keyed compose.<field>
    key = "rounds" if kwargs.get("mode", "rounds") == "rounds" else "components"
    body = pd.Series(rounds).map(lambda p: "{ " + ", ".join(
        f'{k} = {v!r}'.replace("'", '"') for k, v in p.items()) + " }")
    section = f"delta = 1e-6\n{key} = [{', '.join(body)}]\n" + "".join(
        f'{k} = "{v}"\n' if k in ("mode",) else f'methods = ["{v}"]\n' if k == "method" else ""
        for k, v in kwargs.items())
    with pytest.raises(ValueError, match=f"^compose.{field.replace('[', '.').replace(']', '.')}"):
        parse_scenario(SCENARIO.format(section=section), tmp_path)


def test_the_command_names_its_flags():
    assert "--round" in cli_error("compose", "--delta", 1e-6, "--round", "randomizer")
    assert "--component belongs to" in cli_error(
        "compose", "--delta", 1e-6, "--component", "randomizer=krr,epsilon0=1,domain_size=2")
