"""``run_pipeline``: clients -> shuffler -> analyzer as one SimPy simulation.

Rounds run one after the other on one clock: round r starts when round r - 1 has ended. In each
round the client population is drawn vectorized (:func:`~simulator.pipeline.clients.build_round`),
an arrival process hands it to the shuffler in arrival groups, the shuffler releases permuted
batches into a ``simpy.Store`` and the analyzer consumes them. SimPy events are per arrival
group and per batch, never per message.

Randomness: the generator passed in spawns independent children (``Generator.spawn``, i.e.
SeedSequence children) for the colluders, the arrivals (send times, delays, tie order),
dropouts, randomization and shuffling, so a run is reproducible from its generator.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import simpy

from shufflesim.simulator.errors import UserError
from shufflesim.simulator.pipeline.analyzer import Analyzer, BatchEpsilon
from shufflesim.simulator.pipeline.clients import Inbox, RoundStream, arrival_process, build_round
from shufflesim.simulator.pipeline.config import PipelineConfig
from shufflesim.simulator.pipeline.shuffler import (
    Batch,
    Permutation,
    shuffler_process,
    uniform_permutation,
)

_STREAMS = ("colluders", "arrivals", "dropout", "randomize", "shuffle")


@dataclass(frozen=True)
class RoundSummary:
    """Counts of one round: clients, those who dropped out, messages sent, released (in batches
    that reached the analyzer) and dropped by thresholding, and the round's time span."""

    round: int
    clients: int
    dropouts: int
    messages: int
    released: int
    thresholded: int
    start: float
    end: float


@dataclass(frozen=True)
class PipelineResult:
    """What a pipeline run produced.

    estimates[r]: the estimator's output on round r's released batches (None without an
        estimator or without data); estimate: the same on all rounds pooled.
    aggregates[r], aggregate: the corresponding sufficient statistics.
    batches: one row per released or dropped batch (columns of
        :data:`shufflesim.simulator.pipeline.analyzer.BATCHES_SCHEMA`).
    rounds: one :class:`RoundSummary` per round.
    colluding: the boolean mask of colluding clients.
    outputs: with ``keep_outputs``, the released batches in output order (reports and, as
        ground truth for tests and audits, the client of each message).
    streams: with ``keep_outputs``, each round's messages in arrival order (ground truth).
    """

    estimates: list
    estimate: np.ndarray | None
    aggregates: list
    aggregate: np.ndarray | None
    batches: pd.DataFrame
    rounds: list[RoundSummary]
    colluding: np.ndarray
    outputs: list[Batch] = field(default_factory=list)
    streams: list[RoundStream] = field(default_factory=list)
    #: with ``track_clients``: (rounds, n) honest size of the released batch that held each
    #: client's message in each round, 0 when none (dropped out, or its batch was dropped).
    member_sizes: np.ndarray | None = None

    @property
    def rounds_table(self) -> pd.DataFrame:
        return pd.DataFrame([vars(r) for r in self.rounds])


def run_pipeline(
    randomizer,
    values: np.ndarray,
    config: PipelineConfig,
    rng: np.random.Generator,
    *,
    epsilons: np.ndarray | None = None,
    estimator=None,
    batch_epsilon: BatchEpsilon | None = None,
    keep_outputs: bool = False,
    permutation: Permutation = uniform_permutation,
    track_clients: bool = False,
) -> PipelineResult:
    """Simulate ``config.rounds`` collection rounds of the clients holding ``values``.

    randomizer: a protocols randomizer (one message per client, or ``messages_per_client``
        messages for a multi-message randomizer); epsilons: optional per-client budgets (n,).
    estimator: object with ``estimate(aggregate, n)`` (e.g. protocols.estimators.make_estimator).
    batch_epsilon: ``honest_size -> central eps or None`` for the batches table.
    permutation: the shuffler's permutation; replace it only to inject faults in audits.
    track_clients: record which released batch held each client's message in every round
        (``PipelineResult.member_sizes``; simulator/pipeline/lifetime.py). A multi-message
        client is recorded with the last of its batches in a round.
    """
    values = np.asarray(values)
    if values.ndim != 1:
        raise UserError(f"values: expected one value per client (1-D), got shape {values.shape}")
    n = values.shape[0]
    if epsilons is not None:
        epsilons = np.asarray(epsilons, dtype=float)
        if epsilons.shape != (n,):
            raise UserError(f"epsilons: expected shape {(n,)}, got {epsilons.shape}")
    generators = dict(zip(_STREAMS, rng.spawn(len(_STREAMS)), strict=True))

    colluding = np.zeros(n, dtype=bool)
    colluding[generators["colluders"].permutation(n)[: config.colluding_count(n)]] = True

    env = simpy.Environment()
    batches = simpy.Store(env)
    analyzer = Analyzer(randomizer, config.rounds, batch_epsilon, keep_outputs,
                        track_clients=n if track_clients else None)
    drawn: list[tuple[int, int, int, float, float]] = []  # clients, dropouts, messages, span
    streams: list[RoundStream] = []

    def rounds():
        start = 0.0
        for r in range(config.rounds):
            stream = build_round(randomizer, values, epsilons, colluding, config, start,
                                 generators)
            inbox = Inbox(env, stream.start)
            env.process(arrival_process(env, stream, config.group_size, inbox))
            yield env.process(shuffler_process(
                env, r, stream, inbox, config, batches, generators["shuffle"], permutation
            ))
            drawn.append((stream.clients, stream.dropouts, stream.size, stream.start, stream.end))
            if keep_outputs:
                streams.append(stream)
            start = stream.end
        batches.put(None)

    env.process(rounds())
    env.process(analyzer.process(env, batches))
    env.run()

    summaries = [
        RoundSummary(r, clients, dropouts, messages, int(analyzer.released[r]),
                     int(analyzer.dropped[r]), start, end)
        for r, (clients, dropouts, messages, start, end) in enumerate(drawn)
    ]
    pooled = [a for a in analyzer.aggregates if a is not None]
    aggregate = sum(pooled[1:], pooled[0]) if pooled else None
    return PipelineResult(
        estimates=[
            analyzer.estimate(estimator, a, int(m))
            for a, m in zip(analyzer.aggregates, analyzer.released, strict=True)
        ],
        estimate=analyzer.estimate(estimator, aggregate, int(analyzer.released.sum())),
        aggregates=list(analyzer.aggregates),
        aggregate=aggregate,
        batches=analyzer.batches_table(),
        rounds=summaries,
        colluding=colluding,
        outputs=analyzer.outputs,
        streams=streams,
        member_sizes=analyzer.member_sizes,
    )
