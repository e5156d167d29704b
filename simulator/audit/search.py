"""A search over neighbouring inputs and output events for a lower bound on the local eps0 of a
black-box randomizer (issue 17, item 3).

The implementation is any vectorized callable ``sample(values, rng) -> reports`` (reports have
``values.shape`` leading; simulator/audit/implementation.py adapts a user's code to it). Pure
eps0-LDP means P[R(a) in E] <= e^eps0 P[R(b) in E] for all inputs a, b and events E, so any
event E fixed before the samples that measure it gives, with one-sided Clopper-Pearson limits
(confidence.py),

    eps0 >= ln((lower(P[E | a]) - delta) / upper(P[E | b]))      (delta = 0 for pure LDP).

Two stages (a pair or event chosen on some samples is certified on others):

1. *Selection* (``holdout_fraction`` of the trials, per candidate input). Candidate inputs:
   every value of a categorical domain of at most ``max_inputs`` values; otherwise its two ends
   and a seeded random sample of the others (``max_inputs`` in all); on an interval, a grid of
   ``max_inputs`` points, ends included. Every ordered pair of candidates is searched. Event
   families, each scored on the selection samples by the bound it is predicted to give on the
   evaluation samples (counts shrunk to their one-sided limits at events.SELECTION_ALPHA,
   scaled, given the evaluation's limits):

   * ``cells``: outputs are keyed by a 64-bit hash of their bytes (binary vectors packed to
     bits first). The distinct keys seen at least twice in the selection samples, at most
     ``max_cells`` of the most frequent, are cells of their own; every other output falls in one
     of ``buckets`` hash buckets (or one "other" cell when every selection output had its own
     cell). Continuous scalars are cut at ``buckets`` quantiles instead. There is no table over
     the output space, so no cap on its size. For a pair (a, b) the cells are ranked by their
     selection ratio and the events are the top-t cells.
   * ``coordinates`` (vector outputs): {y_j > m_j} and its complement for every coordinate j,
     m_j the coordinate's pooled selection mean (for unary encodings: bit j is 1 / is 0).
   * ``learned`` (vector outputs, at most MAX_LEARNED_FEATURES coordinates): DP-Sniper's attack
     (classifier.py) on the ``learned_pairs`` best pairs so far: logistic regression trained on
     one half of the selection samples of a and b (features: the coordinates and their sum),
     its score's threshold {score >= t} / {score <= t} chosen on the other half.
   * ``support`` (when a ``support(reports, x) -> bool`` function is given: the frequency
     oracle's decoder, "report y supports value x"): {supports a and not b} and {supports a}.
     Local hashing needs it: its reports carry a fresh hash seed and are all distinct.

   The ``certify`` best (pair, event) candidates over all families go to stage 2.
2. *Certification*: fresh samples (``trials`` minus the selection trials, from their own random
   streams) of the inputs of those candidates; each event's two limits at error level
   alpha / (2 * certify), alpha = 1 - confidence (Bonferroni over everything certified). The
   selection stage looks only at its own samples and spends no confidence. The maximum of the
   certified bounds is a lower bound on eps0 with confidence >= ``confidence``, whatever the
   implementation does.

Selection samples are kept in memory (candidates x selection trials x report size, in the
smallest exact dtype); certification streams through chunks.

Modules: this one (options, candidate inputs, the two stages, rows, registration);
search_families.py (the selection stage, family by family); search_events.py (reports, their
hash, the event classes).
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from shufflesim.protocols.errors import require
from shufflesim.protocols.randomizers.domains import Categorical, Interval
from shufflesim.simulator.audit.confidence import (
    HoldoutTrials,
    clopper_pearson_lower,
    clopper_pearson_upper,
    epsilon_from_limits,
)
from shufflesim.simulator.audit.grading import Evidence
from shufflesim.simulator.audit.levels import Level, register_attack
from shufflesim.simulator.audit.sampling import child
from shufflesim.simulator.audit.search_events import Sample, Support, draw
from shufflesim.simulator.audit.search_families import best, select
from shufflesim.simulator.audit.tables import _row, implementation_records
from shufflesim.simulator.audit.verdicts import ldp_verdict

FAMILIES = ("cells", "coordinates", "learned", "support")


# ------------------------------------------------------------------------------------------
# Options and results
# ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class SearchOptions(HoldoutTrials):
    """trials: samples per audited input (selection + certification); confidence: of the
    maximum certified bound; holdout_fraction: share of the trials used for selection;
    certify: candidates certified (the error level is split over them); max_inputs: candidate
    inputs; max_cells, buckets: the cells family; learned_pairs: pairs given a classifier;
    families: event families searched; delta: subtracted from the lower limit (the bound
    ln((P_a_lo - delta) / P_b_hi)); objective: "epsilon" ranks candidates by that bound,
    "delta" by P_a_lo - e^epsilon0 P_b_hi (approximate.py); chunk: samples per random stream
    chunk."""

    trials: int
    confidence: float = 0.95
    holdout_fraction: float = 0.5
    certify: int = 4
    max_inputs: int = 16
    max_cells: int = 4096
    buckets: int = 1024
    learned_pairs: int = 4
    families: tuple[str, ...] = FAMILIES
    delta: float = 0.0
    objective: str = "epsilon"
    epsilon0: float = 0.0
    chunk: int = 1 << 18

    def __post_init__(self) -> None:
        self.check_holdout(min_trials=20, zero_holdout=False)
        require(4 <= self.selection_trials < self.trials, "holdout_fraction", self.holdout_fraction,
                f"leaves too few selection or certification samples out of {self.trials}")
        for name, low in (("certify", 1), ("max_inputs", 2), ("max_cells", 1), ("buckets", 2),
                          ("learned_pairs", 0), ("chunk", 1)):
            value = getattr(self, name)
            require(isinstance(value, int) and not isinstance(value, bool) and value >= low,
                    name, value, f"must be an integer >= {low}")
        families = tuple(self.families)
        object.__setattr__(self, "families", families)
        for fam in families:
            require(fam in FAMILIES, "families", fam, f"unknown event family; choose from "
                    f"{list(FAMILIES)}")
        require(len(families) >= 1, "families", list(families), "needs at least one family")
        require(0 <= self.delta < 1, "delta", self.delta, "must lie in [0, 1)")
        require(self.objective in ("epsilon", "delta"), "objective", self.objective,
                "must be epsilon or delta")
        require(math.isfinite(self.epsilon0) and self.epsilon0 >= 0, "epsilon0",
                self.epsilon0, "must be a finite number >= 0")

    @property
    def limit_alpha(self) -> float:
        """Error level of each Clopper-Pearson limit (two per certified candidate)."""
        return (1.0 - self.confidence) / (2 * self.certify)


@dataclass(frozen=True)
class Certified:
    """One certified candidate: inputs (x, x_prime), its event, counts among ``trials`` fresh
    samples of each input, the limits and the bounds they give."""

    x: object
    x_prime: object
    family: str
    event: str
    predicted: float
    trials: int
    count_a: int
    count_b: int
    p_a_lower: float
    p_b_upper: float
    epsilon: float  # ln((p_a_lower - delta) / p_b_upper), clipped at 0

    def delta_gap(self, epsilon0: float) -> float:
        """p_a_lower - e^epsilon0 p_b_upper: a lower bound on the delta of (epsilon0, delta)."""
        return self.p_a_lower - math.exp(epsilon0) * self.p_b_upper


@dataclass(frozen=True)
class SearchResult:
    options: SearchOptions
    inputs: tuple
    pairs: int
    candidates: int
    certified: tuple[Certified, ...]
    seconds: float

    @property
    def confidence(self) -> float:
        return self.options.confidence

    @property
    def best(self) -> Certified:
        return max(self.certified, key=lambda c: c.epsilon)

    @property
    def epsilon_lb(self) -> float:
        """A lower bound on the implementation's eps0 (at delta = options.delta) holding with
        probability >= confidence."""
        return self.best.epsilon

    def violates(self, epsilon0: float) -> bool:
        return self.epsilon_lb > epsilon0 * (1 + 1e-12)

    def verdict(self, epsilon0: float) -> str:
        b = self.best
        if not self.violates(epsilon0):
            return (f"consistent with {epsilon0:g}-LDP: lower bound {self.epsilon_lb:.4g} "
                    f"at confidence {self.confidence:g} ({len(self.inputs)} inputs, "
                    f"{self.pairs} pairs, {self.candidates} events searched)")
        return (f"the implementation is not {epsilon0:g}-LDP: lower bound {b.epsilon:.4g} at "
                f"confidence {self.confidence:g} on inputs ({b.x}, {b.x_prime}), event "
                f"{b.event}")


# ------------------------------------------------------------------------------------------
# Inputs and samples
# ------------------------------------------------------------------------------------------
def candidate_inputs(domain, max_inputs: int, rng: np.random.Generator) -> list:
    """The audited inputs: a categorical domain (``Categorical`` or its size) in full when it
    has at most ``max_inputs`` values, else its ends and a random sample; an ``Interval`` (or
    ``(low, high)`` floats) as a grid; a list of values as given."""
    if isinstance(domain, Interval) or (isinstance(domain, tuple) and len(domain) == 2 and
                                        all(isinstance(v, float) for v in domain)):
        low, high = (domain.low, domain.high) if isinstance(domain, Interval) else domain
        require(math.isfinite(low) and math.isfinite(high) and low < high, "interval",
                (low, high), "needs finite ends, low < high")
        return [float(v) for v in np.linspace(low, high, max_inputs)]
    if isinstance(domain, (Categorical, int, np.integer)) and not isinstance(domain, bool):
        d = int(domain.size if isinstance(domain, Categorical) else domain)
        require(d >= 2, "domain_size", d, "needs at least two inputs")
        if d <= max_inputs:
            return list(range(d))
        inner = rng.choice(d - 2, size=max_inputs - 2, replace=False) + 1
        return [0, *sorted(int(v) for v in inner), d - 1]
    values = list(domain)
    require(len(values) >= 2 and len(set(values)) == len(values), "inputs", values,
            "needs at least two distinct inputs")
    return values


# ------------------------------------------------------------------------------------------
# The search
# ------------------------------------------------------------------------------------------
def search(sample: Sample, domain, options: SearchOptions,
           seed: np.random.SeedSequence | int, *, support: Support | None = None,
           inputs: Sequence | None = None) -> SearchResult:
    """Search pairs of ``domain`` and events for the largest certified eps0 lower bound of
    ``sample`` (module docstring). ``inputs`` overrides the candidate inputs."""
    start = time.perf_counter()
    seq = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
    if inputs is None:
        inputs = candidate_inputs(domain, options.max_inputs,
                                  np.random.default_rng(child(seq, 2)))
    else:
        inputs = candidate_inputs(list(inputs), options.max_inputs, None)
    families = options.families
    require("support" not in families or support is not None or
            families != ("support",), "support", None,
            "the support family needs a support(reports, x) function")
    m = options.selection_trials
    sel = [np.concatenate(list(draw(sample, x, m, child(seq, 0, i), options.chunk)))
           for i, x in enumerate(inputs)]
    width = {rows.shape[1] for rows in sel}
    require(len(width) == 1, "implementation", sorted(width),
            "returned reports of different sizes for different inputs")
    half = [len(rows) // 2 for rows in sel]
    fit = [rows[:h] for rows, h in zip(sel, half, strict=True)]
    val = [rows[h:] for rows, h in zip(sel, half, strict=True)]
    found = select(fit, val, inputs, support, options)
    if options.objective == "delta" and options.certify >= 2:
        # half the certified slots for the best eps at delta0 (module docstring of
        # approximate.py): ranked by the epsilon objective on the same selection samples
        also = select(fit, val, inputs, support, replace(options, objective="epsilon"),
                       learned=False)
        chosen = best(found, (options.certify + 1) // 2) + best(also, options.certify // 2)
        searched = len(found) + len(also)
    else:
        chosen, searched = best(found, options.certify), len(found)
    pairs = len(inputs) * (len(inputs) - 1)
    return _certify(sample, inputs, chosen, options, seq, support, pairs, searched,
                    time.perf_counter() - start)




def _certify(sample, inputs, chosen, options, seq, support, pairs, searched,
             elapsed) -> SearchResult:
    """Counts of each chosen event on fresh samples of its two inputs, and the limits."""
    start = time.perf_counter()
    n = options.evaluation_trials
    needed = sorted({c.a for c in chosen} | {c.b for c in chosen})
    counts = {(k, i): 0 for k in range(len(chosen)) for i in needed}
    for i in needed:  # a loop over the few certified inputs, chunked over samples
        for rows in draw(sample, inputs[i], n, child(seq, 1, i), options.chunk):
            for k, cand in enumerate(chosen):
                if i in (cand.a, cand.b):
                    counts[k, i] += int(np.count_nonzero(cand.event(rows, support)))
    alpha = options.limit_alpha
    certified = []
    for k, cand in enumerate(chosen):
        ka, kb = counts[k, cand.a], counts[k, cand.b]
        lo = float(clopper_pearson_lower(ka, n, alpha))
        hi = float(clopper_pearson_upper(kb, n, alpha))
        eps = float(epsilon_from_limits(lo, hi, options.delta))
        certified.append(Certified(inputs[cand.a], inputs[cand.b], cand.family,
                                   cand.event.describe(), cand.predicted, n, ka, kb, lo, hi,
                                   max(eps, 0.0) if math.isfinite(eps) else 0.0))
    return SearchResult(options, tuple(inputs), pairs, searched, tuple(certified),
                        elapsed + time.perf_counter() - start)


def search_records(result: SearchResult, epsilon0: float, context: dict,
                   implementation: str = "", attack: str = "search") -> list[dict]:
    """Rows of the audit table (tables.py): one attack row per certified event, then the
    verdict ``implementation-ldp-search`` ("the implementation is not eps0-LDP: lower bound X
    at confidence C on inputs (a, b), event E", or consistent)."""
    rows = []
    for c in result.certified:
        rows.append(_row(
            context, delta=result.options.delta, level="randomizer", row_type="attack",
            pair=f"({c.x}, {c.x_prime})", attack=f"{attack}:{c.family}",
            direction=f"{c.x} vs {c.x_prime}", event=c.event, trials=c.trials,
            selection_trials=result.options.selection_trials, count0=c.count_a,
            count1=c.count_b, p0=c.count_a / c.trials, p1=c.count_b / c.trials,
            p0_limit=c.p_a_lower, p1_limit=c.p_b_upper, epsilon_lb=c.epsilon,
            confidence=result.confidence, ratio=c.epsilon / epsilon0 if epsilon0 else None,
            seconds=result.seconds,
            note=f"{len(result.inputs)} inputs, {result.pairs} pairs, {result.candidates} "
                 f"events searched; {len(result.certified)} certified (Bonferroni)"))
    b = result.best
    verdict = replace(ldp_verdict(result.epsilon_lb, epsilon0, result.confidence,
                                  (b.x, b.x_prime), b.event, result.options.delta),
                      check=f"ldp-{attack}")
    out = implementation_records([verdict], {**context, "delta": result.options.delta},
                                 "randomizer", implementation, seconds=result.seconds)
    out[0]["p_value"] = certified_evidence(result, b, result.options.delta).p_value(epsilon0)
    return rows + out


def certified_evidence(result: SearchResult, c: Certified, epsilon_delta: float) -> Evidence:
    """The grading.Evidence of a certified event (its p-value in the verdict family)."""
    options = result.options
    return Evidence(c.count_a, c.count_b, c.trials, options.limit_alpha, epsilon_delta,
                    1.0 - options.confidence)


@register_attack("search", levels=(Level.RANDOMIZER,),
                 description="a search over neighbouring input pairs and output events (exact "
                             "and hashed output cells, coordinates, a learned classifier, the "
                             "oracle's support) for an eps0 lower bound of a black box",
                 note="simulator/audit/search.py")
class InputEventSearch:
    """The randomizer-level search attack (module docstring): ``run`` is :func:`search`,
    ``rows`` runs it and returns its audit-table rows."""

    name = "search"
    run = staticmethod(search)

    @staticmethod
    def rows(sample: Sample, domain, *, epsilon0: float, trials: int, confidence: float,
             seed, context: dict, implementation: str = "", delta0: float = 0.0,
             support: Support | None = None, **options) -> list[dict]:
        """Search ``sample`` (eps0 at delta0, the claim) and return the rows."""
        opts = SearchOptions(trials, confidence, delta=float(delta0), **options)
        result = search(sample, domain, opts, seed, support=support)
        return search_records(result, epsilon0, context, implementation)
