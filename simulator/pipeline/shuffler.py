"""The shuffler: a SimPy process that buffers messages, releases batches and permutes them.

Rules (one round; times are the messages' arrival times at the shuffler):

* A batch opens when its first message reaches the empty buffer: at that message's arrival
  time, or at the previous release for messages that arrived while the previous batch filled.
* It is released at the arrival of its ``batch_size``-th message (reason ``size``), or
  ``timeout`` after it opened with every message that arrived by then, a message arriving at the
  expiry instant included (reason ``timeout``); when both happen at once the reason is ``size``.
* At the end of the round whatever is buffered is flushed (reason ``end``).
* A batch smaller than ``min_batch`` is dropped (thresholding) and recorded as dropped.
* A released batch is permuted uniformly (``rng.permutation``) before the analyzer sees it.

Because messages reach the shuffler in arrival order and leave first-in first-out, every batch is
a contiguous slice of the round's stream (:class:`~simulator.pipeline.clients.RoundStream`): the
buffer is the slice [lo, delivered) and a batch is a slice of it, so an arrival group can span two
batches. Deadlines are computed from the exact timestamps (never from SimPy's clock, which can
differ from them by rounding), so the schedule is exact and does not depend on ``group_size``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum

import numpy as np

from shufflesim.simulator.pipeline.clients import Inbox, RoundStream
from shufflesim.simulator.pipeline.config import PipelineConfig


class ReleaseReason(StrEnum):
    SIZE = "size"
    TIMEOUT = "timeout"
    END = "end"


#: ``permutation(rng, size)`` -> the output order of a batch (a permutation of range(size)).
Permutation = Callable[[np.random.Generator, int], np.ndarray]


def uniform_permutation(rng: np.random.Generator, size: int) -> np.ndarray:
    """A uniformly random permutation (numpy's Fisher-Yates)."""
    return rng.permutation(size)


@dataclass(frozen=True)
class Batch:
    """One batch as it leaves the shuffler (released or dropped).

    ``reports`` and ``clients`` are in output (shuffled) order and None for a dropped batch;
    ``clients`` is ground truth for tests and audits, not something the analyzer may use.
    """

    round: int
    index: int
    open_time: float
    release_time: float
    size: int
    honest_size: int
    dropped: bool
    reason: ReleaseReason
    reports: np.ndarray | None
    clients: np.ndarray | None
    #: honest blanket messages in the batch (multi-message clients; 0 for one message each)
    honest_blanket: int = 0


def shuffler_process(
    env,
    round_index: int,
    stream: RoundStream,
    inbox: Inbox,
    config: PipelineConfig,
    outbox,
    rng: np.random.Generator,
    permutation: Permutation = uniform_permutation,
):
    """SimPy process for one round: release every message of ``stream`` into ``outbox``."""
    times = stream.times
    total = stream.size
    batch_size = config.batch_size
    timeout = config.timeout
    lo = 0  # first message not yet released
    last_release = stream.start
    now = stream.start  # exact logical time
    count = 0

    def release(at: float, hi: int, reason: ReleaseReason) -> Batch:
        nonlocal lo, last_release, count
        size = hi - lo
        honest = int(stream.honest_cumsum[hi] - stream.honest_cumsum[lo])
        open_time = max(float(times[lo]), last_release)
        dropped = size < config.min_batch
        reports = clients = None
        if not dropped:
            order = lo + np.asarray(permutation(rng, size))
            reports = stream.reports[order]
            clients = stream.client[order]
        blanket = 0 if stream.blanket_cumsum is None else \
            int(stream.blanket_cumsum[hi] - stream.blanket_cumsum[lo])
        batch = Batch(round_index, count, open_time, at, size, honest, dropped, reason,
                      reports, clients, honest_blanket=blanket)
        lo, last_release, count = hi, at, count + 1
        return batch

    while True:
        delivered = inbox.delivered
        deadline, reason = math.inf, None
        if lo < delivered:
            if timeout is not None:
                deadline = max(float(times[lo]), last_release) + timeout
                reason = ReleaseReason.TIMEOUT
            if batch_size is not None and lo + batch_size <= delivered:
                size_deadline = float(times[lo + batch_size - 1])
                if size_deadline <= deadline:
                    deadline, reason = size_deadline, ReleaseReason.SIZE
        if deadline <= now:
            if delivered < total and times[delivered] <= deadline:
                # A message due by the deadline is still in flight (same-instant events):
                # take it in before deciding.
                yield inbox.signal
                now = max(now, inbox.time)
                continue
            if reason is ReleaseReason.SIZE:
                hi = lo + batch_size
            else:
                hi = lo + int(np.searchsorted(times[lo:delivered], deadline, side="right"))
            outbox.put(release(deadline, hi, reason))
            continue
        if inbox.closed:
            if lo < total:
                outbox.put(release(stream.end, total, ReleaseReason.END))
            return count
        if math.isinf(deadline):
            yield inbox.signal
        else:
            timer = env.timeout(max(0.0, deadline - env.now))
            fired = yield inbox.signal | timer
            if timer in fired:
                now = max(now, deadline)
        now = max(now, inbox.time)
