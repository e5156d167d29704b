"""Multi-message claims at the pipeline level (simulator/audit/pipeline_multi.py, issue 29):
the client's m messages per user travel and are shuffled on their own, the multi-message
attacks run on the released messages, the claim's multi-message bounds judge them."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from shufflesim.protocols.errors import ParameterError
from shufflesim.protocols.randomizers.registry import example_randomizer
from shufflesim.simulator.audit.grading import failing
from shufflesim.simulator.audit.implementation import Claim
from shufflesim.simulator.audit.multi_message_level import MessageStatistics
from shufflesim.simulator.audit.pipeline_multi import audit_pipeline_multi
from shufflesim.simulator.audit.run import AuditSettings, audit_implementation, run_audit
from shufflesim.simulator.audit.shuffle_level import AuditOptions
from shufflesim.simulator.cli import main
from shufflesim.simulator.pipeline import PipelineConfig

DUMP = example_randomizer("pure_dump", domain_size=3)
DELTA = 1e-3


def honest(values, rng):
    return DUMP.randomize(values, rng)


def copies(values, rng):
    """Repeats its input message instead of sending blanket messages."""
    out = np.asarray(DUMP.randomize(values, rng)).copy()
    out[..., 1:] = out[..., :1]
    return out


def drop_one(messages, rng):
    return messages[rng.permutation(len(messages))][:-1]


def _rows(client, **options):
    return audit_implementation(client, Claim(DUMP), trials=4000, level="pipeline", n=20,
                                delta=DELTA, seed=1, **options)


def _failing(rows):
    return {r["bound"] for r in failing(rows, 0.95)}


def test_an_honest_multi_message_client_passes_and_a_leaky_one_is_caught():
    rows = _rows(honest)
    assert not _failing(rows)
    attacks = [r for r in rows if r["row_type"] == "attack"]
    assert {r["attack"] for r in attacks} == {"lr", "count[x0>x1]", "count[x1>x0]"}
    assert all(r["level"] == "pipeline" and r["epsilon_lb"] <= r["exact_lower"]
               for r in attacks)
    caught = _failing(_rows(copies))
    assert {"implementation-shuffled", "multi-message-exact-upper"} <= caught


def test_a_user_shuffler_sees_the_multi_message_batches():
    assert "implementation-shuffler-drops" in _failing(_rows(honest, shuffler=drop_one))


def test_the_project_sampler_at_the_pipeline_level():
    r = example_randomizer("balcer")
    rows = run_audit(AuditSettings(trials=3000, level="pipeline", delta=DELTA), r, 20,
                     np.random.SeedSequence(3))
    assert not _failing(rows)
    assert any(x["row_type"] == "attack" and x["level"] == "pipeline" for x in rows)


@pytest.mark.parametrize("config, field", [
    (PipelineConfig(batch_size=10), "pipeline.batch_size"),
    (PipelineConfig(timeout=0.1), "pipeline.timeout"),
    (PipelineConfig(dropout=0.1), "pipeline.dropout"),
])
def test_configurations_that_split_a_round_are_refused(config, field):
    with pytest.raises(ParameterError, match="--level shuffle") as error:
        audit_pipeline_multi(DUMP, 20, DELTA, AuditOptions(trials=100), 0, config=config)
    assert error.value.field == field and "\n" not in str(error.value)


def test_flat_statistics_are_the_per_trial_statistics():
    stats = MessageStatistics(DUMP, 0, 1, 2, 6)
    values = np.full((40, 6), 2)
    values[:, 0] = 0
    reports = np.asarray(DUMP.randomize(values, np.random.default_rng(0)))
    per_trial = stats.statistics(reports)
    flat = reports.reshape((40, -1) + tuple(DUMP.message_shape))
    shuffled = np.stack([m[np.random.default_rng(t).permutation(len(m))]
                         for t, m in enumerate(flat)])
    got = stats.flat_statistics(np.repeat(np.arange(40), flat.shape[1]),
                                shuffled.reshape((-1,) + flat.shape[2:]), 40)
    for key, value in per_trial.items():
        assert np.allclose(got[key], value), key


def test_command_line_runs_a_multi_message_claim_at_the_pipeline_level():
    result = CliRunner().invoke(main, [
        "audit", "--randomizer", "balcer", "--epsilon0", "1", "--param", "blanket_messages=2",
        "--param", "coin_probability=0.3", "--n", "20", "--delta", "1e-3", "--trials", "1000",
        "--level", "pipeline", "--json", "-q"])
    assert result.exit_code == 0, result.output
    assert any(x["row_type"] == "attack" and x["level"] == "pipeline"
               for x in json.loads(result.output))
