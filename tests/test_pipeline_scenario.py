"""The ``[pipeline]`` scenario section end to end: parsing, runner, batches.parquet, CLI, and
the per-batch epsilon (with a stand-in catalogue, so the plumbing is tested on its own)."""

from __future__ import annotations

import sys
import textwrap
import types
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from conftest import scenario_text, zipf

from shufflesim.protocols.bounds.result import BoundKind, BoundResult, BoundStatus
from shufflesim.protocols.errors import ParameterError
from shufflesim.simulator.cli import main
from shufflesim.simulator.errors import ScenarioError
from shufflesim.simulator.execution.runner import run_scenario
from shufflesim.simulator.pipeline import ArrivalMode, PipelineConfig
from shufflesim.simulator.pipeline import section as pipeline_section_module
from shufflesim.simulator.pipeline import unit as pipeline_unit_module
from shufflesim.simulator.pipeline.section import PipelineSection
from shufflesim.simulator.pipeline.unit import BATCHES_TABLE_SCHEMA
from shufflesim.simulator.scenario.loader import parse_scenario

BASE = scenario_text(name="pipe", seed=5, repetitions=4, n=600, data=zipf(5, 0.8))

PIPELINE = """
[pipeline]
batch_size = 100
timeout = 0.02
min_batch = 5
arrival = "poisson"
dropout = 0.1
delay = { distribution = "exponential", mean = 0.002 }
rounds = 2
colluding_fraction = 0.1
"""


def _scenario(extra: str = PIPELINE):
    return parse_scenario(BASE + textwrap.dedent(extra))


def test_section_parses_into_the_pipeline_config():
    section = _scenario().points[0].settings.sections["pipeline"]
    assert isinstance(section, PipelineSection)
    assert section.config.batch_size == 100 and section.config.arrival is ArrivalMode.POISSON
    assert section.config.delay.mean == 0.002 and section.bound is None
    assert "pipeline" not in parse_scenario(BASE).points[0].settings.sections


@pytest.mark.parametrize(("extra", "key"), [
    ("[pipeline]\ntimout = 1.0\n", "pipeline.timout"),
    ("[pipeline]\nbatch_size = 0\n", "pipeline.batch_size"),
    ("[pipeline]\ndelay = { distribution = 'uniform', low = 1.0 }\n", "pipeline.delay.high"),
    ("[pipeline]\nbound = 'no-such-bound'\ndelta = 1e-6\n", "pipeline.bound"),
    ("[pipeline]\nbatch_size = 10\n[sweep]\n'pipeline.min_batch' = [5, 20]\n",
     "pipeline.min_batch"),
])
def test_section_errors_name_the_key(extra, key):
    with pytest.raises(ScenarioError) as info:
        _scenario(extra)
    assert info.value.key == key


def test_misspelt_key_suggests_the_valid_one():
    with pytest.raises(ScenarioError, match="did you mean 'delta'"):
        _scenario("[pipeline]\ndleta = 1e-6\n")


def test_runner_writes_pipeline_utility_and_batches():
    scenario = _scenario(PIPELINE + "[sweep]\n'pipeline.timeout' = [0.01, 0.05]\n")
    tables = run_scenario(scenario)
    utility = tables["utility"].to_pandas()
    batches = tables["batches"].to_pandas()
    assert set(utility.path) == {"pipeline"}
    assert utility.groupby("point").repetition.nunique().tolist() == [4, 4]
    assert tables["batches"].schema.names == BATCHES_TABLE_SCHEMA.names
    assert sorted(batches.groupby(["point", "repetition"]).groups) == [
        (p, r) for p in range(2) for r in range(4)
    ]
    assert set(batches["round"]) == {0, 1}
    # no bound and no delta: the local budget eps0 = 1 at delta 0 (pure DP), with the reason
    released = batches[~batches.dropped]
    assert (released.epsilon == 1.0).all() and (released.epsilon_source == "local").all()
    assert batches.bound.isna().all() and (batches.delta == 0.0).all()
    assert released.epsilon_reason.str.contains("no central delta").all()
    assert batches[batches.dropped].epsilon_reason.str.contains("dropped").all()
    # a longer timeout gives fewer, larger batches
    mean_size = batches.groupby("point")["size"].mean()
    assert mean_size[1] > 2 * mean_size[0]
    # per repetition: released + thresholded messages = messages sent (about 0.9 n per round)
    sent = batches.groupby(["point", "repetition", "round"])["size"].sum()
    assert ((sent > 0.8 * 600) & (sent <= 600)).all()
    # estimates are finite and the error is plausible for n ~ 500, eps0 = 1, k = 5
    l2 = utility[(utility.metric == "l2") & (utility.reference == "empirical")].value
    assert np.isfinite(l2).all() and (l2 < 0.3).all()
    # reproducible
    again = run_scenario(scenario)
    assert again["batches"].equals(tables["batches"])
    assert again["utility"].equals(tables["utility"])


def test_cli_run_writes_batches_beside_utility(tmp_path):
    path = tmp_path / "pipe.toml"
    path.write_text(BASE + textwrap.dedent(PIPELINE))
    result = CliRunner().invoke(main, ["run", str(path), "--out", str(tmp_path / "out"), "-q"])
    assert result.exit_code == 0, result.output
    written = sorted(p.name for p in (tmp_path / "out" / "pipe").iterdir())
    # rounds = 2: every user's lifetime eps too (simulator/pipeline/lifetime.py)
    assert written == ["batches.parquet", "users.parquet", "utility.parquet"]
    table = pq.read_table(tmp_path / "out" / "pipe" / "batches.parquet")
    assert table.schema.names == BATCHES_TABLE_SCHEMA.names
    assert b"shufflesim.scenario" in table.schema.metadata


# -- per-batch epsilon through a stand-in catalogue ----------------------------------------------
def _fake_bound(randomizer, n, delta):
    """A made-up 'bound' eps0 * 3 / sqrt(n), undefined below n = 5."""
    if n < 5:
        raise ParameterError("n", n, "outside the regime of the fake bound")
    return BoundResult("fake", BoundKind.UPPER, randomizer.epsilon0 * 3 / np.sqrt(n), delta,
                       0.0, BoundStatus.PROVEN, "test")


@pytest.fixture
def fake_catalogue(monkeypatch):
    calls = []
    module = types.ModuleType("shufflesim.protocols.bounds.catalogue")
    module.bound_names = lambda: ["fake"]
    module.get_bound = lambda name: types.SimpleNamespace(
        applies_to=lambda r: True, kind=BoundKind.UPPER
    )

    def evaluate(name, randomizer, n, delta):  # as the catalogue: a result or an error
        calls.append((name, randomizer.epsilon0, n, delta))
        try:
            return types.SimpleNamespace(result=_fake_bound(randomizer, n, delta), error="")
        except ParameterError as error:
            return types.SimpleNamespace(result=None, error=str(error))

    module.evaluate = evaluate
    monkeypatch.setitem(sys.modules, "shufflesim.protocols.bounds.catalogue", module)
    # the pipeline's modules hold the catalogue module imported at their top
    monkeypatch.setattr(pipeline_section_module, "catalogue", module)
    monkeypatch.setattr(pipeline_unit_module, "catalogue", module)
    return calls


def test_per_batch_epsilon_from_the_bound(fake_catalogue):
    scenario = _scenario(PIPELINE + "bound = 'fake'\ndelta = 1e-6\n")
    section = scenario.points[0].settings.sections["pipeline"]
    assert (section.bound, section.delta) == ("fake", 1e-6)
    batches = run_scenario(scenario)["batches"].to_pandas()
    released = batches[~batches.dropped]
    assert released.epsilon.notna().all() and batches[batches.dropped].epsilon.isna().all()
    h = released.honest_size.to_numpy()
    expected = np.where(h >= 9, 3 / np.sqrt(np.maximum(h, 1)), 1.0)  # capped at eps0 = 1
    np.testing.assert_allclose(released.epsilon.to_numpy(dtype=float), expected)
    assert (released.epsilon_source == np.where(h >= 10, "bound", "local")).all()
    assert set(batches.bound) == {"fake"} and set(batches.delta) == {1e-6}
    # one evaluation per distinct honest size per unit, never for n < 2
    sizes = [c[2] for c in fake_catalogue]
    assert min(sizes) >= 2 and len(sizes) == len(set(sizes))
    assert {c[3] for c in fake_catalogue} == {1e-6}


class _SpreadBudget:
    """Per-client budgets uniform on [0.5, 2] (a stand-in budget distribution)."""

    is_constant = False
    reference_epsilon = 1.0

    def sample_budgets(self, shape, rng):
        return rng.uniform(0.5, 2.0, size=shape)


def test_per_batch_epsilon_with_personalized_budgets_uses_the_largest(fake_catalogue):
    import dataclasses

    from shufflesim.simulator.pipeline.unit import PipelineSetup

    scenario = _scenario(PIPELINE + "bound = 'fake'\ndelta = 1e-6\n")
    setup = dataclasses.replace(PipelineSetup.from_point(scenario.points[0]),
                                budget=_SpreadBudget())
    _, tables = setup.run_unit(3, np.random.default_rng(0))
    batches = tables["batches"].to_pandas()
    largest = {c[1] for c in fake_catalogue}
    assert len(largest) == 3 and all(1.9 < e <= 2.0 for e in largest)  # one per repetition
    for _, rows in batches[~batches.dropped].groupby("repetition"):
        local = rows[rows.epsilon_source == "local"].epsilon
        assert local.nunique() == 1 and ((local > 1.9) & (local <= 2.0)).all()
        assert (rows[rows.epsilon_source == "bound"].epsilon < local.iloc[0]).all()


def test_shipped_timeout_scenario_loads():
    path = Path(__file__).resolve().parents[1] / "scenarios" / "timeout_shuffler.toml"
    if not path.exists():
        pytest.fail("scenarios/timeout_shuffler.toml is missing")
    from shufflesim.simulator.scenario.loader import load_scenario

    scenario = load_scenario(path)
    assert all("pipeline" in p.settings.sections for p in scenario.points)
    config: PipelineConfig = scenario.points[0].settings.sections["pipeline"].config
    assert config.timeout is not None


def test_batches_table_roundtrip_types():
    tables = run_scenario(_scenario())
    frame = tables["batches"].to_pandas()
    assert isinstance(frame, pd.DataFrame)
    assert set(frame.reason) <= {"size", "timeout", "end"}
    assert (frame.honest_size <= frame["size"]).all()


# -- per-batch epsilon through the real catalogue ------------------------------------------------
def test_per_batch_epsilon_with_a_catalogue_bound():
    catalogue = pytest.importorskip("shufflesim.protocols.bounds.catalogue")
    bound = "fmt21_numerical"  # proven, fast, applies to any eps0-LDP randomizer
    if bound not in catalogue.bound_names():
        pytest.fail(f"bound {bound} missing from the catalogue")
    extra = PIPELINE.replace("batch_size = 100", "batch_size = 400") + (
        f"bound = '{bound}'\ndelta = 1e-6\n"
    )
    scenario = _scenario(extra.replace("timeout = 0.02", "timeout = 0.2"))
    batches = run_scenario(scenario)["batches"].to_pandas()
    released = batches[~batches.dropped]
    randomizer = scenario.points[0].settings.randomizer
    for h, group in released.groupby("honest_size"):
        evaluation = catalogue.evaluate(bound, randomizer, int(h), 1e-6)
        expected = 1.0 if evaluation.result is None else min(1.0, evaluation.result.epsilon)
        np.testing.assert_allclose(group.epsilon.to_numpy(dtype=float), expected)
    # amplification grows with the batch: epsilon non-increasing in the honest size
    by_size = released.groupby("honest_size").epsilon.first().to_numpy(dtype=float)
    assert (np.diff(by_size) <= 1e-12).all()
    assert (released.epsilon_source == "bound").any()


def test_lower_bound_is_refused_for_batches():
    catalogue = pytest.importorskip("shufflesim.protocols.bounds.catalogue")
    lower = [n for n in catalogue.bound_names() if catalogue.get_bound(n).kind.value == "lower"]
    if not lower:
        pytest.skip("no lower bound registered")
    with pytest.raises(ScenarioError, match="upper bound") as info:
        _scenario(f"[pipeline]\nbound = '{lower[0]}'\ndelta = 1e-6\n")
    assert info.value.key == "pipeline.bound"
