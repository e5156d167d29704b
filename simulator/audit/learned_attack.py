"""A learned attack on the shuffled multiset (issue 29): DP-Sniper's idea (Bichsel, Steffen,
Bogunovic and Vechev, "DP-Sniper: Black-Box Discovery of Differential Privacy Violations using
Classifiers", IEEE S&P 2021, Sec. IV-V: a classifier trained to tell the outputs of two
neighbouring inputs apart, its thresholded score as the event, certified on fresh samples)
applied to the *shuffled* output of n reports, for continuous and vector reports where no claim
likelihood ratio is used (the claim may be wrong, anisotropic, or absent).

**What it sees.** Each trial is the multiset of n reports (scalars, complex numbers, or vectors
of ``dim`` numbers): user 1 holds x0 (world 0) or x1 (world 1), the others fixed inputs.
Every feature below is a symmetric function of the n reports, so the attack is a function of
the shuffled output whatever order the caller's ``draw`` returns (:func:`multiset_features`):

* scalar reports z_1..z_n: order statistics (all n when n <= ORDER_RANKS, else ORDER_RANKS
  evenly spaced ranks, min and max included), the first three moments of the standardised
  values and the products of the mean with itself and the second moment (the shuffled
  multiset's log likelihood ratio is a log of a sum, not linear in the moments), counts in BINS
  cells (pooled training quantiles), the number of exact repeats within
  the multiset, and the number of reports equal to each given atom (e.g. the inputs, which a
  leaking client sends in clear);
* vector reports y_1..y_n (complex numbers are (re, im)): the scalar features of the projections
  w . y_i onto a direction w chosen on training trials (Fisher's discriminant of the two worlds'
  per-trial sums: w = (Cov + ridge)^-1 (mean_0 - mean_1), so a leak along any direction, not
  only the inputs' difference, is found), the sums of squared norms, their max and min, and,
  for at most MAX_COORDINATES coordinates, the per-coordinate sums and sums of squares (a
  variance leak in one coordinate).

**The classifier and the event** (the same three-way split as the randomizer level's
``classifier`` attack, search.py): the selection trials of each world (``holdout_fraction``
of ``trials``) are split into *training* trials (at most MAX_TRAIN per world: they fix the
feature map and fit classifier.fit_logistic, L2-regularised logistic regression, world 0
labelled 1) and *tuning* trials (their scores, pooled, fix SCORE_BINS cells; the tail events of
the score are ranked on them, events.select_events). The evaluation trials, drawn afterwards
from their own streams, certify the shortlisted events {score >= t} / {score <= t} with
one-sided Clopper-Pearson limits (events.evaluate_events): eps_lb = ln((P_A_lo(S) - delta) /
P_B_hi(S)), the error level split over the two directions and the shortlist
(confidence.ErrorBudget). Every choice (features, direction, weights, cells, events) uses held-out
trials only, so the bound holds at its stated confidence *whatever the classifier learned*; a
poor classifier only costs power.

**API** (for the shuffle level, ``audit_gradient`` and the pipeline level):
:func:`learned_audit` ``(draw, n, deltas, options, seed, ...)`` with ``draw(world, trials, rng)
-> reports`` shaped (trials, n), (trials, n) complex or (trials, n, dim); it returns a
shuffle_level.AttackAudit whose rows are the attack ``learned`` in both directions per delta
(tables.attack_records renders them). :func:`learned_verdict` judges its best row against an
upper bound of the claimed mechanism's shuffled eps that holds for *every* statistic of the raw
reports (pair_upper.py, a proven catalogue bound), as the verdict row
``implementation-learned`` with its own p-value (grading.Evidence): it rests on its own
evaluated event, so it is a test group of its own in Holm's procedure (grading.py).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from shufflesim.protocols.errors import require
from shufflesim.simulator.audit.classifier import fit_logistic
from shufflesim.simulator.audit.confidence import ErrorBudget
from shufflesim.simulator.audit.events import evaluate_events, select_events
from shufflesim.simulator.audit.grading import Evidence
from shufflesim.simulator.audit.sampling import child
from shufflesim.simulator.audit.shuffle_level import (
    DIRECTIONS,
    AttackAudit,
    AttackRow,
    AuditOptions,
    check_deltas,
)
from shufflesim.simulator.audit.verdicts import (
    CONSISTENT,
    NOT_EVALUATED,
    TOLERANCE,
    VIOLATED,
    ImplementationVerdict,
)

NAME = "learned"
#: Order statistics kept per trial (all of them when n is at most this).
ORDER_RANKS = 24
#: Cells of the per-report histogram feature (pooled training quantiles).
BINS = 16
#: Cells of the score (pooled tuning quantiles) whose tails are the candidate events.
SCORE_BINS = 256
#: Training trials per world at most (the rest of the selection trials tune the threshold).
MAX_TRAIN = 50_000
#: L2 penalty of the classifier per training trial (classifier.fit_logistic): strong, because
#: one report's change moves the multiset's features little and many features are collinear
#: (a weaker penalty fitted noise: eps_lb of a Gaussian client at sigma x 0.8, n = 10, fell
#: 0.003-0.007 below the profile test's threshold at a penalty of 1e-4, and came 0.0002-0.009
#: above it at 0.2; seeds 0-2, 10^6 trials).
RIDGE = 0.2
#: Coordinates up to which per-coordinate sums and sums of squares are features.
MAX_COORDINATES = 64
#: Numbers drawn per chunk of trials (trials per chunk x n x dim).
CHUNK_NUMBERS = 1 << 21
#: Spawn key of the learned attack's streams (apart from the histogram attacks').
LEARNED_KEY = 0x1EA2
#: Ridge of the discriminant direction, relative to the covariance's mean eigenvalue.
DIRECTION_RIDGE = 1e-3

Draw = Callable[[int, int, np.random.Generator], np.ndarray]


def as_reports(reports) -> np.ndarray:
    """Reports of a batch of trials as real numbers shaped (trials, n, dim) (complex numbers
    become (re, im) pairs; scalar reports dim 1)."""
    r = np.asarray(reports)
    if np.iscomplexobj(r):
        r = np.stack([r.real, r.imag], axis=-1)
    require(r.ndim in (2, 3) and np.issubdtype(r.dtype, np.number), "reports", r.shape,
            "a draw returns (trials, n) scalars or complex numbers, or (trials, n, dim) vectors")
    r = r.astype(float, copy=False)
    require(bool(np.isfinite(r).all()), "reports", "non-finite", "must be finite numbers")
    return r[..., None] if r.ndim == 2 else r


@dataclass(frozen=True)
class FeatureMap:
    """The fitted feature map (module docstring): centre and scale of the projections, histogram
    cut points, ranks, the direction (vectors) and the atoms."""

    direction: np.ndarray  # unit vector of length dim (dim 1: [1.0])
    centre: float
    scale: float
    cuts: np.ndarray
    ranks: np.ndarray
    atoms: tuple[np.ndarray, ...]  # each of the reports' width (a complex atom: (re, im))
    coordinates: bool  # per-coordinate sums and sums of squares

    def __call__(self, reports: np.ndarray) -> np.ndarray:
        return multiset_features(reports, self)


def fit_feature_map(train0: np.ndarray, train1: np.ndarray,
                    atoms: Sequence[float] = ()) -> FeatureMap:
    """The feature map of the training trials of both worlds (arrays (trials, n, dim))."""
    dim = train0.shape[2]
    n = train0.shape[1]
    if dim == 1:
        direction = np.ones(1)
    else:
        s0, s1 = train0.sum(axis=1), train1.sum(axis=1)
        diff = s0.mean(axis=0) - s1.mean(axis=0)
        cov = 0.5 * (np.cov(s0, rowvar=False) + np.cov(s1, rowvar=False))
        cov = np.atleast_2d(cov)
        ridge = DIRECTION_RIDGE * max(float(np.trace(cov)) / dim, 1e-300)
        try:
            w = np.linalg.solve(cov + ridge * np.eye(dim), diff)
        except np.linalg.LinAlgError:
            w = diff
        norm = float(np.linalg.norm(w))
        direction = w / norm if norm > 0 and math.isfinite(norm) else np.eye(dim)[0]
    z = np.concatenate([train0, train1]).reshape(-1, dim) @ direction
    centre = float(np.median(z))
    scale = float(np.std(z))
    scale = scale if scale > 0 else 1.0
    cuts = np.unique(np.quantile(z, np.linspace(0, 1, BINS + 1)[1:-1]))
    ranks = (np.arange(n) if n <= ORDER_RANKS
             else np.unique(np.round(np.linspace(0, n - 1, ORDER_RANKS)).astype(int)))
    points = tuple(np.asarray(as_reports(np.asarray(a).reshape(1, 1, -1) if np.ndim(a) else
                                         np.asarray([[a]])), dtype=float).reshape(-1)
                   for a in atoms)
    return FeatureMap(direction, centre, scale, cuts, ranks,
                      tuple(p for p in points if p.size == dim), dim > 1 and dim <= MAX_COORDINATES)


def multiset_features(reports: np.ndarray, fmap: FeatureMap) -> np.ndarray:
    """Symmetric features of each trial's n reports (module docstring), shape (trials, f)."""
    trials, n, dim = reports.shape
    z = reports @ fmap.direction if dim > 1 else reports[..., 0]
    u = (z - fmap.centre) / fmap.scale
    ordered = np.sort(z, axis=1)
    m1 = u.mean(axis=1, keepdims=True)
    m2 = (u * u).mean(axis=1, keepdims=True)
    cols = [ordered[:, fmap.ranks], m1, m2, (u * u * u).mean(axis=1, keepdims=True),
            m1 * m1, m1 * m2, m1 * m1 * m1]
    cells = fmap.cuts.size + 1
    cell = np.searchsorted(fmap.cuts, z, side="right") + cells * np.arange(trials)[:, None]
    cols.append(np.bincount(cell.ravel(), minlength=trials * cells).reshape(trials, cells))
    cols.append((np.diff(ordered, axis=1) == 0).sum(axis=1, keepdims=True))
    if dim > 1:  # a repeated vector repeats its projection; also repeats in any coordinate
        first = np.sort(reports[..., 0], axis=1)
        cols.append((np.diff(first, axis=1) == 0).sum(axis=1, keepdims=True))
    for a in fmap.atoms:  # reports equal to the atom in every coordinate
        cols.append((reports == a).all(axis=2).sum(axis=1, keepdims=True))
    if dim > 1:
        sq = (reports * reports).sum(axis=2)
        cols += [sq.sum(axis=1, keepdims=True), sq.max(axis=1, keepdims=True),
                 sq.min(axis=1, keepdims=True)]
        if fmap.coordinates:
            cols += [reports.sum(axis=1), (reports * reports).sum(axis=1)]
    return np.hstack([np.asarray(c, dtype=float).reshape(trials, -1) for c in cols])


def _draw(draw: Draw, world: int, trials: int, n: int, seed: np.random.SeedSequence,
          consume: Callable[[np.ndarray], None], progress=None) -> None:
    """Draw ``trials`` trials of ``world`` in chunks, passing each (chunk, n, dim) to
    ``consume``."""
    per = None
    done = 0
    c = 0
    while done < trials:
        size = 1 if per is None else min(per, trials - done)
        rng = np.random.default_rng(child(seed, c))
        chunk = as_reports(draw(world, size, rng))
        require(chunk.shape[:2] == (size, n), "reports", chunk.shape,
                f"a draw of {size} trials of {n} reports returned this shape")
        consume(chunk)
        if per is None:  # the first trial tells the width of a report
            per = max(1, CHUNK_NUMBERS // (n * chunk.shape[2]))
        done += size
        c += 1
        if progress is not None:
            progress(size)


def _gather(draw, world, trials, n, seed, progress) -> np.ndarray:
    parts: list[np.ndarray] = []
    _draw(draw, world, trials, n, seed, parts.append, progress)
    return np.concatenate(parts)


def _score_counts(draw, world, trials, n, seed, score, edges, progress) -> np.ndarray:
    counts = np.zeros(edges.size + 1, dtype=np.int64)

    def consume(chunk):
        counts[:] += np.bincount(np.searchsorted(edges, score(chunk), side="right"),
                                 minlength=edges.size + 1)

    _draw(draw, world, trials, n, seed, consume, progress)
    return counts


def split_selection(options: AuditOptions) -> tuple[int, int]:
    """(training trials, tuning trials) per world out of the selection trials."""
    sel = options.selection_trials
    train = min(MAX_TRAIN, sel // 2)
    return train, sel - train


@dataclass(frozen=True)
class LearnedCounts:
    """The learned score's cells (``edges``, pooled tuning quantiles) and the counts per cell
    of the tuning and the evaluation trials of worlds 0 and 1: what the events are chosen on
    and certified with (:func:`learned_audit`, shuffle_profile.py)."""

    edges: np.ndarray
    tune: tuple[np.ndarray, np.ndarray]
    evaluation: tuple[np.ndarray, np.ndarray]
    tune_trials: int
    evaluation_trials: int
    note: str
    statistic: str = NAME

    def describe(self, side: str, threshold: int) -> str:
        edges = self.edges
        what = "learned score" if self.statistic == NAME else self.statistic
        if side == "upper":
            return (f"{what} >= {edges[threshold - 1]:.6g}" if threshold
                    else "every trial")
        return (f"{what} < {edges[threshold]:.6g}" if threshold < edges.size
                else "every trial")


def learned_counts(draw: Draw, n: int, options: AuditOptions,
                   seed: np.random.SeedSequence | int, *, atoms: Sequence[float] = (),
                   progress: Callable[[int], None] | None = None,
                   fixed: dict[str, Callable[[np.ndarray], np.ndarray]] | None = None,
                   ) -> LearnedCounts | dict[str, LearnedCounts]:
    """Train the feature map and the classifier, tune the cells and count the evaluation
    trials (module docstring); ``draw`` and ``atoms`` as for :func:`learned_audit`.

    ``fixed``: other statistics of the multiset, name -> function of a (trials, n, dim) array
    fixed before any trial (e.g. a claim's own likelihood ratio, claim_lr.py), tabulated on
    the same tuning and evaluation trials with cells at their own pooled tuning quantiles (the
    training trials, which they do not need, tune them too); then a dict name -> counts is
    returned, the learned score under NAME."""
    require(isinstance(n, (int, np.integer)) and n >= 1, "n", n, "must be an integer >= 1")
    train, tune = split_selection(options)
    require(train >= 2 and tune >= 2, "holdout_fraction", options.holdout_fraction,
            f"the {NAME} attack trains and tunes on held-out trials: it needs at least 4 "
            f"selection trials per world (has {options.selection_trials})")
    seq = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
    seq = child(seq, LEARNED_KEY)
    tr = [_gather(draw, w, train, n, child(seq, w, 0), progress) for w in (0, 1)]
    fmap = fit_feature_map(tr[0], tr[1], atoms)
    model = fit_logistic(fmap(tr[0]), fmap(tr[1]), ridge=RIDGE)
    as_dict = fixed is not None
    fixed = fixed or {}
    # a fixed statistic needs no training: the training trials tune its cells too
    early = {k: [np.asarray(f(t), dtype=float).reshape(-1) for t in tr]
             for k, f in fixed.items()}
    del tr
    scores = {NAME: lambda chunk: model.score(fmap(chunk)), **fixed}
    names = list(scores)

    def all_scores(chunk: np.ndarray) -> list[np.ndarray]:
        return [np.asarray(scores[k](chunk), dtype=float).reshape(-1) for k in names]

    tuned = [[] for _ in names]
    for w in (0, 1):
        got = all_scores(_gather(draw, w, tune, n, child(seq, w, 1), progress))
        for i, k in enumerate(names):
            tuned[i].append(np.concatenate([early[k][w], got[i]]) if k in early else got[i])
    edges = [np.unique(np.quantile(np.concatenate(t), np.linspace(0, 1, SCORE_BINS + 1)[1:-1]))
             for t in tuned]
    sel = [tuple(np.bincount(np.searchsorted(e, x, side="right"), minlength=e.size + 1)
                 for x in t) for e, t in zip(edges, tuned, strict=True)]
    ev = [[np.zeros(e.size + 1, dtype=np.int64) for _ in (0, 1)] for e in edges]
    for w in (0, 1):
        def consume(chunk, w=w):
            for i, x in enumerate(all_scores(chunk)):
                ev[i][w] += np.bincount(np.searchsorted(edges[i], x, side="right"),
                                        minlength=edges[i].size + 1)

        _draw(draw, w, options.evaluation_trials, n, child(seq, w, 2), consume, progress)
    dim = fmap.direction.size
    what = ("scalar reports" if dim == 1 else
            f"{dim}-dimensional reports projected onto a learned direction (largest "
            f"components {_largest(fmap.direction)})")
    notes = {NAME: (f"{NAME}: logistic regression on symmetric features of the shuffled "
                    f"multiset ({what}); trained on {train} and tuned on {tune} held-out "
                    f"trials per world, certified on {options.evaluation_trials} fresh ones; "
                    f"{model.describe()}")}
    out = {k: LearnedCounts(edges[i], sel[i], tuple(ev[i]), tune + (train if k in early else 0),
                            options.evaluation_trials,
                            notes.get(k, f"{k}: a fixed statistic of the multiset, cells "
                                      f"tuned on {tune + train} held-out trials per world"), k)
           for i, k in enumerate(names)}
    return out if as_dict else out[NAME]


def learned_audit(draw: Draw, n: int, deltas, options: AuditOptions,
                  seed: np.random.SeedSequence | int, *, level: str = "shuffle",
                  randomizer: str = "", epsilon0: float = math.nan, pair: str = "",
                  implementation: str = "", atoms: Sequence[float] = (),
                  progress: Callable[[int], None] | None = None,
                  counts: LearnedCounts | None = None) -> AttackAudit:
    """The learned attack on the shuffled multiset (module docstring): ``draw(world, trials,
    rng)`` returns the n reports of ``trials`` trials of world 0 (user 1 at x0) or 1 (at
    x1); ``atoms``: report values whose exact occurrences are counted (e.g. the inputs);
    ``counts``: a :func:`learned_counts` already made (then nothing is drawn).
    Returns an AttackAudit (rows: attack ``learned`` x direction x delta; no exact values)."""
    start = time.perf_counter()
    deltas = check_deltas(deltas)
    if counts is None:
        counts = learned_counts(draw, n, options, seed, atoms=atoms, progress=progress)
    budget = ErrorBudget(options.confidence, rows=2, events=options.shortlist)
    rows = []
    for delta in deltas:
        for d, direction in enumerate(DIRECTIONS):
            a, b = (0, 1) if d == 0 else (1, 0)
            rows.append(AttackRow(NAME, direction, delta,
                                  *_certify(counts, a, b, delta, budget, options.shortlist)))
    return AttackAudit(level, randomizer, float(epsilon0), int(n), pair, options, tuple(rows),
                       time.perf_counter() - start, {}, (), implementation, counts.note)


def _certify(counts: LearnedCounts, a: int, b: int, delta: float, budget: ErrorBudget,
             shortlist: int):
    """(event description, EventBound, row confidence) of direction (a, b) at delta."""
    events = select_events(counts.tune[a], counts.tune[b], counts.tune_trials,
                           counts.evaluation_trials, delta, budget.limit_alpha, shortlist)
    bound = evaluate_events(events, counts.evaluation[a], counts.evaluation[b],
                            counts.evaluation_trials, delta, budget.limit_alpha,
                            counts.tune_trials)
    return (counts.describe(bound.event.side, bound.event.threshold), bound,
            budget.row_confidence)


def _largest(w: np.ndarray, limit: int = 3) -> str:
    order = np.argsort(-np.abs(w), kind="stable")[:limit]
    return ", ".join(f"e{int(j)}:{w[j]:+.3g}" for j in order)


def learned_verdict(audit: AttackAudit, delta: float, threshold: float | None,
                    threshold_name: str, claimed: str) -> ImplementationVerdict:
    """``implementation-learned``: the learned attack's best row at ``delta`` against
    ``threshold``, an upper bound on the claimed mechanism's shuffled eps at the audited pair
    that holds for every statistic of the raw reports (module docstring). Its p-value is that
    of its own evaluated event (grading.Evidence), so Holm counts it as one test."""
    best = audit.best(delta)
    eps_lb = best.epsilon_lb
    confidence = audit.options.confidence
    if threshold is None or not math.isfinite(threshold):
        return ImplementationVerdict("learned", NOT_EVALUATED, "no upper bound of the claimed "
                                     "mechanism's shuffled eps that holds for every statistic "
                                     "of its raw reports", eps_lb, confidence, delta=delta)
    p = Evidence.of(best.bound, delta, 1.0 - confidence).p_value(float(threshold))
    where = f"{audit.pair}, {best.direction}, event {best.event}"
    if math.isfinite(eps_lb) and eps_lb > threshold * (1 + TOLERANCE):
        verdict = VIOLATED
        sentence = (f"the implementation's shuffled output is not that of the claimed "
                    f"{claimed} with n = {audit.n}: the learned attack's eps lower bound "
                    f"{eps_lb:.6g} at confidence {confidence:g} ({where}) exceeds "
                    f"{threshold_name} = {threshold:.6g} at delta = {delta:g}")
    else:
        verdict = CONSISTENT
        sentence = (f"no evidence against the claim from the learned attack: eps lower bound "
                    f"{eps_lb:.6g} <= {threshold_name} = {threshold:.6g} (confidence "
                    f"{confidence:g}, {where})")
    return ImplementationVerdict("learned", verdict, sentence, eps_lb, confidence,
                                 float(threshold), p_value=p, delta=delta)
