"""The two-stage shuffle audit of an implementation in bulk, beside the full one (issue 29).

**The law sampled.** In a two-stage trial (shuffle_level.py's ``two_stage``) user 1's report
comes from the implementation and the other n - 1 reports' group histogram from the *declared*
law, Multinomial(n - 1, ref). Given user 1's group g, the trial's histogram is
e_g + H with H ~ Multinomial(n - 1, ref), independent of everything else. So the histogram
counts of T trials, all the attacks ever look at, are

    sum over g of  Multinomial(c_g, pmf) placed at the histograms e_g + h,

where c_g is how many of the T user-1 reports fell in group g and pmf is the exact law of H
over the compositions h of n - 1 into the groups (one multinomial pmf; G groups give
C(n - 1 + G - 1, G - 1) compositions, enumerated when at most MAX_COMPOSITIONS). This is the
same law as drawing the others' histogram trial by trial (the multinomial is the law of the
tabulated counts of c_g independent draws from pmf), so every bound holds as before; the cost
is T calls of the implementation plus one multinomial draw per group, whatever T. With more
compositions the trials are drawn one by one (shuffle_level.ImplementationSampler).

**Why it runs beside the full audit.** The full audit (every report from the implementation)
costs n calls per trial; the two-stage one costs one call per trial, so for the same calls it
runs n times the trials, and the power of a tail event grows with the trials (a client at 1.1 x
its eps0, krr eps0 = 2, d = 4, n = 20: eps_lb below the proven 1.999 at 10^6 full trials). It
tests whether user 1's report, produced by the implementation, hides among n - 1 reports of
the declared mechanism as well as the declared mechanism's would: if the implementation were
the claim, the two-stage output *is* the claimed mechanism's shuffled output, so a lower bound
above the claim's proven upper bound convicts the implementation (at the stated confidence).
Faults in the blanket alone (how the code treats the other users' inputs) are the full
audit's (and the goodness of fit's) to catch.

**Confidence.** :func:`audit_both` runs both at confidence 1 - alpha / 2 each (union bound), so
the largest row over both holds at 1 - alpha, and the rows' p-values (grading.py: alpha over the
row's share) count both runs.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Callable, Sequence

import numpy as np
from scipy import special

from shufflesim.protocols.randomizers.base import MAX_ENUMERABLE_OUTPUTS
from shufflesim.simulator.audit.attacks import Attack, HistogramChunk
from shufflesim.simulator.audit.sampling import child, chunk_sizes
from shufflesim.simulator.audit.shuffle_level import (
    IMPLEMENTATION_REPORTS,
    AttackAudit,
    ImplementationSampler,
    audit_shuffle,
)

#: Most compositions of the others' histogram tabulated in bulk.
MAX_COMPOSITIONS = 1 << 20
#: Spawn keys: the two-stage run's stream, and the bulk draw within a world's stream.
TWO_STAGE_KEY = 0x2572
BULK_KEY = 0xB01C
#: Most two-stage trials per world (n x the full audit's trials, capped).
MAX_TWO_STAGE_TRIALS = 10**9
#: Suffix of the two-stage run's attack names.
SUFFIX = " (two-stage)"


def compositions(total: int, groups: int) -> np.ndarray | None:
    """Every vector of ``groups`` non-negative integers summing to ``total`` (rows), None when
    there are more than MAX_COMPOSITIONS (stars and bars)."""
    count = math.comb(total + groups - 1, groups - 1)
    if count > MAX_COMPOSITIONS:
        return None
    if groups == 1:
        return np.full((1, 1), total, dtype=np.int64)
    bars = np.array(list(itertools.combinations(range(total + groups - 1), groups - 1)),
                    dtype=np.int64).reshape(count, groups - 1)
    edges = np.concatenate([np.full((count, 1), -1), bars,
                            np.full((count, 1), total + groups - 1)], axis=1)
    return np.diff(edges, axis=1) - 1


def composition_pmf(comps: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """Multinomial(sum, ref) probability of every composition (row) of ``comps``."""
    total = int(comps[0].sum())
    ref = np.asarray(ref, dtype=float)
    log_ref = np.log(np.where(ref > 0, ref, 1.0))
    log_pmf = (special.gammaln(total + 1) - special.gammaln(comps + 1).sum(axis=1)
               + (comps * log_ref).sum(axis=1))
    impossible = ((comps > 0) & (ref <= 0)).any(axis=1)  # a group the others never reach
    pmf = np.where(impossible, 0.0, np.exp(log_pmf))
    return pmf / pmf.sum()


class BulkTwoStageSampler(ImplementationSampler):
    """Two-stage trials tabulated in bulk (module docstring): ``tabulate`` replaces the
    trial-by-trial histograms (sampling.tabulate calls it)."""

    def __init__(self, randomizer, groups, x0, x1, others, n: int,
                 two_stage: bool = True) -> None:
        super().__init__(randomizer, groups, x0, x1, others, n, two_stage=True)
        model = groups.model
        comps = compositions(n - 1, model.groups)
        self.bulk = comps is not None
        if self.bulk:
            self._pmf = composition_pmf(comps, model.ref)
            self._comps = comps

    def tabulate(self, attacks: Sequence[Attack], world: int, trials: int,
                 seed: np.random.SeedSequence, chunk: int,
                 progress: Callable[[int], None] | None = None) -> list[np.ndarray] | None:
        """Counts per bin of every attack over ``trials`` two-stage trials of ``world`` (None:
        too many compositions, draw trial by trial)."""
        if not self.bulk:
            return None
        g = self.groups.model.groups
        x = self.inputs[world]
        self.trials[world] += trials
        size = self.output_counts[0].size
        per_group = np.zeros(g, dtype=np.int64)
        for c, k in enumerate(chunk_sizes(trials, max(1, min(chunk, IMPLEMENTATION_REPORTS)))):
            rng = np.random.default_rng(child(seed, c))
            group, cell = self._cells(world, self.randomizer.randomize(np.full(k, x), rng))
            self.output_counts[world] += np.bincount(cell, minlength=size)
            per_group += np.bincount(group, minlength=g)[:g]
            if progress is not None:
                progress(k)
        rng = np.random.default_rng(child(seed, BULK_KEY))
        totals = [np.zeros(a.bins, dtype=np.float64) for a in attacks]
        for j in range(g):
            if not per_group[j]:
                continue
            weights = rng.multinomial(int(per_group[j]), self._pmf)
            histograms = self._comps.copy()
            histograms[:, j] += 1
            block = HistogramChunk(self.n, histograms[:, 1] if g == 2 else histograms)
            for total, attack in zip(totals, attacks, strict=True):
                bins = np.asarray(attack.bin(block), dtype=np.int64)
                total += np.bincount(bins, weights=weights, minlength=attack.bins)[:attack.bins]
        return [np.rint(t).astype(np.int64) for t in totals]


def two_stage_trials(trials: int, n: int, declared=None) -> int:
    """Trials per world of the two-stage run beside a full run of ``trials``: as many calls
    of the implementation (n x trials), at most MAX_TWO_STAGE_TRIALS, when the run is
    tabulated in bulk (``declared``: the claim, None: assumed); ``trials`` when the claim's
    outputs are too many for the bulk (the others' histograms drawn trial by trial)."""
    size = None if declared is None else getattr(declared, "output_size", None)
    if declared is not None and (size is None or size > MAX_ENUMERABLE_OUTPUTS
                                 or math.comb(n - 2 + int(size), int(size) - 1)
                                 > MAX_COMPOSITIONS):
        return int(trials)
    return int(min(n * trials, MAX_TWO_STAGE_TRIALS))


def _renamed(audit: AttackAudit) -> AttackAudit:
    rows = tuple(dataclasses.replace(r, attack=r.attack + SUFFIX) for r in audit.rows)
    fits = tuple(dataclasses.replace(f, input=f"{f.input} (two-stage: user 1)")
                 for f in audit.fits)
    return dataclasses.replace(audit, rows=rows, fits=fits)


def audit_both(tested, n: int, deltas, options, seed: np.random.SeedSequence, *, x0, x1,
               others, progress=None) -> AttackAudit:
    """The full shuffle audit of ``tested`` with ``options.trials`` trials and the two-stage
    one in bulk with :func:`two_stage_trials`, each at half the error level (module
    docstring); one AttackAudit with the rows and fits of both (the two-stage ones named
    with SUFFIX)."""
    alpha = 1.0 - options.confidence
    half = dataclasses.replace(options, confidence=1.0 - alpha / 2)
    full = audit_shuffle(tested, n, deltas, half, seed, x0=x0, x1=x1, others=others,
                         progress=progress)
    declared = getattr(tested, "declared", None)
    staged_options = dataclasses.replace(half, trials=two_stage_trials(options.trials, n,
                                                                       declared))
    staged = _renamed(audit_shuffle(tested, n, deltas, staged_options,
                                    child(seed, TWO_STAGE_KEY), x0=x0, x1=x1, others=others,
                                    two_stage=True, sampler_type=BulkTwoStageSampler))
    note = (f"full audit ({options.trials} trials per world) and two-stage audit in bulk "
            f"({staged_options.trials} trials per world, user 1's report from the "
            f"implementation), each at confidence {half.confidence:g}")
    return dataclasses.replace(
        full, options=options, rows=full.rows + staged.rows, fits=full.fits + staged.fits,
        seconds=full.seconds + staged.seconds,
        note=f"{full.note}; {note}" if full.note else note)
