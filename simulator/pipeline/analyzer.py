"""The analyzer: a SimPy process that consumes batches, aggregates them and records each batch.

For every batch it records round, index, open and release time, size, honest size, whether it
was dropped and why it was released, and the central epsilon of a released batch for its honest
size: amplification by shuffling depends on how many honest messages were actually shuffled
together (000 Sec. 2, 004 Sec. 3: the bound is evaluated with n = the batch's honest size).
That epsilon comes from a callable ``batch_epsilon(honest_size) -> float | None`` (None: not
available, e.g. no bound configured); values are cached by size.

Multi-message clients (``messages_per_client`` m = 1 + b > 1): sizes count messages, and
``honest_blanket`` the batch's honest blanket (input-independent) messages B. The batch's
epsilon is evaluated in users, at n = floor(B / b) (:func:`privacy_size`): the bounds of
protocols.bounds.multi_message see a victim's input message among N = n b blanket messages, and
every other message of the batch is independent of the victim (a post-processing).

Its estimates are those of the scenario's estimator applied to the sum of the aggregates of the
released batches, with n = the number of released messages per client message (dropped batches
and dropped-out clients are simply absent from the data the analyzer sees).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from shufflesim.simulator.pipeline.clients import messages_per_client
from shufflesim.simulator.pipeline.shuffler import Batch
from shufflesim.simulator.results.records import Record

BatchEpsilon = Callable[[int], "float | None"]

#: Columns of the batches table (one row per released or dropped batch).
@dataclass(frozen=True)
class BatchRow(Record):
    """One released or dropped batch (the analyzer's columns of batches.parquet)."""

    round: int
    batch: int
    open_time: float
    release_time: float
    size: int
    honest_size: int
    honest_blanket: int
    dropped: bool
    reason: str
    epsilon: float | None


BATCHES_SCHEMA = BatchRow.schema()


def aggregate_messages(randomizer, reports: np.ndarray) -> np.ndarray:
    """The randomizer's statistic of a flat array of messages (leading axis: messages)."""
    if messages_per_client(randomizer) > 1:
        return np.asarray(randomizer.aggregate_messages(reports))
    return np.asarray(randomizer.aggregate(reports))


def privacy_size(randomizer, batch: Batch) -> int:
    """The n at which a batch's central epsilon is evaluated: its honest size (one message per
    client), or floor(honest blanket messages / b) users for m = 1 + b > 1 (module docstring)."""
    m = messages_per_client(randomizer)
    return batch.honest_size if m == 1 else batch.honest_blanket // (m - 1)


class EpsilonCache:
    """``batch_epsilon`` memoized by honest size (None when no callable is given)."""

    def __init__(self, batch_epsilon: BatchEpsilon | None) -> None:
        self._function = batch_epsilon
        self._cache: dict[int, float | None] = {}

    def __call__(self, honest_size: int) -> float | None:
        if self._function is None:
            return None
        if honest_size not in self._cache:
            value = self._function(honest_size)
            self._cache[honest_size] = None if value is None else float(value)
        return self._cache[honest_size]


class Analyzer:
    """Consumes the shuffler's batches (see the module docstring)."""

    def __init__(
        self,
        randomizer,
        rounds: int,
        batch_epsilon: BatchEpsilon | None = None,
        keep_outputs: bool = False,
        track_clients: int | None = None,
    ) -> None:
        self.randomizer = randomizer
        #: with ``track_clients = n``: member_sizes[r, i] = honest size of the released batch
        #: that held client i's message in round r (0: none; per-user lifetime accounting).
        self.member_sizes = (None if track_clients is None
                             else np.zeros((rounds, track_clients), dtype=np.int64))
        self.epsilon = EpsilonCache(batch_epsilon)
        self.keep_outputs = keep_outputs
        self.rows: list[tuple] = []
        self.aggregates: list[np.ndarray | None] = [None] * rounds
        self.released: np.ndarray = np.zeros(rounds, dtype=np.int64)
        self.dropped: np.ndarray = np.zeros(rounds, dtype=np.int64)
        self.outputs: list[Batch] = []

    def process(self, env, inbox):
        """SimPy process: consume batches from the store ``inbox`` until it yields None."""
        while True:
            batch = yield inbox.get()
            if batch is None:
                return
            self.consume(batch)

    def consume(self, batch: Batch) -> None:
        epsilon = None
        if batch.dropped:
            self.dropped[batch.round] += batch.size
        else:
            statistic = aggregate_messages(self.randomizer, batch.reports)
            current = self.aggregates[batch.round]
            self.aggregates[batch.round] = statistic if current is None else current + statistic
            self.released[batch.round] += batch.size
            epsilon = self.epsilon(privacy_size(self.randomizer, batch))
            if self.member_sizes is not None:
                self.member_sizes[batch.round, batch.clients] = batch.honest_size
            if self.keep_outputs:
                self.outputs.append(batch)
        self.rows.append((
            batch.round, batch.index, batch.open_time, batch.release_time, batch.size,
            batch.honest_size, batch.honest_blanket, batch.dropped, batch.reason.value,
            epsilon,
        ))

    def batches_table(self) -> pd.DataFrame:
        """One row per batch, columns as in :data:`BATCHES_SCHEMA` (epsilon: nullable Float64)."""
        columns = list(zip(*self.rows, strict=True)) if self.rows else [()] * len(BATCHES_SCHEMA)
        dtypes = {"epsilon": "Float64", "reason": "string", "dropped": "bool",
                  "open_time": "float64", "release_time": "float64"}
        return pd.DataFrame({
            f.name: pd.array(list(col), dtype=dtypes.get(f.name, "int64"))
            for f, col in zip(BATCHES_SCHEMA, columns, strict=True)
        })

    def estimate(self, estimator, aggregate: np.ndarray | None, messages: int):
        """The estimator applied to an aggregate of ``messages`` messages (None if no data)."""
        if estimator is None or aggregate is None or messages == 0:
            return None
        clients = messages / messages_per_client(self.randomizer)
        if float(clients).is_integer():
            clients = int(clients)
        return np.asarray(estimator.estimate(aggregate, clients))

