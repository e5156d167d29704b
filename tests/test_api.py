"""The public Python API (issue 28): ``import shufflesim`` is lazy, and each function gives
the same records as its command (one call, three faces: simulator.calls), with the same
validation raised as ValueError subclasses and its provenance in ``.attrs``."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

import shufflesim
from shufflesim.simulator.cli import main

#: Timings differ from run to run; every other field must be equal.
TIMED = {"seconds"}


def cli_json(*args) -> list | dict:
    result = CliRunner().invoke(main, [str(a) for a in args])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def cli_error(*args) -> str:
    result = CliRunner().invoke(main, [str(a) for a in args])
    assert result.exit_code == 2, result.output
    return result.stderr.strip()


def rows(table: pd.DataFrame) -> list[dict]:
    """A DataFrame's rows as JSON-like records (NaN, None and absent alike), timings
    dropped."""
    def plain(value):
        value = value.item() if isinstance(value, np.generic) else value
        if isinstance(value, np.ndarray):
            return value.tolist()
        return None if isinstance(value, float) and value != value else value

    return [{k: v for k, v in ((k, plain(v)) for k, v in r.items())
             if k not in TIMED and v is not None}
            for r in table.to_dict(orient="records")]


def untimed(records: list[dict]) -> list[dict]:
    """Records without timings; a missing key and a None value alike (a DataFrame has every
    column in every row)."""
    return json.loads(json.dumps([{k: v for k, v in r.items()
                                   if k not in TIMED and v is not None} for r in records]))


def test_import_is_lazy_and_declares_its_names():
    code = ("import sys, shufflesim; heavy = [m for m in ('numpy', 'pandas', 'scipy', "
            "'shufflesim.protocols.bounds') if m in sys.modules]; print(heavy, "
            "shufflesim.__version__)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, timeout=120)
    assert done.stdout.split() == ["[]", shufflesim.__version__]
    assert set(shufflesim.__all__) == {"__version__", *shufflesim._LAZY}
    assert {"randomizer", "bounds", "calibrate", "compose", "audit", "run",
            "catalogue"} <= set(shufflesim.__all__)
    for name in shufflesim.__all__:
        assert getattr(shufflesim, name) is not None
    assert set(shufflesim.__all__) <= set(dir(shufflesim))
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        shufflesim.nope  # noqa: B018


def test_bounds_equal_the_bound_command():
    args = dict(epsilon0=2.0, domain_size=4, n=2000, delta=1e-6)
    methods = ["optimal-blanket", "exact-lower", "fmt21_closed", "blanket_hoeffding"]
    table = shufflesim.bounds("krr", methods=methods, **args)
    records = cli_json("bound", "--randomizer", "krr", "--domain-size", 4, "--epsilon0", 2,
                       "--n", 2000, "--delta", 1e-6, *sum((["--method", m] for m in methods),
                                                          []), "--json", "-q")
    assert rows(table) == untimed(records)
    assert list(table.columns) == list(records[0])
    assert table.attrs["shufflesim_version"] == shufflesim.__version__
    assert table.attrs["call"] == "bounds"
    assert table.attrs["parameters"]["n"] == 2000
    # a built randomizer gives the same rows
    built = shufflesim.randomizer("krr", epsilon0=2.0, domain_size=4)
    again = shufflesim.bounds(built, n=2000, delta=1e-6, methods=methods)
    assert rows(again) == rows(table)


def test_bounds_over_rounds_equal_the_bound_command():
    table = shufflesim.bounds("krr", epsilon0=1.0, domain_size=2, n=1000, delta=1e-6, rounds=3,
                              methods=["optimal-blanket", "basic", "fmt21_closed"])
    records = cli_json("bound", "--randomizer", "krr", "--domain-size", 2, "--epsilon0", 1,
                       "--n", 1000, "--delta", 1e-6, "--rounds", 3, "--method",
                       "optimal-blanket", "--method", "basic", "--method", "fmt21_closed",
                       "--json", "-q")
    assert rows(table) == untimed(records)
    assert table.rounds.tolist() == [3, 3, 3]


def test_calibrate_equals_the_calibrate_command():
    table = shufflesim.calibrate("krr", domain_size=2, target_epsilon=0.5, delta=1e-6,
                                 n=5000, methods=["optimal-blanket", "fmt21_closed"])
    records = cli_json("calibrate", "--randomizer", "krr", "--domain-size", 2,
                       "--target-epsilon", 0.5, "--delta", 1e-6, "--n", 5000, "--method",
                       "optimal-blanket", "--method", "fmt21_closed", "--json", "-q")
    assert rows(table) == untimed(records)
    smallest = shufflesim.calibrate(shufflesim.randomizer("krr", epsilon0=2.0, domain_size=2),
                                    target_epsilon=0.5, delta=1e-6, methods="optimal-blanket")
    records = cli_json("calibrate", "--randomizer", "krr", "--domain-size", 2, "--epsilon0", 2,
                       "--target-epsilon", 0.5, "--delta", 1e-6, "--method",
                       "optimal-blanket", "--json", "-q")
    assert rows(smallest) == untimed(records)
    assert smallest.parameter[0] == "n"


def test_catalogue_equals_the_list_command():
    tables = shufflesim.catalogue()
    listed = cli_json("list", "--json")
    assert tables["randomizers"].name.tolist() == list(listed["randomizers"])
    assert tables["bounds"].name.tolist() == list(listed["bounds"])
    assert tables["composed_methods"].name.tolist() == list(listed["composed_methods"])
    assert tables["estimators"].name.tolist() == listed["estimators"]
    assert tables["audit_attacks"].name.tolist() == list(listed["audit"]["attacks"])


def test_randomizer_and_estimator():
    r = shufflesim.randomizer("krr", epsilon0=1.0, domain_size=3)
    reports = r.randomize(np.zeros(1000, dtype=np.int64), np.random.default_rng(1))
    estimator = shufflesim.estimator(r)
    assert estimator.name == "frequency"
    assert shufflesim.estimator(r, "frequency").name == "frequency"
    assert reports.shape == (1000,)
    gaussian = shufflesim.randomizer("gaussian", epsilon0=1.0, delta0=1e-6)
    assert gaussian.delta0 == 1e-6
    assert shufflesim.randomizer("krr", epsilon0=1.0, domain_size=3, delta0=0) == r


@pytest.mark.parametrize(("call", "command", "field"), [
    (lambda: shufflesim.randomizer("krr", epsilon0=0.0, domain_size=3),
     ["bound", "--randomizer", "krr", "--domain-size", 3, "--epsilon0", 0, "--n", 10,
      "--delta", 1e-6], "epsilon0"),
    (lambda: shufflesim.bounds("krr", epsilon0=1.0, domain_size=3, n=1, delta=1e-6),
     ["bound", "--randomizer", "krr", "--domain-size", 3, "--epsilon0", 1, "--n", 1,
      "--delta", 1e-6], "n"),
    (lambda: shufflesim.bounds("krr", epsilon0=1.0, domain_size=3, n=10, delta=2.0),
     ["bound", "--randomizer", "krr", "--domain-size", 3, "--epsilon0", 1, "--n", 10,
      "--delta", 2], "delta"),
    (lambda: shufflesim.bounds("krr", epsilon0=1.0, domain_size=3, n=10, delta=1e-6,
                               methods="optimal-blankt"),
     ["bound", "--randomizer", "krr", "--domain-size", 3, "--epsilon0", 1, "--n", 10,
      "--delta", 1e-6, "--method", "optimal-blankt"], "method"),
    (lambda: shufflesim.bounds("krrr", epsilon0=1.0, n=10, delta=1e-6),
     ["bound", "--randomizer", "krrr", "--epsilon0", 1, "--n", 10, "--delta", 1e-6],
     "randomizer.name"),
    (lambda: shufflesim.calibrate("krr", domain_size=2, target_epsilon=-1.0, delta=1e-6,
                                  n=100),
     ["calibrate", "--randomizer", "krr", "--domain-size", 2, "--target-epsilon", -1,
      "--delta", 1e-6, "--n", 100], "target_epsilon"),
])
def test_bad_input_is_the_same_one_line_value_error(call, command, field):
    """The API raises what the command prints: the same requirement, named by field (the
    command names its flag instead)."""
    with pytest.raises(ValueError) as raised:
        call()
    message = str(raised.value)
    assert "\n" not in message and message.startswith(f"{field} = ")
    printed = cli_error(*command)
    assert printed.startswith("error: ") and "\n" not in printed
    assert printed.endswith(message.split(": ", 1)[1])


def test_a_built_randomizer_takes_no_parameters_beside_it():
    r = shufflesim.randomizer("krr", epsilon0=1.0, domain_size=3)
    with pytest.raises(ValueError, match="domain_size: give the parameters to"):
        shufflesim.bounds(r, n=10, delta=1e-6, domain_size=4)
    with pytest.raises(ValueError, match="epsilon0 is required"):
        shufflesim.bounds("krr", n=10, delta=1e-6, domain_size=4)


CLIENT = '''
import numpy as np


def my_rr(values, rng):
    """Binary randomized response with eps0 = log 3."""
    keep = rng.random(values.shape) < 0.75
    return np.where(keep, values, 1 - values)
'''


def test_audit_equals_the_audit_command(tmp_path):
    client = tmp_path / "client.py"
    client.write_text(CLIENT)
    spec = f"{client}:my_rr"
    eps0 = float(np.log(3))
    table = shufflesim.audit(spec, randomizer="krr", epsilon0=eps0, domain_size=2,
                             level="randomizer", trials=5000, seed=3)
    records = cli_json("audit", "--implementation", spec, "--randomizer", "krr",
                       "--epsilon0", repr(eps0), "--domain-size", 2, "--level", "randomizer",
                       "--trials", 5000, "--seed", 3, "--json", "-q")
    assert rows(table) == untimed(records)
    assert set(table.row_type) == {"attack", "fit", "verdict"}
    assert table.attrs["call"] == "audit"
    shuffled = shufflesim.audit(randomizer=shufflesim.randomizer("krr", epsilon0=2.0,
                                                                 domain_size=2),
                                n=200, delta=1e-6, trials=4000, seed=2,
                                bounds=["optimal-blanket", "exact-lower"])
    records = cli_json("audit", "--randomizer", "krr", "--epsilon0", 2, "--domain-size", 2,
                       "--n", 200, "--delta", 1e-6, "--trials", 4000, "--seed", 2, "--bound",
                       "optimal-blanket", "--bound", "exact-lower", "--json", "-q")
    assert rows(shuffled) == untimed(records)


def test_audit_takes_a_callable_and_a_black_box():
    namespace: dict = {}
    exec(CLIENT, namespace)  # noqa: S102
    table = shufflesim.audit(namespace["my_rr"], claim_epsilon0=float(np.log(3)),
                             domain_size=2, level="randomizer", trials=5000, seed=3)
    verdicts = table[table.row_type == "verdict"]
    assert len(verdicts) and (verdicts.verdict != "violated").all()
    with pytest.raises(ValueError, match="--n is required at the shuffle level"):
        shufflesim.audit(randomizer="krr", epsilon0=1.0, domain_size=2, trials=100)


RUN = """
name = "apirun"
seed = 4
repetitions = 3
[population]
n = 300
data = { distribution = "uniform", domain_size = 3 }
budget = { distribution = "constant", epsilon0 = 1.0 }
[randomizer]
name = "krr"
domain_size = 3
[estimator]
name = "frequency"
[bounds]
delta = 1e-6
methods = ["blanket_hoeffding"]
"""


def test_run_equals_the_run_command(tmp_path, monkeypatch):
    path = tmp_path / "apirun.toml"
    path.write_text(RUN)
    result = CliRunner().invoke(main, ["run", str(path), "--out", str(tmp_path / "cli"),
                                       "--workers", "1", "-q"])
    assert result.exit_code == 0, result.output
    monkeypatch.chdir(tmp_path)
    for given in (path, RUN):
        tables = shufflesim.run(given, workers=1)
        assert sorted(tables) == ["bounds", "utility"]
        for name, frame in tables.items():
            written = pd.read_parquet(tmp_path / "cli" / "apirun" / f"{name}.parquet")
            pd.testing.assert_frame_equal(frame, written)
            assert frame.attrs["seed"] == "4" and frame.attrs["call"] == "run"
    assert not (tmp_path / "results").exists()  # out=None writes nothing
    written = shufflesim.run(path, out=tmp_path / "api", workers=1)
    assert (tmp_path / "api" / "apirun" / "utility.parquet").is_file()
    assert written["utility"].attrs["written"]


def test_run_takes_a_dict_and_refuses_bad_input(tmp_path, monkeypatch):
    import tomllib

    monkeypatch.chdir(tmp_path)
    document = tomllib.loads(RUN)
    tables = shufflesim.run(document, workers=1)
    again = shufflesim.run(RUN, workers=1)
    pd.testing.assert_frame_equal(tables["utility"], again["utility"])
    document["population"]["n"] = 0
    with pytest.raises(ValueError, match=r"^population\.n = 0: "):
        shufflesim.run(document)
    with pytest.raises(ValueError, match="scenario file not found"):
        shufflesim.run("missing.toml")
