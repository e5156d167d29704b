"""The audit's pipeline per block of rounds (simulator/audit/pipeline_batch.py, issue 29): its
batches are the SimPy shuffler's, and its released histogram has the pipeline's law."""

from __future__ import annotations

import numpy as np
import pytest

from shufflesim.protocols.randomizers import make_randomizer
from shufflesim.simulator.audit.pipeline_batch import (
    audit_shuffle_release,
    draw_rounds,
    released_batches,
    schedule,
)
from shufflesim.simulator.pipeline import DelayConfig, PipelineConfig, run_pipeline

KRR = make_randomizer("krr", epsilon0=1.0, domain_size=4)

CONFIGS = [
    PipelineConfig(),
    PipelineConfig(batch_size=7),
    PipelineConfig(batch_size=7, min_batch=5),
    PipelineConfig(timeout=0.1),
    PipelineConfig(timeout=0.05, batch_size=4, min_batch=2),
    PipelineConfig(timeout=0.2, delay=DelayConfig("exponential", mean=0.1), dropout=0.2),
    PipelineConfig(arrival="poisson", timeout=0.3, batch_size=6, window=2.0),
    PipelineConfig(arrival="all_at_once", batch_size=5, timeout=0.5),
    PipelineConfig(arrival="all_at_once", timeout=2.0, window=1.0),
    PipelineConfig(delay=DelayConfig("uniform", low=0.0, high=0.5), batch_size=3,
                   timeout=0.05, min_batch=2),
]


@pytest.mark.parametrize("config", CONFIGS)
def test_schedule_is_the_simpy_shufflers(config):
    """Round by round: the SimPy run's batches (size, dropped) in order equal the schedule
    computed on its arrival times."""
    values = np.arange(23) % 4
    for seed in range(15):
        result = run_pipeline(KRR, values, config, np.random.default_rng(seed),
                              keep_outputs=True)
        stream = result.streams[0]
        width = values.size
        times = np.full((1, width), np.inf)
        times[0, :stream.size] = stream.times
        batch, kept = schedule(times, np.array([stream.size]), np.array([stream.end]), config)
        sizes = np.bincount(batch[batch >= 0]) if stream.size else np.zeros(0, int)
        assert sizes.tolist() == result.batches["size"].tolist(), (seed, config)
        dropped = [not kept[0, batch[0] == b].any() for b in range(sizes.size)]
        assert dropped == result.batches["dropped"].tolist()


def test_rounds_release_every_kept_message_once_and_in_batches():
    config = PipelineConfig(batch_size=5, min_batch=3, dropout=0.1)
    rounds = draw_rounds(KRR, np.arange(17) % 4, config, 400, np.random.default_rng(1))
    release = audit_shuffle_release(rounds, np.random.default_rng(2))
    assert np.array_equal(np.bincount(release.trial, minlength=400), rounds.kept.sum(axis=1))
    for t in range(0, 400, 37):  # same multiset per round, batches in order
        mine = np.sort(rounds.reports[t][rounds.kept[t]])
        assert np.array_equal(np.sort(release.reports[release.trial == t]), mine)
    groups = released_batches(rounds)
    assert sum(s * g[0].size for s, g in groups.items()) == rounds.kept.sum()
    assert set(groups) <= {3, 4, 5}
    identity = audit_shuffle_release(rounds, np.random.default_rng(2), permute=False)
    assert np.array_equal(identity.reports, rounds.reports[rounds.kept])


def test_user_rank_is_arrival_rank():
    rounds = draw_rounds(KRR, np.zeros(9, int), PipelineConfig(), 50, np.random.default_rng(0))
    rank = rounds.user_rank(0)
    assert np.array_equal(rounds.client[np.arange(50), rank], np.zeros(50))
    assert np.bincount(rank, minlength=9).min() > 0  # user 1 arrives anywhere
