"""Atoms in continuous reports (issue 29): exact repeated values, and inputs leaking into
continuous or vector reports.

A continuous randomizer (laplace, gaussian, the learning randomizers' clipped gradients) puts
probability 0 on any single value, up to floating-point rounding. An implementation that now
and then sends its raw input, or a fixed value, has an atom - an infinite privacy loss that no
binned event of the randomizer level sees (a Laplace client leaking its input in 1 of 1000
reports passed the existing audit). The statistic of a sample of reports of input x is

    A = #{reports equal to another report of the sample} + #{reports with an entry equal to x}

(a vector report is one value; its "entry equal to x" is any coordinate), computed on each of
``CHUNKS`` disjoint blocks of the sample. The claim's own sampler (the registered randomizer,
same input, same block size) gives A'_k for block k from an independent stream. Under "the
implementation has the claimed law" A_k and A'_k are i.i.d., so each block pair is exchangeable
and the number of blocks with A_k > A'_k among the untied ones is Binomial(W + L, 1/2): a
one-sided sign test, exact and free of any density bound (floating-point rounding hits both
samples alike). The p-values of the audited inputs are combined by Bonferroni; the verdict row
``implementation-atoms`` enters the run's Holm family (grading.py).
"""

from __future__ import annotations

import numpy as np
from scipy import stats

from shufflesim.protocols.randomizers.domains import Categorical
from shufflesim.simulator.audit.sampling import child
from shufflesim.simulator.audit.tables import implementation_records
from shufflesim.simulator.audit.verdicts import CONSISTENT, VIOLATED, ImplementationVerdict

#: Reports per audited input and sample (the statistic needs no more: an atom of mass 1e-3
#: shows ~100 times).
SAMPLES = 100_000
#: Blocks of each sample (the sign test's pairs).
CHUNKS = 50
#: Spawn key of the samples' streams.
ATOMS_KEY = 0xA70


def atom_count(reports: np.ndarray, x) -> tuple[int, int]:
    """(reports equal to another report, reports with an entry equal to x)."""
    rows = np.asarray(reports, dtype=float).reshape(len(reports), -1)
    if rows.shape[1] == 1:
        _, inverse, counts = np.unique(rows[:, 0], return_inverse=True, return_counts=True)
    else:
        _, inverse, counts = np.unique(rows, axis=0, return_inverse=True, return_counts=True)
    repeated = int((counts[np.asarray(inverse).reshape(-1)] > 1).sum())
    leaked = int(np.any(rows == float(x), axis=1).sum()) if np.ndim(x) == 0 else 0
    return repeated, leaked


def audited_inputs(domain, count: int = 5) -> list:
    """An even grid over an interval domain (its ends included), or the first ``count``
    values of a categorical one."""
    if isinstance(domain, Categorical):
        return list(range(min(count, domain.size)))
    return [float(v) for v in np.linspace(float(domain.low), float(domain.high), count)]


def atoms_verdict(tested, seed: np.random.SeedSequence, confidence: float,
                  samples: int = SAMPLES) -> ImplementationVerdict:
    """The verdict ``implementation-atoms`` of an implementation (adapter.ImplementationRandomizer)
    claiming a continuous randomizer (module docstring)."""
    declared = tested.declared
    inputs = audited_inputs(declared.input_domain)
    worst, where = 1.0, ""
    block = max(1, samples // CHUNKS)
    for i, x in enumerate(inputs):
        wins = losses = 0
        totals = np.zeros(4, dtype=np.int64)
        for k in range(CHUNKS):
            mine = tested.randomize(np.full(block, x), np.random.default_rng(
                child(seed, ATOMS_KEY, i, k, 0)))
            theirs = declared.randomize(np.full(block, x), np.random.default_rng(
                child(seed, ATOMS_KEY, i, k, 1)))
            counts = atom_count(mine, x) + atom_count(theirs, x)
            totals += counts
            a, b = counts[0] + counts[1], counts[2] + counts[3]
            wins += a > b
            losses += a < b
        p = float(stats.binom.sf(wins - 1, wins + losses, 0.5)) if wins else 1.0
        if p < worst or not where:
            worst = p
            where = (f"input {x:g}: {totals[1]} report(s) equal to the input and {totals[0]} "
                     f"repeated value(s) in {block * CHUNKS} reports, against {totals[3]} and "
                     f"{totals[2]} from the claimed {declared.name}'s sampler (more in {wins} "
                     f"of {wins + losses} untied blocks)")
    p_value = min(1.0, worst * len(inputs))
    bad = p_value < 1.0 - confidence
    head = ("the implementation's continuous reports have atoms (exact values the claimed "
            "law gives probability 0: an infinite privacy loss)" if bad else
            "no atoms in the continuous reports")
    sentence = (f"{head}: {where}; {len(inputs)} inputs, Bonferroni sign-test p = "
                f"{p_value:.3g}")
    return ImplementationVerdict("atoms", VIOLATED if bad else CONSISTENT, sentence,
                                 confidence=confidence, p_value=p_value)


def atom_rows(tested, seed: np.random.SeedSequence, confidence: float, context: dict,
              level: str) -> list[dict]:
    """The ``implementation-atoms`` verdict row when ``tested`` claims a continuous randomizer
    (none otherwise)."""
    declared = getattr(tested, "declared", None)
    if declared is None or getattr(declared, "output_kind", "discrete") != "continuous":
        return []
    verdict = atoms_verdict(tested, seed, confidence)
    return implementation_records([verdict], context, level, tested.implementation.source)
