"""Randomizer-level audit: black-box samples of a randomizer implementation against its declared
output distribution, and an empirical lower bound on its local eps0 (docs/architecture.md, "The
auditor", level 1).

Samples come from ``randomizer.randomize`` (the implementation); the declared distribution is
``output_pmf`` / ``cdf`` of the same object. A subclass that samples with another budget than it
declares is caught twice: by the goodness-of-fit test and, when it leaks more than declared, by
the eps0 lower bound exceeding the declared eps0.

* Goodness of fit, per audited input x: discrete outputs, Pearson's chi-square test of the output
  counts against R(x) (``scipy.stats.chisquare``; cells with expected count < 5 pooled, an output
  of declared probability 0 that occurs rejects outright); continuous outputs, the
  Kolmogorov-Smirnov test against the declared cdf (``scipy.stats.kstest``). The inputs' p-values
  are combined by Bonferroni: reject when min p < (1 - confidence) / inputs.
* eps0 lower bound, per ordered pair of inputs (x, x'): pure eps0-LDP means P_x(S) <= e^eps0
  P_x'(S) for every event S, so eps0 >= ln(P_x_lo(S) / P_x'_hi(S)) (delta = 0 in
  confidence.epsilon_from_limits). S is a set of outputs with the largest x-to-x' frequency
  ratios on held-out selection samples (continuous outputs are binned at quantiles of the
  selection samples first), evaluated on fresh samples; with ``holdout_fraction = 0``
  (discrete outputs only) the outputs are ordered by the declared ratio instead and the error
  level is split over every prefix.
  The error level is split over the pairs; the maximum over pairs holds at ``confidence``.

An implementation under test (simulator/audit/implementation.py, ``ImplementationRandomizer``)
is audited the same way, from its own samples: ``randomize`` calls the user's code, the
declared distribution is the claim's. Output spaces too large to tabulate (unary encodings over
more than 20 values) and black boxes are reduced by an *event function* (``events``; default
implementation.default_events, for a black box with discrete reports the reports seen in a
pilot sample drawn from its own stream): the counts are then per event, the events are chosen
on held-out samples (``holdout_fraction`` > 0 is required), and the goodness of fit is a
two-sample chi-square test of homogeneity between the implementation's and the declared
sampler's event counts (the declared randomizer's own ``randomize``, same number of samples,
cells of expected count < 5 pooled); a black box has no declared distribution and no fit.
With a claimed delta0 > 0 the bound is ln((P_x_lo(S) - delta0) / P_x'_hi(S)), which exceeds
eps0 only if the implementation is not (eps0, delta0)-LDP. Large categorical domains of an
implementation are audited on the decomposition's candidate inputs plus the domain's first two
and last two values (where off-by-one faults live).
"""

from __future__ import annotations

import itertools
import math
import time
from dataclasses import dataclass

import numpy as np
from scipy import stats

from shufflesim.protocols.errors import require
from shufflesim.protocols.randomizers.base import MAX_ENUMERABLE_OUTPUTS, Categorical
from shufflesim.simulator.audit.confidence import ErrorBudget, HoldoutTrials
from shufflesim.simulator.audit.events import (
    EventBound,
    evaluate_all,
    evaluate_events,
    select_events,
)
from shufflesim.simulator.audit.levels import Level, register_level
from shufflesim.simulator.audit.output_events import ObservedOutputs, default_events
from shufflesim.simulator.audit.sampling import child, chunk_sizes

#: Largest discrete output space tabulated densely (one counter per output).
MAX_DENSE_OUTPUTS = MAX_ENUMERABLE_OUTPUTS
#: Outputs are coarsened into at most this many ratio-ordered bins before event selection.
MAX_EVENT_BINS = 4096
#: Minimum expected count of a chi-square cell (smaller cells are pooled).
MIN_EXPECTED = 5.0


@dataclass(frozen=True)
class RandomizerAuditOptions(HoldoutTrials):
    """trials: samples per audited input (selection + evaluation); confidence: of the eps0 lower
    bound (maximum over pairs) and of the goodness-of-fit verdict; holdout_fraction: share of
    the samples used to choose events; shortlist: events evaluated per pair; bins: quantile bins
    of continuous outputs; max_inputs: categorical domains up to this size are audited on every
    input, larger ones (and interval domains) on the inputs of the decomposition's neighbour
    candidates; chunk: samples per random stream chunk."""

    trials: int
    confidence: float = 0.95
    holdout_fraction: float = 0.2
    shortlist: int = 1
    bins: int = 64
    max_inputs: int = 8
    chunk: int = 1 << 20

    def __post_init__(self) -> None:
        self.check_holdout(min_trials=10, zero_holdout=True)
        for name, low in (("shortlist", 1), ("bins", 2), ("max_inputs", 2), ("chunk", 1)):
            value = getattr(self, name)
            require(isinstance(value, int) and value >= low, name, value,
                    f"must be an integer >= {low}")


@dataclass(frozen=True)
class FitResult:
    """Goodness of fit of the samples of one input."""

    input: object
    test: str
    statistic: float
    dof: int | None
    p_value: float
    samples: int


@dataclass(frozen=True)
class PairBound:
    """The eps0 lower bound from one ordered pair of inputs."""

    x: object
    x_prime: object
    event: str
    bound: EventBound
    row_confidence: float

    @property
    def epsilon_lb(self) -> float:
        return self.bound.epsilon


@dataclass(frozen=True)
class RandomizerAudit:
    randomizer: str
    epsilon0: float
    options: RandomizerAuditOptions
    fits: tuple[FitResult, ...]
    pairs: tuple[PairBound, ...]
    seconds: float
    note: str = ""
    delta0: float = 0.0
    events: str = "outputs"
    implementation: str = ""

    @property
    def epsilon_lb(self) -> float:
        """max over pairs: a lower bound on the implementation's eps0 at ``confidence``."""
        return max(p.epsilon_lb for p in self.pairs)

    @property
    def best(self) -> PairBound:
        return max(self.pairs, key=lambda p: p.epsilon_lb)

    @property
    def fit_p_value(self) -> float | None:
        """Bonferroni-adjusted p-value of the goodness-of-fit tests (None if none ran)."""
        if not self.fits:
            return None
        return min(1.0, min(f.p_value for f in self.fits) * len(self.fits))

    @property
    def fit_rejected(self) -> bool:
        p = self.fit_p_value
        return p is not None and p < 1.0 - self.options.confidence

    @property
    def ldp_violated(self) -> bool:
        return self.epsilon_lb > self.epsilon0 * (1 + 1e-12)


# ------------------------------------------------------------------------------------------
# Inputs and samples
# ------------------------------------------------------------------------------------------
def audit_inputs(randomizer, max_inputs: int) -> list:
    """Every input of a small categorical domain, else the decomposition's candidate inputs
    (for an implementation under test also the domain's two first and two last values; a black
    box's interval: its ends and midpoint)."""
    domain = randomizer.input_domain
    if isinstance(domain, Categorical) and domain.size <= max_inputs:
        return list(range(domain.size))
    implementation = hasattr(randomizer, "implementation")
    if implementation and getattr(randomizer, "declared", None) is None:
        if isinstance(domain, Categorical):
            return sorted({0, 1, domain.size - 2, domain.size - 1})
        return [domain.low, (domain.low + domain.high) / 2, domain.high]
    # the randomizer's own declaration (protocols/randomizers/analysis.py): metric-DP
    # randomizers (2-D, bounded support), multi-message ones (beside their bounds in
    # protocols/bounds/multi_message) and (eps0, delta0)-LDP ones (the gaussian's worst pair
    # (low, high)) declare their pairs without a decomposition
    cand = randomizer.neighbour_candidates()
    seen = []
    extra = ([0, 1, domain.size - 2, domain.size - 1]
             if implementation and isinstance(domain, Categorical) else [])
    for x in itertools.chain(itertools.chain.from_iterable(cand.pairs), extra):
        if x not in seen:
            seen.append(x)
    return seen


def _continuous(randomizer) -> bool:
    return getattr(randomizer, "output_kind", "discrete") == "continuous"


def _draw(randomizer, x, size: int, rng: np.random.Generator, events=None) -> np.ndarray:
    out = randomizer.randomize(np.full(size, x), rng)
    if _continuous(randomizer):  # planar points: the randomizer's 1-D statistic (its cdf's)
        statistic = getattr(randomizer, "audit_statistic", None)
        return np.asarray(out if statistic is None else statistic(out), dtype=float)
    if events is not None:
        return np.asarray(events(np.asarray(out)), dtype=np.int64)
    return np.asarray(randomizer.output_index(out), dtype=np.int64)


def _samples(randomizer, x, trials: int, seed, chunk: int, dense: int | None, events=None):
    """Dense output (or event) counts (discrete, ``dense`` cells) or the samples themselves."""
    parts = []
    counts = np.zeros(dense, dtype=np.int64) if dense else None
    for c, size in enumerate(chunk_sizes(trials, chunk)):
        y = _draw(randomizer, x, size, np.random.default_rng(child(seed, c)), events)
        if dense:
            if y.size and (y.min() < 0 or y.max() >= dense):
                raise ValueError(f"{randomizer.name}: output index outside [0, {dense})")
            counts += np.bincount(y, minlength=dense)
        else:
            parts.append(y)
    return counts if dense else (np.concatenate(parts) if parts else np.zeros(0))


# ------------------------------------------------------------------------------------------
# Goodness of fit
# ------------------------------------------------------------------------------------------
def chi_square_fit(counts: np.ndarray, pmf: np.ndarray) -> tuple[float, int, float]:
    """Pearson chi-square of ``counts`` against ``pmf`` (cells of expected count < 5 pooled,
    largest first into one pool); an observation on a zero-probability output gives p = 0."""
    counts = np.asarray(counts, dtype=float)
    total = counts.sum()
    expected = np.asarray(pmf, dtype=float) * total
    if (counts[expected <= 0] > 0).any():
        return math.inf, int((expected > 0).sum()) - 1, 0.0
    keep = expected >= MIN_EXPECTED
    obs = list(counts[keep])
    exp = list(expected[keep])
    pooled_exp = expected[~keep].sum()
    if pooled_exp > 0:
        obs.append(counts[~keep].sum())
        exp.append(pooled_exp)
    obs, exp = np.array(obs), np.array(exp)
    if obs.size < 2:
        return 0.0, 0, 1.0
    exp = exp * (obs.sum() / exp.sum())
    result = stats.chisquare(obs, exp)
    return float(result.statistic), int(obs.size - 1), float(result.pvalue)


def two_sample_fit(counts_a: np.ndarray, counts_b: np.ndarray) -> tuple[float, int, float]:
    """Chi-square test of homogeneity of two count vectors (cells whose expected count is < 5
    in either sample pooled into one cell)."""
    a = np.asarray(counts_a, dtype=float)
    b = np.asarray(counts_b, dtype=float)
    na, nb = a.sum(), b.sum()
    if na == 0 or nb == 0:
        return 0.0, 0, 1.0
    total = a + b
    small = np.minimum(total * na, total * nb) / (na + nb) < MIN_EXPECTED
    cols = [a[~small], b[~small]]
    if small.any() and total[small].sum() > 0:
        cols = [np.append(cols[0], a[small].sum()), np.append(cols[1], b[small].sum())]
    table = np.vstack(cols)
    table = table[:, table.sum(axis=0) > 0]
    if table.shape[1] < 2:
        return 0.0, 0, 1.0
    result = stats.chi2_contingency(table, correction=False)
    return float(result.statistic), int(result.dof), float(result.pvalue)


def _fit(randomizer, x, data, dense: int | None) -> FitResult | None:
    if dense:
        if dense > MAX_ENUMERABLE_OUTPUTS:
            return None
        pmf = np.asarray(randomizer.output_pmf(np.array([x])))[0]
        stat, dof, p = chi_square_fit(data, pmf)
        return FitResult(x, "chi-square", stat, dof, p, int(data.sum()))
    if not hasattr(randomizer, "cdf"):
        return None
    result = stats.kstest(data, lambda t: randomizer.cdf(x, t))
    return FitResult(x, "kolmogorov-smirnov", float(result.statistic), None,
                     float(result.pvalue), int(data.size))


# ------------------------------------------------------------------------------------------
# eps0 lower bound
# ------------------------------------------------------------------------------------------
def _coarsen(order_bins: np.ndarray, per_output: list[np.ndarray]) -> list[np.ndarray]:
    """Per-bin counts after ordering outputs (``order_bins[output]`` = its ordered bin)."""
    bins = int(order_bins.max()) + 1
    return [np.bincount(order_bins, weights=c, minlength=bins).astype(np.int64)
            for c in per_output]


def _ordered_bins(key: np.ndarray) -> np.ndarray:
    """Bin of each output when outputs are sorted by ``key`` (ascending), coarsened to at most
    MAX_EVENT_BINS bins of consecutive ranks."""
    k = key.shape[0]
    rank = np.empty(k, dtype=np.int64)
    rank[np.argsort(key, kind="stable")] = np.arange(k)
    if k > MAX_EVENT_BINS:
        rank = rank * MAX_EVENT_BINS // k
    return rank


def _pair_bound(sel, ev, declared_key, options: RandomizerAuditOptions,
                budget: ErrorBudget, delta0: float = 0.0) -> EventBound:
    """sel/ev: (counts of x, counts of x') per output (sel None: split strategy)."""
    if sel is None:
        bins = _ordered_bins(declared_key)
        ev_a, ev_b = _coarsen(bins, list(ev))
        return evaluate_all(ev_a, ev_b, options.evaluation_trials, delta0, budget.row_alpha)
    ratio = np.log(sel[0] + 0.5) - np.log(sel[1] + 0.5)
    bins = _ordered_bins(ratio)
    sel_a, sel_b, ev_a, ev_b = _coarsen(bins, [*sel, *ev])
    events = select_events(sel_a, sel_b, options.selection_trials, options.evaluation_trials,
                           delta0, budget.limit_alpha, options.shortlist)
    return evaluate_events(events, ev_a, ev_b, options.evaluation_trials, delta0,
                           budget.limit_alpha, options.selection_trials)


def _quantile_bins(pooled: np.ndarray, bins: int) -> np.ndarray:
    """Inner edges of ``bins`` bins at the quantiles of the (selection) samples."""
    return np.unique(np.quantile(pooled, np.linspace(0, 1, bins + 1)[1:-1]))


def audit_randomizer(randomizer, options: RandomizerAuditOptions,
                     seed: np.random.SeedSequence | int, inputs=None, events=None,
                     delta0: float = 0.0) -> RandomizerAudit:
    """Run the randomizer-level audit (module docstring) on ``inputs`` (default
    :func:`audit_inputs`), with outputs reduced by ``events`` (an event function,
    implementation.EventFunction; default: the output index when the outputs can be
    tabulated)."""
    start = time.perf_counter()
    seq = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
    inputs = audit_inputs(randomizer, options.max_inputs) if inputs is None else list(inputs)
    require(len(inputs) >= 2, "inputs", inputs, "needs at least two inputs")
    continuous = _continuous(randomizer)
    declared = getattr(randomizer, "declared", randomizer)
    require(not continuous or options.selection_trials > 0, "holdout_fraction",
            options.holdout_fraction, "continuous outputs are binned on selection samples: "
            "must be > 0")
    dense = None
    if not continuous:
        if events is None:
            events = default_events(randomizer, inputs)
        if events is None and declared is None:
            events = _pilot_events(randomizer, inputs, child(seq, len(inputs), 9), options)
        if events is None:
            size = randomizer.output_size
            require(size is not None and size <= MAX_DENSE_OUTPUTS, "output_size", size,
                    f"the randomizer-level audit tabulates at most {MAX_DENSE_OUTPUTS} outputs "
                    "(give an event function)")
            dense = int(size)
        else:
            require(options.selection_trials > 0, "holdout_fraction",
                    options.holdout_fraction, "events are chosen on selection samples when "
                    "outputs are reduced by an event function: must be > 0")
            dense = int(events.size)
    sel, ev = {}, {}
    for i, x in enumerate(inputs):  # a loop over the few audited inputs
        if options.selection_trials:
            sel[i] = _samples(randomizer, x, options.selection_trials, child(seq, i, 0),
                              options.chunk, dense, events)
        ev[i] = _samples(randomizer, x, options.evaluation_trials, child(seq, i, 1),
                         options.chunk, dense, events)
    fits = []
    for i, x in enumerate(inputs):
        data = ev[i] if i not in sel else (sel[i] + ev[i] if dense else
                                           np.concatenate([sel[i], ev[i]]))
        if events is None:
            fit = _fit(randomizer, x, data, dense)
        elif declared is not None:  # two samples: the implementation's, the declared sampler's
            ref = _samples(declared, x, options.trials, child(seq, i, 2), options.chunk, dense,
                           events)
            stat, dof, p = two_sample_fit(data, ref)
            fit = FitResult(x, "two-sample chi-square", stat, dof, p, int(data.sum()))
        else:
            fit = None
        if fit is not None:
            fits.append(fit)
    pairs = [(i, j) for i in range(len(inputs)) for j in range(len(inputs)) if i != j]
    budget = ErrorBudget(options.confidence, rows=len(pairs), events=options.shortlist)
    results = []
    label = "outputs" if events is None else events.label
    for i, j in pairs:  # a loop over input pairs (vectorized over outputs and samples)
        results.append(_pair_result(randomizer, inputs, i, j, sel, ev, dense, options, budget,
                                    delta0, events is not None, label))
    note = "" if len(fits) == len(inputs) else "goodness of fit not available for some inputs"
    if declared is None:
        note = "black box: no declared distribution, no goodness of fit"
    source = getattr(getattr(randomizer, "implementation", None), "source", "")
    # multi-message randomizers: epsilon0 is a design target; one user's LDP level is log p
    level = float(getattr(randomizer, "local_epsilon", randomizer.epsilon0))
    if level != float(randomizer.epsilon0):
        note = (note + "; " if note else "") + f"declared LDP level log p = {level:g}, not eps0"
    return RandomizerAudit(randomizer.name, level, options, tuple(fits),
                           tuple(results), time.perf_counter() - start, note, float(delta0),
                           label, source)


def _pilot_events(randomizer, inputs, seed, options) -> ObservedOutputs:
    """Events of a black box with discrete reports: the reports seen in a pilot sample (its
    own random stream, independent of the selection and evaluation samples)."""
    size = max(1, options.selection_trials // 4)
    pilot = [np.asarray(randomizer.randomize(np.full(size, x),
                                             np.random.default_rng(child(seed, i))))
             for i, x in enumerate(inputs)]
    return ObservedOutputs.from_pilot(np.concatenate(pilot))


def _pair_result(randomizer, inputs, i, j, sel, ev, dense, options, budget, delta0=0.0,
                 reduced: bool = False, label: str = "outputs") -> PairBound:
    x, xp = inputs[i], inputs[j]
    holdout = bool(sel)
    if dense:
        declared = None
        if not holdout and not reduced:
            rows = np.asarray(randomizer.output_pmf(np.array([x, xp])))
            with np.errstate(divide="ignore"):
                declared = np.log(rows[0]) - np.log(rows[1])
        bound = _pair_bound((sel[i], sel[j]) if holdout else None, (ev[i], ev[j]), declared,
                            options, budget, delta0)
    else:
        edges = _quantile_bins(np.concatenate([sel[i], sel[j]]), options.bins)
        nb = edges.size + 1
        count = [np.bincount(np.searchsorted(edges, d), minlength=nb)
                 for d in (sel[i], sel[j], ev[i], ev[j])]
        bound = _pair_bound(count[:2], count[2:], None, options, budget, delta0)
        label = "output bins"
    event = f"{label} ranked {'>=' if bound.event.side == 'upper' else '<='} " \
            f"{bound.event.threshold} by the x/x' ratio"
    return PairBound(x, xp, event, bound, budget.row_confidence)


register_level(Level.RANDOMIZER, "one user's randomizer: goodness of fit and an eps0 lower bound")
