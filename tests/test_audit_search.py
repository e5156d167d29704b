"""The search over input pairs and output events (simulator/audit/search.py), the learned attack
(classifier.py) and the (eps0, delta0) audit (approximate.py) on small vectorized mechanisms
(tests/audit_mechanisms.py), correct and with planted faults (issue 17, items 3 and 4)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from audit_mechanisms import krr, laplace, olh, oue

from shufflesim.protocols.errors import ParameterError
from shufflesim.protocols.randomizers.domains import Categorical, Interval
from shufflesim.simulator.audit.approximate import audit_approximate
from shufflesim.simulator.audit.classifier import fit_logistic
from shufflesim.simulator.audit.levels import ATTACKS, Level, attack_names
from shufflesim.simulator.audit.search import (
    SearchOptions,
    candidate_inputs,
    search,
)
from shufflesim.simulator.audit.search_events import row_keys


# ------------------------------------------------------------------------------------------
# small categorical domains: every pair, exact output cells
# ------------------------------------------------------------------------------------------
def test_krr_correct_is_consistent_and_close():
    r = search(krr(2.0, 4), 4, SearchOptions(40_000), seed=1)
    assert r.pairs == 12 and r.inputs == (0, 1, 2, 3)
    assert not r.violates(2.0)
    assert 1.85 < r.epsilon_lb <= 2.0
    assert "consistent with 2-LDP" in r.verdict(2.0)
    assert len(r.certified) == 4 and r.confidence == 0.95


@pytest.mark.parametrize("factor", [1.3, 1.05])
def test_krr_misdeclared_epsilon_is_caught(factor):
    trials = 40_000 if factor > 1.1 else 600_000
    r = search(krr(2.0 * factor, 4), Categorical(4), SearchOptions(trials, certify=2), seed=2)
    assert r.violates(2.0), r.epsilon_lb
    assert r.epsilon_lb <= 2.0 * factor
    text = r.verdict(2.0)
    assert text.startswith("the implementation is not 2-LDP: lower bound")
    assert "on inputs (" in text and "event report in {" in text


def test_off_by_one_top_value_found_by_the_pair_search():
    r = search(krr(1.0, 6, top_bypass=True), 6, SearchOptions(20_000), seed=3)
    assert r.violates(1.0)
    assert 5 in (r.best.x, r.best.x_prime)
    assert r.epsilon_lb > 3


def test_leak_with_small_probability_on_a_large_domain():
    # d = 200 > max_inputs: candidates are the two ends and a seeded sample of the others
    d = 200
    r = search(krr(1.0, d, leak=0.01), d, SearchOptions(20_000, max_inputs=6), seed=4)
    assert len(r.inputs) == 6 and r.inputs[0] == 0 and r.inputs[-1] == d - 1
    assert r.violates(1.0)
    assert r.best.family == "cells"
    assert r.best.count_b == 0  # the leaked value x + d is never reported for another input
    clean = search(krr(1.0, d), d, SearchOptions(20_000, max_inputs=6), seed=4)
    assert not clean.violates(1.0)


def test_candidate_inputs():
    rng = np.random.default_rng(0)
    assert candidate_inputs(5, 16, rng) == [0, 1, 2, 3, 4]
    big = candidate_inputs(Categorical(10_000), 8, rng)
    assert len(big) == 8 and big[0] == 0 and big[-1] == 9_999 and len(set(big)) == 8
    grid = candidate_inputs(Interval(-1.0, 1.0), 5, rng)
    assert grid == [-1.0, -0.5, 0.0, 0.5, 1.0]
    assert candidate_inputs([3, 7], 16, rng) == [3, 7]
    with pytest.raises(ParameterError):
        candidate_inputs([3, 3], 16, rng)


# ------------------------------------------------------------------------------------------
# large output spaces: unary encodings, learned attack, hashed cells
# ------------------------------------------------------------------------------------------
def test_oue_over_64_values_no_output_table():
    opts = SearchOptions(30_000, max_inputs=5)
    ok = search(oue(2.0, 64), 64, opts, seed=5)
    assert not ok.violates(2.0)
    assert ok.epsilon_lb > 1.5  # the learned attack finds {bit a = 1, bit b = 0}
    bad = search(oue(2.6, 64), 64, opts, seed=5)
    assert bad.violates(2.0)
    assert bad.best.family in ("learned", "coordinates")


def test_oue_leak_found_by_exact_frequent_reports():
    r = search(oue(2.0, 64, leak=0.01), 64, SearchOptions(30_000, max_inputs=4), seed=6)
    assert r.violates(2.0)
    assert r.best.family == "cells"
    assert "nonzero at" in r.best.event


def test_learned_attack_only():
    opts = SearchOptions(30_000, max_inputs=3, families=("learned",))
    r = search(oue(3.0, 32), 32, opts, seed=7)
    assert {c.family for c in r.certified} == {"learned"}
    assert r.violates(2.0) and r.epsilon_lb <= 3.0


def test_support_events_for_local_hashing():
    sample, support = olh(2.0, 1024)
    opts = SearchOptions(40_000, max_inputs=4)
    ok = search(sample, 1024, opts, seed=8, support=support)
    assert not ok.violates(2.0)
    assert ok.best.family == "support" and ok.epsilon_lb > 1.6
    bad_sample, bad_support = olh(2.0 * 1.3, 1024)  # its own decoder (g follows eps)
    bad = search(bad_sample, 1024, opts, seed=8, support=bad_support)
    assert bad.violates(2.0), bad.epsilon_lb
    # without the decoder the reports are all distinct: nothing to find, and nothing false
    blind = search(bad_sample, 1024, SearchOptions(10_000, max_inputs=3), seed=8)
    assert blind.epsilon_lb < 1.0


# ------------------------------------------------------------------------------------------
# interval inputs, continuous outputs
# ------------------------------------------------------------------------------------------
def test_laplace_on_an_interval():
    opts = SearchOptions(40_000, max_inputs=4)
    ok = search(laplace(1.0), Interval(0.0, 1.0), opts, seed=9)
    assert ok.inputs[0] == 0.0 and ok.inputs[-1] == 1.0
    assert not ok.violates(1.0) and ok.epsilon_lb > 0.5
    bad = search(laplace(2.0), Interval(0.0, 1.0), opts, seed=9)
    assert bad.violates(1.0)
    assert {bad.best.x, bad.best.x_prime} == {0.0, 1.0}


# ------------------------------------------------------------------------------------------
# honest confidence
# ------------------------------------------------------------------------------------------
def test_false_violations_stay_below_the_error_level():
    """A mechanism exactly at eps0 (k-RR, every event's ratio <= e^eps0): over 40 seeds the
    95% statements may fail at most 5% of the time; more than 6 failures (P < 0.02 under
    Binomial(40, 0.05)) would mean the confidence is not honest."""
    opts = SearchOptions(4_000, certify=3)
    wrong = sum(search(krr(1.0, 3), 3, opts, seed=s).violates(1.0) for s in range(40))
    assert wrong <= 6


def test_bonferroni_split_over_certified_events():
    opts = SearchOptions(1_000, certify=5, confidence=0.9)
    assert opts.limit_alpha == pytest.approx(0.1 / 10)
    r = search(krr(1.0, 3), 3, opts, seed=1)
    for c in r.certified:
        from scipy import stats

        lo = stats.beta.ppf(opts.limit_alpha, c.count_a, c.trials - c.count_a + 1) \
            if c.count_a else 0.0
        assert c.p_a_lower <= lo + 1e-12
        assert c.trials == opts.evaluation_trials


def test_same_seed_same_result():
    a = search(oue(2.0, 16), 16, SearchOptions(4_000, max_inputs=4), seed=11)
    b = search(oue(2.0, 16), 16, SearchOptions(4_000, max_inputs=4), seed=11)
    assert [(c.x, c.x_prime, c.count_a, c.count_b) for c in a.certified] == \
        [(c.x, c.x_prime, c.count_a, c.count_b) for c in b.certified]
    c = search(oue(2.0, 16), 16, SearchOptions(4_000, max_inputs=4), seed=12)
    assert [x.count_a for x in c.certified] != [x.count_a for x in a.certified]


def test_row_keys_are_a_function_of_the_row():
    rows = np.array([[0, 1, 0, 1, 1, 0, 0, 0, 1, 1], [2, 0, 0, 0, 0, 0, 0, 0, 0, 300]])
    k_int = row_keys(rows)
    k_one = np.concatenate([row_keys(rows[:1].astype(np.uint8)), row_keys(rows[1:])])
    k_float = row_keys(rows.astype(float))
    assert np.array_equal(k_int, k_one) and np.array_equal(k_int, k_float)
    assert k_int[0] != k_int[1]
    many = row_keys(np.random.default_rng(0).integers(0, 2, (20_000, 64)))
    assert np.unique(many).size == 20_000


def test_options_are_checked():
    for kwargs in ({"trials": 5}, {"trials": 100, "confidence": 1.0},
                   {"trials": 100, "holdout_fraction": 0.0}, {"trials": 100, "certify": 0},
                   {"trials": 100, "families": ("magic",)}, {"trials": 100, "delta": 1.0}):
        with pytest.raises(ParameterError):
            SearchOptions(**kwargs)
    with pytest.raises(ParameterError, match="implementation"):
        search(lambda v, rng: np.zeros(3), 4, SearchOptions(100), seed=0)


# ------------------------------------------------------------------------------------------
# approximate LDP
# ------------------------------------------------------------------------------------------
def test_approximate_audit():
    sample = krr(2.0, 4, leak=0.01)
    opts = SearchOptions(60_000)
    bad = audit_approximate(sample, 4, 2.0, 0.001, opts, seed=13)
    assert bad.violated and 0.001 < bad.delta_lb <= 0.01
    assert bad.verdict().startswith("the implementation is not (2, 0.001)-LDP")
    ok = audit_approximate(sample, 4, 2.0, 0.02, opts, seed=13)
    assert not ok.violated and ok.delta_lb <= 0.02
    assert 1.5 < ok.epsilon_lb <= 2.0  # eps at delta0 (<= 2: the leak is below delta0)
    clean = audit_approximate(krr(2.0, 4), 4, 2.0, 1e-4, opts, seed=13)
    assert not clean.violated
    with pytest.raises(ParameterError):
        audit_approximate(sample, 4, 2.0, 1.5, opts, seed=13)


# ------------------------------------------------------------------------------------------
# the classifier and the registry
# ------------------------------------------------------------------------------------------
def test_logistic_regression_learns_the_informative_coordinates():
    rng = np.random.default_rng(0)
    a = (rng.random((5_000, 8)) < 0.2).astype(float)
    b = (rng.random((5_000, 8)) < 0.2).astype(float)
    a[:, 2] = rng.random(5_000) < 0.6
    b[:, 5] = rng.random(5_000) < 0.6
    model = fit_logistic(a, b)
    assert model.weights[2] > 0.5 and model.weights[5] < -0.5
    assert np.all(np.abs(np.delete(model.weights, [2, 5])) < 0.1)
    assert model.score(a).mean() > model.score(b).mean()


def test_logistic_regression_agrees_with_scikit_learn():
    pytest.importorskip("sklearn")
    rng = np.random.default_rng(1)
    a = rng.normal(0.3, 1.0, (3_000, 4))
    b = rng.normal(0.0, 1.0, (3_000, 4))
    ours, theirs = fit_logistic(a, b), fit_logistic(a, b, backend="sklearn")
    assert np.allclose(ours.weights, theirs.weights, atol=2e-3)


def test_registered_attacks():
    assert {"search", "approximate"} <= set(attack_names(Level.RANDOMIZER))
    assert ATTACKS.get("search").attack.run is search
    assert "search" not in attack_names(Level.SHUFFLE)


def test_rows_of_the_registered_attacks():
    from shufflesim.simulator.audit.tables import COLUMNS

    context = {"point": 0, "randomizer": "black-box", "epsilon0": 2.0}
    for name, bound in (("search", "implementation-ldp-search"),
                        ("approximate", "implementation-approximate-ldp")):
        run = ATTACKS.get(name).attack.rows
        bad = run(krr(2.6, 4), 4, epsilon0=2.0, trials=20_000, confidence=0.95, seed=1,
                  context=context, implementation="test:krr")
        assert all(set(r) == set(COLUMNS) for r in bad)
        attacks = [r for r in bad if r["row_type"] == "attack"]
        assert len(attacks) == 4 and all(r["attack"].startswith(f"{name}:") for r in attacks)
        (verdict,) = [r for r in bad if r["row_type"] == "verdict"]
        assert verdict["bound"] == bound and verdict["verdict"] == "violated"
        assert verdict["reason"].startswith("the implementation is not")
        assert verdict["subject"] == "implementation"
        ok = run(krr(2.0, 4), 4, epsilon0=2.0, trials=20_000, confidence=0.95, seed=1,
                 context=context, delta0=1e-3)
        assert [r for r in ok if r["row_type"] == "verdict"][0]["verdict"] == "consistent"


def test_unary_encoding_over_1024_values_no_cap():
    """2^1024 possible reports: frequent reports are cells of their own, the rest hashed; the
    coordinates family still sees each bit."""
    opts = SearchOptions(6_000, max_inputs=3)
    ok = search(oue(2.0, 1024), 1024, opts, seed=14)
    assert not ok.violates(2.0) and ok.epsilon_lb > 1.0
    leaky = search(oue(2.0, 1024, leak=0.02), 1024, opts, seed=14)
    assert leaky.violates(2.0) and leaky.best.family == "cells"


@pytest.mark.parametrize("eps, expected", [(2.0, "consistent"), (2.6, "violated")])
def test_the_randomizer_level_runs_the_search(eps, expected):
    """audit_implementation (the Python entry point of the CLI and scenario audit) runs the
    registered randomizer-level attacks named in ``attacks``."""
    from shufflesim.simulator.audit.implementation import Claim
    from shufflesim.simulator.audit.run import audit_implementation

    claim = Claim(epsilon0=2.0, domain_size=4, output="discrete")
    rows = audit_implementation(krr(eps, 4), claim, trials=20_000, level="randomizer",
                                attacks=("search", "approximate"))
    verdicts = {r["bound"]: r for r in rows if r["row_type"] == "verdict"}
    assert verdicts["implementation-ldp-search"]["verdict"] == expected
    assert verdicts["implementation-approximate-ldp"]["verdict"] == expected
    assert any(r["attack"] and r["attack"].startswith("search:") for r in rows)


CLIENT = """
import numpy as np


def krr_13(v, rng):
    p = np.exp(2.6) / (np.exp(2.6) + 3)
    keep = rng.random(np.shape(v)) < p
    return np.where(keep, v, (v + rng.integers(1, 4, np.shape(v))) % 4)
"""


def test_search_from_the_command_line(tmp_path):
    from click.testing import CliRunner

    from shufflesim.simulator.cli import main

    path = tmp_path / "client.py"
    path.write_text(CLIENT)
    result = CliRunner().invoke(main, [
        "audit", "--implementation", f"{path}:krr_13", "--claim-epsilon0", "2",
        "--domain-size", "4", "--level", "randomizer", "--attack", "search",
        "--trials", "20000"])
    assert result.exit_code == 0, result.output
    assert "implementation-ldp-search: the implementation is not 2-LDP" in result.output


#: A black-box client file: local hashing over 1024 values and its decoder, from the mechanisms
#: this module tests (tests/ is on the path of the in-process CLI run).
OLH_CLIENT = """
from audit_mechanisms import olh

sample, support = olh({eps!r}, 1024)
"""


@pytest.mark.parametrize(("factor", "violated"), [(1.0, False), (1.3, True)])
def test_cli_passes_a_local_hashing_decoder_to_the_search(tmp_path, factor, violated):
    """``--support file.py:fn`` gives the search the decoder of a black-box OLH client (every
    report is distinct, so without it there is no event to find)."""
    from click.testing import CliRunner

    from shufflesim.simulator.cli import main

    client = tmp_path / "olh_client.py"
    client.write_text(OLH_CLIENT.format(eps=2.0 * factor))
    args = ["audit", "--implementation", f"{client}:sample", "--claim-epsilon0", "2",
            "--domain-size", "1024", "--output", "vector", "--level", "randomizer",
            "--attack", "search", "--support", f"{client}:support", "--trials", "40000",
            "--json", "-q"]
    done = CliRunner().invoke(main, args)
    assert done.exit_code == 0, done.output
    rows = [r for r in json.loads(done.stdout) if r.get("bound") == "implementation-ldp-search"]
    assert [r["verdict"] for r in rows] == ["violated" if violated else "consistent"]
    missing = CliRunner().invoke(main, [*args[:-4], "--support", f"{client}:nope", *args[-4:]])
    assert missing.exit_code == 2 and "--support" in missing.output
