"""Continuous claims without output groups at the shuffle level (issue 29): the claim's own
likelihood ratio of the shuffled multiset as the attack statistic (planar_laplace and other
continuous claims with a density, ``log_prob``, that binning cannot handle: vector or planar
reports, box inputs).

**The statistic.** For the pair X0 = (x0, x2, ..., x2), X1 = (x1, x2, ..., x2) with x2 = x1
(the claim's candidate triple (x0, x1, x1)), the claimed mechanism's shuffled output has the
likelihood ratio

    P0(y_1..y_n) / P1(y_1..y_n) = (1/n) sum_i exp(log f(y_i | x0) - log f(y_i | x1)),

the Neyman-Pearson optimal statistic against the claim; its log, T, is computed from every
trial's n reports with the claim's ``log_prob``. T is a fixed function of the shuffled multiset
(the order of the reports does not enter), chosen before any trial is drawn; for the
implementation under test it is only a statistic, whatever the implementation does.

**The bound.** The selection trials (``holdout_fraction``) of both worlds fix the bin edges of
T (their pooled quantiles, BINS cells) and the tail events (events.select_events); the
evaluation trials, drawn afterwards from their own streams, give the Clopper-Pearson bound
(shuffle_level.attack_rows, the confidence split over the directions and shortlisted events).
Every choice uses held-out trials only, so the bound holds at its stated confidence.

**The threshold.** There is no exact value for a continuous claim without output groups, so
the rows carry none, and no goodness of fit is made (``implementation-fit`` is not
evaluated). ``implementation-shuffled`` compares with the smallest proven upper bound of the
claim (catalogue) at (n, delta), which holds for every post-processing of the claimed shuffled
output (a proven bound for the claim is a bound for T's law under the claim).
"""

from __future__ import annotations

import time

import numpy as np
from scipy import special

from shufflesim.protocols.errors import require
from shufflesim.simulator.audit.binned import is_binnable
from shufflesim.simulator.audit.sampling import child, chunk_sizes
from shufflesim.simulator.audit.shuffle_level import AttackAudit, attack_rows, check_deltas

#: Cells of T's histogram (pooled selection quantiles; fewer when T has ties).
BINS = 256
#: Reports per chunk of trials (trials per chunk x n).
REPORTS = 1 << 21
NAME = "claim-lr"


def is_lr_claim(declared) -> bool:
    """A continuous claim with a density that the binned path does not take (binned.py)."""
    return (declared is not None and getattr(declared, "output_kind", "") == "continuous"
            and hasattr(declared, "log_prob") and not is_binnable(declared)
            and hasattr(declared, "neighbour_candidates"))


def lr_triple(declared) -> tuple:
    """(x0, x1, x1): the claim's first candidate pair, every other user at x1."""
    x0, x1 = declared.neighbour_candidates().pairs[0]
    return x0, x1, x1


def claim_statistic(declared, x0, x1, reports: np.ndarray) -> np.ndarray:
    """T per trial (module docstring) of reports shaped (trials, n, ...)."""
    n = reports.shape[1]
    log_ratio = (np.asarray(declared.log_prob(x0, reports), dtype=float)
                 - np.asarray(declared.log_prob(x1, reports), dtype=float))
    log_ratio = log_ratio.reshape(reports.shape[0], n, -1).sum(axis=2)
    return special.logsumexp(log_ratio, axis=1) - np.log(n)


_statistic = claim_statistic  # the name the tests use


def audit_claim_lr(tested, n: int, deltas, options, seed: np.random.SeedSequence, *,
                   x0=None, x1=None, progress=None) -> AttackAudit:
    """The shuffle-level audit of ``tested`` (an ImplementationRandomizer with such a claim)
    by the claim's likelihood-ratio statistic (module docstring)."""
    start = time.perf_counter()
    deltas = check_deltas(deltas)
    declared = tested.declared
    require(options.holdout_fraction > 0, "holdout_fraction", options.holdout_fraction,
            f"the {NAME} attack chooses its bins and events on held-out trials: use a holdout "
            "> 0")
    d0, d1, _ = lr_triple(declared)
    x0 = d0 if x0 is None else x0
    x1 = d1 if x1 is None else x1
    stats = {}
    for phase, size in ((0, options.selection_trials), (1, options.evaluation_trials)):
        for w, x in enumerate((x0, x1)):
            stats[phase, w] = _statistic_trials(tested, declared, x, x0, x1, n, size,
                                                child(seed, w, phase))
            if progress is not None:
                progress(size)
    pooled = np.concatenate([stats[0, 0], stats[0, 1]])
    edges = np.unique(np.quantile(pooled, np.linspace(0, 1, BINS + 1)[1:-1]))
    bins = edges.size + 1

    def counts(t):
        return np.bincount(np.searchsorted(edges, t, side="right"), minlength=bins)

    per_bin = {NAME: ((counts(stats[0, 0]), counts(stats[0, 1])),
                      (counts(stats[1, 0]), counts(stats[1, 1])))}

    def describe(side: str, threshold: int) -> str:
        if side == "upper":
            return f"log LR of the claim >= {edges[threshold - 1]:.6g}" if threshold else \
                "every trial"
        return (f"log LR of the claim < {edges[threshold]:.6g}" if threshold < edges.size
                else "every trial")

    rows = attack_rows([NAME], per_bin, {NAME: describe}, options, deltas, None)
    label = f"(x0, x1, x2) = ({x0}, {x1}, {x1})"
    note = (f"{NAME}: the claim's log likelihood ratio of the shuffled reports, {bins} bins at "
            "pooled selection quantiles; no exact value or fit for this claim")
    return AttackAudit("shuffle", tested.name, float(tested.epsilon0), n, label, options,
                       tuple(rows), time.perf_counter() - start, {}, (),
                       tested.implementation.source, note)


def _statistic_trials(tested, declared, x, x0, x1, n: int, trials: int,
                      seed: np.random.SeedSequence) -> np.ndarray:
    """T of ``trials`` trials with user 1 at ``x`` and the others at x1."""
    x_arr, x1_arr = np.asarray(x), np.asarray(x1)
    out = []
    per = max(1, REPORTS // n)
    for c, size in enumerate(chunk_sizes(trials, per)):
        rng = np.random.default_rng(child(seed, c))
        values = np.empty((size, n) + x_arr.shape, dtype=np.result_type(x_arr, x1_arr))
        values[:, 0] = x_arr
        values[:, 1:] = x1_arr
        reports = np.asarray(tested.randomize(values, rng))
        out.append(claim_statistic(declared, x0, x1, reports))
    return np.concatenate(out) if out else np.empty(0)
