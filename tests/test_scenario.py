"""Scenario loading, validation and sweep expansion (simulator/scenario.py)."""

import json
import textwrap
from dataclasses import dataclass

import pytest
from conftest import scenario_text, zipf

from shufflesim.simulator.errors import ScenarioError, UserError
from shufflesim.simulator.population.budgets import ConstantBudget
from shufflesim.simulator.population.data import ClippedNormal, Zipf
from shufflesim.simulator.population.files import FileColumn
from shufflesim.simulator.scenario.convert import parse_dataclass
from shufflesim.simulator.scenario.loader import load_scenario, parse_scenario
from shufflesim.simulator.scenario.model import BatchOptions, BatchPath, ShuffleMode
from shufflesim.simulator.scenario.sections import SECTIONS, register_section

# The minimum schema quoted in the foundation issue, verbatim.
MINIMUM = """
name = "quickstart"
seed = 7
repetitions = 200
[population]
n = 10000
data = { distribution = "zipf", domain_size = 10, exponent = 0.7 }
budget = { distribution = "constant", epsilon0 = 1.0 }
[randomizer]
name = "krr"            # brr krr subset rappor oue blh olh hr laplace piecewise duchi summation
[estimator]
name = "frequency"      # frequency | mean | sum
[sweep]                 # optional grid over dotted keys, cartesian product
"population.budget.epsilon0" = [0.5, 1.0, 2.0]
"""

BASE = scenario_text(name="t", data=zipf(6, 1.1))


def _with(extra: str, base: str = BASE) -> str:
    return base + textwrap.dedent(extra)


def _error(text: str, **kwargs) -> ScenarioError:
    with pytest.raises(ScenarioError) as info:
        parse_scenario(text, **kwargs)
    return info.value


def test_minimum_schema_loads_with_its_sweep():
    s = parse_scenario(MINIMUM)
    assert (s.name, s.seed) == ("quickstart", 7)
    assert [p.settings.epsilon0 for p in s.points] == [0.5, 1.0, 2.0]
    first = s.points[0].settings
    assert first.repetitions == 200 and first.population.n == 10000
    assert first.population.data == Zipf(domain_size=10, exponent=0.7)
    assert first.population.budget == ConstantBudget(epsilon0=0.5)
    assert first.randomizer.name == "krr" and first.randomizer.epsilon0 == 0.5
    # The randomizer's domain_size defaults to the data's.
    assert first.randomizer.domain_size == 10
    assert first.estimator_name == "frequency"
    assert first.batch == BatchOptions()
    assert s.points[1].overrides == (("population.budget.epsilon0", 1.0),)
    assert json.loads(s.points[2].overrides_json()) == {"population.budget.epsilon0": 2.0}
    assert s.total_repetitions == 600


def test_no_sweep_gives_one_point_with_defaults():
    s = parse_scenario(BASE)
    assert len(s.points) == 1 and s.points[0].overrides == ()
    assert s.points[0].overrides_json() == "{}"
    text = BASE.replace("seed = 3\nrepetitions = 5\n", "")
    defaults = parse_scenario(text)
    assert defaults.seed == 0 and defaults.points[0].settings.repetitions == 1


def test_sweep_is_a_cartesian_product_with_the_last_key_fastest():
    s = parse_scenario(_with("""
        [sweep]
        "population.n" = [10, 20, 30]
        "randomizer.name" = ["krr", "oue"]
        repetitions = [1, 2]
    """))
    combos = [tuple(v for _, v in p.overrides) for p in s.points]
    assert combos == [(n, r, k) for n in (10, 20, 30) for r in ("krr", "oue") for k in (1, 2)]
    assert [p.index for p in s.points] == list(range(12))
    assert s.points[3].settings.randomizer.name == "oue"
    assert s.points[3].settings.population.n == 10
    assert s.points[3].settings.repetitions == 2


def test_sweep_accepts_nested_tables_for_dotted_keys():
    quoted = parse_scenario(_with('[sweep]\n"population.budget.epsilon0" = [0.5, 2.0]\n'))
    nested = parse_scenario(_with("[sweep]\npopulation.budget.epsilon0 = [0.5, 2.0]\n"))
    assert [p.overrides for p in quoted.points] == [p.overrides for p in nested.points]


def test_sweep_over_whole_tables():
    s = parse_scenario(_with("""
        [sweep]
        "population.data" = [
          { distribution = "uniform", domain_size = 6 },
          { distribution = "zipf", domain_size = 6, exponent = 2.0 },
        ]
    """))
    assert [p.settings.population.data.name for p in s.points] == ["uniform", "zipf"]


@pytest.mark.parametrize("text, key, fragment", [
    (BASE.replace("seed = 3", "seed = 3\npopulaton = 1"), "populaton",
     "did you mean 'population'"),
    (BASE.replace("exponent = 1.1", "exponet = 1.1"), "population.data.exponet",
     "did you mean 'exponent'"),
    (BASE.replace("n = 100", "n = '100'"), "population.n", "integer >= 2"),
    (BASE.replace("n = 100", "n = 0"), "population.n", "integer >= 2"),
    (BASE.replace("n = 100", "n = 1"), "population.n", "integer >= 2"),
    (BASE.replace("exponent = 1.1", "exponent = -1"), "population.data.exponent", ">= 0"),
    (BASE.replace("exponent = 1.1", "exponent = 'big'"), "population.data.exponent",
     "must be a number"),
    (BASE.replace("domain_size = 6, ", ""), "population.data.domain_size", "is required"),
    (BASE.replace('"zipf"', '"zipff"'), "population.data.distribution", "unknown data"),
    (BASE.replace("epsilon0 = 1.0", "epsilon0 = -1.0"), "population.budget.epsilon0", "> 0"),
    (BASE.replace("epsilon0 = 1.0", "epsilon = 1.0"), "population.budget.epsilon",
     "did you mean 'epsilon0'"),
    (BASE.replace('name = "krr"', 'name = "kr"'), "randomizer.name", "did you mean 'krr'"),
    (BASE.replace('name = "krr"', 'name = "krr"\ndomian_size = 6'), "randomizer.domian_size",
     "did you mean 'domain_size'"),
    (BASE.replace('name = "krr"', 'name = "krr"\ndomain_size = 1'), "randomizer.domain_size",
     ">= 2"),
    (BASE.replace('name = "krr"', 'name = "krr"\ndomain_size = 4'),
     "population.data.domain_size", "exceeds the input domain size 4"),
    (BASE.replace('name = "krr"', 'name = "krr"\nepsilon0 = 2.0'), "randomizer.epsilon0",
     "population.budget"),
    (BASE.replace('name = "frequency"', 'name = "mean"'), "estimator.name", "does not fit"),
    (BASE.replace('name = "frequency"', 'name = "frequencies"'), "estimator.name",
     "did you mean 'frequency'"),
    (BASE.replace('name = "t"', 'name = "../up"'), "name", "letters, digits"),
    (BASE.replace('name = "t"\n', ""), "name", "is required"),
    (BASE.replace("seed = 3", "seed = -3"), "seed", "integer >= 0"),
    (BASE.replace("repetitions = 5", "repetitions = 0"), "repetitions", "integer >= 1"),
    (BASE.replace("repetitions = 5", "repetitions = 2.5"), "repetitions", "integer >= 1"),
    (BASE + "[batch]\npath = 'report'\n", "batch.path", "one of ['reports', 'aggregate']"),
    (BASE + "[batch]\nshufle = 'skip'\n", "batch.shufle", "did you mean 'shuffle'"),
    (BASE + "[batch]\nmemory_mb = 1\n", "batch.memory_mb", ">= 16"),
    (BASE + "[batch]\nchunk_repetitions = 0\n", "batch.chunk_repetitions", ">= 1"),
    (BASE.replace("[estimator]", "[estimator]\nclip = true"), "estimator.clip", "unknown key"),
    (BASE.replace("[randomizer]\nname = \"krr\"\n", ""), "randomizer", "is required"),
])
def test_errors_name_the_key_and_value(text, key, fragment):
    error = _error(text)
    assert error.key == key
    assert fragment in str(error)
    assert "\n" not in str(error)


def test_numeric_data_and_interval_checks():
    numeric = BASE.replace(
        '{ distribution = "zipf", domain_size = 6, exponent = 1.1 }',
        '{ distribution = "clipped_normal", mean = 0.5, std = 0.3, low = -0.5, high = 1.0 }',
    )
    error = _error(numeric)
    assert error.key == "population.data.distribution" and "categorical randomizer" in str(error)
    laplace = numeric.replace('name = "krr"', 'name = "laplace"').replace(
        'name = "frequency"', 'name = "mean"')
    error = _error(laplace)
    assert error.key == "population.data" and "[0.0, 1.0]" in str(error)
    ok = parse_scenario(laplace.replace("low = -0.5", "low = 0.0"))
    assert ok.points[0].settings.population.data == ClippedNormal(0.5, 0.3, 0.0, 1.0)
    error = _error(ok.text + "[batch]\npath = 'aggregate'\n")
    assert error.key == "batch.path" and "no sufficient-statistic sampler" in str(error)


def test_sweep_errors():
    error = _error(_with('[sweep]\n"population.budget.epsilon" = [1.0]\n'))
    assert error.key == "population.budget.epsilon" and "did you mean 'epsilon0'" in str(error)
    error = _error(_with('[sweep]\n"population.budget.epsilon0" = [1.0, -2.0]\n'))
    assert error.key == "population.budget.epsilon0" and error.value == -2.0
    assert "sweep point 1" in str(error)
    # An error of the file itself does not blame a sweep point.
    base_error = _error(_with('[sweep]\n"population.n" = [10, 20]\n').replace("exponent", "expo"))
    assert base_error.key == "population.data.expo" and "sweep point" not in str(base_error)
    error = _error(_with('[sweep]\n"popultion.n" = [1]\n'))
    assert error.key == "sweep.'popultion.n'" and "did you mean 'population'" in str(error)
    error = _error(_with('[sweep]\nseed = [1, 2]\n'))
    assert error.key == "sweep.seed" and "cannot be swept" in str(error)
    error = _error(_with('[sweep]\n"population.n" = []\n'))
    assert "non-empty array" in str(error)
    error = _error(_with('[sweep]\n"population.n" = 5\n'))
    assert "non-empty array" in str(error)
    error = _error(_with('[sweep]\n"name.x" = [1]\n'))
    assert "cannot be swept" in str(error)
    error = _error(_with('[sweep]\n"randomizer.name.x" = [1]\n'))
    assert "is not a table" in str(error)
    error = _error(_with('[sweep]\n"population.n" = [1979-05-27]\n'))
    assert "dates" in str(error)


def test_toml_syntax_errors_and_missing_files(tmp_path):
    with pytest.raises(UserError, match="invalid TOML") as info:
        parse_scenario("name = \n", source="broken.toml")
    assert str(info.value).startswith("broken.toml: ") and "\n" not in str(info.value)
    missing = tmp_path / "absent.toml"
    with pytest.raises(UserError, match="scenario file not found") as info:
        load_scenario(missing)
    assert str(missing) in str(info.value)


def test_file_paths_are_relative_to_the_scenario(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "values.csv").write_text("v\n0\n1\n1\n2\n")
    scenario_file = tmp_path / "sub" / "s.toml"
    scenario_file.write_text(BASE.replace(
        '{ distribution = "zipf", domain_size = 6, exponent = 1.1 }',
        '{ distribution = "file", path = "values.csv", column = "v", domain_size = 3 }',
    ))
    s = load_scenario(scenario_file)
    data = s.points[0].settings.population.data
    assert isinstance(data, FileColumn) and data.rows == 4
    assert s.points[0].settings.randomizer.domain_size == 3
    assert s.source == str(scenario_file)
    error = _error(BASE.replace(
        '{ distribution = "zipf", domain_size = 6, exponent = 1.1 }',
        '{ distribution = "file", path = "values.csv", column = "v", domain_size = 3 }',
    ), base_dir=tmp_path)
    assert error.key == "population.data.path" and "file not found" in str(error)


def test_with_seed_overrides_and_validates():
    s = parse_scenario(BASE)
    assert s.with_seed(99).seed == 99 and s.seed == 3
    with pytest.raises(ScenarioError):
        s.with_seed(-1)


def test_aggregate_path_and_shuffle_options_parse():
    s = parse_scenario(BASE + "[batch]\npath = 'aggregate'\nshuffle = 'skip'\nmemory_mb = 64\n")
    batch = s.points[0].settings.batch
    assert batch.path is BatchPath.AGGREGATE and batch.shuffle is ShuffleMode.SKIP
    assert batch.memory_mb == 64 and batch.chunk_repetitions is None


@dataclass(frozen=True)
class _Bounds:
    delta: float
    methods: tuple[str, ...] = ("blanket",)

    def __post_init__(self):
        if not 0 < self.delta < 1:
            raise ScenarioError("delta", self.delta, "must lie in (0, 1)")


def test_registered_sections_parse_sweep_and_report_errors(monkeypatch):
    monkeypatch.setitem(
        SECTIONS._items, "bounds",
        lambda table, context: parse_dataclass(_Bounds, table, "bounds", context),
    )
    text = _with("""
        [bounds]
        delta = 1e-6
        methods = ["blanket", "clone"]
        [sweep]
        "bounds.delta" = [1e-6, 1e-8]
    """)
    s = parse_scenario(text)
    assert s.points[1].settings.sections["bounds"] == _Bounds(1e-8, ("blanket", "clone"))
    assert "bounds" not in parse_scenario(BASE).points[0].settings.sections
    no_sweep = text.split("[sweep]")[0]
    error = _error(no_sweep.replace("delta = 1e-6", "delta = 2.0"))
    assert error.key == "bounds.delta" and error.value == 2.0
    error = _error(text.replace("[1e-6, 1e-8]", "[1e-6, 0.0]"))
    assert error.key == "bounds.delta" and "sweep point 1" in str(error)
    error = _error(text.replace("methods = [", "method = ["))
    assert error.key == "bounds.method" and "did you mean 'methods'" in str(error)
    error = _error(text.replace('"clone"]', "3]"))
    assert error.key == "bounds.methods[1]"
    with pytest.raises(RuntimeError):
        register_section("population", lambda t, c: None)


def test_unregistered_section_is_an_error():
    error = _error(BASE + "[no_such_section]\nbatch_size = 10\n")
    assert error.key == "no_such_section" and "unknown key" in str(error)


def test_shipped_scenarios_load():
    from pathlib import Path

    root = Path(__file__).resolve().parents[1] / "scenarios"
    files = sorted(root.glob("*.toml"))
    assert {f.name for f in files} >= {"quickstart.toml", "table4_l2_krr.toml"}
    for f in files:
        load_scenario(f)
