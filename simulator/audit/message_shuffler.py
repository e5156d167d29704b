"""A user's shuffler that sees the messages (issue 29): what it returns, and whether its released
order is that of a uniform shuffler.

**The call.** ``shuffle(messages, rng)`` or ``shuffle(messages, rng, arrivals)``: ``messages`` is
one batch's reports in arrival order (leading axis: messages), ``arrivals`` a dict of arrays
aligned with them - ``time`` (arrival at the shuffler), ``sent`` (the client's send time) and
``rank`` (arrival rank in the round) - and the function returns the released sequence (an array
with the messages' trailing shape). It runs behind the user-code adapter (simulator/usercode.py:
every failure one line, stdout to stderr, the per-call time limit). The third argument is passed
when the function takes three positional parameters or one named ``arrivals``.

**Is it a permutation?** The released multiset is compared with the batch's: with M messages
missing from the release and E present in excess, min(M, E) are *alterations* (a message
changed), M - min(M, E) *drops* and E - min(M, E) *duplicates*. Each kind is one verdict row;
any occurrence violates it (an exact finding, p-value 0).

**Is the order that of a uniform shuffler?** The shuffle model's bounds assume the released
order is a uniformly random permutation of the batch, independent of the messages and of their
arrival order. Two statistics of a batch of equal multisets test it:

* relative order: the largest number of positions at which the release agrees with the arrival
  sequence, over every cyclic shift of it and of its reverse (= N for a rotation, a reversal or
  no shuffling; about N/2 when half the batch stays in place);
* position-content: |Spearman correlation| between a message's released position and its value
  (the rank of the message among the batch's distinct messages, in numpy's lexicographic order):
  1 when the shuffler sorts by value.

Each is compared, batch by batch, with the same statistic of an independent uniform permutation
of the same batch drawn by the audit; under a uniform shuffler the two are exchangeable, so the
number of batches where the shuffler's is larger is Binomial(W + L, 1/2) given W + L untied
comparisons, and the one-sided sign test's p-value is exact whatever the batch sizes. Sorting by
value alone leaks nothing beyond the multiset (the shuffled output's information); the verdict
says the shuffler is not the uniform shuffler the bounds assume, and the attacks' rows say
whether that leaks.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable

import numpy as np
from scipy import stats

from shufflesim.simulator.audit.verdicts import CONSISTENT, VIOLATED, ImplementationVerdict
from shufflesim.simulator.usercode import UserCodeError, contained, numeric_array

FIELD = "shuffler"
#: Distinct messages of a batch kept apart by the relative-order statistic (more are hashed
#: into this many classes: a coarser statistic, as valid).
MAX_CLASSES = 64


def _takes_arrivals(function: Callable) -> bool:
    try:
        params = list(inspect.signature(function).parameters.values())
    except (TypeError, ValueError):
        return False
    if any(p.name == "arrivals" for p in params):
        return True
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return len(positional) >= 3 or any(p.kind is p.VAR_POSITIONAL for p in params)


def message_ids(messages: np.ndarray, released: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Integer ids of the distinct messages of both sequences, ordered as numpy orders them."""
    both = np.concatenate([messages.reshape(len(messages), -1),
                           released.reshape(len(released), -1)])
    if both.shape[1] == 1:
        _, ids = np.unique(both[:, 0], return_inverse=True)
    else:
        _, ids = np.unique(both, axis=0, return_inverse=True)
    ids = np.asarray(ids).reshape(-1)
    return ids[: len(messages)], ids[len(messages):]


def multiset_difference(given: np.ndarray, released: np.ndarray) -> tuple[int, int, int]:
    """(dropped, duplicated, altered) of a release against the batch (module docstring)."""
    a, b = message_ids(given, released)
    k = int(max(a.max(initial=-1), b.max(initial=-1))) + 1
    ca, cb = np.bincount(a, minlength=k), np.bincount(b, minlength=k)
    missing = int(np.clip(ca - cb, 0, None).sum())
    excess = int(np.clip(cb - ca, 0, None).sum())
    altered = min(missing, excess)
    return missing - altered, excess - altered, altered


def relative_order(arrival: np.ndarray, released: np.ndarray) -> int:
    """Largest agreement of ``released`` with a cyclic shift of ``arrival`` or of its reverse
    (integer ids; module docstring)."""
    n = arrival.size
    classes = np.unique(np.concatenate([arrival, released]))
    if classes.size > MAX_CLASSES:
        arrival, released = arrival % MAX_CLASSES, released % MAX_CLASSES
        classes = np.arange(MAX_CLASSES)
    onehot_r = (released[None, :] == classes[:, None]).astype(float)
    f_r = np.conj(np.fft.rfft(onehot_r, axis=1))
    best = 0
    for seq in (arrival, arrival[::-1]):
        onehot_a = (seq[None, :] == classes[:, None]).astype(float)
        corr = np.fft.irfft(f_r * np.fft.rfft(onehot_a, axis=1), n=n, axis=1).sum(axis=0)
        best = max(best, int(np.rint(corr.max())))
    return best


def content_order(released: np.ndarray) -> float:
    """|Spearman correlation| between released position and message rank (0 if constant)."""
    if released.size < 3 or np.all(released == released[0]):
        return 0.0
    ranks = stats.rankdata(released)
    positions = np.arange(released.size, dtype=float)
    r = np.corrcoef(positions, ranks)[0, 1]
    return float(abs(r)) if np.isfinite(r) else 0.0


STATISTICS = (("shuffler-relative-order", relative_order, True),
              ("shuffler-content-order", lambda arrival, released: content_order(released),
               False))


@dataclasses.dataclass
class _Tally:
    wins: int = 0
    losses: int = 0

    def add(self, observed, reference) -> None:
        if observed > reference:
            self.wins += 1
        elif observed < reference:
            self.losses += 1

    @property
    def p_value(self) -> float:
        n = self.wins + self.losses
        return 1.0 if n == 0 else float(stats.binom.sf(self.wins - 1, n, 0.5))


class MessageShuffler:
    """A user's shuffler applied to the released batches of a pipeline run (module docstring),
    with the permutation and order checks tallied over every batch it shuffles."""

    def __init__(self, function: Callable, source: str) -> None:
        self.function = function
        self.source = source
        self.arrivals = _takes_arrivals(function)
        self.batches = 0
        self.messages = 0
        self.dropped = self.duplicated = self.altered = 0
        self.faulty_batches = 0
        self.tallies = {name: _Tally() for name, _, _ in STATISTICS}

    def release(self, messages: np.ndarray, arrivals: dict, rng: np.random.Generator
                ) -> np.ndarray:
        """The user's released sequence for one batch (checked to be an array of messages)."""
        args = (messages.copy(), rng) + ((arrivals,) if self.arrivals else ())
        with contained(FIELD, self.source, self.function):
            returned = self.function(*args)
        out = numeric_array(returned, FIELD, self.source)
        if out.ndim == 0 or out.shape[1:] != messages.shape[1:]:
            raise UserCodeError(FIELD, self.source, f"returned shape {out.shape} for a batch "
                                f"of shape {messages.shape}: it must return messages")
        if out.dtype != messages.dtype:  # e.g. floats holding the integer messages
            cast = out.astype(messages.dtype)
            if np.array_equal(cast, out):
                return cast
        return out

    def shuffle_run(self, result, rng: np.random.Generator, reference: np.random.Generator):
        """``result`` (a pipeline run released in arrival order) with every released batch
        replaced by the user's release; the checks are tallied. Each released message is
        attributed to a sender with an equal message (ties in random order; an altered message
        to the arrival at its position), which only the goodness of fit uses."""
        outputs = []
        for batch in result.outputs:
            stream = result.streams[batch.round]
            position = np.zeros(int(stream.client.max(initial=-1)) + 1, dtype=np.int64)
            position[stream.client] = np.arange(stream.client.size)  # client -> arrival rank
            arrival = position[batch.clients]
            meta = {"time": stream.times[arrival], "sent": stream.sent[arrival],
                    "rank": arrival.astype(np.int64)}
            released = self.release(batch.reports, meta, rng)
            outputs.append(dataclasses.replace(
                batch, reports=released, size=int(len(released)),
                clients=self._senders(batch.reports, batch.clients, released, reference)))
            self._check(batch.reports, released, reference)
        return dataclasses.replace(result, outputs=outputs)

    @staticmethod
    def _senders(given, clients, released, rng) -> np.ndarray:
        a, b = message_ids(given, released)
        out = clients[np.minimum(np.arange(len(released)), len(clients) - 1)].copy()
        order = rng.permutation(len(a))
        pool: dict[int, list[int]] = {}
        for i in order:
            pool.setdefault(int(a[i]), []).append(int(clients[i]))
        for j, v in enumerate(b):
            stack = pool.get(int(v))
            if stack:
                out[j] = stack.pop()
        return out

    def _check(self, given, released, rng) -> None:
        self.batches += 1
        self.messages += len(given)
        dropped, duplicated, altered = multiset_difference(given, released)
        self.dropped += dropped
        self.duplicated += duplicated
        self.altered += altered
        if dropped or duplicated or altered:
            self.faulty_batches += 1
            return
        if len(given) < 2:
            return
        arrival, out = message_ids(given, released)
        reference = arrival[rng.permutation(arrival.size)]
        for name, statistic, _ in STATISTICS:
            self.tallies[name].add(statistic(arrival, out), statistic(arrival, reference))

    def verdicts(self, confidence: float) -> list[ImplementationVerdict]:
        """One verdict per permutation fault kind and per order statistic (module docstring),
        the latter at ``confidence`` on its own; every p-value goes into the run's family
        (grading.py), which decides the final verdict."""
        out = []
        where = f"{self.batches} batch(es), {self.messages} message(s)"
        for kind, count in (("drops", self.dropped), ("duplicates", self.duplicated),
                            ("alterations", self.altered)):
            bad = count > 0
            sentence = (f"the shuffler's release is not a permutation of its batch: {count} "
                        f"message(s) {_past(kind)} in {self.faulty_batches} of {where}"
                        if bad else f"no message {_past(kind)} ({where})")
            out.append(ImplementationVerdict(f"shuffler-{kind}", VIOLATED if bad else CONSISTENT,
                                             sentence, p_value=0.0 if bad else 1.0,
                                             exact=True))
        for name, _, relative in STATISTICS:
            t = self.tallies[name]
            p = t.p_value
            what = ("keeps the arrival order up to a cyclic shift or reversal"
                    if relative else "puts messages in an order that depends on their values")
            tally = (f"larger than a uniform permutation's in {t.wins} of {t.wins + t.losses} "
                     f"untied batches (one-sided sign test p = {p:.3g})")
            bad = p < 1.0 - confidence
            sentence = (f"the shuffler {what} more often than a uniform shuffler: {tally}"
                        if bad else f"no evidence that the shuffler {what}: {tally}")
            out.append(ImplementationVerdict(name, VIOLATED if bad else CONSISTENT, sentence,
                                             confidence=confidence, p_value=p))
        return out


def _past(kind: str) -> str:
    return {"drops": "dropped", "duplicates": "duplicated", "alterations": "altered"}[kind]
