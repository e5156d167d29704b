"""A user's shuffler that sees the messages (issue 29): what it returns, and whether its released
order is that of a uniform shuffler.

**The call.** ``shuffle(messages, rng)`` or ``shuffle(messages, rng, arrivals)``: ``messages`` is
one batch's reports in arrival order (leading axis: messages), ``arrivals`` a dict of arrays
aligned with them - ``time`` (arrival at the shuffler), ``sent`` (the client's send time) and
``rank`` (arrival rank in the round) - and the function returns the released sequence (an array
with the messages' trailing shape). It runs behind the user-code adapter (simulator/usercode.py:
every failure one line, stdout to stderr, the per-call time limit). The third argument is passed
when the function takes three positional parameters or one named ``arrivals``. A function with
the attribute ``batched = True`` is called once per block of equal-size batches instead:
messages (B, s) + shape, arrivals (B, s) each, and it returns (B, s') + shape, one row per batch
(a Python call per batch limits the pipeline level to MAX_SHUFFLER_CALLS batches per audit;
pipeline_level.py says what happens beyond).

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

from shufflesim.protocols.errors import ParameterError
from shufflesim.simulator.audit.loading import load_implementation
from shufflesim.simulator.audit.pipeline_batch import Release, released_batches
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

#: Batches a user's shuffler called once per batch (a Python call each) is given in one audit;
#: beyond it the attack rows run the audit's own uniform shuffler and the user's is called on a
#: sample of rounds for its checks (pipeline_level.py). A function with ``batched = True`` is
#: called once per block of equal-size batches and has no such cap.
MAX_SHUFFLER_CALLS = 20_000
#: Integer messages spanning fewer values than this get their ids without sorting.
_DIRECT_IDS = 1 << 16
#: Batches up to this size get the relative-order statistic by direct comparison (else FFT).
_DIRECT_SHIFTS = 64
#: One-hot cells (batches x classes x messages) per block of the relative-order statistic.
_ONEHOT_CELLS = 1 << 22


def block_ids(given: np.ndarray, released: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """Integer ids (numpy's order of the distinct messages) of two blocks of batches (B, s) +
    shape and (B, s') + shape, and the number of distinct messages."""
    b, s, r = given.shape[0], given.shape[1], released.shape[1]
    both = np.concatenate([given.reshape(b * s, -1), released.reshape(b * r, -1)])
    if both.shape[1] == 1 and both.dtype.kind in "iub" and both.size:
        low, high = int(both.min()), int(both.max())
        if high - low < _DIRECT_IDS:  # small integers: their offsets are ids in numpy's order
            present = np.zeros(high - low + 1, dtype=bool)
            flat = both[:, 0].astype(np.int64) - low
            present[flat] = True
            ids = np.cumsum(present)[flat] - 1
            return ids[: b * s].reshape(b, s), ids[b * s:].reshape(b, r), int(present.sum())
    if both.shape[1] == 1:
        _, ids = np.unique(both[:, 0], return_inverse=True)
    else:
        _, ids = np.unique(both, axis=0, return_inverse=True)
    ids = np.asarray(ids).reshape(-1)
    return ids[: b * s].reshape(b, s), ids[b * s:].reshape(b, r), int(ids.max(initial=-1)) + 1


def block_difference(a: np.ndarray, b: np.ndarray, k: int
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(dropped, duplicated, altered) per batch of id blocks a (B, s) and b (B, s') (the
    rule of :func:`multiset_difference`, row by row)."""
    rows = a.shape[0]
    if rows * k <= _DIRECT_IDS * 64:  # few ids: count them per batch directly
        ca = np.bincount((np.arange(rows)[:, None] * k + a).reshape(-1), minlength=rows * k)
        cb = np.bincount((np.arange(rows)[:, None] * k + b).reshape(-1), minlength=rows * k)
        diff = (ca - cb).reshape(rows, k)
        missing = np.clip(diff, 0, None).sum(axis=1)
        excess = np.clip(-diff, 0, None).sum(axis=1)
        altered = np.minimum(missing, excess)
        return missing - altered, excess - altered, altered
    keys_a = (np.arange(rows)[:, None] * k + a).reshape(-1)
    keys_b = (np.arange(rows)[:, None] * k + b).reshape(-1)
    keys, inverse = np.unique(np.concatenate([keys_a, keys_b]), return_inverse=True)
    inverse = np.asarray(inverse).reshape(-1)
    ca = np.bincount(inverse[: keys_a.size], minlength=keys.size)
    cb = np.bincount(inverse[keys_a.size:], minlength=keys.size)
    row = keys // max(k, 1)
    missing = np.bincount(row, weights=np.clip(ca - cb, 0, None), minlength=rows)
    excess = np.bincount(row, weights=np.clip(cb - ca, 0, None), minlength=rows)
    altered = np.minimum(missing, excess)
    return ((missing - altered).astype(np.int64), (excess - altered).astype(np.int64),
            altered.astype(np.int64))


def relative_order_rows(arrival: np.ndarray, released: np.ndarray, k: int) -> np.ndarray:
    """:func:`relative_order` of every row of two (B, s) id blocks; with more than MAX_CLASSES
    ids in the block they are merged modulo MAX_CLASSES (a coarser statistic, as valid)."""
    if k > MAX_CLASSES:
        arrival, released, k = arrival % MAX_CLASSES, released % MAX_CLASSES, MAX_CLASSES
    b, s = arrival.shape
    out = np.zeros(b, dtype=np.int64)
    if s <= _DIRECT_SHIFTS:  # short batches: compare every shift directly
        small = np.uint8 if k <= 256 else np.int32
        arrival, released = arrival.astype(small), released.astype(small)
        shifts = (np.arange(s)[:, None] + np.arange(s)[None, :]) % s  # [shift, j]
        step = max(1, _ONEHOT_CELLS // (s * s))
        for lo in range(0, b, step):
            r = released[lo:lo + step, None, :]
            best = np.zeros(r.shape[0], dtype=np.int64)
            for seq in (arrival[lo:lo + step], arrival[lo:lo + step, ::-1]):
                agree = (seq[:, shifts] == r).sum(axis=2, dtype=np.int16)
                best = np.maximum(best, agree.max(axis=1))
            out[lo:lo + step] = best
        return out
    step = max(1, _ONEHOT_CELLS // max(1, k * s))
    classes = np.arange(k)[None, :, None]
    for lo in range(0, b, step):
        r = released[lo:lo + step, None, :] == classes
        f_r = np.conj(np.fft.rfft(r.astype(float), axis=2))
        best = np.zeros(r.shape[0])
        for seq in (arrival[lo:lo + step], arrival[lo:lo + step, ::-1]):
            f_a = np.fft.rfft((seq[:, None, :] == classes).astype(float), axis=2)
            corr = np.fft.irfft(f_r * f_a, n=s, axis=2).sum(axis=1)
            best = np.maximum(best, corr.max(axis=1))
        out[lo:lo + step] = np.rint(best).astype(np.int64)
    return out


def content_order_rows(released: np.ndarray) -> np.ndarray:
    """:func:`content_order` of every row of a (B, s) id block."""
    b, s = released.shape
    if s < 3:
        return np.zeros(b)
    ranks = stats.rankdata(released, axis=1)
    ranks = ranks - ranks.mean(axis=1, keepdims=True)
    pos = np.arange(s) - (s - 1) / 2
    norm = np.sqrt((ranks**2).sum(axis=1) * (pos**2).sum())
    with np.errstate(invalid="ignore", divide="ignore"):
        r = np.abs(ranks @ pos) / norm
    return np.where(np.isfinite(r), r, 0.0)


@dataclasses.dataclass
class _Tally:
    wins: int = 0
    losses: int = 0

    def add(self, observed, reference) -> None:
        observed, reference = np.asarray(observed), np.asarray(reference)
        self.wins += int((observed > reference).sum())
        self.losses += int((observed < reference).sum())

    @property
    def p_value(self) -> float:
        n = self.wins + self.losses
        return 1.0 if n == 0 else float(stats.binom.sf(self.wins - 1, n, 0.5))


class MessageShuffler:
    """A user's shuffler applied to the released batches of pipeline rounds (module
    docstring), with the permutation and order checks tallied over every batch it shuffles.

    ``batched``: the function's attribute ``batched = True`` says it takes a block of B
    batches of equal size, messages (B, s) + shape and arrivals of shape (B, s), and returns
    (B, s') + shape (one call per block instead of one per batch)."""

    def __init__(self, function: Callable, source: str) -> None:
        self.function = function
        self.source = source
        self.arrivals = _takes_arrivals(function)
        self.batched = bool(getattr(function, "batched", False))
        self.batches = 0
        self.messages = 0
        self.dropped = self.duplicated = self.altered = 0
        self.faulty_batches = 0
        self.tallies = {name: _Tally() for name, _, _ in STATISTICS}
        #: set by the pipeline level when the attack rows did not run this shuffler
        self.scope = ""

    def _call(self, messages: np.ndarray, arrivals: dict, rng: np.random.Generator):
        args = (messages.copy(), rng) + ((arrivals,) if self.arrivals else ())
        with contained(FIELD, self.source, self.function):
            returned = self.function(*args)
        return numeric_array(returned, FIELD, self.source,
                             complex_ok=np.iscomplexobj(messages))  # planar points

    @staticmethod
    def _cast(out: np.ndarray, messages: np.ndarray) -> np.ndarray:
        if out.dtype != messages.dtype:  # e.g. floats holding the integer messages
            cast = out.astype(messages.dtype)
            if np.array_equal(cast, out):
                return cast
        return out

    def release(self, messages: np.ndarray, arrivals: dict, rng: np.random.Generator
                ) -> np.ndarray:
        """The user's released sequence for one batch (checked to be an array of messages)."""
        out = self._call(messages, arrivals, rng)
        if out.ndim == 0 or out.shape[1:] != messages.shape[1:]:
            raise UserCodeError(FIELD, self.source, f"returned shape {out.shape} for a batch "
                                f"of shape {messages.shape}: it must return messages")
        return self._cast(out, messages)

    def release_block(self, messages: np.ndarray, arrivals: dict, rng: np.random.Generator
                      ) -> np.ndarray:
        """A batched shuffler's release of a block of batches (B, s) + shape."""
        out = self._call(messages, arrivals, rng)
        if out.ndim < 2 or out.shape[0] != messages.shape[0] or \
                out.shape[2:] != messages.shape[2:]:
            raise UserCodeError(FIELD, self.source, f"returned shape {out.shape} for a block "
                                f"of batches of shape {messages.shape}: a batched shuffler "
                                "returns one row of messages per batch")
        return self._cast(out, messages)

    def release_rounds(self, rounds, rng: np.random.Generator,
                       reference: np.random.Generator):
        """The user's release of every released batch of a block of rounds
        (pipeline_batch.Rounds), as a pipeline_batch.Release; the checks are tallied."""
        trials, batch_index, slot, parts = [], [], [], []
        for size, (trial, index, first) in released_batches(rounds).items():
            where = first[:, None] + np.arange(size)
            given = rounds.reports[trial[:, None], where]
            meta = {"time": rounds.times[trial[:, None], where],
                    "sent": rounds.sent[trial[:, None], where],
                    "rank": where.astype(np.int64)}
            if self.batched:
                block = self.release_block(given, meta, rng)
                self.check_block(given, block, reference)
                width = block.shape[1]
                trials.append(np.repeat(trial, width))
                batch_index.append(np.repeat(index, width))
                slot.append(np.tile(np.arange(width), len(trial)))
                parts.append(block.reshape((-1,) + given.shape[2:]))
                continue
            outs = [self.release(given[i], {k: v[i] for k, v in meta.items()}, rng)
                    for i in range(len(trial))]
            lengths = np.array([len(o) for o in outs])
            for length in np.unique(lengths):  # checked in blocks of equal shapes
                pick = np.flatnonzero(lengths == length)
                self.check_block(given[pick], np.stack([outs[i] for i in pick]), reference)
            for i, out in enumerate(outs):
                trials.append(np.full(len(out), trial[i]))
                batch_index.append(np.full(len(out), index[i]))
                slot.append(np.arange(len(out)))
                parts.append(out)
        shape = rounds.reports.shape[2:]
        if not parts:
            empty = np.zeros(0, dtype=np.int64)
            return Release(rounds.trials, empty, empty,
                           np.zeros((0,) + shape, rounds.reports.dtype))
        trial_ids, batch_ids, slots = (np.concatenate(v) for v in (trials, batch_index, slot))
        width = int(slots.max(initial=0)) + 1
        composite = (trial_ids * (int(batch_ids.max(initial=0)) + 1) + batch_ids) * width + slots
        order = (slice(None) if np.all(np.diff(composite) > 0)  # e.g. one batch per round
                 else np.argsort(composite, kind="stable"))
        trial_ids = trial_ids[order]
        counts = np.bincount(trial_ids, minlength=rounds.trials)
        starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
        position = np.arange(trial_ids.size) - starts[trial_ids]
        return Release(rounds.trials, trial_ids, position, np.concatenate(parts)[order])

    def check_block(self, given: np.ndarray, released: np.ndarray,
                    rng: np.random.Generator) -> None:
        """Tally the checks of a block of batches: given (B, s) + shape in arrival order and
        the user's release (B, s') + shape (module docstring)."""
        b, s = given.shape[:2]
        self.batches += b
        self.messages += b * s
        a, r, k = block_ids(given, released)
        dropped, duplicated, altered = block_difference(a, r, k)
        self.dropped += int(dropped.sum())
        self.duplicated += int(duplicated.sum())
        self.altered += int(altered.sum())
        faulty = (dropped + duplicated + altered) > 0
        self.faulty_batches += int(faulty.sum())
        if s < 2 or faulty.all():
            return
        a, r = a[~faulty], r[~faulty]
        reference = np.take_along_axis(a, np.argsort(rng.random(a.shape), axis=1), axis=1)
        for name, _, relative in STATISTICS:
            if relative:
                observed, expected = (relative_order_rows(a, r, k),
                                      relative_order_rows(a, reference, k))
            else:
                observed, expected = content_order_rows(r), content_order_rows(reference)
            self.tallies[name].add(observed, expected)

    def verdicts(self, confidence: float) -> list[ImplementationVerdict]:
        """One verdict per permutation fault kind and per order statistic (module docstring),
        the latter at ``confidence`` on its own; every p-value goes into the run's family
        (grading.py), which decides the final verdict."""
        out = []
        where = f"{self.batches} batch(es), {self.messages} message(s){self.scope}"
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
                     f"untied batches (one-sided sign test p = {p:.3g}){self.scope}")
            bad = p < 1.0 - confidence
            sentence = (f"the shuffler {what} more often than a uniform shuffler: {tally}"
                        if bad else f"no evidence that the shuffler {what}: {tally}")
            out.append(ImplementationVerdict(name, VIOLATED if bad else CONSISTENT, sentence,
                                             confidence=confidence, p_value=p))
        return out


def load_shuffler(spec) -> MessageShuffler | None:
    """The user's shuffler named by ``spec`` (a callable, "path/file.py:function" or
    "module:function"; loading.load_implementation), or None; a bad name is an error on the
    field ``shuffler``."""
    if spec is None:
        return None
    try:
        loaded = load_implementation(spec)
    except ParameterError as error:
        raise ParameterError(FIELD, spec, error.requirement) from None
    return MessageShuffler(loaded.function, loaded.source)


def _past(kind: str) -> str:
    return {"drops": "dropped", "duplicates": "duplicated", "alterations": "altered"}[kind]
