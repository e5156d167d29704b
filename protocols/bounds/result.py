"""The record every bound returns."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class BoundKind(StrEnum):
    UPPER = "upper"
    LOWER = "lower"


class BoundStatus(StrEnum):
    PROVEN = "proven"
    #: An asymptotic constant is dropped (e.g. 003's Berry-Esseen term).
    APPROXIMATE = "approximate"
    #: Rests on the "stronger clone" reduction shown flawed in 000 Sec. 3.3.
    STRONGER_CLONE = "relies-on-stronger-clone-reduction"


@dataclass(frozen=True)
class BoundResult:
    """One bound evaluated at one setting.

    ``epsilon`` is on the conservative side of the routine's own numerical error: rounded up for
    an upper bound, down for a lower bound. ``epsilon_error`` bounds that error (the true value of
    the bound lies in [epsilon - epsilon_error, epsilon] for an upper bound and in
    [epsilon, epsilon + epsilon_error] for a lower bound).
    """

    method: str
    kind: BoundKind
    epsilon: float
    delta: float
    epsilon_error: float
    status: BoundStatus
    reference: str
    seconds: float = 0.0
    note: str = ""
