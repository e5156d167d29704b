"""Shuffle level of multi-message randomizers (issue 15 item 1; protocols/randomizers/
multi_message/base.py has their contract): trials of n users' message multisets, attacked on
the messages, beside the exact lower bound of protocols/bounds/multi_message.

Trials. X0 = (x0, x*, ..., x*) and X1 = (x1, x*, ..., x*) differ in user 1's value. A trial of
world w is the randomizer's (or the implementation under test's) ``randomize`` of the n values:
n m messages (m = 1 + b: one input message and b blanket messages per user), of which the
analyzer sees the multiset. Every statistic below is a symmetric function of the messages, so it
is a function of the shuffled view; any such statistic gives a valid lower bound (data
processing). The project's own sampler is run through its exact aggregate sampler when its
aggregate is the histogram of scalar messages (balcer, balls_into_bins, pure_dump, mix_dump:
the statistics below are functions of that histogram); cheu's aggregate (column sums) is not,
so its trials, and every implementation's, go through ``randomize``. Events are chosen on
held-out selection trials and evaluated on fresh ones
(events.py, Clopper-Pearson, the error level split over every row: shuffle_level.attack_rows).

Attacks (the registered names ``lr`` and ``count``, on messages instead of output groups):

* ``lr``: the score log sum_k a(y_k) - log sum_k b(y_k) over the n m messages y_k, with
  a = P_x0 / ref and b = P_x1 / ref, ref = ((n - 1) P_x* + n b B) / (n - 1 + n b) the mean law
  of the other messages (B: the blanket law). When every other message is a blanket message
  (the blanket-only model of protocols/bounds/multi_message/models.py) this is exactly the log
  likelihood ratio of the view; otherwise it approximates it (the lower bound stays valid: it is
  a fixed statistic). Scores are cut at ``resolution - 1`` quantiles of the pooled selection
  scores (fixed before the evaluation trials are drawn); a score with an infinite side (a
  message impossible under the other world) lands in the end bins.
* ``count``: the number of messages more likely under x0 than under x1 (``count[x0>x1]``) and
  the reverse (``count[x1>x0]``): the counts of cells 0 and 1 of the cells model.

Exact comparison: per direction, the eps at delta of the pair's exact lower model
(protocols.bounds.multi_message.models.pair_model, or the thinned model when the pair has no
two-count model) with N = n b blanket messages; the default triple is the one named by
``multi-message-exact-lower``. An implementation under test gets a pooled goodness of fit of its
messages per world (chi-square over the message index against P_xw + (n - 1) P_x* + n b B) when
the message alphabet can be enumerated.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Callable

import numpy as np
from scipy.special import logsumexp

from shufflesim.protocols.bounds.engine.core import epsilon_of_delta
from shufflesim.protocols.bounds.multi_message.bounds import (
    EPS_MAX_INFINITE,
    RTOL,
    blanket_count,
    exact_lower_bound,
)
from shufflesim.protocols.bounds.multi_message.models import pair_model, thinned_model
from shufflesim.protocols.errors import ParameterError, require
from shufflesim.protocols.randomizers.base import MAX_ENUMERABLE_OUTPUTS
from shufflesim.simulator.audit.randomizer_level import FitResult, chi_square_fit
from shufflesim.simulator.audit.sampling import child, chunk_sizes
from shufflesim.simulator.audit.shuffle_level import (
    AttackAudit,
    AuditOptions,
    attack_rows,
    check_deltas,
)

#: Messages per chunk of trials (trials per chunk x n m).
MESSAGES_PER_CHUNK = 1 << 21
#: Relative tolerance below which two log-probabilities count as equal (count attacks).
LOG_TOLERANCE = 1e-9


def is_multi_message(randomizer) -> bool:
    """A multi-message randomizer, or an implementation claiming one."""
    return bool(getattr(getattr(randomizer, "declared", randomizer), "multi_message", False))


def default_multi_triple(randomizer, n: int, delta: float) -> tuple:
    """(x0, x1, x*) of ``multi-message-exact-lower`` at (n, delta) (its note names them), else
    the first declared candidate triple."""
    try:
        note = exact_lower_bound(randomizer, n, delta).note
    except ParameterError:
        note = ""
    match = re.search(r"pair \((\d+), (\d+)\), others at (\d+)", note)
    if match:
        return tuple(int(v) for v in match.groups())
    return tuple(randomizer.neighbour_candidates().triples[0])


def exact_multi_by_direction(randomizer, n: int, x0, x1, x_star, delta: float):
    """(eps, error) per direction (x0 vs x1, x1 vs x0) of the exact lower model of the pair
    with the others at x*, or (None, None) where the pair has no supported model."""
    big_n = blanket_count(randomizer, n)
    p = float(randomizer.variation_ratio_parameters().p)
    eps_max = EPS_MAX_INFINITE if math.isinf(p) else min(math.log(p), EPS_MAX_INFINITE)
    out = []
    for a, b in ((x0, x1), (x1, x0)):
        model = pair_model(randomizer, a, b, x_star, n)
        if model is None:
            model = thinned_model(randomizer, a, b, x_star, n)
        if model is None:
            out.append((None, None))
            continue
        found = epsilon_of_delta(lambda e, m=model: m.delta(big_n, e), delta, "lower",
                                 eps_max=eps_max, rtol=RTOL)
        out.append((float(found.value), float(found.error)))
    return tuple(out)


class MessageStatistics:
    """Per-message log-likelihood ratios of the pair and the trials' statistics (module
    docstring)."""

    def __init__(self, declared, x0, x1, x_star, n: int) -> None:
        self.declared = declared
        self.x = (x0, x1)
        self.x_star = x_star
        self.n = n
        self.b = int(declared.blanket_messages_per_client)
        self.m = 1 + self.b
        self.shape = tuple(declared.message_shape)

    def log_ratios(self, messages: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(log a, log b) of every message (leading axes of ``messages``)."""
        d, n, b = self.declared, self.n, self.b
        with np.errstate(divide="ignore"):
            lp0 = np.asarray(d.message_log_prob(self.x[0], messages), dtype=float)
            lp1 = np.asarray(d.message_log_prob(self.x[1], messages), dtype=float)
            lps = np.asarray(d.message_log_prob(self.x_star, messages), dtype=float)
            parts = [lps + math.log(n - 1)]
            if b:
                parts.append(np.asarray(d.blanket_log_prob(messages), dtype=float)
                             + math.log(n * b))
            ref = np.logaddexp.reduce(parts, axis=0) - math.log(n - 1 + n * b)
        return lp0 - ref, lp1 - ref

    def histogram_statistics(self, histograms: np.ndarray) -> dict[str, np.ndarray]:
        """The same statistics from message histograms (trials, K) over the message index
        (they are symmetric functions of the messages)."""
        la, lb = self._alphabet_ratios()
        h = np.asarray(histograms, dtype=float)
        with np.errstate(invalid="ignore", divide="ignore"):
            sa = _weighted_logsumexp(la, h)
            sb = _weighted_logsumexp(lb, h)
            score = sa - sb
        score = np.where(np.isnan(score), 0.0, score)
        up, down = self._cells(la, lb)
        return {"lr": score, "count[x0>x1]": np.asarray(histograms) @ up.astype(np.int64),
                "count[x1>x0]": np.asarray(histograms) @ down.astype(np.int64)}

    def _alphabet_ratios(self) -> tuple[np.ndarray, np.ndarray]:
        if not hasattr(self, "_ratios"):
            alphabet = self.declared.messages_from_index(
                np.arange(int(self.declared.message_alphabet_size)))
            self._ratios = self.log_ratios(alphabet)
        return self._ratios

    @staticmethod
    def _cells(la: np.ndarray, lb: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Messages more likely under x0 than x1 (beyond the tolerance), and the reverse."""
        with np.errstate(invalid="ignore"):  # a message impossible under both: neither cell
            gap = la - lb
        tol = LOG_TOLERANCE * np.maximum(1.0, np.abs(np.where(np.isfinite(la), la, 0.0)))
        return gap > tol, gap < -tol

    def statistics(self, reports: np.ndarray) -> dict[str, np.ndarray]:
        """The lr score and the two counts of every trial (reports: (trials, n, m) + shape)."""
        trials = reports.shape[0]
        messages = reports.reshape((trials, self.n * self.m) + self.shape)
        la, lb = self.log_ratios(messages)
        with np.errstate(invalid="ignore"):
            sa, sb = logsumexp(la, axis=1), logsumexp(lb, axis=1)
            score = sa - sb
        score = np.where(np.isnan(score), 0.0, score)  # both sides infinite: no information
        up, down = self._cells(la, lb)
        return {"lr": score, "count[x0>x1]": up.sum(axis=1), "count[x1>x0]": down.sum(axis=1)}

    def flat_statistics(self, trial: np.ndarray, messages: np.ndarray, trials: int
                        ) -> dict[str, np.ndarray]:
        """The same statistics of ``trials`` trials whose messages are given flat, each with
        its trial index (sorted): the released messages of pipeline rounds."""
        la, lb = self.log_ratios(messages)
        with np.errstate(invalid="ignore"):
            score = segment_logsumexp(la, trial, trials) - segment_logsumexp(lb, trial, trials)
        up, down = self._cells(la, lb)
        return {"lr": np.where(np.isnan(score), 0.0, score),
                "count[x0>x1]": np.bincount(trial, weights=up, minlength=trials).astype(np.int64),
                "count[x1>x0]": np.bincount(trial, weights=down,
                                            minlength=trials).astype(np.int64)}


def segment_logsumexp(values: np.ndarray, segment: np.ndarray, segments: int) -> np.ndarray:
    """log sum of e^values per segment (``segment`` sorted; -inf for an empty segment)."""
    top = np.full(segments, -np.inf)
    if values.size:
        starts = np.flatnonzero(np.diff(segment, prepend=-1) != 0)
        top[segment[starts]] = np.maximum.reduceat(values, starts)
    shift = np.where(np.isfinite(top), top, 0.0)
    with np.errstate(invalid="ignore", over="ignore"):
        terms = np.exp(values - shift[segment])
    with np.errstate(divide="ignore"):
        return np.log(np.bincount(segment, weights=terms, minlength=segments)) + shift


def _weighted_logsumexp(values: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """log sum_k w_k e^{v_k} per row of ``weights`` (-inf where every weighted term is 0)."""
    live = weights > 0
    top = np.max(np.where(live, values[None, :], -np.inf), axis=1)
    shift = np.where(np.isfinite(top), top, 0.0)
    terms = np.where(live, weights * np.exp(values[None, :] - shift[:, None]), 0.0)
    return np.log(terms.sum(axis=1)) + shift


def histogram_aggregate(randomizer) -> bool:
    """True when the randomizer's aggregate is the histogram of its scalar messages over the
    message index (one of each message aggregates to all ones)."""
    if tuple(randomizer.message_shape) or not getattr(randomizer, "has_aggregate_sampler",
                                                      False):
        return False
    size = int(randomizer.message_alphabet_size)
    if size > MAX_ENUMERABLE_OUTPUTS or int(randomizer.aggregate_size) != size:
        return False
    one_each = randomizer.messages_from_index(np.arange(size))[None, :]
    return bool(np.array_equal(np.asarray(randomizer.aggregate_messages(one_each))[0],
                               np.ones(size)))


class MultiMessageSampler:
    """Trials of world w from ``randomize`` (the declared sampler or the implementation) or,
    for the project's own sampler when its aggregate is the message histogram, from its exact
    aggregate sampler (``sample_aggregate`` of the input histogram: same law, no per-message
    reports); the pooled message counts of an implementation for its goodness of fit."""

    def __init__(self, randomizer, stats: MessageStatistics, fit: bool) -> None:
        self.randomizer = randomizer
        self.stats = stats
        declared = stats.declared
        size = int(declared.message_alphabet_size)
        self.fit = fit and size <= MAX_ENUMERABLE_OUTPUTS
        self.counts = [np.zeros(size if self.fit else 0, dtype=np.int64) for _ in (0, 1)]
        self.aggregate = not fit and histogram_aggregate(randomizer)

    def sample(self, world: int, trials: int, rng: np.random.Generator) -> dict:
        s = self.stats
        if self.aggregate:
            counts = np.zeros((trials, int(s.declared.input_size)), dtype=np.int64)
            counts[:, s.x_star] = s.n - 1
            counts[:, s.x[world]] += 1
            return s.histogram_statistics(self.randomizer.sample_aggregate(counts, rng))
        values = np.full((trials, s.n), s.x_star)
        values[:, 0] = s.x[world]
        reports = np.asarray(self.randomizer.randomize(values, rng))
        self.tally(world, reports)
        return s.statistics(reports)

    def tally(self, world: int, messages: np.ndarray) -> None:
        """Add messages (any leading axes, then the message shape) to the fit's counts."""
        if self.fit:
            index = np.asarray(self.stats.declared.message_index(
                messages.reshape((-1,) + self.stats.shape)), dtype=np.int64)
            self.counts[world] += np.bincount(index, minlength=self.counts[world].size)

    def fits(self) -> tuple[FitResult, ...]:
        if not self.fit:
            return ()
        s, d = self.stats, self.stats.declared
        out = []
        for w in (0, 1):
            if not self.counts[w].sum():
                continue
            law = (np.asarray(d.message_distribution(s.x[w]))
                   + (s.n - 1) * np.asarray(d.message_distribution(s.x_star)))
            if s.b:
                law = law + s.n * s.b * np.asarray(d.blanket_distribution())
            stat, dof, p = chi_square_fit(self.counts[w], law / law.sum())
            out.append(FitResult(f"X{w}", "pooled chi-square over messages", stat, dof, p,
                                 int(self.counts[w].sum())))
        return tuple(out)


def _bins(name: str, values: np.ndarray, edges: np.ndarray | None, total: int) -> np.ndarray:
    if name == "lr":
        return np.searchsorted(edges, values, side="right")
    return np.asarray(values, dtype=np.int64)


def multi_setup(randomizer, n: int, deltas, options: AuditOptions, triple):
    """(deltas, declared randomizer, (x0, x1, x*) with the defaults filled in, the message
    statistics, the statistics' columns) of a multi-message audit, the arguments checked."""
    deltas = check_deltas(deltas)
    require(isinstance(n, int) and n >= 2, "n", n, "must be an integer >= 2")
    declared = randomizer.declared if hasattr(randomizer, "implementation") else randomizer
    require(options.selection_trials > 0, "holdout_fraction", options.holdout_fraction,
            "the multi-message audit bins its lr score on selection trials: must be > 0")
    x0, x1, x_star = triple
    if x0 is None or x1 is None or x_star is None:
        t = default_multi_triple(declared, n, deltas[0])
        x0, x1, x_star = (t[0] if x0 is None else x0, t[1] if x1 is None else x1,
                          t[2] if x_star is None else x_star)
    require(np.ndim(x_star) == 0, "others", x_star, "the multi-message audit takes one x2 "
            "held by every other user (not a distribution)")
    stats = MessageStatistics(declared, x0, x1, x_star, n)
    names = [a for a in ("lr", "count") if a in options.attacks]
    require(bool(names), "attacks", options.attacks, "the multi-message audit runs lr and count")
    columns = (["lr"] if "lr" in names else []) + (
        ["count[x0>x1]", "count[x1>x0]"] if "count" in names else [])
    return deltas, declared, (x0, x1, x_star), stats, columns


class TrialCounter:
    """The trials drawn so far out of ``total``, reported to ``progress`` (if any) as they
    come."""

    def __init__(self, total: int, progress: Callable | None):
        self.total, self.done, self.progress = total, 0, progress

    def add(self, trials: int) -> None:
        self.done += trials
        if self.progress is not None:
            self.progress(self.done, self.total)


def chunked_columns(columns, sizes, sample: Callable, count: TrialCounter) -> dict:
    """``columns`` of ``sample(c, size)`` over the chunks ``sizes`` (c their index), joined
    in order; each chunk's trials are counted."""
    parts: dict[str, list] = {col: [] for col in columns}
    for c, size in enumerate(sizes):
        out = sample(c, size)
        for col in columns:
            parts[col].append(out[col])
        count.add(size)
    return {col: np.concatenate(v) for col, v in parts.items()}


def audit_multi_message(randomizer, n: int, deltas, options: AuditOptions,
                        seed: np.random.SeedSequence | int, *, x0=None, x1=None, x_star=None,
                        progress: Callable[[int, int], None] | None = None) -> AttackAudit:
    """The shuffle-level audit of a multi-message randomizer (or an implementation claiming
    one) with n users at each delta (module docstring)."""
    start = time.perf_counter()
    deltas, declared, (x0, x1, x_star), stats, columns = multi_setup(
        randomizer, n, deltas, options, (x0, x1, x_star))
    implementation = declared is not randomizer
    sampler = MultiMessageSampler(randomizer, stats, implementation)
    seq = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
    per_trial = int(declared.message_alphabet_size) if sampler.aggregate else n * stats.m
    chunk = max(1, min(options.chunk, MESSAGES_PER_CHUNK // per_trial))
    count = TrialCounter(2 * options.trials, progress)
    total_messages = n * stats.m

    def draw(world: int, trials: int, key: np.random.SeedSequence) -> dict:
        return chunked_columns(
            columns, chunk_sizes(trials, chunk),
            lambda c, size: sampler.sample(world, size, np.random.default_rng(child(key, c))),
            count)

    rows, summary = multi_message_rows(columns, draw, options, deltas, seq, declared, n,
                                       (x0, x1, x_star), total_messages)
    label = f"(x0, x1, x2) = ({x0}, {x1}, {x_star}); {n} users x {stats.m} messages"
    return AttackAudit("shuffle", randomizer.name, float(randomizer.epsilon0), n, label,
                       options, tuple(rows), time.perf_counter() - start, summary,
                       sampler.fits(), randomizer.implementation.source if implementation
                       else "", "multi-message: attacks on the shuffled messages")


def multi_message_rows(columns, draw, options: AuditOptions, deltas, seq, declared, n: int,
                       triple, total_messages: int) -> tuple[list, dict]:
    """The attack rows of the multi-message statistics ``columns`` of trials drawn by
    ``draw(world, trials, key) -> {column: values}`` (selection on stream (w, 0), evaluation
    on (w, 1)): the lr score binned at quantiles of the pooled selection scores, the counts
    as they are; and the best exact value per delta (module docstring)."""
    x0, x1, x_star = triple
    sel = [draw(w, options.selection_trials, child(seq, w, 0)) for w in (0, 1)]
    edges = None
    if "lr" in columns:
        pooled = np.concatenate([sel[0]["lr"], sel[1]["lr"]])
        finite = pooled[np.isfinite(pooled)]
        q = np.linspace(0, 1, options.resolution + 1)[1:-1]
        edges = np.unique(np.quantile(finite, q)) if finite.size else np.zeros(0)
    ev = [draw(w, options.evaluation_trials, child(seq, w, 1)) for w in (0, 1)]
    per_bin, describe = {}, {}
    for col in columns:
        size = (edges.size + 1) if col == "lr" else total_messages + 1
        counted = [[np.bincount(np.clip(_bins(col, part[w][col], edges, total_messages), 0,
                                        size - 1), minlength=size)[:size] for w in (0, 1)]
                   for part in (sel, ev)]
        per_bin[col] = (tuple(counted[0]), tuple(counted[1]))
        describe[col] = _describer(col, edges)
    exact = {d: exact_multi_by_direction(declared, n, x0, x1, x_star, d) for d in deltas}
    rows = attack_rows(columns, per_bin, describe, options, deltas, exact)
    summary = {d: max((v[0] for v in exact[d] if v[0] is not None), default=None)
               for d in deltas}
    return rows, summary


def _describer(column: str, edges: np.ndarray | None):
    def describe(side: str, threshold: int) -> str:
        if column != "lr":
            op = ">=" if side == "upper" else "<="
            return f"{column} {op} {threshold} messages"
        # bin k holds the scores in [edges[k - 1], edges[k])
        if side == "upper":
            edge = edges[threshold - 1] if threshold > 0 else -math.inf
            return f"message log LR score >= {edge:.6g}"
        edge = edges[threshold] if threshold < edges.size else math.inf
        return f"message log LR score < {edge:.6g}"
    return describe
