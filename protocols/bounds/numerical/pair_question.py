"""One question to the hockey-stick engine about candidate neighbour pairs (000 Thm 13 + Alg. 7
for the blanket upper bound, Thm 14 for the exact lower bound): a candidate (a label and a
builder of the atom sets of its two directions), delta(eps) as the maximum over its directions
on the engine's requested side (:func:`_delta`), and the conservative value with its error.

Its own module (issue 32, session 16): delta(eps) questions (numerical/blanket_delta.py) need
none of the eps(delta) search over candidates (numerical/candidates.py, which re-exports these
names)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from shufflesim.protocols.bounds.atoms import RatioAtoms
from shufflesim.protocols.bounds.engine import core as engine

REFERENCE_UPPER = "000 Thm 13 + Alg. 7"
REFERENCE_LOWER = "000 Thm 14"


@dataclass(frozen=True)
class _Value:
    """A conservative number and the size of its numerical error."""

    value: float
    error: float


def _delta(directions: Sequence[RatioAtoms], n: int, epsilon: float, side: str,
           method: str = "auto", threshold: float | None = None,
           rtol: float | None = None) -> _Value:
    """max over directions of delta(eps): the bracket of the maximum is
    [max of lowers, max of uppers]; the value is the requested side. With ``threshold`` the
    engine may stop refining once each bracket lies on one side of it (screening only needs
    that comparison); ``rtol``: the precision asked of the engine where the comparison is
    not yet decided (default: the engine's). Directions whose atom multisets coincide are
    computed once."""
    unique = {engine.atoms_key(atoms): atoms for atoms in directions}
    precision = {} if rtol is None else {"rtol": rtol}
    ests = [engine.delta_of_epsilon([(atoms, n)], n, epsilon, side, method=method,
                                    threshold=threshold, **precision)
            for atoms in unique.values()]
    lower = max(e.lower for e in ests)
    upper = max(e.upper for e in ests)
    return _Value(upper if side == "upper" else lower, upper - lower)


@dataclass(frozen=True)
class _Candidate:
    """One neighbour configuration: a label and a builder of its atom sets (both directions)."""

    label: str
    build: Callable[[], list[RatioAtoms]]


def _rebuild(builder: Callable, forward_args, backward_args, rounded: bool):
    """The atom sets of both directions, built on demand: builder(forward_args) and
    builder(backward_args); exact sets reverse by ``swapped()``, rounded ones are rebuilt
    (swapping would round the wrong way)."""
    def build() -> list[RatioAtoms]:
        forward = builder(forward_args)
        return [forward, builder(backward_args) if rounded else forward.swapped()]
    return build


def _fmt(x) -> str:
    return f"{x:g}" if isinstance(x, float) else str(x)


def _pair_label(pair) -> str:
    return "(" + ", ".join(_fmt(x) for x in pair) + ")"
