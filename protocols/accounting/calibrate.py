"""Calibration over a deployment's lifetime: the largest per-round eps0 whose T-round composed
upper bound meets a target (eps, delta).

Every round uses the randomizer ``randomizer_factory(eps0)``; the schedule is T rounds with n
users, or an explicit list of (n, repeat). A value of eps0 is *certified* when the composed upper
bound (already on its conservative side) is at most the target. The composed bounds grow with
eps0 (the pairs of a larger eps0 are less private), so the certified set is an interval found by
bracketing as in protocols.bounds.calibration: geometric steps up from ``eps0_min``, then
bisection; the value returned is always one that was certified (the lower end of the final
bracket), whatever the monotonicity of a particular method.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from shufflesim.protocols.accounting.compose import (
    ComposedResult,
    Round,
    compose_rounds,
    get_composed_method,
)
from shufflesim.protocols.bounds.calibration import largest_certified
from shufflesim.protocols.bounds.result import BoundKind
from shufflesim.protocols.errors import (
    ParameterError,
    require,
    require_int_at_least,
    require_probability_open,
)

EPSILON0_MIN = 1e-3
EPSILON0_MAX = 20.0


@dataclass(frozen=True)
class RoundsCalibration:
    """The largest certified per-round eps0: ``value`` (certified), ``bracket`` (certified,
    not certified or None when the search limit was certified), the composed ``result`` at
    ``value``, the number of evaluations and the time."""

    method: str
    value: float
    bracket: tuple[float, float | None]
    target_epsilon: float
    delta: float
    rounds: int
    result: ComposedResult
    evaluations: int
    seconds: float
    note: str = ""

    def record(self) -> dict:
        return {"method": self.method, "parameter": "epsilon0", "value": self.value,
                "bracket": list(self.bracket), "epsilon": self.result.epsilon,
                "target_epsilon": self.target_epsilon, "delta": self.delta,
                "rounds": self.rounds, "status": self.result.status.value,
                "evaluations": self.evaluations, "seconds": self.seconds, "note": self.note}


def _schedule(n, rounds, schedule) -> list[tuple[int, int]]:
    if schedule is not None:
        items = [(int(a), int(b)) for a, b in schedule]
        require(len(items) >= 1, "schedule", schedule, "needs at least one (n, repeat)")
        return items
    require_int_at_least("n", n, 2)
    require_int_at_least("rounds", rounds, 1)
    return [(int(n), int(rounds))]


def largest_epsilon0(randomizer_factory: Callable[[float], object], target_epsilon: float,
                     delta: float, *, n: int | None = None, rounds: int | None = None,
                     schedule: Sequence[tuple[int, int]] | None = None,
                     method: str = "optimal-blanket", rtol: float = 1e-3,
                     eps0_min: float = EPSILON0_MIN, eps0_max: float = EPSILON0_MAX,
                     **options) -> RoundsCalibration:
    """The largest eps0 in [eps0_min, eps0_max] with which ``method`` certifies
    (target_epsilon, delta) over the schedule (``n`` and ``rounds``, or ``schedule``), to
    relative ``rtol``. Raises ParameterError naming target_epsilon when eps0_min fails."""
    started = time.perf_counter()
    spec = get_composed_method(method)
    require(spec.kind is BoundKind.UPPER, "method", method,
            "calibration needs an upper bound (this one is a lower bound)")
    require(isinstance(target_epsilon, (int, float)) and 0 < target_epsilon < math.inf,
            "target_epsilon", target_epsilon, "must be a finite number > 0")
    require_probability_open("delta", delta)
    require(0 < eps0_min < eps0_max, "eps0_min", eps0_min, f"must lie in (0, {eps0_max})")
    plan = _schedule(n, rounds, schedule)
    outcomes: dict[float, ComposedResult | str] = {}

    def certified(eps0: float) -> bool:
        if eps0 not in outcomes:
            r = randomizer_factory(eps0)
            try:
                outcomes[eps0] = compose_rounds([Round(r, m, k) for m, k in plan], delta,
                                                method, **options)
            except ParameterError as error:
                outcomes[eps0] = str(error)
        out = outcomes[eps0]
        return not isinstance(out, str) and out.epsilon <= target_epsilon

    if not certified(eps0_min):
        out = outcomes[eps0_min]
        why = out if isinstance(out, str) else f"eps = {out.epsilon:.6g}"
        raise ParameterError("target_epsilon", target_epsilon,
                             f"{method} does not certify it even at eps0 = {eps0_min:g} "
                             f"over {sum(k for _, k in plan)} rounds: {why}")
    low, high = largest_certified(certified, eps0_min, eps0_max, rtol)
    note = "" if high is not None else f"certified up to the search limit eps0 = {eps0_max:g}"
    return RoundsCalibration(method, low, (low, high), float(target_epsilon), float(delta),
                             sum(k for _, k in plan), outcomes[low], len(outcomes),
                             time.perf_counter() - started, note)
