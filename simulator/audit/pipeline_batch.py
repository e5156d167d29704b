"""The audit's pipeline run per block of rounds (issue 29: "simulate per batch, not per message").

A pipeline-level trial is one collection round of the whole pipeline (clients -> shuffler ->
analyzer, simulator/pipeline/) with fixed client values. :func:`simulator.pipeline.run_pipeline`
runs rounds one after the other, one SimPy round at a time, and calls the client's code once per
round; 10^6 trials cost minutes. Here a block of T independent rounds is drawn at once, with
the same law round by round:

* the client's code is called **once per block**, on the (T, n) array of the clients' values
  (a multi-message client returns (T, n, m) + message shape: m messages per client, each
  travelling on its own);
* dropouts, send times (``arrival``: all at once, uniform or Poisson over the window) and
  network delays are drawn for the (T, n m) messages as simulator/pipeline/clients.py draws them
  for one round, and every round is sorted by arrival at the shuffler (ties, when there are no
  delays and every client sends at once or sends several messages, in a uniformly random
  order); a client that drops out sends nothing (its messages arrive at +inf and are not
  counted);
* :func:`schedule` computes the shuffler's batches with the rules of
  simulator/pipeline/shuffler.py (a batch opens at max(arrival of its first message, previous
  release); it is released at the arrival of its ``batch_size``-th message, or ``timeout`` after
  it opened with every message that arrived by then, and what is left is flushed at the round's
  end, max(window, last arrival); batches below ``min_batch`` are dropped). The rules are
  applied to all T rounds at once, one batch index at a time (a loop over the batches of a
  round, never over messages or rounds); tests/test_audit_pipeline_batch.py checks the
  schedule against the SimPy shuffler's on random configurations.
* the audit's own shuffler permutes each released batch uniformly (one argsort of random keys
  per block, batches kept in release order), or keeps arrival order (``permute = false``, a
  planted fault); a user's shuffler sees each released batch (message_shuffler.py).

Colluders only change the analyzer's honest counts, never the released messages, so they are
not drawn. What leaves the block is :class:`Release`: the released messages of every round in
release order, as flat arrays sorted by (round, position).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from shufflesim.simulator.pipeline.clients import messages_per_client
from shufflesim.simulator.pipeline.config import ArrivalMode, DelayDistribution, PipelineConfig

#: Messages per block of rounds (bounded memory: a few arrays of this many messages).
MESSAGES_PER_BLOCK = 1 << 21


def rounds_per_block(messages_per_round: int) -> int:
    """Rounds per block so that a block holds about MESSAGES_PER_BLOCK messages."""
    return max(1, MESSAGES_PER_BLOCK // max(1, messages_per_round))


@dataclasses.dataclass(frozen=True)
class Rounds:
    """A block of T rounds, each round's N = n m message slots in arrival order.

    times, sent: (T, N) arrival at the shuffler and send time (+inf: the client dropped out);
    client: (T, N) the sender; reports: (T, N) + message shape; count: (T,) messages sent;
    end: (T,) the round's end; batch: (T, N) index of the batch in the round (-1: not sent);
    kept: (T, N) the message is in a released batch (not dropped by ``min_batch``)."""

    times: np.ndarray
    sent: np.ndarray
    client: np.ndarray
    reports: np.ndarray
    count: np.ndarray
    end: np.ndarray
    batch: np.ndarray
    kept: np.ndarray

    @property
    def trials(self) -> int:
        return int(self.times.shape[0])

    def user_rank(self, user: int = 0) -> np.ndarray:
        """Arrival rank of ``user``'s first message in each round (-1: it did not send)."""
        hit = (self.client == user) & np.isfinite(self.times)
        return np.where(hit.any(axis=1), np.argmax(hit, axis=1), -1)


def _send_times(config: PipelineConfig, shape: tuple[int, int], rng) -> np.ndarray:
    t, n = shape
    if config.arrival is ArrivalMode.ALL_AT_ONCE:
        return np.zeros(shape)
    if config.arrival is ArrivalMode.UNIFORM:
        return rng.uniform(0.0, config.window, size=shape)
    points = np.cumsum(rng.exponential(config.window / max(n, 1), size=shape), axis=1)
    return rng.permuted(points, axis=1)  # a Poisson process's points, to clients at random


def _delays(config: PipelineConfig, shape, rng) -> np.ndarray:
    delay = config.delay
    if delay.distribution is DelayDistribution.EXPONENTIAL:
        return rng.exponential(delay.mean, size=shape)
    if delay.distribution is DelayDistribution.UNIFORM:
        return rng.uniform(delay.low, delay.high, size=shape)
    return np.zeros(shape)


def draw_rounds(randomizer, values: np.ndarray, config: PipelineConfig, trials: int,
                rng: np.random.Generator) -> Rounds:
    """T = ``trials`` independent rounds of the clients holding ``values`` (n,) (module
    docstring); the client's ``randomize`` is called once, on a (T, n) array."""
    values = np.asarray(values)
    n = values.shape[0]
    m = messages_per_client(randomizer)
    streams = rng.spawn(3)  # arrivals, dropout, randomize
    sends = (streams[1].random((trials, n)) >= config.dropout if config.dropout > 0
             else np.ones((trials, n), dtype=bool))
    send = _send_times(config, (trials, n), streams[0])
    reports = np.asarray(randomizer.randomize(np.broadcast_to(values, (trials, n)), streams[2]))
    reports = reports.reshape((trials, n * m) + reports.shape[2 + (m > 1):])
    sent = np.repeat(send, m, axis=1) if m > 1 else send
    delayed = config.delay.distribution is not DelayDistribution.NONE
    times = sent + _delays(config, sent.shape, streams[0]) if delayed else sent
    if config.dropout > 0:
        times = np.where(np.repeat(sends, m, axis=1), times, np.inf)
    if not delayed and (config.arrival is ArrivalMode.ALL_AT_ONCE or m > 1):
        order = np.lexsort((streams[0].random(times.shape), times), axis=1)  # random ties
    else:
        order = np.argsort(times, axis=1)
    times = np.take_along_axis(times, order, axis=1)
    sent = times if sent is times else np.take_along_axis(sent, order, axis=1)
    client = order // m if m > 1 else order
    take = order.reshape(order.shape + (1,) * (reports.ndim - 2))
    reports = np.take_along_axis(reports, take, axis=1)
    count = sends.sum(axis=1) * m if config.dropout > 0 else np.full(trials, n * m)
    last = times[np.arange(trials), np.maximum(count - 1, 0)]
    end = np.maximum(config.window, np.where(count > 0, last, 0.0))
    batch, kept = schedule(times, count, end, config)
    return Rounds(times, sent, client, reports, count, end, batch, kept)


def one_shuffle(n: int, config: PipelineConfig) -> bool:
    """Every round releases its n messages as one uniformly shuffled batch: no dropout, no
    timeout, no size trigger below n. The released multiset is then the shuffle model's, so
    the claim's own eps at the audited pair (shuffle_level.claim_pair_epsilon) bounds what any
    statistic of it can certify under the claim."""
    return (config.dropout == 0 and config.timeout is None
            and (config.batch_size is None or config.batch_size >= n))


def schedule(times: np.ndarray, count: np.ndarray, end: np.ndarray, config: PipelineConfig
             ) -> tuple[np.ndarray, np.ndarray]:
    """(batch index of every message (-1: not sent), whether its batch is released) of T rounds
    with sorted arrival ``times`` (T, N) (+inf after the ``count`` sent), rounds starting at 0
    and ending at ``end`` (the rules of simulator/pipeline/shuffler.py; module docstring)."""
    t, width = times.shape
    slots = np.arange(width)
    if config.batch_size is None and config.timeout is None:  # one batch: the round's end
        sent = slots < count[:, None]
        return np.where(sent, 0, -1), sent & (count >= config.min_batch)[:, None]
    batch = np.full((t, width), -1, dtype=np.int64)
    kept = np.zeros((t, width), dtype=bool)
    lo = np.zeros(t, dtype=np.int64)
    last = np.zeros(t)
    size_cap, timeout = config.batch_size, config.timeout
    k = 0
    while True:
        rows = np.flatnonzero(lo < count)
        if rows.size == 0:
            return batch, kept
        first, c = lo[rows], count[rows]
        deadline = np.full(rows.size, np.inf)
        if timeout is not None:
            deadline = np.maximum(times[rows, first], last[rows]) + timeout
        by_size = np.zeros(rows.size, dtype=bool)
        if size_cap is not None:
            full = first + size_cap <= c
            at = times[rows, np.minimum(first + size_cap - 1, width - 1)]
            by_size = full & (at <= deadline)
            deadline = np.where(by_size, at, deadline)
        flush = ~by_size & (deadline > end[rows])  # the round ends first: flush the rest
        if size_cap is None and timeout is None:
            hi = c
        else:
            arrived = (times[rows] <= deadline[:, None]).sum(axis=1)
            hi = np.where(by_size, first + (size_cap or 0), np.where(flush, c, arrived))
        release = np.where(flush, end[rows], deadline)
        inside = (slots >= first[:, None]) & (slots < hi[:, None])
        batch[rows] = np.where(inside, k, batch[rows])
        if (hi - first >= config.min_batch).any():
            keep = inside & (hi - first >= config.min_batch)[:, None]
            kept[rows] |= keep
        lo[rows], last[rows] = hi, release
        k += 1


@dataclasses.dataclass(frozen=True)
class Release:
    """The released messages of T rounds, flat and sorted by (round, position): ``trial``,
    ``position`` (in the round's released batches concatenated in release order) and
    ``reports`` (leading axis: messages)."""

    trials: int
    trial: np.ndarray
    position: np.ndarray
    reports: np.ndarray

    def at(self, rank: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(whether round t released a message at position rank[t], its index in the flat
        arrays)."""
        counts = np.bincount(self.trial, minlength=self.trials)
        starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
        present = (rank >= 0) & (rank < counts)
        return present, np.where(present, starts + np.maximum(rank, 0), 0)


def audit_shuffle_release(rounds: Rounds, rng: np.random.Generator, permute: bool = True
                          ) -> Release:
    """The audit's own shuffler: every released batch permuted uniformly (``permute``) or in
    arrival order, batches in release order (module docstring)."""
    t, width = rounds.batch.shape
    jitter = rng.random((t, width)) if permute else np.arange(width) / width
    return _release_by_key(rounds, np.where(rounds.kept, rounds.batch + jitter, np.inf))


def _release_by_key(rounds: Rounds, key: np.ndarray) -> Release:
    """The messages with a finite ``key`` in increasing key order, round by round."""
    t, width = key.shape
    order = np.argsort(key, axis=1)
    take = order.reshape(order.shape + (1,) * (rounds.reports.ndim - 2))
    reports = np.take_along_axis(rounds.reports, take, axis=1)
    if rounds.kept.all():  # every round releases all its slots
        return Release(t, np.repeat(np.arange(t), width), np.tile(np.arange(width), t),
                       reports.reshape((t * width,) + reports.shape[2:]))
    mask = np.arange(width) < np.isfinite(key).sum(axis=1)[:, None]
    trial = np.broadcast_to(np.arange(t)[:, None], (t, width))[mask]
    position = np.broadcast_to(np.arange(width), (t, width))[mask]
    return Release(t, trial, position, reports[mask])


def released_batches(rounds: Rounds) -> dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """The released batches grouped by size: size -> (round (B,), batch index (B,), first
    arrival slot (B,)), every batch of every round once."""
    starts = (np.diff(rounds.batch, axis=1, prepend=-1) != 0) & (rounds.batch >= 0)
    trial, first = np.nonzero(starts)
    index = rounds.batch[trial, first]
    rows, slots = np.nonzero(rounds.batch >= 0)
    width = int(rounds.batch.max(initial=-1)) + 1
    sizes = np.bincount(rows * width + rounds.batch[rows, slots],
                        minlength=rounds.trials * width)
    size = sizes[trial * width + index]
    released = rounds.kept[trial, first]
    out = {}
    for s in np.unique(size[released]):
        pick = released & (size == s)
        out[int(s)] = (trial[pick], index[pick], first[pick])
    return out


def permutation_release(rounds: Rounds, permutation, rng: np.random.Generator) -> Release:
    """The released batches permuted by ``permutation(rng, size)`` (a planted fault of the
    audit's own shuffler, e.g. one that does not permute), called once per released batch."""
    t, width = rounds.batch.shape
    key = np.full((t, width), np.inf)
    for size, (trial, index, first) in released_batches(rounds).items():
        for i in range(trial.size):
            perm = np.asarray(permutation(rng, size))
            key[trial[i], first[i] + perm] = index[i] + np.arange(size) / size
    return _release_by_key(rounds, key)
