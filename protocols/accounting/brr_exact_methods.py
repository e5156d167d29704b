"""The composed methods of binary RR from its exact curve, declared (issue 31; their numerics
are in brr_exact_pld.py, imported when one of them runs: a round of any other randomizer never
loads them, issue 32)."""

from __future__ import annotations

from shufflesim.protocols.accounting.rounds import ComposedMethod
from shufflesim.protocols.bounds.result import BoundKind, BoundStatus
from shufflesim.protocols.lazy import lazy_functions

brr_exact_upper_composed, brr_exact_lower_composed = lazy_functions(
    "shufflesim.protocols.accounting.brr_exact_pld", "brr_exact_upper_composed",
    "brr_exact_lower_composed")


def _is_brr(randomizer) -> bool:
    return getattr(randomizer, "name", None) == "brr"


METHODS = (
    ComposedMethod("brr-exact", BoundKind.UPPER, BoundStatus.PROVEN,
                   "exact curve of shuffled binary RR over every dataset as a dominating pair; "
                   "PLD composition (dp_accounting)", "binary RR (brr) rounds; adaptive rounds",
                   brr_exact_upper_composed, applies_to=_is_brr),
    ComposedMethod("brr-exact-lower", BoundKind.LOWER, BoundStatus.PROVEN,
                   "best exact dataset pair of shuffled binary RR, composed",
                   "binary RR (brr) rounds", brr_exact_lower_composed, applies_to=_is_brr),
)
