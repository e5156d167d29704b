"""delta(eps) of the optimal blanket bound (000 Thm 13 + Alg. 7; the blanket decomposition is
optimal among all decompositions, 000 Sec. 4, Thm 5-7), maximised over the candidate neighbour
pairs, on the upper side of the engine's error; and the candidate pairs' atoms and status,
shared with eps(delta) (numerical/optimal.py, which re-exports these names).

Its own module (issue 32, session 16): the composition over rounds asks delta(eps) questions of
it (accounting/baselines.py: basic and advanced at delta / T) and so no longer compiles the
eps(delta) bounds, the exact lower bound and the composition variants of optimal.py."""

from __future__ import annotations

import time

from shufflesim.protocols.bounds.numerical.atom_sets import DEFAULT_CELLS
from shufflesim.protocols.bounds.numerical.decompositions import (
    blanket_atoms,
    is_continuous,
    neighbour_candidates,
)
from shufflesim.protocols.bounds.numerical.pair_question import (
    REFERENCE_UPPER,
    _Candidate,
    _delta,
    _pair_label,
    _rebuild,
)
from shufflesim.protocols.bounds.result import BoundKind, BoundResult, BoundStatus
from shufflesim.protocols.errors import require, require_int_at_least

#: relative precision of delta that a calibration question asks of the engine where its answer
#: is not yet decided (the eps search's polish asks 5e-3 / 30 ~ 1.7e-4)
QUESTION_RTOL = 1e-4


# ----------------------------------------------------------------------------------------------
# Single randomizer
# ----------------------------------------------------------------------------------------------
def _blanket_candidates(randomizer, cells: int, pair_grid: int | None):
    cand = neighbour_candidates(randomizer, pair_grid)
    rounded = is_continuous(randomizer)
    items = [_Candidate(_pair_label(p), _rebuild(
        lambda pair: blanket_atoms(randomizer, *pair, cells=cells), p, p[::-1], rounded))
        for p in cand.pairs]
    return cand, items


def _blanket_status(cand) -> tuple[BoundStatus, str]:
    if cand.exhaustive:
        return BoundStatus.PROVEN, f"pairs: {cand.argument}"
    return BoundStatus.APPROXIMATE, (
        f"not proven for every pair: {cand.argument}, max over {len(cand.pairs)} pairs "
        f"(cover=True gives a proven bound)")


def optimal_blanket_delta(
    randomizer, n: int, epsilon: float, *, cells: int = DEFAULT_CELLS,
    engine_method: str = "auto",
    pair_grid: int | None = None, threshold: float | None = None,
) -> BoundResult:
    """delta(eps) of the optimal blanket bound (upper side of its numerical error), maximised
    over the candidate pairs; ``epsilon_error`` is 0 and the delta error is in the note. With
    ``threshold`` (a calibration question, BoundSpec.delta_at) the engine stops refining once
    each pair's delta is decided against it (the upper side is then <= threshold, or the lower
    side above it), and refines to QUESTION_RTOL where it is not."""
    start = time.perf_counter()
    require_int_at_least("n", n, 1)
    require(isinstance(epsilon, (int, float)) and epsilon >= 0, "epsilon", epsilon,
            "must be a number >= 0")
    cand, items = _blanket_candidates(randomizer, cells, pair_grid)
    status, note = _blanket_status(cand)
    rtol = None if threshold is None else QUESTION_RTOL
    values = [(_delta(c.build(), n, float(epsilon), "upper", engine_method, threshold, rtol),
               c.label) for c in items]
    best, label = max(values, key=lambda v: v[0].value)
    return BoundResult("optimal-blanket", BoundKind.UPPER, float(epsilon), best.value, 0.0,
                       status, REFERENCE_UPPER, time.perf_counter() - start,
                       f"{note}; attained at {label}; delta error <= {best.error:.3g}")
