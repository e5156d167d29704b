"""Calibration over a deployment's lifetime: the largest per-round eps0 whose T-round composed
upper bound meets a target (eps, delta).

Every round uses the randomizer ``randomizer_factory(eps0)``; the schedule is T rounds with n
users, or an explicit list of (n, repeat). A value of eps0 is *certified* when the composed upper
bound (already on its conservative side) is at most the target. The composed bounds grow with
eps0 (the pairs of a larger eps0 are less private), so the certified set is an interval.

Search (issue 32): the bound's own values steer it. The score ln(eps / target) of every
evaluated point (<= 0 exactly where certified) is followed by secant steps in ln eps0 from a
start point (``start``: e.g. the value another method found, else DEFAULT_START), up while certified
and down while not (overshooting by OVERSHOOT), until a certified and a failing point bracket the
crossing; then each trial aims a third of rtol past the secant estimate, on the side not hit
last, so that a good estimate closes the bracket in two evaluations (bisection in ln eps0 after
three trials in a row on one side). The value returned is always one that was certified (the
lower end of the final bracket), whatever the monotonicity of a particular method; a start
that is not certified only costs evaluations.

``basic`` over T identical rounds is asked as one engine question per eps0 instead
(baselines.basic_question: is one round's optimal-blanket delta at eps_t = target / T at most
delta / T?), the same certification without the single-round eps search at delta / T that
compose_rounds runs (issue 32: 3 s of the 100-round calibration's 10).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from shufflesim.protocols.accounting.baselines import basic_question
from shufflesim.protocols.accounting.compose import (
    ComposedResult,
    Round,
    clear_caches,
    compose_rounds,
    get_composed_method,
)
from shufflesim.protocols.bounds.result import BoundKind, BoundStatus
from shufflesim.protocols.errors import (
    ParameterError,
    require,
    require_int_at_least,
    require_probability_open,
)

EPSILON0_MIN = 1e-3
EPSILON0_MAX = 20.0
#: Where the search starts without a guess: eps0 = 1, where most lifetime calibrations end
#: within a factor 4 (issue 32: starting at EPSILON0_MIN cost 4 steps of x16, and the pairs of
#: a tiny eps0 are the slowest to compose).
DEFAULT_START = 1.0


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
                     start: float | None = None, **options) -> RoundsCalibration:
    """The largest eps0 in [eps0_min, eps0_max] with which ``method`` certifies
    (target_epsilon, delta) over the schedule (``n`` and ``rounds``, or ``schedule``), to
    relative ``rtol``, the search started at ``start`` (a guess, e.g. another method's value;
    default DEFAULT_START). Raises ParameterError naming target_epsilon when eps0_min fails."""
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
    scores: dict[float, float] = {}
    question = method == "basic" and len(plan) == 1 and not options

    def evaluate(eps0: float) -> ComposedResult | str:
        r = randomizer_factory(eps0)
        try:
            if question:
                return _basic_by_question(r, plan[0], target_epsilon, delta, scores, eps0)
            out = compose_rounds([Round(r, m, k) for m, k in plan], delta, method, **options)
        except ParameterError as error:
            return str(error)
        if out.epsilon > 0:
            scores[eps0] = math.log(out.epsilon / target_epsilon)
        return out

    def certified(eps0: float) -> bool:
        if eps0 not in outcomes:
            outcomes[eps0] = evaluate(eps0)
            clear_caches()       # no eps0 comes twice: keep the memory of one evaluation
        out = outcomes[eps0]
        return not isinstance(out, str) and out.epsilon <= target_epsilon

    def score(eps0: float) -> float | None:
        return scores.get(eps0)

    low, high = _search(certified, score, start, eps0_min, eps0_max, rtol)
    if low is None:
        out = outcomes[eps0_min]
        why = out if isinstance(out, str) else f"eps = {out.epsilon:.6g}"
        raise ParameterError("target_epsilon", target_epsilon,
                             f"{method} does not certify it even at eps0 = {eps0_min:g} "
                             f"over {sum(k for _, k in plan)} rounds: {why}")
    note = "" if high is not None else f"certified up to the search limit eps0 = {eps0_max:g}"
    return RoundsCalibration(method, low, (low, high), float(target_epsilon), float(delta),
                             sum(k for _, k in plan), outcomes[low], len(outcomes),
                             time.perf_counter() - started, note)


def _basic_by_question(randomizer, plan: tuple[int, int], target_epsilon: float, delta: float,
                       scores: dict, eps0: float) -> ComposedResult | str:
    """basic over T identical rounds, asked as one engine question (baselines.basic_question:
    the round's optimal-blanket delta at eps_t = target / T against delta / T) instead of the
    eps search that compose_rounds runs: a certified point becomes the ComposedResult
    (T eps_t, delta), a failing one the reason. The score is ln(delta_t / (delta / T)) (<= 0
    exactly where certified), which the secant search follows like ln(eps / target)."""
    start = time.perf_counter()
    n, rounds = plan
    Round(randomizer, n, rounds)      # the checks of compose_rounds (pure eps0-LDP rounds, n)
    value, threshold, eps_t = basic_question(randomizer, n, rounds, target_epsilon, delta)
    if value > 0:
        scores[eps0] = math.log(value / threshold)
    if value > threshold:
        return (f"one round's optimal-blanket delta at eps_t = target / T = {eps_t:.6g} is "
                f"{value:.3g} > delta / T = {threshold:.3g}")
    return ComposedResult("basic", BoundKind.UPPER, math.nextafter(rounds * eps_t, math.inf),
                          float(delta), rounds, BoundStatus.PROVEN,
                          "basic composition (Dwork et al. 2006) of per-round optimal-blanket "
                          "(eps_t, delta / T)", time.perf_counter() - start, None,
                          f"certified by one round's optimal-blanket delta at eps_t = "
                          f"{eps_t:.6g}: {value:.3g} <= delta / T = {threshold:.3g}")


#: Slope of ln eps against ln eps0 assumed before two points give one (composed shuffle bounds:
#: 1 at small eps0, 1.8-2.4 where eps0 is a few units: 10-RR, n = 1e5, 100 rounds).
PRIOR_SLOPE = 2.0
#: While only one side of the crossing is known, each step aims this much past the secant
#: estimate (a small overshoot keeps the next secant local; issue 32: 36 -> 33 evaluations in
#: the 100-round calibration of 10-RR).
OVERSHOOT = 0.02


def _estimate(points: dict[float, float]) -> float | None:
    """The crossing (score 0) predicted by a secant in ln eps0 through the two evaluated points
    of smallest |score| (the nearest ones: the score is smooth in ln eps0, so a local secant
    beats one through a far end of the bracket); None without points."""
    if not points:
        return None
    pair = sorted(points.items(), key=lambda p: abs(p[1]))[:2]
    (x1, s1) = pair[0]
    slope = PRIOR_SLOPE
    if len(pair) == 2 and abs(math.log(pair[1][0]) - math.log(x1)) > 1e-12:
        fitted = (pair[1][1] - s1) / (math.log(pair[1][0]) - math.log(x1))
        slope = fitted if fitted > 0.05 else PRIOR_SLOPE
    return math.exp(math.log(x1) - s1 / slope)


def _search(certified, score, start, eps0_min: float, eps0_max: float,
            rtol: float) -> tuple[float | None, float | None]:
    """(largest certified eps0 found, smallest failing one above it or None at the limit),
    within relative ``rtol`` (module docstring). Secant estimates of the crossing; while only one
    side is known the step overshoots by OVERSHOOT (at most a factor 16); once bracketed, each trial
    aims a third of rtol beyond the estimate on the side not hit last, and bisects (in ln eps0)
    after three trials in a row on one side. Only evaluated points end the bracket."""
    low, high = None, None
    points: dict[float, float] = {}
    x = min(max(DEFAULT_START if start is None else float(start), eps0_min), eps0_max)
    streak, last = 0, None
    for _ in range(200):
        ok = certified(x)
        value = score(x)
        if value is not None and math.isfinite(value):
            points[x] = value
        if ok:
            low = x if low is None or x > low else low
        else:
            high = x if high is None or x < high else high
        streak = streak + 1 if last == ok else 1
        last = ok
        if low is not None and high is not None and high <= low * (1 + rtol):
            return low, high
        if low is None and x <= eps0_min:
            return None, high
        if high is None and low is not None and low >= eps0_max:
            return low, None
        guess = _estimate(points)
        if low is not None and high is not None:
            lo_ln, hi_ln = math.log(low), math.log(high)
            if guess is None or streak >= 4:
                trial = math.exp(0.5 * (lo_ln + hi_ln))
            else:
                trial = guess * (1 - rtol / 3 if not ok else 1 + rtol / 3)
            margin = min(rtol / 4, 0.25 * (hi_ln - lo_ln))
            x = math.exp(min(max(math.log(trial), lo_ln + margin), hi_ln - margin))
        elif low is not None:          # only certified points: step up past the crossing
            trial = (guess or low * 4.0) * (1.0 + OVERSHOOT)
            x = min(max(trial, low * 1.05), low * 16.0, eps0_max)
        else:                          # only failing points: step down past the crossing
            trial = (guess or high / 4.0) * (1.0 - OVERSHOOT)
            x = max(min(trial, high / 1.05), high / 16.0, eps0_min)
    return low, high
