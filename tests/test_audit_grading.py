"""Graded, family-wise verdicts (simulator/audit/grading.py) and the CI face of ``shufflesim
audit``: --fail-on-violation, --json with a client that prints, --report (issue 29)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from scipy import stats

from shufflesim.simulator.audit.confidence import clopper_pearson_lower, clopper_pearson_upper
from shufflesim.simulator.audit.grading import Evidence, failing, grade, holm, strength
from shufflesim.simulator.audit.implementation import Claim
from shufflesim.simulator.audit.run import audit_implementation
from shufflesim.simulator.cli import main

CLIENT = '''
import numpy as np
print("the client says hello at import")

def _krr(values, rng, eps):
    values = np.asarray(values)
    keep = rng.random(values.shape) < np.exp(eps) / (np.exp(eps) + 3)
    return np.where(keep, values, (values + rng.integers(1, 4, size=values.shape)) % 4)

def correct(values, rng):
    print("randomizing", len(values), "values")
    return _krr(values, rng, 2.0)

def leaky(values, rng):
    print("randomizing", len(values), "values")
    return _krr(values, rng, 3.0)
'''

ARGS = ["audit", "--randomizer", "krr", "--domain-size", "4", "--epsilon0", "2",
        "--level", "randomizer", "--trials", "20000", "-q"]


@pytest.fixture(scope="module")
def client(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("client") / "client.py"
    path.write_text(CLIENT)
    return path


def _krr(eps):
    def randomize(values, rng):
        values = np.asarray(values)
        keep = rng.random(values.shape) < np.exp(eps) / (np.exp(eps) + 3)
        return np.where(keep, values, (values + rng.integers(1, 4, size=values.shape)) % 4)
    return randomize


def test_holm_adjusted_p_values():
    # textbook example: p = (0.01, 0.04, 0.03, 0.005), m = 4
    adjusted = holm([0.01, 0.04, 0.03, 0.005])
    assert np.allclose(adjusted, [0.03, 0.06, 0.06, 0.02])
    assert holm([]).size == 0
    assert np.all(holm([0.9, 0.8]) <= 1.0)


def test_holm_over_test_groups():
    """Rows of one group (nested thresholds of one confidence bound) count once: with every
    row its own group the procedure is Holm's; a group of k rows scales by the number of
    groups left, not of rows."""
    p = [0.01, 0.04, 0.03, 0.005]
    assert np.allclose(holm(p, [None] * 4), holm(p))
    assert np.allclose(holm(p, ["a", "b", "c", "d"]), holm(p))
    # rows 0, 1, 2 share a group: two groups (g, and row 3 alone)
    assert np.allclose(holm(p, ["g", "g", "g", None]), [0.01, 0.04, 0.03, 0.01])
    # one group of 11 catalogue rows + the implementation row, beside a fit row
    nested = [0.02] * 12 + [0.5]
    assert np.allclose(holm(nested, ["e"] * 12 + [None]), [0.04] * 12 + [0.5])
    assert np.all(holm(nested)[:12] == pytest.approx(0.26))


def test_grouped_holm_keeps_the_family_wise_error():
    """Monte Carlo of the validity argument (grading.py): k nested thresholds U_1 < ... < U_k
    of one statistic, the true value at U_3 (rows 3.. are true nulls), beside two independent
    true-null rows; a true null is rejected in at most alpha of the runs."""
    rng = np.random.default_rng(5)
    runs, alpha, false = 20_000, 0.05, 0
    thresholds = np.array([-2.0, -1.0, 0.0, 0.5, 1.0, 2.0])  # statistic ~ N(0, 1) + truth
    for _ in range(runs):
        z = rng.standard_normal()
        p_group = 1 - stats.norm.cdf(z - thresholds)  # p of "mean > U_j" from one z
        p_alone = rng.random(2)
        p = np.concatenate([p_group, p_alone])
        adjusted = holm(p, ["g"] * 6 + [None, None])
        true_null = np.array([False, False, True, True, True, True, True, True])
        false += bool(np.any(adjusted[true_null] < alpha))
    assert false / runs <= alpha + 3 * np.sqrt(alpha * (1 - alpha) / runs)


def test_strength_words():
    assert strength(0.01, 0.05, True) == "marginal"
    assert strength(0.001, 0.05, True) == "clear"
    assert strength(1e-9, 0.05, True) == "strong"
    assert strength(0.0, 0.05, True, exact=True) == "certain"
    assert strength(0.01, 0.05, False) == "none"


def test_exceedance_p_value_matches_the_bound_it_grades():
    """p < alpha exactly when the bound at the row's own limit level exceeds the threshold,
    and p grows with the threshold."""
    limit_alpha = 0.05 / 12
    for k_a, k_b, delta in ((5000, 900, 1e-6), (300, 20, 1e-3), (40, 0, 1e-4)):
        e = Evidence(k_a, k_b, 100_000, limit_alpha, delta, 0.05)
        lo = clopper_pearson_lower(k_a, 100_000.0, limit_alpha)
        hi = clopper_pearson_upper(k_b, 100_000.0, limit_alpha)
        eps = float(np.log((lo - delta) / hi))
        assert e.p_value(eps * 0.99) < 0.05 <= e.p_value(eps * 1.01)
        ps = [e.p_value(t) for t in np.linspace(0, eps * 1.5, 7)]
        assert all(a <= b for a, b in zip(ps, ps[1:], strict=False))
    assert Evidence(10, 10, 1000, 0.01, 0.0, 0.05).p_value(math.inf) == 1.0


def test_grade_turns_a_lone_marginal_violation_consistent_in_a_family():
    rows = [dict(row_type="verdict", verdict="violated", p_value=0.03, reason="a",
                 subject="implementation", bound="x"),
            dict(row_type="verdict", verdict="consistent", p_value=0.5, reason="b",
                 subject="implementation", bound="y"),
            dict(row_type="verdict", verdict="not-evaluated", p_value=None, reason="c",
                 subject="bound", bound="z")]
    grade(rows, 0.95)
    assert rows[0]["verdict"] == "consistent" and "not significant family-wise" in rows[0][
        "reason"]
    assert rows[0]["adjusted_p_value"] == pytest.approx(0.06)
    assert rows[2]["verdict"] == "not-evaluated" and "adjusted_p_value" not in rows[2]
    assert not failing(rows, 0.95)


def test_graded_rows_of_a_faulty_and_a_correct_client():
    claim = Claim.registered("krr", epsilon0=2.0, domain_size=4)
    bad = audit_implementation(_krr(2.6), claim, trials=20_000, seed=3)
    verdicts = {r["bound"]: r for r in bad if r["row_type"] == "verdict"}
    ldp = verdicts["implementation-ldp"]
    assert ldp["verdict"] == "violated" and ldp["strength"] in ("clear", "strong")
    assert ldp["adjusted_p_value"] <= 0.05 and "Holm" in ldp["reason"]
    assert failing(bad, 0.95)
    good = audit_implementation(_krr(2.0), claim, trials=20_000, seed=3)
    assert not failing(good, 0.95)
    assert all(r["strength"] == "none" for r in good if r["row_type"] == "verdict")


def test_correct_clients_pass_over_50_seeds():
    """The false-violation rate of a correct client over 50 seeds stays within alpha = 0.05
    (Holm over the run's rows): at most 6 of 50 (P[Binomial(50, 0.05) >= 7] < 0.012)."""
    claim = Claim.registered("krr", epsilon0=2.0, domain_size=4)
    client = _krr(2.0)
    false = sum(bool(failing(audit_implementation(client, claim, trials=2000, seed=s), 0.95))
                for s in range(50))
    assert false <= 6


@pytest.mark.slow
def test_correct_clients_pass_over_50_seeds_at_the_shuffle_level():
    claim = Claim.registered("krr", epsilon0=2.0, domain_size=4)
    client = _krr(2.0)
    false = sum(bool(failing(audit_implementation(client, claim, trials=4000, level="shuffle",
                                                  n=20, delta=(1e-6,), seed=s), 0.95))
                for s in range(50))
    assert false <= 6


def test_fail_on_violation_exit_codes_and_chatty_json(client, tmp_path):
    runner = CliRunner()
    clean = runner.invoke(main, ARGS + ["--implementation", f"{client}:correct", "--json",
                                        "--fail-on-violation"], catch_exceptions=False)
    assert clean.exit_code == 0, clean.output
    rows = json.loads(clean.stdout)  # the client's prints went to stderr
    assert any(r["row_type"] == "verdict" and "adjusted_p_value" in r for r in rows)
    assert "hello" in clean.stderr and "randomizing" in clean.stderr
    bad = runner.invoke(main, ARGS + ["--implementation", f"{client}:leaky", "--json",
                                      "--fail-on-violation", "0.99"], catch_exceptions=False)
    assert bad.exit_code == 1
    json.loads(bad.stdout)
    assert "audit failed at confidence 0.99" in bad.stderr
    no_gate = runner.invoke(main, ARGS + ["--implementation", f"{client}:leaky"],
                            catch_exceptions=False)
    assert no_gate.exit_code == 0
    wrong = runner.invoke(main, ARGS + ["--implementation", f"{client}:leaky",
                                        "--fail-on-violation", "1.5"])
    assert wrong.exit_code == 2


@pytest.mark.parametrize("suffix", [".md", ".html"])
def test_report_is_self_contained(client, tmp_path, suffix):
    path = tmp_path / f"audit{suffix}"
    result = CliRunner().invoke(main, ARGS + ["--implementation", f"{client}:leaky",
                                              "--report", str(path)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    text = path.read_text()
    for part in ("Audit report", "Claim", "Inputs", "Verdicts", "implementation-ldp", "Seeds",
                 "Reproduce", "shufflesim audit", "Holm"):
        assert part in text, part
    assert "--report" not in text.split("Reproduce", 1)[1]
    assert "http://" not in text and "https://" not in text  # nothing linked
    pytest.importorskip("matplotlib")
    assert "data:image/png;base64," in text


def test_report_bad_path_is_one_line_exit_2(client, tmp_path):
    result = CliRunner().invoke(main, ARGS + ["--implementation", f"{client}:correct",
                                              "--report", str(tmp_path / "r.txt")])
    assert result.exit_code == 2
    assert "--report" in result.output
