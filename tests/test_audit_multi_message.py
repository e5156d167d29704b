"""Shuffle level of the multi-message randomizers (issue 15; simulator/audit/
multi_message_level.py): trials of n users' messages through the randomizer's own sampler or a
user's implementation, the lr and count attacks on the shuffled messages, the exact lower bound
of protocols/bounds/multi_message as the comparison, verdicts on the multi-message bounds."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner
from conftest import constant_budget, scenario_text, uniform
from scipy import stats

from shufflesim.protocols.bounds.multi_message.bounds import exact_upper_bound
from shufflesim.protocols.errors import ParameterError
from shufflesim.protocols.randomizers import randomizer_class, randomizer_names
from shufflesim.protocols.randomizers.registry import example_randomizer
from shufflesim.simulator.audit.implementation import Claim
from shufflesim.simulator.audit.multi_message_level import (
    MessageStatistics,
    audit_multi_message,
    default_multi_triple,
    histogram_aggregate,
)
from shufflesim.simulator.audit.run import AuditSettings, audit_implementation, run_audit
from shufflesim.simulator.audit.shuffle_level import AuditOptions
from shufflesim.simulator.cli import main
from shufflesim.simulator.execution.runner import run_scenario
from shufflesim.simulator.scenario.loader import load_scenario

#: The multi-message randomizers, and what these audits set on top of their declared
#: examples (smaller domains: fewer outputs to attack).
MULTI = [n for n in randomizer_names() if getattr(randomizer_class(n), "multi_message", False)]
SMALLER = {"balls_into_bins": dict(bins=6), "pure_dump": dict(domain_size=3),
           "mix_dump": dict(domain_size=3)}


def small(name: str):
    return example_randomizer(name, **SMALLER.get(name, {}))


N, DELTA = 30, 1e-3


@pytest.mark.parametrize("name", MULTI)
def test_shuffle_level_runs_and_stays_below_the_proven_upper_bound(name):
    """Every attack row carries the exact lower model of its direction; no row exceeds the
    proven exact upper bound (a valid lower bound at confidence 0.99); the bound verdicts are
    the multi-message ones, none violated."""
    r = small(name)
    records = run_audit(AuditSettings(trials=20_000, delta=DELTA, confidence=0.99), r, N,
                        np.random.SeedSequence(5))
    attacks = [x for x in records if x["row_type"] == "attack"]
    names = {x["attack"] for x in attacks}
    assert names == {"lr", "count[x0>x1]", "count[x1>x0]"}
    assert {x["direction"] for x in attacks} == {"X0 vs X1", "X1 vs X0"}
    upper = exact_upper_bound(r, N, DELTA).epsilon
    for x in attacks:
        assert x["exact_lower"] is not None and x["exact_lower"] > 0
        assert 0 <= x["epsilon_lb"] <= upper
        assert x["trials"] == 18_000 and x["selection_trials"] == 2000
    verdicts = {x["bound"]: x for x in records if x["row_type"] == "verdict"}
    assert {"multi-message-exact-lower", "multi-message-exact-upper"} <= set(verdicts)
    assert "exact-lower" not in verdicts
    assert all(v["verdict"] != "violated" for v in verdicts.values()), verdicts
    assert max(x["epsilon_lb"] for x in attacks) > 0


def test_lr_score_is_the_log_likelihood_ratio_when_every_other_message_is_blanket():
    """The score of one trial is log sum_k a(y_k) - log sum_k b(y_k) with a, b the ratios to
    the others' mean message law (checked message by message); the counts are those of the
    messages more likely under x0 (x1)."""
    r = small("pure_dump")
    s = MessageStatistics(r, 0, 1, 2, 4)
    reports = r.randomize(np.array([[0, 2, 2, 2]]), np.random.default_rng(0))
    messages = reports.reshape(-1)
    ref = (3 * np.exp(r.message_log_prob(2, messages))
           + 4 * 2 * np.exp(r.blanket_log_prob(messages))) / (3 + 8)
    a = np.exp(r.message_log_prob(0, messages)) / ref
    b = np.exp(r.message_log_prob(1, messages)) / ref
    out = s.statistics(reports)
    assert out["lr"][0] == pytest.approx(np.log(a.sum()) - np.log(b.sum()))
    p0, p1 = r.message_log_prob(0, messages), r.message_log_prob(1, messages)
    assert out["count[x0>x1]"][0] == int((p0 > p1).sum())
    assert out["count[x1>x0]"][0] == int((p1 > p0).sum())


def test_default_triple_and_determinism():
    r = small("pure_dump")
    assert default_multi_triple(r, N, DELTA) == (0, 1, 2)
    options = AuditOptions(trials=2000)
    one = audit_multi_message(r, N, DELTA, options, 3)
    two = audit_multi_message(r, N, DELTA, options, 3)
    assert [x.bound for x in one.rows] == [x.bound for x in two.rows]
    with pytest.raises(ParameterError):
        audit_multi_message(r, N, DELTA, AuditOptions(trials=2000, holdout_fraction=0), 3)


def test_implementation_claiming_a_multi_message_randomizer():
    """A user's pure_dump client: honest passes; one with its input shifted by one fails the
    pooled fit; one that repeats its input message instead of sending blanket messages is
    caught after shuffling (central lower bound above the proven upper bound)."""
    d = small("pure_dump")

    def honest(values, rng):
        return d.randomize(values, rng)

    def shifted(values, rng):
        return d.randomize((np.asarray(values) + 1) % 3, rng)

    def copies(values, rng):
        out = np.asarray(d.randomize(values, rng)).copy()
        out[..., 1:] = out[..., :1]
        return out

    def run(client):
        rows = audit_implementation(client, Claim(d), trials=4000, level="shuffle", n=20,
                                    delta=DELTA, seed=1)
        return {x["bound"]: x["verdict"] for x in rows if x["row_type"] == "verdict"}

    ok = run(honest)
    assert ok["implementation-fit"] == "consistent"
    assert ok["implementation-shuffled"] == "consistent"
    assert run(shifted)["implementation-fit"] == "violated"
    leak = run(copies)
    assert leak["implementation-shuffled"] == "violated"
    assert leak["multi-message-exact-upper"] == "violated"


def test_command_line_and_refusals():
    base = ["audit", "--randomizer", "balcer", "--epsilon0", "1", "--param",
            "blanket_messages=2", "--param", "coin_probability=0.3"]
    result = CliRunner().invoke(main, base + ["--n", "20", "--delta", "1e-3", "--trials",
                                              "2000", "--json", "-q"])
    assert result.exit_code == 0, result.output
    records = json.loads(result.output)
    assert any(x["row_type"] == "attack" and x["attack"] == "lr" for x in records)
    for extra, needle in ((["--others", "0.5,0.5"], "others"),):
        result = CliRunner().invoke(main, base + ["--n", "20", "--delta", "1e-3", "--trials",
                                                  "200", *extra])
        lines = [x for x in result.output.splitlines() if x.strip()]
        assert result.exit_code == 2 and len(lines) == 1 and needle in lines[0], lines


CLIENT = '''
import numpy as np
from shufflesim.protocols.randomizers import make_randomizer

DUMP = make_randomizer("pure_dump", epsilon0=1.0, domain_size=3, blanket_messages=2)


def dump(values, rng):
    return DUMP.randomize(np.asarray(values), rng)
'''


def test_python_cli_and_scenario_give_the_same_rows_for_a_multi_message_claim(tmp_path):
    """An implementation claiming pure_dump at the shuffle level: the three entry points give
    the same rows (same seed derivation, implementation_seed)."""
    (tmp_path / "client.py").write_text(CLIENT)
    spec = f"{tmp_path / 'client.py'}:dump"
    d = small("pure_dump")
    python = audit_implementation(spec, Claim(d), trials=2000, level="shuffle", n=20,
                                  delta=(DELTA,), seed=3, bounds=("multi-message-exact-upper",))
    result = CliRunner().invoke(main, [
        "audit", "--implementation", spec, "--randomizer", "pure_dump", "--domain-size", "3",
        "--param", "blanket_messages=2", "--epsilon0", "1", "--n", "20", "--delta", str(DELTA),
        "--bound", "multi-message-exact-upper", "--trials", "2000", "--seed", "3", "--json",
        "-q"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    cli = json.loads(result.output)
    text = scenario_text(name="mm", seed=3, repetitions=None, n=20, data=uniform(3),
                         budget=constant_budget(1.0), randomizer="pure_dump",
                         randomizer_keys="blanket_messages = 2",
                         estimator="multi_message_frequency", sections=f"""
                         [audit]
                         level = "shuffle"
                         trials = 2000
                         delta = {DELTA}
                         bounds = ["multi-message-exact-upper"]
                         implementation = "client.py:dump"
                         """)
    path = tmp_path / "s.toml"
    path.write_text(text)
    frame = run_scenario(load_scenario(path))["audit"].to_pylist()

    def comparable(rows):
        return [{k: v for k, v in r.items() if k != "seconds" and v is not None}
                for r in rows]

    assert any(r["attack"] == "lr" for r in python)
    assert comparable(python) == comparable(frame)
    assert comparable(python) == comparable(cli)


def test_no_false_alarm_over_seeds():
    """pure_dump with the others at x2 = 2: their input messages are invisible to the
    statistic, so the pair's exact lower model is the exact divergence of the view. Over 30
    seeds at confidence 0.9 the best row exceeds it with probability <= 0.1 per seed: the count
    stays below the binomial(30, 0.1) 1e-4 quantile."""
    r = small("pure_dump")
    options = AuditOptions(trials=2000, confidence=0.9)
    exceeded = 0
    for seed in range(30):
        audit = audit_multi_message(r, N, DELTA, options, seed, x0=0, x1=1, x_star=2)
        exceeded += audit.best(DELTA).epsilon_lb > audit.exact[DELTA] * (1 + 1e-9)
    assert exceeded <= stats.binom.ppf(1 - 1e-4, 30, 0.1)


@pytest.mark.parametrize("name", ["balcer", "balls_into_bins", "pure_dump", "mix_dump"])
def test_histogram_statistics_equal_the_per_message_ones(name):
    """The aggregate path's statistics (from the message histogram) equal those computed
    message by message on the same reports; the aggregate path is used for these four."""
    r = small(name)
    assert histogram_aggregate(r)
    x_star = 2 if r.input_size > 2 else 1
    s = MessageStatistics(r, 0, 1, x_star, 6)
    values = np.full((50, 6), x_star)
    values[:, 0] = 0
    reports = r.randomize(values, np.random.default_rng(1))
    hist = r.aggregate(reports)
    a, b = s.statistics(reports), s.histogram_statistics(hist)
    np.testing.assert_allclose(a["lr"], b["lr"], rtol=1e-10, atol=1e-12)
    for key in ("count[x0>x1]", "count[x1>x0]"):
        np.testing.assert_array_equal(a[key], b[key])
    assert not histogram_aggregate(small("cheu"))
