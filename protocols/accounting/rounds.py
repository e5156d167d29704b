"""The data types of composition over rounds: :class:`Round`, :class:`ComposedResult`,
:class:`ComposedMethod`, and helpers every composed method uses (issue 16).

This module imports no composed method: compose.py (PLD methods and the registry), baselines.py
and rdp.py import it, and compose.py imports the other two, so no module of the package imports
one that imports it back.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from shufflesim.protocols.bounds.result import BoundKind, BoundStatus
from shufflesim.protocols.bounds.spec import randomizer_delta0
from shufflesim.protocols.errors import require, require_int_at_least, require_probability_open


@dataclass(frozen=True)
class Round:
    """``repeat`` identical rounds of ``randomizer`` shuffled among ``n`` users."""

    randomizer: object
    n: int
    repeat: int = 1

    def __post_init__(self) -> None:
        require_int_at_least("n", self.n, 2)
        require_int_at_least("repeat", self.repeat, 1)
        require(getattr(self.randomizer, "epsilon0", None) is not None, "randomizer",
                self.randomizer, "must be a local randomizer with an epsilon0")
        delta0 = randomizer_delta0(self.randomizer)
        require(delta0 == 0, "randomizer.delta0", delta0,
                "composition over rounds composes pure eps0-LDP rounds (delta0 = 0); this "
                "randomizer is (eps0, delta0)-LDP")


@dataclass(frozen=True)
class ComposedResult:
    """A composed bound: ``epsilon`` at ``delta`` after ``rounds`` rounds (conservative side of
    its own numerics: upper bounds rounded up, lower bounds down). ``interval``: the PLD grid
    step (None for methods without a PLD)."""

    method: str
    kind: BoundKind
    epsilon: float
    delta: float
    rounds: int
    status: BoundStatus
    reference: str
    seconds: float
    interval: float | None = None
    note: str = ""
    per_round: list = field(default_factory=list)

    def record(self) -> dict:
        return {"method": self.method, "kind": self.kind.value, "epsilon": self.epsilon,
                "delta": self.delta, "rounds": self.rounds, "status": self.status.value,
                "reference": self.reference, "seconds": self.seconds,
                "interval": self.interval, "note": self.note}


@dataclass(frozen=True)
class ComposedMethod:
    """A registered composed method: name, kind, status, reference, what it needs, and
    ``compute(rounds, delta, **options) -> ComposedResult``."""

    name: str
    kind: BoundKind
    status: BoundStatus
    reference: str
    regime: str
    compute: Callable[..., ComposedResult]
    #: which randomizers the method composes (None: every one its regime names)
    applies_to: Callable[[object], bool] | None = None

    def applies(self, randomizer) -> bool:
        return self.applies_to is None or bool(self.applies_to(randomizer))


def normalize_rounds(rounds) -> list[Round]:
    """A list of :class:`Round` (consecutive identical rounds merged into one with a repeat)."""
    if isinstance(rounds, Round):
        rounds = [rounds]
    rounds = list(rounds)
    require(len(rounds) >= 1, "rounds", rounds, "needs at least one round")
    out: list[Round] = []
    for r in rounds:
        require(isinstance(r, Round), "rounds", r, "every entry must be a Round")
        if out and out[-1].randomizer == r.randomizer and out[-1].n == r.n:
            out[-1] = Round(r.randomizer, r.n, out[-1].repeat + r.repeat)
        else:
            out.append(r)
    return out


def round_models(rounds, delta, model_of: Callable) -> tuple[list[Round], list[tuple]]:
    """The start of every composed method: the rounds normalized (:func:`normalize_rounds`),
    ``delta`` checked to lie in (0, 1), and each round's (``model_of(randomizer)``, n, repeat)."""
    rounds = normalize_rounds(rounds)
    require_probability_open("delta", delta)
    return rounds, [(model_of(r.randomizer), int(r.n), r.repeat) for r in rounds]


def total_rounds(rounds: Sequence[Round]) -> int:
    return sum(r.repeat for r in rounds)


def pure_cap(rounds: Sequence[Round]) -> float:
    """sum_t eps0_t: each shuffled round is a post-processing of eps0-LDP reports, hence
    (eps0, 0)-DP, and pure DP composes additively; every upper bound is capped by it."""
    return float(sum(float(r.randomizer.epsilon0) * r.repeat for r in rounds))
