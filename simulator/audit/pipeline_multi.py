"""Multi-message claims at the pipeline level (issue 29, "multi-message claims at the pipeline
level"): the client returns m = 1 + b messages per user, every message travels and is shuffled
on its own, and the attacks are the multi-message ones (multi_message_level.py) on the
released messages of each round.

A trial is one round of the pipeline (pipeline_batch.py): the n clients hold
X0 = (x0, x*, ..., x*) or X1 = (x1, x*, ..., x*); the client's code is called once per block of
rounds on the (rounds, n) values and returns (rounds, n, m) + message shape; the n m messages
reach the shuffler in arrival order (ties, without delays, in a uniformly random order), which
releases them permuted (the audit's uniform shuffler, or a user's shuffler that sees them:
message_shuffler.py). The statistics are those of the shuffle level - the log-likelihood-ratio
score and the counts of messages more likely under x0 than x1 and the reverse
(multi_message_level.MessageStatistics) - computed on the round's released messages: a fixed
function of what the analyzer receives, so every lower bound is valid whatever the client or
the shuffler does; a shuffler that drops or adds messages changes the statistic's law, and the
attack sees it.

Comparison and verdicts: the claim's exact lower model and proven bounds
(protocols/bounds/multi_message, at n users: a victim's input message among n b blanket
messages) describe one shuffle of all n m messages. They apply when the pipeline releases each
round as one batch of every message, so this level requires no ``timeout``, no ``batch_size``
below n m, no dropout and ``min_batch`` <= n m; other configurations are refused with that
reason (smaller batches split a user's messages over batches, a case no catalogue bound
covers: audit such claims at the shuffle level).
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from shufflesim.protocols.errors import require
from shufflesim.simulator.audit.message_shuffler import MessageShuffler
from shufflesim.simulator.audit.multi_message_level import (
    MultiMessageSampler,
    TrialCounter,
    chunked_columns,
    multi_message_rows,
    multi_setup,
)
from shufflesim.simulator.audit.pipeline_batch import (
    audit_shuffle_release,
    draw_rounds,
    rounds_per_block,
)
from shufflesim.simulator.audit.sampling import child, chunk_sizes
from shufflesim.simulator.audit.shuffle_level import AttackAudit, AuditOptions
from shufflesim.simulator.pipeline import PipelineConfig

#: Spawn keys of the shuffler's streams (the user's, and the audit's reference permutations).
SHUFFLER_KEY = 0x5F1


def check_one_batch(config: PipelineConfig, n: int, m: int) -> None:
    """Refuse a configuration that does not release each round as one batch (module
    docstring), naming the field."""
    why = (f"a multi-message claim is audited at the pipeline level when every round is "
           f"released as one batch of its n m = {n * m} messages (the claim's bounds shuffle "
           f"them together); use --level shuffle otherwise")
    require(config.timeout is None, "pipeline.timeout", config.timeout, why)
    require(config.batch_size is None or config.batch_size >= n * m, "pipeline.batch_size",
            config.batch_size, why)
    require(config.dropout == 0, "pipeline.dropout", config.dropout, why)
    require(config.min_batch <= n * m, "pipeline.min_batch", config.min_batch, why)


def audit_pipeline_multi(randomizer, n: int, deltas, options: AuditOptions,
                         seed: np.random.SeedSequence | int, *, x0=None, x1=None, x_star=None,
                         config: PipelineConfig | None = None,
                         shuffler: MessageShuffler | None = None,
                         progress: Callable[[int, int], None] | None = None) -> AttackAudit:
    """The pipeline-level audit of a multi-message randomizer (or an implementation claiming
    one) with n users at each delta (module docstring)."""
    start = time.perf_counter()
    deltas, declared, (x0, x1, x_star), stats, columns = multi_setup(
        randomizer, n, deltas, options, (x0, x1, x_star))
    config = config or PipelineConfig()
    check_one_batch(config, n, stats.m)
    implementation = declared is not randomizer
    tally = MultiMessageSampler(randomizer, stats, implementation)
    seq = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
    values = [np.array([x] + [x_star] * (n - 1)) for x in (x0, x1)]
    block = min(options.chunk, rounds_per_block(n * stats.m))
    count = TrialCounter(2 * options.trials, progress)

    def draw(world: int, trials: int, key: np.random.SeedSequence) -> dict:
        def chunk(c: int, size: int) -> dict:
            k = child(key, c)
            rounds = draw_rounds(randomizer, values[world], config, size,
                                 np.random.default_rng(k))
            tally.tally(world, rounds.reports)
            mix = np.random.default_rng(child(k, SHUFFLER_KEY))
            release = (audit_shuffle_release(rounds, mix) if shuffler is None else
                       shuffler.release_rounds(rounds, mix, np.random.default_rng(
                           child(k, SHUFFLER_KEY + 1))))
            return stats.flat_statistics(release.trial, release.reports, size)
        return chunked_columns(columns, chunk_sizes(trials, block), chunk, count)

    rows, summary = multi_message_rows(columns, draw, options, deltas, seq, declared, n,
                                       (x0, x1, x_star), n * stats.m)
    label = f"(x0, x1, x2) = ({x0}, {x1}, {x_star}); {n} users x {stats.m} messages"
    return AttackAudit("pipeline", randomizer.name, float(randomizer.epsilon0), n, label,
                       options, tuple(rows), time.perf_counter() - start, summary,
                       tally.fits(), randomizer.implementation.source if implementation
                       else "", "multi-message: attacks on the pipeline's released messages")
