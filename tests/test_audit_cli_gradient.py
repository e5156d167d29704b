"""``shufflesim audit`` for a Gaussian gradient client (--gradient-clip, --gradient-dim,
--gradient-examples with --claim-epsilon0 / --claim-delta0) and ``--trials auto``
(simulator/audit/auto_trials.py): the same rows as simulator.audit.gradient.audit_gradient,
--json, --fail-on-violation and one-line errors naming the flag."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from shufflesim.simulator.audit import auto_trials
from shufflesim.simulator.audit.gradient import GradientClaim, audit_gradient
from shufflesim.simulator.audit.tables import to_json_records
from shufflesim.simulator.cli import main

CLIENT = '''
import numpy as np
SIGMA = {sigma!r}

def noisy(g, rng):
    print("a chatty client", np.shape(g))
    return g + SIGMA * rng.standard_normal(np.shape(g))
'''
CLAIM = GradientClaim(epsilon0=1.0, delta0=1e-6, clip=1.0, dim=8, examples_per_client=4)
FLAGS = ["--gradient-clip", "1", "--gradient-dim", "8", "--gradient-examples", "4",
         "--claim-epsilon0", "1", "--claim-delta0", "1e-6"]


def _client(tmp_path, factor: float) -> str:
    path = tmp_path / f"client_{str(factor).replace('.', '_')}.py"
    path.write_text(CLIENT.format(sigma=factor * CLAIM.sigma))
    return f"{path}:noisy"


def _run(args):
    return CliRunner().invoke(main, ["audit", "-q", *args])


def test_a_gradient_client_from_the_command_line_equals_the_python_rows(tmp_path):
    """Randomizer level, 10^5 samples: the sigma 0.8x client is violated by the profile and
    the fit (exit 1 with --fail-on-violation), --json parses although the client prints, and
    the rows are audit_gradient's."""
    spec = _client(tmp_path, 0.8)
    result = _run(["--implementation", spec, *FLAGS, "--level", "randomizer",
                   "--trials", "100000", "--json", "--fail-on-violation"])
    assert result.exit_code == 1, result.output
    rows = json.loads(result.stdout)
    violated = {r["bound"] for r in rows if r.get("verdict") == "violated"}
    assert {"implementation-profile", "implementation-fit"} <= violated
    module = {}
    exec(CLIENT.format(sigma=0.8 * CLAIM.sigma), module)  # the same function, in Python
    python = to_json_records(audit_gradient(module["noisy"], CLAIM, trials=100_000,
                                            level="randomizer", seed=0))
    key = ("bound", "verdict", "epsilon_lb", "p_value")
    assert [tuple(r.get(k) for k in key) for r in rows] == [
        tuple(r.get(k) for k in key) for r in python]


def test_a_correct_gradient_client_exits_0_at_the_pipeline_level(tmp_path):
    report = tmp_path / "gradient.md"
    result = _run(["--implementation", _client(tmp_path, 1.0), *FLAGS, "--level", "pipeline",
                   "--n", "2", "--delta", "1e-2", "--trials", "20000", "--fail-on-violation",
                   "--report", str(report)])
    assert result.exit_code == 0, result.output
    text = report.read_text()
    assert "gradient client (dim 8, clip 1, m 4)" in text and "--gradient-clip 1" in text
    assert "level = pipeline, trials = 20000" in result.stdout
    assert "implementation-shuffled" in result.stdout


@pytest.mark.parametrize("extra, needle", [
    (["--gradient-clip", "-1", "--gradient-dim", "8"], "--gradient-clip = -1"),
    (["--gradient-clip", "1", "--gradient-dim", "0"], "--gradient-dim = 0"),
    (["--gradient-clip", "1"], "--gradient-dim is required"),
    (["--gradient-clip", "1", "--gradient-dim", "8", "--gradient-examples", "0"],
     "--gradient-examples = 0"),
    (["--gradient-clip", "1", "--gradient-dim", "8", "--trials", "abc"], "--trials = 'abc'"),
    (["--gradient-clip", "1", "--gradient-dim", "8", "--trials", "2.5"], "--trials = '2.5'"),
])
def test_bad_gradient_flags_are_one_line_errors(tmp_path, extra, needle):
    result = _run(["--implementation", _client(tmp_path, 1.0), *extra, "--claim-epsilon0", "1",
                   "--claim-delta0", "1e-6", "--level", "randomizer"])
    assert result.exit_code == 2
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:") and needle in lines[0], lines


def test_fresh_devices_with_a_gradient_claim_is_one_line(tmp_path):
    result = _run(["--implementation", _client(tmp_path, 1.0), *FLAGS, "--level", "randomizer",
                   "--fresh-devices"])
    assert result.exit_code == 2 and result.output.startswith("error: --fresh-devices = 4")


def test_a_gradient_claim_needs_its_delta0(tmp_path):
    result = _run(["--implementation", _client(tmp_path, 1.0), "--gradient-clip", "1",
                   "--gradient-dim", "8", "--claim-epsilon0", "1", "--level", "randomizer"])
    assert result.exit_code == 2 and "--claim-delta0 > 0" in result.output


def test_auto_trials_targets_and_cap():
    assert auto_trials.choose("pipeline", 20, True).trials == 3_000_000
    assert auto_trials.choose("shuffle", 20, True).trials == 1_000_000
    assert auto_trials.choose("randomizer", None, True).trials == 200_000
    assert auto_trials.choose("shuffle", 20, False, outputs=4).trials == 10_000_000
    big = auto_trials.choose("pipeline", 10_000, True)  # capped by the time estimate
    assert auto_trials.FLOOR <= big.trials < 3_000_000 and "capped" in big.reason
    seconds = 2 * 10_000 * auto_trials.SECONDS["pipeline"] * big.trials
    assert seconds <= auto_trials.BUDGET_SECONDS
    assert auto_trials.steps_below(7.4e5) == 500_000 and auto_trials.steps_below(2e6) == 2e6
    assert auto_trials.parse("3e6") == 3_000_000 and auto_trials.parse(None) == "auto"
    for bad in ("0", "-5", "1.5", "x", True):
        with pytest.raises(ValueError):
            auto_trials.parse(bad)


def test_auto_trials_on_the_command_line_says_what_it_chose():
    result = _run(["--randomizer", "krr", "--domain-size", "2", "--epsilon0", "1",
                   "--level", "randomizer"])
    assert result.exit_code == 0, result.output
    assert "trials = 200000 (auto: the randomizer level's default)" in result.stdout


def test_auto_trials_beyond_the_time_limit_is_refused_up_front():
    result = _run(["--randomizer", "krr", "--domain-size", "2", "--epsilon0", "1",
                   "--level", "pipeline", "--n", "1000000", "--delta", "1e-6",
                   "--max-seconds", "1"])
    assert result.exit_code == 2
    assert result.output.startswith("error: --") and "--max-seconds" in result.output


def test_the_python_api_takes_auto_trials_and_a_gradient_claim():
    import shufflesim

    def noisy(g, rng):
        return g + CLAIM.sigma * rng.standard_normal(np.shape(g))
    t = shufflesim.audit(noisy, level="randomizer", trials=20_000, claim_epsilon0=1.0,
                         claim_delta0=1e-6, gradient={"clip": 1.0, "dim": 8,
                                                       "examples_per_client": 4})
    assert "implementation-profile" in set(t.bound)
    assert t.attrs["parameters"]["trials"] == 20_000
    auto = shufflesim.audit(randomizer="krr", epsilon0=1.0, domain_size=2, level="randomizer")
    assert auto.attrs["parameters"]["trials"] == 200_000  # "auto", resolved
