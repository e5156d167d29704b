"""The client population of one collection round and its SimPy arrival process.

All per-message work is vectorized: send times, dropouts, randomization and network delays are
drawn for the whole population at once, and the messages are sorted by their arrival time at the
shuffler into a :class:`RoundStream`. The SimPy arrival process then hands that stream to the
shuffler in arrival groups (consecutive slices of at most ``group_size`` messages), one event per
group, never one per message.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from shufflesim.simulator.pipeline.config import ArrivalMode, DelayDistribution, PipelineConfig


def messages_per_client(randomizer) -> int:
    """m for a multi-message randomizer (attribute ``messages_per_client``), else 1.

    A multi-message randomizer returns reports of shape ``values.shape + (m,) + message_shape``
    from ``randomize`` and aggregates a flat array of messages with ``aggregate_messages``;
    each of a client's m messages travels and is shuffled separately.
    """
    m = getattr(randomizer, "messages_per_client", 1)
    return int(m)


@dataclass(frozen=True)
class RoundStream:
    """The messages of one round in order of arrival at the shuffler.

    times[i]: arrival time of the i-th message to arrive (non-decreasing).
    sent[i]: the time its client sent it (before the network delay).
    client[i]: the client that sent it; honest[i]: False for a colluding client's message.
    reports[i]: the message itself (leading axis: messages, then the message shape).
    honest_cumsum[i]: number of honest messages among the first i (length N + 1), so that the
        honest size of the slice [lo, hi) is honest_cumsum[hi] - honest_cumsum[lo].
    start, end: the round's start and end times (end = max(start + window, last arrival)).
    clients, dropouts: population size and how many clients did not send this round.
    blanket_cumsum[i]: multi-message clients (m > 1): number of honest blanket messages (a
        client's messages 1..m-1, input-independent) among the first i; None for m = 1.
    """

    times: np.ndarray
    sent: np.ndarray
    client: np.ndarray
    honest: np.ndarray
    reports: np.ndarray
    honest_cumsum: np.ndarray
    start: float
    end: float
    clients: int
    dropouts: int
    blanket_cumsum: np.ndarray | None = None

    @property
    def size(self) -> int:
        return int(self.times.shape[0])


def send_times(config: PipelineConfig, n: int, rng: np.random.Generator) -> np.ndarray:
    """Send time of each of n clients, relative to the round start."""
    if config.arrival is ArrivalMode.ALL_AT_ONCE:
        return np.zeros(n)
    if config.arrival is ArrivalMode.UNIFORM:
        return rng.uniform(0.0, config.window, size=n)
    # Poisson process of rate n / window: cumulative exponential gaps, given to the clients in
    # a uniformly random order.
    points = np.cumsum(rng.exponential(config.window / max(n, 1), size=n))
    return points[rng.permutation(n)]


def network_delays(config: PipelineConfig, size: int, rng: np.random.Generator) -> np.ndarray:
    """I.i.d. per-message network delays."""
    delay = config.delay
    if delay.distribution is DelayDistribution.EXPONENTIAL:
        return rng.exponential(delay.mean, size=size)
    if delay.distribution is DelayDistribution.UNIFORM:
        return rng.uniform(delay.low, delay.high, size=size)
    return np.zeros(size)


def build_round(
    randomizer,
    values: np.ndarray,
    epsilons: np.ndarray | None,
    colluding: np.ndarray,
    config: PipelineConfig,
    start: float,
    rngs: dict[str, np.random.Generator],
) -> RoundStream:
    """Draw one round: who sends, when, what, and in which order the messages reach the shuffler.

    ``values`` (n,) are the clients' data, ``epsilons`` (n,) their personal budgets or None,
    ``colluding`` (n,) a boolean mask. ``rngs`` holds the generators ``arrivals`` (send times,
    delays, tie order), ``dropout`` and ``randomize``.
    """
    n = values.shape[0]
    m = messages_per_client(randomizer)
    sends = rngs["dropout"].random(n) >= config.dropout if config.dropout > 0 else None
    sent_ids = np.arange(n) if sends is None else np.flatnonzero(sends)
    times_client = send_times(config, n, rngs["arrivals"])[sent_ids]

    eps = None if epsilons is None else epsilons[sent_ids]
    reports = np.asarray(randomizer.randomize(values[sent_ids], rngs["randomize"], epsilon=eps))
    # One row per message: a multi-message report has the message axis right after the users.
    reports = reports.reshape((sent_ids.size * m,) + reports.shape[1 + (m > 1):])
    client = np.repeat(sent_ids, m)
    sent = np.repeat(times_client, m) + start
    times = sent + network_delays(config, sent.size, rngs["arrivals"])

    # Sort by arrival. Equal times (everyone at once, or a client's m messages, without
    # delays) are broken in a uniformly random order; otherwise times are continuous and ties
    # have probability zero, so the faster unstable sort is used.
    if config.delay.distribution is DelayDistribution.NONE and (
        config.arrival is ArrivalMode.ALL_AT_ONCE or m > 1
    ):
        tie_break = rngs["arrivals"].permutation(times.size)
        order = tie_break[np.argsort(times[tie_break], kind="stable")]
    else:
        order = np.argsort(times)
    honest = ~colluding[client[order]]
    honest_cumsum = np.concatenate(([0], np.cumsum(honest, dtype=np.int64)))
    blanket_cumsum = None
    if m > 1:  # message j of a client is its report's position j; 1..m-1 are blanket messages
        blanket = (np.arange(client.size) % m > 0)[order] & honest
        blanket_cumsum = np.concatenate(([0], np.cumsum(blanket, dtype=np.int64)))
    times = times[order]
    last = float(times[-1]) if times.size else start
    return RoundStream(
        times=times,
        sent=sent[order],
        client=client[order],
        honest=honest,
        reports=reports[order],
        honest_cumsum=honest_cumsum,
        start=float(start),
        end=max(start + config.window, last),
        clients=n,
        dropouts=n - sent_ids.size,
        blanket_cumsum=blanket_cumsum,
    )


class Inbox:
    """What the arrival process has handed to the shuffler so far.

    ``delivered``: messages [0, delivered) of the round's stream have been handed over (a
    delivery happens at the arrival time of the group's first message, so the shuffler also sees
    the group's later timestamps, and only treats a message as buffered once its time has
    come). ``time``: the exact (logical) time of the last change; SimPy's clock can differ from
    it by rounding, so decisions use the logical times. ``closed``: the round has ended.
    ``signal``: an event triggered at every change.
    """

    def __init__(self, env, start: float) -> None:
        self.env = env
        self.delivered = 0
        self.time = start
        self.closed = False
        self.signal = env.event()

    def notify(self) -> None:
        signal, self.signal = self.signal, self.env.event()
        signal.succeed()


def arrival_process(env, stream: RoundStream, group_size: int, inbox: Inbox):
    """SimPy process: deliver the stream in arrival groups, then close the round at its end.

    All groups that start at the same instant are delivered in one step, so that a shuffler
    deadline at that instant sees all of them (see :mod:`shufflesim.simulator.pipeline.shuffler`).
    """
    starts = np.arange(0, stream.size, group_size)
    group_times = stream.times[starts]
    index = 0
    while index < starts.size:
        t = float(group_times[index])
        yield from wait_until(env, t)
        # every group whose first message has arrived by t
        index = int(np.searchsorted(group_times, t, side="right"))
        inbox.delivered = int(min(stream.size, starts[index - 1] + group_size))
        inbox.time = t
        inbox.notify()
    yield from wait_until(env, stream.end)
    inbox.time = stream.end
    inbox.closed = True
    inbox.notify()


def wait_until(env, t: float):
    """Wait until (about) the absolute time t; a no-op when it has passed."""
    if t > env.now:
        yield env.timeout(t - env.now)
