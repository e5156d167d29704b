"""Shuffle-level audit: an empirical lower bound on the central eps of the shuffled randomizer.

For a neighbouring pair (X0, X1) (attacks.py), T trials of the shuffled output are drawn in each
world through the group histogram (sampling.py), each attack's statistic is tabulated, and for
each attack and direction a tail event S is chosen and evaluated (events.py):

    eps_lb = ln((P_A_lo(S) - delta) / P_B_hi(S))    (A, B) = (X0, X1) or (X1, X0),

with one-sided Clopper-Pearson limits. The error level 1 - confidence is split evenly over the
attacks x directions (union bound, confidence.ErrorBudget), so the maximum over rows holds with
the stated confidence; each row holds on its own with its row confidence. Several deltas reuse
the same trials: each delta's result is a separate statement at the stated confidence.

Beside each row stands the exact eps(delta) of the very pair and direction attacked (000 Thm 14
through the engine, lower side of its numerical error), which no valid empirical bound may
exceed beyond its confidence.

An implementation under test (implementation.ImplementationRandomizer) is run itself: every
trial is n reports of the user's code, user 1 holding x0 (X0) or x1 (X1) and the others x2 (or
inputs drawn from ``others``), mapped to the declared output groups of the pair
(groups.output_groups) - the group histogram is the shuffled output up to a relabelling that
the attacks do not need. The attacks' statistics are fixed functions of the histogram, so the
bounds hold whatever the implementation does; the exact value beside a row is the declared
mechanism's. Beside the attacks, a goodness-of-fit row per world: Pearson's chi-square of the
pooled output counts of all reports against their declared expectation (T (R(x_w) + (n - 1) m));
a sum of independent multinomials with different laws has a smaller covariance than the
multinomial of the averaged law, so the test is conservative. Cost: trials x n calls of the
implementation (vectorized, in chunks of at most IMPLEMENTATION_REPORTS reports). A claim with
more than 2^20 outputs (a unary encoding of more than 20 values) is not tabulated: each report
is mapped to its group by its declared ratio pair (groups.RatioGroups, from the claim's
``log_prob``; the groups are the claim's decomposition), and the goodness of fit is over
groups; a report with a ratio pair the claim cannot produce rejects it.

``two_stage = True`` is the faster estimate: per trial only user 1's report comes from the
implementation; the other n - 1 reports' group histogram is drawn from the *declared* law
(multinomial). It tests exactly "is user 1's report, produced by the implementation, hidden
among n - 1 reports of the declared mechanism as well as the declared mechanism's would be": a
fault that changes every client's reports is caught through user 1's report; a fault in the
blanket alone (the others' reports) is not. Its goodness of fit uses user 1's reports only.
"""

from __future__ import annotations

import ast
import math
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from shufflesim.protocols.bounds.numerical.decompositions import neighbour_candidates
from shufflesim.protocols.bounds.numerical.optimal import epsilon_from_atoms, exact_lower_epsilon
from shufflesim.protocols.bounds.result import BoundKind
from shufflesim.protocols.errors import require
from shufflesim.protocols.randomizers.base import MAX_ENUMERABLE_OUTPUTS
from shufflesim.simulator.audit.attacks import (
    LR_RESOLUTION,
    HistogramChunk,
    PairModel,
    build_attacks,
    pair_model,
)
from shufflesim.simulator.audit.confidence import ErrorBudget, HoldoutTrials
from shufflesim.simulator.audit.events import (
    EventBound,
    evaluate_all,
    evaluate_events,
    select_events,
)
from shufflesim.simulator.audit.groups import OutputGroups, RatioGroups, output_groups
from shufflesim.simulator.audit.levels import Level, attack_names, register_level
from shufflesim.simulator.audit.randomizer_level import FitResult, chi_square_fit
from shufflesim.simulator.audit.sampling import DEFAULT_CHUNK, HistogramSampler, child, tabulate

DIRECTIONS = ("X0 vs X1", "X1 vs X0")
#: Reports of an implementation under test per chunk of trials (trials per chunk x n).
IMPLEMENTATION_REPORTS = 1 << 22


@dataclass(frozen=True)
class AuditOptions(HoldoutTrials):
    """How an attack-based audit runs (shared by the shuffle and pipeline levels).

    trials: trials per world in total (selection + evaluation); confidence: of the maximum over
    rows; holdout_fraction: share of each world's trials used to choose the events (0: the
    ``split`` strategy over every tail event); shortlist: events evaluated per row;
    attacks: registered attacks of the level (default: the shuffle level's, levels.ATTACKS);
    resolution: LR bins with more than two groups; chunk: trials per random stream chunk.
    """

    trials: int
    confidence: float = 0.95
    holdout_fraction: float = 0.1
    shortlist: int = 3
    attacks: tuple[str, ...] = field(default_factory=lambda: attack_names(Level.SHUFFLE))
    resolution: int = LR_RESOLUTION
    chunk: int = DEFAULT_CHUNK

    def __post_init__(self) -> None:
        self.check_holdout(min_trials=2, zero_holdout=True)
        require(isinstance(self.shortlist, int) and self.shortlist >= 1, "shortlist",
                self.shortlist, "must be an integer >= 1")
        require(isinstance(self.chunk, int) and self.chunk >= 1, "chunk", self.chunk,
                "must be an integer >= 1")
        require(len(self.attacks) >= 1, "attacks", self.attacks, "needs at least one attack")


@dataclass(frozen=True)
class AttackRow:
    """One attack x direction x delta: the chosen event, its bound and the exact value."""

    attack: str
    direction: str
    delta: float
    event: str
    bound: EventBound
    row_confidence: float
    exact: float | None = None
    exact_error: float | None = None

    @property
    def epsilon_lb(self) -> float:
        return self.bound.epsilon

    @property
    def ratio(self) -> float | None:
        """eps_lb / exact for the attacked pair and direction."""
        if self.exact is None or not self.exact > 0:
            return None
        return self.epsilon_lb / self.exact

    def world_counts(self) -> tuple[int, int]:
        """(count in world 0, count in world 1) of the event."""
        b = self.bound
        return (b.count_a, b.count_b) if self.direction == DIRECTIONS[0] else (b.count_b,
                                                                              b.count_a)


@dataclass(frozen=True)
class AttackAudit:
    """All rows of one audited pair at a level, and their summary per delta."""

    level: str
    randomizer: str
    epsilon0: float
    n: int
    pair: str
    options: AuditOptions
    rows: tuple[AttackRow, ...]
    seconds: float
    exact: dict = field(default_factory=dict)  # delta -> exact eps (max over directions)
    fits: tuple[FitResult, ...] = ()  # an implementation's goodness of fit per world
    implementation: str = ""  # the implementation under test ("": the declared sampler)
    note: str = ""
    #: delta -> the declared mechanism's own eps at the audited pair, upper side of the engine's
    #: numerical error, max over directions (:func:`claim_pair_epsilon`; implementations only)
    claim_pair: dict = field(default_factory=dict)

    @property
    def fit_p_value(self) -> float | None:
        """Bonferroni-adjusted p-value of the goodness-of-fit rows (None if none)."""
        if not self.fits:
            return None
        return min(1.0, min(f.p_value for f in self.fits) * len(self.fits))

    def best(self, delta: float) -> AttackRow:
        """The row with the largest bound at ``delta`` (valid at ``options.confidence``)."""
        rows = [r for r in self.rows if r.delta == delta]
        require(len(rows) >= 1, "delta", delta, "was not audited")
        return max(rows, key=lambda r: r.epsilon_lb)

    def epsilon_lb(self, delta: float) -> float:
        return self.best(delta).epsilon_lb

    @property
    def deltas(self) -> list[float]:
        return sorted({r.delta for r in self.rows})


def default_triple(randomizer, n: int, delta: float) -> tuple:
    """The neighbour triple (x0, x1, x2) at which the exact lower bound (000 Thm 14) is largest,
    as named in its BoundResult note (the first candidate triple if the note has none)."""
    result = exact_lower_epsilon(randomizer, n, delta)
    match = re.search(r"\(x0, x1, x2\) = (\([^)]*\))", result.note)
    if match:
        try:
            triple = ast.literal_eval(match.group(1))
            if isinstance(triple, tuple) and len(triple) == 3:
                return triple
        except (ValueError, SyntaxError):
            pass
    return tuple(neighbour_candidates(randomizer).triples[0])


#: Results of the engine per (atoms, n, delta, side): an audit's full and two-stage runs
#: (two_stage_bulk.audit_both) and its pilots ask for the very same pair (bounded size).
_ENGINE_MEMO: dict = {}
_ENGINE_MEMO_SIZE = 64


def _pair_epsilon(atoms, n: int, delta: float, kind: BoundKind, method: str) -> tuple:
    """(eps, error) of 000 Thm 14 through the engine for one direction, memoised on the atoms'
    bytes (the value is a pure function of them)."""
    key = (atoms.a.tobytes(), atoms.b.tobytes(), atoms.weight.tobytes(), str(atoms.rounding),
           int(n), float(delta), kind.value, method)
    if key not in _ENGINE_MEMO:
        if len(_ENGINE_MEMO) >= _ENGINE_MEMO_SIZE:
            _ENGINE_MEMO.pop(next(iter(_ENGINE_MEMO)))
        r = epsilon_from_atoms([atoms], n, delta, kind=kind, method=method)
        _ENGINE_MEMO[key] = (float(r.epsilon), float(r.epsilon_error))
    return _ENGINE_MEMO[key]


def exact_by_direction(model: PairModel, delta: float,
                       n: int | None = None) -> tuple[tuple[float, float], ...]:
    """(eps, error) of 000 Thm 14 for the attacked pair with n users (default the model's),
    per direction (lower side of the engine's numerical error)."""
    n = model.n if n is None else n
    return tuple(_pair_epsilon(atoms, n, delta, BoundKind.LOWER, "exact-lower")
                 for atoms in (model.atoms, model.atoms.swapped()))


def claim_pair_epsilon(model: PairModel, delta: float) -> float:
    """The declared mechanism's own eps(delta) at the audited pair (000 Thm 14 through the
    engine on the pair's exact atoms, *upper* side of its numerical error), max over the two
    directions. If the implementation were the claim, the shuffled output of the audited pair
    would have exactly this eps: an empirical lower bound above it convicts the implementation
    at the bound's confidence, whether or not a proven blanket bound exists for the claim (an
    (eps0, delta0) claim, a binned continuous one)."""
    return max(_pair_epsilon(atoms, model.n, delta, BoundKind.UPPER, "claim-pair")[0]
               for atoms in (model.atoms, model.atoms.swapped()))


def check_deltas(deltas) -> tuple[float, ...]:
    deltas = (deltas,) if np.ndim(deltas) == 0 else tuple(deltas)
    require(len(deltas) >= 1, "delta", deltas, "needs at least one value")
    for d in deltas:
        require(isinstance(d, (int, float)) and not isinstance(d, bool) and 0 < d < 1, "delta",
                d, "must lie in the open interval (0, 1)")
    return tuple(float(d) for d in deltas)


def attack_rows(names: Sequence[str], per_bin: dict, describe: dict, options: AuditOptions,
                deltas: Sequence[float], exact: dict | None) -> list[AttackRow]:
    """Choose and evaluate events for every attack x direction x delta.

    ``per_bin[name] = ((sel0, sel1), (ev0, ev1))`` are the counts per bin of the selection and
    evaluation trials in worlds 0 and 1 (``sel`` None for the split strategy); ``describe[name]``
    renders a tail event; ``exact[delta]`` the per-direction exact values or None.
    """
    budget = ErrorBudget(options.confidence, rows=2 * len(names), events=options.shortlist)
    rows = []
    for delta in deltas:
        for name in names:
            (sel0, sel1), (ev0, ev1) = per_bin[name]
            for d, direction in enumerate(DIRECTIONS):
                sel_a, sel_b = (sel0, sel1) if d == 0 else (sel1, sel0)
                ev_a, ev_b = (ev0, ev1) if d == 0 else (ev1, ev0)
                if sel_a is None:
                    bound = evaluate_all(ev_a, ev_b, options.evaluation_trials, delta,
                                         budget.row_alpha)
                else:
                    events = select_events(sel_a, sel_b, options.selection_trials,
                                           options.evaluation_trials, delta, budget.limit_alpha,
                                           options.shortlist)
                    bound = evaluate_events(events, ev_a, ev_b, options.evaluation_trials,
                                            delta, budget.limit_alpha, options.selection_trials)
                ex = exact[delta][d] if exact else (None, None)
                rows.append(AttackRow(name, direction, delta,
                                      describe[name](bound.event.side, bound.event.threshold),
                                      bound, budget.row_confidence, ex[0], ex[1]))
    return rows


class ImplementationSampler:
    """Group histograms of trials made of the implementation's own reports (module docstring),
    and the pooled counts (per output, or per group for an output space mapped by its ratio
    pairs, groups.RatioGroups) of the reports that came from the implementation."""

    def __init__(self, randomizer, groups: OutputGroups | RatioGroups, x0, x1, others, n: int,
                 two_stage: bool = False) -> None:
        self.randomizer = randomizer
        self.groups = groups
        self.inputs = (x0, x1)
        self.others = others
        self.n = n
        self.two_stage = two_stage
        self.dense = isinstance(groups, OutputGroups)
        size = int(randomizer.output_size) if self.dense else groups.model.groups
        self.output_counts = [np.zeros(size, dtype=np.int64) for _ in (0, 1)]
        self.unmatched = [0, 0]
        self.trials = [0, 0]

    def _cells(self, world: int, reports) -> tuple[np.ndarray, np.ndarray]:
        """(group, counted cell) of every report."""
        if self.dense:
            idx = np.asarray(self.randomizer.output_index(reports), dtype=np.int64)
            return self.groups.group[idx], idx
        group, unmatched = self.groups.groups_of(np.asarray(reports))
        self.unmatched[world] += unmatched
        return group, group

    def sample(self, world: int, trials: int, rng: np.random.Generator) -> HistogramChunk:
        model = self.groups.model
        g = model.groups
        x = self.inputs[world]
        self.trials[world] += trials
        size = self.output_counts[0].size
        if self.two_stage:
            group, cell = self._cells(world, self.randomizer.randomize(np.full(trials, x), rng))
            self.output_counts[world] += np.bincount(cell, minlength=size)
            counts = rng.multinomial(self.n - 1, model.ref, size=trials)
            counts[np.arange(trials), group] += 1
        else:
            values = np.empty((trials, self.n), dtype=np.asarray(x).dtype)
            values[:, 0] = x
            if np.ndim(self.others) == 0:
                values[:, 1:] = self.others
            else:
                pi = np.asarray(self.others, dtype=float)
                values[:, 1:] = rng.choice(pi.size, p=pi, size=(trials, self.n - 1))
            group, cell = self._cells(world, self.randomizer.randomize(values, rng))
            self.output_counts[world] += np.bincount(cell.ravel(), minlength=size)
            rows = np.arange(trials)[:, None] * g
            counts = np.bincount((rows + group).ravel(),
                                 minlength=trials * g).reshape(trials, g)
        return HistogramChunk(self.n, counts[:, 1] if g == 2 else counts)

    def fits(self) -> tuple[FitResult, ...]:
        """Goodness of fit of the pooled counts per world (module docstring); a report whose
        ratio pair the claim cannot produce rejects outright."""
        out = []
        for w in (0, 1):
            if not self.trials[w]:
                continue
            if self.dense:
                rows = self.groups.rows
                law = rows[w] if self.two_stage else rows[w] + (self.n - 1) * rows[2]
                test = "pooled chi-square"
            else:
                model = self.groups.model
                law = model.world(w) if self.two_stage else model.world(w) + (
                    self.n - 1) * model.ref
                test = "pooled chi-square over groups"
            stat, dof, p = chi_square_fit(self.output_counts[w], law / law.sum())
            if self.unmatched[w]:
                stat, p, test = math.inf, 0.0, (f"{self.unmatched[w]} report(s) with a ratio "
                                                "pair the claim cannot produce")
            out.append(FitResult(f"X{w}", test, stat, dof, p,
                                 int(self.output_counts[w].sum())))
        return tuple(out)


def audit_shuffle(
    randomizer, n: int, deltas, options: AuditOptions, seed: np.random.SeedSequence | int,
    *, x0=None, x1=None, others=None, with_exact: bool = True,
    progress: Callable[[int, int], None] | None = None, two_stage: bool = False,
    sampler_type: type | None = None,
) -> AttackAudit:
    """Audit the shuffled ``randomizer`` with n users at each delta (module docstring).

    The pair defaults to the triple maximising the exact lower bound at the first delta;
    ``others`` is x2 or a probability vector over inputs (attacks.pair_model). An
    implementation under test is run itself (``two_stage``: only user 1's report;
    ``sampler_type``: an ImplementationSampler subclass, e.g. two_stage_bulk's).
    """
    start = time.perf_counter()
    deltas = check_deltas(deltas)
    require(isinstance(n, int) and n >= 2, "n", n, "must be an integer >= 2")
    if x0 is None or x1 is None or others is None:
        t0, t1, t2 = default_triple(randomizer, n, deltas[0])
        x0 = t0 if x0 is None else x0
        x1 = t1 if x1 is None else x1
        others = t2 if others is None else others
    implementation = hasattr(randomizer, "implementation")
    chunk = options.chunk
    if implementation:
        require(randomizer.declared is not None, "implementation",
                randomizer.implementation.source, "a black box is audited at the randomizer "
                "level only: the shuffle level needs a claimed randomizer (its output groups)")
        declared = randomizer.declared
        if declared.output_size is not None and declared.output_size <= MAX_ENUMERABLE_OUTPUTS:
            groups = output_groups(declared, n, x0, x1, others)
        else:  # too many outputs to tabulate: groups by the reports' declared ratio pairs
            groups = RatioGroups.build(declared, pair_model(declared, n, x0, x1, others), x0,
                                       x1, others)
        model = groups.model
        sampler = (sampler_type or ImplementationSampler)(randomizer, groups, x0, x1, others,
                                                          n, two_stage)
        chunk = max(1, min(chunk, IMPLEMENTATION_REPORTS // (1 if two_stage else n)))
    else:
        require(not two_stage, "two_stage", two_stage, "applies to an implementation under "
                "test only")
        model = pair_model(randomizer, n, x0, x1, others)
        sampler = HistogramSampler(model)
    attacks = build_attacks(model, options.attacks, options.resolution)
    seq = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
    total = 2 * options.trials
    done = [0]

    def advance(k: int) -> None:
        done[0] += k
        if progress is not None:
            progress(done[0], total)

    counts = {}
    for phase, size in ((0, options.selection_trials), (1, options.evaluation_trials)):
        per_world = [tabulate(sampler, attacks, w, size, child(seq, w, phase), chunk,
                              advance) if size else None for w in (0, 1)]
        counts[phase] = per_world
    per_bin = {}
    for i, attack in enumerate(attacks):
        sel = ((None, None) if counts[0][0] is None
               else (counts[0][0][i], counts[0][1][i]))
        per_bin[attack.name] = (sel, (counts[1][0][i], counts[1][1][i]))
    exact = {d: exact_by_direction(model, d) for d in deltas} if with_exact else None
    rows = attack_rows([a.name for a in attacks], per_bin,
                       {a.name: a.describe for a in attacks}, options, deltas, exact)
    summary = {d: max(v[0] for v in exact[d]) for d in deltas} if exact else {}
    fits = sampler.fits() if implementation else ()
    source = randomizer.implementation.source if implementation else ""
    note = ("two-stage: user 1's report from the implementation, the others' from the "
            "declared law" if two_stage else "")
    pair = ({d: claim_pair_epsilon(model, d) for d in deltas} if implementation and with_exact
            else {})
    return AttackAudit("shuffle", randomizer.name, float(randomizer.epsilon0), n, model.label,
                       options, tuple(rows), time.perf_counter() - start, summary, fits,
                       source, note, pair)


register_level(Level.SHUFFLE, "the shuffled histogram of n reports: an eps lower bound per delta")
