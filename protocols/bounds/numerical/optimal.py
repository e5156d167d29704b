"""The optimal (blanket) upper bound and the exact lower bound for one neighbour pair.

* ``optimal_blanket_epsilon`` (000 Thm 13 + Alg. 7): the blanket decomposition is optimal among
  all decompositions (000 Sec. 4, Thm 5-7); delta(eps) = (1/n) E[(G_1 + ... + G_n)_+] with the
  blanket GPARV, maximised over the neighbour pairs that can be worst (decompositions.py argues
  which per randomizer) and over both directions. Kind upper; status proven when the candidate
  pairs are exhaustive.
* ``exact_lower_epsilon`` (000 Thm 14): for X0 = (x0, x2, ..., x2), X1 = (x1, x2, ..., x2) the
  same formula with the reference R(x2) is the exact divergence of the shuffled mechanism, hence
  a lower bound on its privacy curve; maximised over candidate triples and both directions.
* Composition variants (000 Sec. 4.5-4.6, 5.3): joint (all Hamming patterns of changed
  coordinates, 000 Sec. 8), parallel, and Poisson-subsampled randomizers; and
  ``epsilon_from_atoms`` / ``delta_from_atoms`` for atom sets built by the caller.

Every number comes from the engine on its conservative side: the upper bound is at least the
true blanket value and the lower bound at most the true exact value, each with its error.
``cells`` sets the discretization of continuous ratios (Laplace); ``engine_method`` is passed
to the engine ("auto", "enumerate", "conditioning", "fft"; see protocols.bounds.engine.core).
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence

import numpy as np

from shufflesim.protocols.bounds.atoms import RatioAtoms, Rounding
from shufflesim.protocols.bounds.numerical.atom_sets import DEFAULT_CELLS
from shufflesim.protocols.bounds.numerical.blanket_delta import (  # noqa: F401  (re-exported)
    QUESTION_RTOL,
    _blanket_candidates,
    _blanket_status,
    optimal_blanket_delta,
)
from shufflesim.protocols.bounds.numerical.candidates import (
    REFERENCE_LOWER,
    REFERENCE_UPPER,
    _Candidate,
    _capped,
    _certified_zero,
    _check_common,
    _delta,
    _engine_is_precise,
    _epsilon,
    _max_epsilon,
    _pair_label,
    _rebuild,
    _result,
    _Value,
)
from shufflesim.protocols.bounds.numerical.decompositions import (
    exact_pair_atoms,
    is_continuous,
    neighbour_candidates,
)
from shufflesim.protocols.bounds.result import BoundKind, BoundResult, BoundStatus
from shufflesim.protocols.bounds.spec import BoundSpec, any_ldp
from shufflesim.protocols.errors import require, require_int_at_least
from shufflesim.protocols.lazy import lazy_functions, lazy_module

#: 001's triple candidates and two-count deltas: exact-lower's single-round search only (a
#: composed bound over rounds does not need them; issue 32)
two_count = lazy_module("shufflesim.protocols.bounds.numerical.two_count")
vr = lazy_module("shufflesim.protocols.bounds.numerical.variation_ratio")
#: the atoms of one-round compositions (000 Sec. 4), for the joint, parallel and subsampled
#: bounds only (issue 32: a single randomizer's bound never imports them)
(hamming_patterns, joint_blanket_atoms, joint_exact_atoms, parallel_blanket_atoms,
 parallel_exact_atoms, subsampled_blanket_atoms, subsampled_exact_atoms) = lazy_functions(
    "shufflesim.protocols.bounds.numerical.composition", "hamming_patterns",
    "joint_blanket_atoms", "joint_exact_atoms", "parallel_blanket_atoms", "parallel_exact_atoms",
    "subsampled_blanket_atoms", "subsampled_exact_atoms")

def _cover_slack(randomizer, cand) -> float:
    """a = eps0 * h for a grid of pairs: every input lies within h = (largest grid gap) / 2 of a
    grid input, and |log R(x)(y) - log R(x')(y)| <= eps0 |x - x'| (Laplace, sensitivity 1)."""
    grid = sorted({float(x) for pair in cand.pairs for x in pair})
    domain = randomizer.input_domain
    edges = [grid[0] - domain.low, domain.high - grid[-1]]
    half_gaps = [g / 2.0 for g in np.diff(grid)] if len(grid) > 1 else []
    return randomizer.epsilon0 * max(edges + half_gaps)


def optimal_blanket_epsilon(
    randomizer, n: int, delta: float, *, cells: int = DEFAULT_CELLS,
    engine_method: str = "auto",
    pair_grid: int | None = None, cover: bool = False,
) -> BoundResult:
    """Optimal decomposition-based upper bound eps(delta) of the shuffled ``randomizer`` with n
    users (000 Thm 13 + Alg. 7, blanket = optimal decomposition, Sec. 4).

    ``cells``: discretization of continuous ratios (Laplace); ``pair_grid``: grid points per axis
    for randomizers whose worst pair is unknown (Laplace on [0, 1]); ``cover``: for those, add
    the slack that makes the grid maximum valid for every pair: for any pair (x0', x1') and its
    nearest grid pair (x0, x1) within h per coordinate, R(x0') <= e^a R(x0) and
    R(x1') >= e^-a R(x1) with a = eps0 h, so D_{e^eps}(P_x0' || P_x1') <= e^a
    D_{e^(eps - 2a)}(P_x0 || P_x1) (P = the blanket reduction pair, linear in R(x_1)); hence
    eps_all(delta) <= eps_grid(delta e^-a) + 2a. The result is then proven.
    """
    start = time.perf_counter()
    _check_common(n, delta)
    cand, items = _blanket_candidates(randomizer, cells, pair_grid)
    status, note = _blanket_status(cand)
    target = delta
    slack = 0.0
    if cover and not cand.exhaustive:
        slack = _cover_slack(randomizer, cand)
        target = delta * math.exp(-slack)
    best, label = _max_epsilon(items, n, target, "upper", engine_method)
    best = _capped(best, randomizer.epsilon0)
    if slack:
        best = _Value(best.value + 2 * slack, best.error)
        status = BoundStatus.PROVEN
        note = (f"worst neighbour pair unknown (000 Sec. 8): max over {len(cand.pairs)} grid "
                f"pairs at delta*e^-a plus cover slack 2a, a = eps0*h = {slack:.4g}")
    note = f"{note}; attained at {label}"
    return _result("optimal-blanket", BoundKind.UPPER, best, delta, status, start, note)


def _exact_candidates(randomizer, cells: int, triples=None):
    cand = neighbour_candidates(randomizer)
    triples = cand.triples if triples is None else tuple(tuple(t) for t in triples)
    require(len(triples) >= 1, "triples", triples, "needs at least one (x0, x1, x2)")
    rounded = is_continuous(randomizer)
    return [_Candidate(_pair_label(t), _rebuild(
        lambda triple: exact_pair_atoms(randomizer, *triple, cells=cells), t,
        (t[1], t[0], t[2]), rounded)) for t in triples]


def exact_lower_epsilon(
    randomizer, n: int, delta: float, *, cells: int = DEFAULT_CELLS,
    engine_method: str = "auto", triples=None,
) -> BoundResult:
    """Lower bound on eps(delta) of the shuffled ``randomizer``: the exact value of 000 Thm 14
    for X0 = (x0, x2, ..., x2) vs X1 = (x1, x2, ..., x2), maximised over candidate triples
    (``triples`` overrides them) and both directions; the maximising triple is in the note."""
    start = time.perf_counter()
    _check_common(n, delta)
    items = _exact_candidates(randomizer, cells, triples)
    best, label = _max_epsilon(items, n, delta, "lower", engine_method)
    how = ""
    chosen = neighbour_candidates(randomizer).triples if triples is None else triples
    post = None
    if not (_engine_is_precise(best) or _certified_zero(items, n, delta, best, engine_method)):
        post = _post_processed_lower(randomizer, n, delta, chosen, beat=best.value)
    if post is not None and post[0].value > best.value:
        best, label = post
        how = ("; value from the Thm 5.1 post-processing of the same pair (001), which keeps "
               "its precision where the engine's rounding slack (~u e^eps0 per user) does not")
    note = f"X0 = (x0, x2, ..., x2), X1 = (x1, x2, ..., x2) with (x0, x1, x2) = {label}{how}"
    return _result("exact-lower", BoundKind.LOWER, best, delta, BoundStatus.PROVEN, start, note)


def _post_processed_lower(randomizer, n: int, delta: float, triples, beat: float = 0.0):
    """Best proven lower bound on eps(delta) from the *same* Thm 14 pairs, post-processed as in
    001 Thm 5.1 (each report mapped to "more likely under x0", "more likely under x1", "else";
    a post-processing of the shuffled output of X0 = (x0, x2, ..., x2) vs X1 = (x1, x2, ..., x2),
    hence at most that pair's divergence). Its kernel (variation_ratio.two_count_divergence)
    works with binomial tails and keeps its digits at large eps0, where the engine's bracket
    includes a rounding slack of ~4u (a + e^eps b) per user and collapses (brr at eps0 = 50:
    0 against 49.99995). Returns (value, label) or None (n < 2, non-categorical inputs).

    ``beat``: the engine's value for the same pairs; the result is used only if it beats it.
    One evaluation there decides what is left to do (k-RR at n = 1e3 - 1e4: 1 evaluation
    instead of 15):

    * every candidate's upper delta(beat) <= delta: no eps >= beat can be certified (delta(eps)
      is non-increasing and a certificate is a lower estimate > delta): None, exactly;
    * no candidate's lower delta(beat) > delta (its bracket straddles delta): a certified
      point above beat would lie within the eps-blur of that bracket (a ~1e-8 relative delta
      bracket), below the precision of either search: None;
    * otherwise (the post-processing certifies beat, e.g. at eps0 >= 8 where the engine's
      rounding slack grows) the search runs on [beat, eps0] (delta(eps0) = 0) to the
      inversion's own tolerance; epsilon_of_delta checks that bracket and starts afresh where
      it does not hold.

    Every value returned is certified, as before."""

    candidates, labels = [], []
    for triple in triples:
        cand = vr.triple_candidate(randomizer, n, *triple)
        if cand is not None:
            candidates.append(cand)
            labels.append(_pair_label(tuple(triple)))
    if not candidates:
        return None
    per_candidate: dict[float, list] = {}  # eps -> each candidate's estimate (for the label)

    def lower_delta(eps: float):
        # vr.lower_delta, keeping each candidate's estimate
        per_candidate[eps] = [two_count.two_count_delta(c.pair, eps) for c in candidates]
        best = two_count._interval(0.0, 0.0)
        for est in per_candidate[eps]:
            if est.lower > best.lower:
                best = est
        return best

    eps_max = float(randomizer.epsilon0)
    known, bracket = None, None
    if 0 < beat < eps_max:
        at_beat = lower_delta(beat)
        if not at_beat.lower > delta:
            return None
        known, bracket = {beat: at_beat}, (beat, eps_max)
    search = vr.invert(lower_delta, delta, "lower", eps_max, bracket, known)
    if not search.value > 0:
        return None
    at = [est.lower for est in per_candidate[search.value]] if search.value in per_candidate \
        else [two_count.two_count_delta(c.pair, search.value).lower for c in candidates]
    label = labels[int(np.argmax(at))]
    error = search.error if math.isfinite(search.error) else math.inf
    return _Value(float(search.value), float(error)), label


def exact_lower_delta(
    randomizer, n: int, epsilon: float, *, cells: int = DEFAULT_CELLS,
    engine_method: str = "auto", triples=None,
) -> BoundResult:
    """delta(eps) of 000 Thm 14 (lower side of its numerical error), maximised over triples."""
    start = time.perf_counter()
    require_int_at_least("n", n, 1)
    require(isinstance(epsilon, (int, float)) and epsilon >= 0, "epsilon", epsilon,
            "must be a number >= 0")
    items = _exact_candidates(randomizer, cells, triples)
    values = [(_delta(c.build(), n, float(epsilon), "lower", engine_method), c.label)
              for c in items]
    best, label = max(values, key=lambda v: v[0].value)
    return BoundResult("exact-lower", BoundKind.LOWER, float(epsilon), best.value, 0.0,
                       BoundStatus.PROVEN, REFERENCE_LOWER, time.perf_counter() - start,
                       f"(x0, x1, x2) = {label}; delta error <= {best.error:.3g}")


# ----------------------------------------------------------------------------------------------
# Composed randomizers and caller-built atoms
# ----------------------------------------------------------------------------------------------
def epsilon_from_atoms(
    directions: Sequence[RatioAtoms], n: int, delta: float, *, kind: BoundKind = BoundKind.UPPER,
    method: str = "optimal-blanket", note: str = "", engine_method: str = "auto",
) -> BoundResult:
    """eps(delta) for caller-built atom sets (one per direction): upper side for blanket atoms
    (kind upper; rounded-down atoms are refused), lower side for Thm 14 atoms."""
    start = time.perf_counter()
    _check_common(n, delta)
    kind = BoundKind(kind)
    require(len(directions) >= 1, "directions", len(directions), "needs at least one atom set")
    bad = Rounding.DOWN if kind is BoundKind.UPPER else Rounding.UP
    require(all(a.rounding is not bad for a in directions), "rounding", bad.value,
            f"atoms rounded {bad.value} cannot give a {kind.value} bound")
    side = "upper" if kind is BoundKind.UPPER else "lower"
    value = _epsilon(list(directions), n, delta, side, engine_method)
    return _result(method, kind, value, delta, BoundStatus.PROVEN, start, note)


def _union(items: Sequence) -> tuple:
    seen = []
    for item in items:
        if item not in seen:
            seen.append(item)
    return tuple(seen)


def _composed_status(cands) -> tuple[BoundStatus, str]:
    """Proven when every component's canonical pair is provably its worst (one exhaustive pair):
    the symmetry and convexity arguments of decompositions.py apply factor by factor to products
    and mixtures of atom sets."""
    if all(c.exhaustive and len(c.pairs) == 1 for c in cands):
        return BoundStatus.PROVEN, "worst pairs: " + ", ".join(sorted({c.symmetry for c in cands}))
    return BoundStatus.APPROXIMATE, "worst pair of some component not proven"


def _pattern_label(pattern) -> str:
    return "changed coordinates " + "".join("1" if c else "0" for c in pattern)


def _joint_components(randomizers, n: int, delta: float):
    """Validate (n, delta) and return the components, their neighbour candidates and whether
    any is continuous (rounded atoms) for a joint composition."""
    _check_common(n, delta)
    randomizers = list(randomizers)
    cands = [neighbour_candidates(r) for r in randomizers]
    return randomizers, cands, any(is_continuous(r) for r in randomizers)


def optimal_blanket_epsilon_joint(
    randomizers, n: int, delta: float, *, cells: int = DEFAULT_CELLS,
    engine_method: str = "auto",
) -> BoundResult:
    """Optimal blanket bound of the joint composition (000 Thm 9: the product of the components'
    optimal decompositions), maximised over every Hamming pattern of changed coordinates
    (000 Sec. 8): changed components take their canonical pair, unchanged ones their "same"
    pair (x, x)."""
    start = time.perf_counter()
    randomizers, cands, rounded = _joint_components(randomizers, n, delta)
    items = []
    for pattern in hamming_patterns(randomizers):
        fwd = tuple(c.pairs[0] if changed else (c.same[0], c.same[0])
                    for c, changed in zip(cands, pattern, strict=True))
        bwd = tuple((x1, x0) for x0, x1 in fwd)
        items.append(_Candidate(_pattern_label(pattern), _rebuild(
            lambda pairs: joint_blanket_atoms(randomizers, pairs, cells=cells), fwd, bwd,
            rounded)))
    status, note = _composed_status(cands)
    best, label = _max_epsilon(items, n, delta, "upper", engine_method)
    best = _capped(best, sum(r.epsilon0 for r in randomizers))
    return _result("optimal-blanket-joint", BoundKind.UPPER, best, delta, status, start,
                   f"{note}; attained at {label}")


def exact_lower_epsilon_joint(
    randomizers, n: int, delta: float, *, cells: int = DEFAULT_CELLS,
    engine_method: str = "auto",
) -> BoundResult:
    """000 Thm 14 for the joint composition (000 Sec. 5.3: the components' decompositions at
    (x0^i, x1^i, x2^i) multiply), maximised over Hamming patterns x the t-th candidate triple of
    every component (unchanged components use (x0^i, x0^i, x2^i))."""
    start = time.perf_counter()
    randomizers, cands, rounded = _joint_components(randomizers, n, delta)
    items = []
    for pattern in hamming_patterns(randomizers):
        for t in range(min(len(c.triples) for c in cands)):
            fwd = tuple(c.triples[t] if changed else (c.triples[t][0],) * 2 + (c.triples[t][2],)
                        for c, changed in zip(cands, pattern, strict=True))
            bwd = tuple((x1, x0, x2) for x0, x1, x2 in fwd)
            label = f"{_pattern_label(pattern)}, triples {[_pair_label(x) for x in fwd]}"
            items.append(_Candidate(label, _rebuild(
                lambda triples: joint_exact_atoms(randomizers, triples, cells=cells), fwd, bwd,
                rounded)))
    best, label = _max_epsilon(items, n, delta, "lower", engine_method)
    return _result("exact-lower-joint", BoundKind.LOWER, best, delta, BoundStatus.PROVEN, start,
                   label)


def optimal_blanket_epsilon_parallel(
    randomizers, probabilities, n: int, delta: float, *, cells: int = DEFAULT_CELLS,
    engine_method: str = "auto",
) -> BoundResult:
    """Optimal blanket bound of the parallel composition (i, R_i(x)) w.p. p_i (000 Thm 11: the
    p-weighted combination of the optimal decompositions). Candidate pairs: the union of the
    components' (proven worst when all components share one exhaustive symmetry)."""
    start = time.perf_counter()
    _check_common(n, delta)
    randomizers = list(randomizers)
    cands = [neighbour_candidates(r) for r in randomizers]
    rounded = any(is_continuous(r) for r in randomizers)
    pairs = _union(p for c in cands for p in c.pairs)
    items = [_Candidate(_pair_label(p), _rebuild(
        lambda pair: parallel_blanket_atoms(randomizers, probabilities, *pair, cells=cells),
        p, p[::-1], rounded)) for p in pairs]
    if all(c.exhaustive for c in cands) and len({c.symmetry for c in cands}) == 1:
        status, note = BoundStatus.PROVEN, f"pairs: {cands[0].argument}"
    else:
        status, note = BoundStatus.APPROXIMATE, (
            f"worst pair not proven for this mixture; max over {len(pairs)} candidate pairs")
    best, label = _max_epsilon(items, n, delta, "upper", engine_method)
    best = _capped(best, max(r.epsilon0 for r in randomizers))
    return _result("optimal-blanket-parallel", BoundKind.UPPER, best, delta, status, start,
                   f"{note}; attained at {label}")


def exact_lower_epsilon_parallel(
    randomizers, probabilities, n: int, delta: float, *, cells: int = DEFAULT_CELLS,
    engine_method: str = "auto",
) -> BoundResult:
    """000 Thm 14 for the parallel composition (the mixture of the components' Thm 14 atoms,
    000 Sec. 5.3), maximised over the union of the components' candidate triples."""
    start = time.perf_counter()
    _check_common(n, delta)
    randomizers = list(randomizers)
    rounded = any(is_continuous(r) for r in randomizers)
    triples = _union(t for r in randomizers for t in neighbour_candidates(r).triples)
    items = [_Candidate(_pair_label(t), _rebuild(
        lambda triple: parallel_exact_atoms(randomizers, probabilities, *triple, cells=cells),
        t, (t[1], t[0], t[2]), rounded)) for t in triples]
    best, label = _max_epsilon(items, n, delta, "lower", engine_method)
    return _result("exact-lower-parallel", BoundKind.LOWER, best, delta, BoundStatus.PROVEN,
                   start, f"(x0, x1, x2) = {label}")


def optimal_blanket_epsilon_subsampled(
    randomizer, rate: float, n: int, delta: float, *, cells: int = DEFAULT_CELLS,
    engine_method: str = "auto",
    pair_grid: int | None = None,
) -> BoundResult:
    """Optimal blanket bound under Poisson subsampling with participation probability ``rate``
    followed by shuffling (parallel composition with the null randomizer, 000 Sec. 1.1 and
    Example 4.4). The worst-pair argument of the randomizer carries over (the null component
    adds the same atom (1, 1) for every pair)."""
    start = time.perf_counter()
    _check_common(n, delta)
    cand = neighbour_candidates(randomizer, pair_grid)
    rounded = is_continuous(randomizer)
    items = [_Candidate(_pair_label(p), _rebuild(
        lambda pair: subsampled_blanket_atoms(randomizer, rate, *pair, cells=cells),
        p, p[::-1], rounded)) for p in cand.pairs]
    status, note = _blanket_status(cand)
    best, label = _max_epsilon(items, n, delta, "upper", engine_method)
    best = _capped(best, randomizer.epsilon0)
    return _result("optimal-blanket-subsampled", BoundKind.UPPER, best, delta, status, start,
                   f"rate {rate:g}; {note}; attained at {label}")


def exact_lower_epsilon_subsampled(
    randomizer, rate: float, n: int, delta: float, *, cells: int = DEFAULT_CELLS,
    engine_method: str = "auto",
) -> BoundResult:
    """000 Thm 14 under Poisson subsampling (mixture with the null randomizer)."""
    start = time.perf_counter()
    _check_common(n, delta)
    rounded = is_continuous(randomizer)
    items = [_Candidate(_pair_label(t), _rebuild(
        lambda triple: subsampled_exact_atoms(randomizer, rate, *triple, cells=cells),
        t, (t[1], t[0], t[2]), rounded)) for t in neighbour_candidates(randomizer).triples]
    best, label = _max_epsilon(items, n, delta, "lower", engine_method)
    return _result("exact-lower-subsampled", BoundKind.LOWER, best, delta, BoundStatus.PROVEN,
                   start, f"rate {rate:g}; (x0, x1, x2) = {label}")


# ------------------------------------------------------------------------------------------
# Catalogue entries
# ------------------------------------------------------------------------------------------
SPECS: tuple[BoundSpec, ...] = (
    BoundSpec(
        "optimal-blanket", BoundKind.UPPER, REFERENCE_UPPER + " (optimal decomposition)",
        BoundStatus.PROVEN,
        "every registered randomizer, eps0 <= 150 (continuous: 50); proven when the candidate "
        "neighbour pairs are exhaustive (the result states otherwise)", any_ldp,
        optimal_blanket_epsilon, scope="specific",
        delta_at=lambda randomizer, n, eps, threshold: optimal_blanket_delta(
            randomizer, n, eps, threshold=threshold).delta),
    BoundSpec(
        "exact-lower", BoundKind.LOWER, REFERENCE_LOWER + " (exact for one neighbour pair)",
        BoundStatus.PROVEN, "every registered randomizer, eps0 <= 150 (continuous: 50)", any_ldp,
        exact_lower_epsilon, scope="specific"),
)
