"""Multi-message clients through the SimPy pipeline (issue 15 item 5): each of a client's
m = 1 + b messages travels and is shuffled separately; batches count their honest blanket
messages, the per-batch epsilon is evaluated in users at floor(honest blanket / b), the local
cap is the randomizer's LDP level log p (not its design target epsilon0), and the pipeline's
estimate is unbiased. Also `shufflesim run` on scenarios/multi_message/*.toml."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from shufflesim.protocols.estimators import make_estimator
from shufflesim.protocols.randomizers import make_randomizer
from shufflesim.simulator.cli import main
from shufflesim.simulator.pipeline.config import DelayConfig, PipelineConfig
from shufflesim.simulator.pipeline.run import run_pipeline

ROOT = Path(__file__).resolve().parent.parent


def _mix_dump(b: int = 3):
    return make_randomizer("mix_dump", epsilon0=1.0, domain_size=5, flip_probability=0.3,
                           blanket_messages=b)


@pytest.mark.parametrize("delay", [None, DelayConfig("exponential", mean=0.2)])
def test_batches_count_honest_blanket_messages(delay):
    r = _mix_dump()
    n = 400
    values = np.arange(n) % 5
    config = PipelineConfig(batch_size=150, colluding_fraction=0.1,
                            **({} if delay is None else {"delay": delay}))
    result = run_pipeline(r, values, config, np.random.default_rng(1), keep_outputs=True,
                          batch_epsilon=lambda size: float(size))
    table = result.batches
    assert table["size"].sum() == n * r.messages_per_client
    colluders = int(result.colluding.sum())
    assert table["honest_size"].sum() == (n - colluders) * r.messages_per_client
    assert table["honest_blanket"].sum() == (n - colluders) * r.blanket_messages_per_client
    # ground truth from the arrival streams: blanket = not a client's first message
    stream = result.streams[0]
    m = r.messages_per_client
    assert stream.blanket_cumsum[-1] == table["honest_blanket"].sum()
    # the epsilon callable is evaluated in users: floor(honest blanket / b)
    expected = table["honest_blanket"] // r.blanket_messages_per_client
    np.testing.assert_array_equal(table["epsilon"].to_numpy(dtype=float), expected)
    assert m == 4


def test_single_message_batches_have_no_blanket():
    r = make_randomizer("krr", epsilon0=1.0, domain_size=4)
    result = run_pipeline(r, np.arange(200) % 4, PipelineConfig(batch_size=50),
                          np.random.default_rng(2), batch_epsilon=lambda size: float(size))
    assert (result.batches["honest_blanket"] == 0).all()
    np.testing.assert_array_equal(result.batches["epsilon"].to_numpy(dtype=float),
                                  result.batches["honest_size"].to_numpy(dtype=float))


@pytest.mark.parametrize(("name", "params", "estimator"), [
    ("mix_dump", dict(epsilon0=1.0, domain_size=5, flip_probability=0.3, blanket_messages=2),
     "multi_message_frequency"),
    ("cheu", dict(epsilon0=1.0, domain_size=5, flip_probability=0.2, blanket_messages=1),
     "multi_message_frequency"),
    ("balcer", dict(epsilon0=1.0, blanket_messages=3, coin="uniform"), "multi_message_sum"),
])
def test_pipeline_estimate_unbiased(name, params, estimator):
    r = make_randomizer(name, **params)
    est = make_estimator(estimator, r)
    k = r.input_size
    n = 300
    values = np.arange(n) % k
    reps = 300
    estimates = np.stack([
        run_pipeline(r, values, PipelineConfig(batch_size=97), np.random.default_rng(seed),
                     estimator=est).estimate
        for seed in range(reps)])  # a loop over repetitions (each a SimPy run)
    if estimator == "multi_message_sum":
        truth, variance = values.sum(), est.variance(values, n)
    else:
        counts = np.bincount(values, minlength=k)
        truth, variance = counts / n, est.variance(counts)
    assert np.all(np.abs(estimates.mean(axis=0) - truth) <= 4.5 * np.sqrt(variance / reps))


def _scenario(tmp_path, body: str) -> Path:
    path = tmp_path / "s.toml"
    path.write_text(body)
    return path


def _run(path: Path, out: Path) -> None:
    result = CliRunner().invoke(main, ["run", str(path), "--out", str(out), "--quiet"])
    assert result.exit_code == 0, result.output


PIPELINE = """
name = "mm"
seed = 5
repetitions = 1
[population]
n = 400
data = {{ distribution = "uniform", domain_size = {k} }}
budget = {{ distribution = "constant", epsilon0 = 1.0 }}
[randomizer]
{randomizer}
[estimator]
name = "{estimator}"
[pipeline]
batch_size = 200
{delta}
"""


def test_scenario_local_cap_is_log_p(tmp_path):
    """Without a central delta the batch epsilon is the LDP level log p (inf for balcer), never
    the design target epsilon0."""
    text = PIPELINE.format(k=2, randomizer='name = "balcer"\nblanket_messages = 2\n'
                           'coin = "uniform"', estimator="multi_message_sum", delta="")
    _run(_scenario(tmp_path, text), tmp_path / "out")
    batches = pd.read_parquet(tmp_path / "out" / "mm" / "batches.parquet")
    assert np.isinf(batches["epsilon"].astype(float)).all()
    assert (batches["epsilon_source"] == "local").all()


def test_scenario_batch_epsilon_in_users(tmp_path):
    r = _mix_dump(2)
    text = PIPELINE.format(k=5, randomizer='name = "mix_dump"\ndomain_size = 5\n'
                           'flip_probability = 0.3\nblanket_messages = 2',
                           estimator="multi_message_frequency", delta="delta = 1e-3")
    _run(_scenario(tmp_path, text), tmp_path / "out")
    batches = pd.read_parquet(tmp_path / "out" / "mm" / "batches.parquet")
    eps = batches["epsilon"].astype(float)
    assert (batches["honest_blanket"] > 0).all()
    assert np.isfinite(eps).all() and (eps <= r.local_epsilon + 1e-12).all()
    assert (eps < r.local_epsilon).any()  # a bound applied at floor(B / b) users


@pytest.mark.parametrize("path", sorted((ROOT / "scenarios" / "multi_message").glob("*.toml")),
                         ids=lambda p: p.stem)
def test_example_scenarios_run(tmp_path, path):
    text = path.read_text()
    text = text.replace("repetitions = 50", "repetitions = 2").replace("n = 10000", "n = 2000")
    _run(_scenario(tmp_path, text), tmp_path / "out")
    assert any((tmp_path / "out").rglob("utility.parquet"))


@pytest.mark.parametrize(("replace", "field"), [
    (("design_users = 10000", "design_users = 100"), "randomizer.design_users"),
    (("domain_size = 16\nblanket", "domain_size = 16\nflip_probability = 0.7\nblanket"),
     "flip_probability"),
])
def test_run_bad_parameter_is_one_line_exit_2(tmp_path, replace, field):
    text = (ROOT / "scenarios" / "multi_message" / "cheu.toml").read_text()
    assert replace[0] in text
    path = _scenario(tmp_path, text.replace(*replace))
    result = CliRunner().invoke(main, ["run", str(path), "--out", str(tmp_path / "o")])
    assert result.exit_code == 2
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and field in lines[0]


@pytest.mark.parametrize("args", [
    ["--randomizer", "balcer", "--param", "blanket_messages=2", "--param", "coin=uniform"],
    ["--randomizer", "cheu", "--domain-size", "3", "--param", "flip_probability=0.2"],
    ["--randomizer", "balls_into_bins", "--param", "bins=6", "--param", "special_bins=2",
     "--param", "blanket_messages=1"],
    ["--randomizer", "pure_dump", "--domain-size", "3", "--param", "blanket_messages=1"],
    ["--randomizer", "mix_dump", "--domain-size", "3", "--param", "flip_probability=0.3",
     "--param", "blanket_messages=1"],
    # a domain above the audit's max_inputs: inputs from the randomizer's own candidates
    ["--randomizer", "pure_dump", "--domain-size", "20", "--param", "blanket_messages=2"],
], ids=lambda a: f"{a[1]}-{a[3]}")
def test_randomizer_level_audit_cli(args):
    """`shufflesim audit --level randomizer`: the fit is consistent and the empirical lower
    bound stays below the declared LDP level log p (inf where p = +inf)."""
    result = CliRunner().invoke(main, ["audit", *args, "--epsilon0", "1.0", "--trials", "20000",
                                       "--confidence", "0.999", "--level", "randomizer"])
    assert result.exit_code == 0, result.output
    assert "violated" not in result.output and "consistent" in result.output


BATCH = """
name = "b"
seed = {seed}
repetitions = 400
[population]
n = 300
data = {{ distribution = "zipf", domain_size = {k}, exponent = 0.8 }}
budget = {{ distribution = "constant", epsilon0 = 1.0 }}
[randomizer]
{randomizer}
[estimator]
name = "{estimator}"
[batch]
path = "{path}"
"""


@pytest.mark.parametrize(("k", "randomizer", "estimator", "metric"), [
    (4, 'name = "cheu"\ndomain_size = 4\nflip_probability = 0.1\nblanket_messages = 2',
     "multi_message_frequency", "l2"),
    (3, 'name = "balls_into_bins"\nbins = 7\nspecial_bins = 2\nblanket_messages = 2',
     "multi_message_frequency", "l2"),
    (5, 'name = "mix_dump"\ndomain_size = 5\nflip_probability = 0.4\nblanket_messages = 1',
     "multi_message_frequency", "l2"),
    (2, 'name = "balcer"\nblanket_messages = 3\ncoin_probability = 0.2',
     "multi_message_sum", "mae"),
], ids=["cheu", "balls_into_bins", "mix_dump", "balcer"])
def test_run_reports_and_aggregate_paths_agree(tmp_path, k, randomizer, estimator, metric):
    """`shufflesim run`: the error of the reports path and of the exact aggregate path have
    the same law (two-sample KS on the per-repetition error, fixed seeds)."""
    from scipy import stats

    errors = {}
    for seed, path in ((1, "reports"), (2, "aggregate")):
        text = BATCH.format(seed=seed, k=k, randomizer=randomizer, estimator=estimator, path=path)
        out = tmp_path / path
        _run(_scenario(tmp_path, text), out)
        table = pd.read_parquet(out / "b" / "utility.parquet")
        assert set(table["path"]) == {path}
        rows = table[(table.metric == metric) & (table.reference == "empirical")]
        errors[path] = rows["value"].to_numpy()
    assert stats.ks_2samp(errors["reports"], errors["aggregate"]).pvalue > 1e-3
