"""Sampling the shuffled output of a neighbouring pair through its group histogram.

Under X0 = (x0, z2, ..., zn) the group histogram of the shuffled reports is

    onehot(a draw of user 1's group from p0) + Multinomial(n - 1, ref),

and under X1 the same with p1 (attacks.py explains the groups). A trial therefore costs
O(number of groups), not O(n). With two groups the histogram is one count: the others' count is
drawn from Binomial(n - 1, ref_1) by inversion of its exact cdf (``scipy.stats.binom.cdf``,
tabulated once, searched with ``numpy.searchsorted``): exact in law up to the 2^-53 resolution
of the uniforms, and several times faster than ``Generator.binomial`` for the small success
probabilities of randomized response. More groups use ``Generator.multinomial``.

Two groups in bulk (issue 29, "power is trials per second"): the trial's sufficient statistic is
that one count, whose law in world w is exact and small (n + 1 values),

    P_w(c) = (1 - p_w) Bin(n - 1, ref_1)(c) + p_w Bin(n - 1, ref_1)(c - 1),

so the tabulated counts of T independent trials - all the attacks ever look at - are one draw
of Multinomial(T, P_w) (``Generator.multinomial``: n + 1 binomial draws, whatever T). This is
the same law as T trials drawn one by one; 10^9 trials cost milliseconds, so the time goes to
the events.

Reproducibility: trials are drawn in chunks of a fixed size; chunk c of a stream draws from its
own ``SeedSequence(entropy, spawn_key = stream key + (c,))``, so the counts depend on the seed,
the chunk size and the number of trials only (not on how chunks are scheduled).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from scipy import stats

from shufflesim.protocols.errors import require
from shufflesim.simulator.audit.attacks import Attack, HistogramChunk, PairModel

#: Trials per chunk (bounded memory: a few arrays of this length).
DEFAULT_CHUNK = 1 << 21


def child(seq: np.random.SeedSequence, *key: int) -> np.random.SeedSequence:
    """The SeedSequence at ``seq``'s spawn key extended by ``key`` (deterministic, stateless)."""
    return np.random.SeedSequence(entropy=seq.entropy, spawn_key=tuple(seq.spawn_key) + key,
                                  pool_size=seq.pool_size)


def chunk_sizes(trials: int, chunk: int) -> list[int]:
    require(isinstance(trials, (int, np.integer)) and trials >= 0, "trials", trials,
            "must be an integer >= 0")
    require(isinstance(chunk, (int, np.integer)) and chunk >= 1, "chunk", chunk,
            "must be an integer >= 1")
    full, rest = divmod(int(trials), int(chunk))
    return [int(chunk)] * full + ([rest] if rest else [])


class HistogramSampler:
    """Draws group histograms of the shuffled output in world 0 or 1 (module docstring)."""

    def __init__(self, model: PairModel) -> None:
        self.model = model
        self.n = model.n
        if model.groups == 2:
            cdf = stats.binom.cdf(np.arange(self.n), self.n - 1, model.ref[1])
            cdf[-1] = 1.0
            self._others_cdf = cdf
        self._user_cdf = [np.cumsum(model.world(w)) for w in (0, 1)]

    def count_pmf(self, world: int) -> np.ndarray | None:
        """The exact law of the count of group 1 over the n reports in ``world`` (two groups;
        module docstring), None with more groups."""
        if self.model.groups != 2:
            return None
        b = stats.binom.pmf(np.arange(self.n), self.n - 1, self.model.ref[1])
        p = float(self.model.world(world)[1])
        pmf = np.zeros(self.n + 1)
        pmf[:-1] += (1.0 - p) * b
        pmf[1:] += p * b
        return pmf / pmf.sum()

    def sample(self, world: int, trials: int, rng: np.random.Generator) -> HistogramChunk:
        model = self.model
        if model.groups == 2:
            others = np.searchsorted(self._others_cdf, rng.random(trials), side="right")
            user = rng.random(trials) < model.world(world)[1]
            return HistogramChunk(self.n, others + user)
        counts = rng.multinomial(self.n - 1, model.ref, size=trials)
        group = np.searchsorted(self._user_cdf[world], rng.random(trials), side="right")
        np.minimum(group, model.groups - 1, out=group)
        counts[np.arange(trials), group] += 1
        return HistogramChunk(self.n, counts)


def tabulate(sampler: HistogramSampler, attacks: Sequence[Attack], world: int, trials: int,
             seed: np.random.SeedSequence, chunk: int = DEFAULT_CHUNK,
             progress: Callable[[int], None] | None = None) -> list[np.ndarray]:
    """Counts per bin of every attack's statistic over ``trials`` trials of ``world`` (in bulk
    when the sampler gives the exact law of a one-count statistic: module docstring; a sampler
    with its own ``tabulate`` that returns counts, e.g. two_stage_bulk's, tabulates itself)."""
    own = getattr(sampler, "tabulate", None)
    if own is not None:
        totals = own(attacks, world, trials, seed, chunk, progress)
        if totals is not None:
            return totals
    pmf = sampler.count_pmf(world) if isinstance(sampler, HistogramSampler) else None
    if pmf is not None:
        return _tabulate_bulk(sampler.n, pmf, attacks, trials, seed, progress)
    totals = [np.zeros(a.bins, dtype=np.int64) for a in attacks]
    for c, size in enumerate(chunk_sizes(trials, chunk)):
        rng = np.random.default_rng(child(seed, c))
        histograms = sampler.sample(world, size, rng)
        for total, attack in zip(totals, attacks, strict=True):
            total += np.bincount(attack.bin(histograms), minlength=attack.bins)[: attack.bins]
        if progress is not None:
            progress(size)
    return totals


def _tabulate_bulk(n: int, pmf: np.ndarray, attacks: Sequence[Attack], trials: int,
                   seed: np.random.SeedSequence,
                   progress: Callable[[int], None] | None) -> list[np.ndarray]:
    """The bins of every attack over ``trials`` trials whose count has law ``pmf``: one
    multinomial draw of the count histogram, mapped through each attack's bin of each count."""
    per_count = np.random.default_rng(child(seed, 0)).multinomial(trials, pmf)
    every = HistogramChunk(n, np.arange(n + 1))
    totals = []
    for attack in attacks:
        bins = np.asarray(attack.bin(every), dtype=np.int64)
        total = np.bincount(bins, weights=per_count, minlength=attack.bins)[: attack.bins]
        totals.append(np.rint(total).astype(np.int64))
    if progress is not None:
        progress(trials)
    return totals
