"""Calibration: the largest local budget eps0, or the smallest number of users n, for which a
registered upper bound certifies a target central (eps, delta) (as in 000 Table 4).

A setting is *certified* when the bound returns a result (it is inside its regime) whose
epsilon -- already on the conservative side of the bound's own numerical error -- is at most the
target. Upper bounds are non-decreasing in eps0 and non-increasing in n, so the certified set is
an interval and is found by bracketing; every value returned is one that was certified (the
conservative end of the final bracket), whatever the monotonicity of a particular bound.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

from shufflesim.protocols.bounds.catalogue import BoundEvaluation, evaluate, get_bound
from shufflesim.protocols.bounds.result import BoundKind
from shufflesim.protocols.errors import (
    ParameterError,
    require,
    require_int_at_least,
    require_probability_open,
)
from shufflesim.protocols.lazy import lazy_module

optimize = lazy_module("scipy.optimize")  # a root finder, loaded on first use (issue 32)

#: Search range for eps0 (the generic bounds give eps = eps0 without amplification beyond it).
EPSILON0_MIN = 1e-4
EPSILON0_MAX = 20.0
N_MAX = 10**9
#: relative width of the eps0 bracket on the delta_at path, where a step costs one engine
#: question: finer than the default rtol, so the value is at least as large as that of the eps
#: path (whose search may end anywhere in its 1e-4 bracket) in all but rare cases
DELTA_PATH_RTOL = 1e-9


@dataclass(frozen=True)
class Calibration:
    """A calibrated parameter.

    parameter: "epsilon0" or "n"; value: the certified value (largest eps0 / smallest n);
    bracket: (certified, not certified) neighbours -- the true crossing lies between them
    (``None`` as the second entry when the search range ended first); epsilon: the bound's
    epsilon at ``value``; result: that evaluation; note: how the search ended.
    """

    method: str
    parameter: str
    value: float
    bracket: tuple[float, float | None]
    epsilon: float
    target_epsilon: float
    delta: float
    evaluations: int
    seconds: float
    result: BoundEvaluation
    note: str = ""

    def record(self) -> dict:
        status = self.result.status_label
        return {
            "method": self.method, "parameter": self.parameter, "value": self.value,
            "bracket": list(self.bracket), "epsilon": self.epsilon,
            "target_epsilon": self.target_epsilon, "delta": self.delta, "status": status,
            "evaluations": self.evaluations, "seconds": self.seconds, "note": self.note,
        }


class _Certifier:
    """Evaluates one bound at a parameter value and remembers the outcomes.

    A bound with a ``BoundSpec.delta_at`` is asked one question per value: is its delta at the
    target epsilon at most delta? (issue 18: one engine evaluation instead of the ~10 of an eps
    search.) That certifies (target, delta) exactly when the eps search would find an eps <=
    target, up to that search's tolerance, which the question does not have. Its score is then
    ln(delta_at / delta). A value where delta_at raises ParameterError (outside the bound's
    regime) counts as not certified; :meth:`reason` evaluates it in full for the message.
    """

    def __init__(self, name: str, build: Callable[[float], tuple[object, int]], target: float,
                 delta: float) -> None:
        self.name, self.build, self.target, self.delta = name, build, target, delta
        self.spec = get_bound(name)
        self.outcomes: dict[float, BoundEvaluation] = {}
        self.deltas: dict[float, float | None] = {}     # x -> delta_at(target), None: refused

    @property
    def delta_at(self):
        return self.spec.delta_at

    def __call__(self, x: float) -> bool:
        if self.delta_at is not None:
            return self._delta(x) is not None and self.deltas[x] <= self.delta
        outcome = self.outcome(x)
        return outcome.ok and outcome.result.epsilon <= self.target

    def outcome(self, x: float) -> BoundEvaluation:
        """The bound's full evaluation at x (computed once)."""
        if x not in self.outcomes:
            randomizer, n = self.build(x)
            self.outcomes[x] = evaluate(self.name, randomizer, n, self.delta)
        return self.outcomes[x]

    def _delta(self, x: float) -> float | None:
        if x not in self.deltas:
            randomizer, n = self.build(x)
            value = None
            if self.spec.applies_to(randomizer) and self.spec.delta0_refusal(randomizer) is None:
                try:
                    value = float(self.delta_at(randomizer, n, self.target, self.delta))
                except ParameterError:
                    value = None
            self.deltas[x] = value
        return self.deltas[x]

    def score(self, x: float) -> float | None:
        """A number <= 0 exactly where x is certified, for the secant and Brent steps: ln(eps(x)
        / target), or ln(delta_at / delta) on the delta_at path; None without a number."""
        if self.delta_at is not None:
            value = self.deltas.get(x)
            return None if value is None or not value > 0 else math.log(value / self.delta)
        outcome = self.outcomes.get(x)
        if outcome is None or not outcome.ok or not outcome.result.epsilon > 0:
            return None
        return math.log(outcome.result.epsilon / self.target)

    def reason(self, x: float) -> str:
        outcome = self.outcome(x)
        if not outcome.ok:
            return outcome.error
        if self.delta_at is not None and self.deltas.get(x) is not None:
            return (f"the bound's delta at eps = {self.target} is {self.deltas[x]:.6g} > "
                    f"{self.delta}")
        return f"the bound gives eps = {outcome.result.epsilon:.6g} > {self.target}"

    def evaluations(self) -> int:
        return len(self.deltas.keys() | self.outcomes.keys())

    def certified_outcome(self, x: float) -> tuple[BoundEvaluation, float, str]:
        """(full evaluation, epsilon, note) at a certified x. On the delta_at path the eps
        search may stop a hair above the target that delta_at certified; the target is then the
        epsilon certified, and the note says so."""
        outcome = self.outcome(x)
        if self.delta_at is None or (outcome.ok and outcome.result.epsilon <= self.target):
            return outcome, outcome.result.epsilon, ""
        certificate = (f"certified by the bound's delta at eps = {self.target}: "
                       f"{self.deltas[x]:.9g} <= {self.delta:g}")
        if not outcome.ok:                       # delta_at and compute disagree on the regime
            return outcome, self.target, f"{certificate}; its full evaluation: {outcome.error}"
        return outcome, self.target, (
            f"{certificate} (its eps search stops at {outcome.result.epsilon:.12g})")


def _check_target(name: str, target_epsilon: float, delta: float) -> None:
    spec = get_bound(name)
    require(spec.kind is BoundKind.UPPER, "method", name,
            "calibration needs an upper bound (this one is a lower bound)")
    require(isinstance(target_epsilon, (int, float)) and 0 < target_epsilon < math.inf,
            "target_epsilon", target_epsilon, "must be a finite number > 0")
    require_probability_open("delta", delta)


def largest_certified(certified: Callable[[float], bool], low: float, limit: float,
                      rtol: float, score: Callable[[float], float | None] | None = None,
                      ) -> tuple[float, float | None]:
    """Bracket the largest certified value above ``low`` (certified) up to ``limit``, to
    relative ``rtol``. Returns (certified, not certified), the second None when ``limit`` itself
    was certified. The first is always a value that was certified, whatever the monotonicity of
    ``certified``: every step only moves an end of the bracket to a point evaluated on that side.

    Without ``score``: geometric steps of 4 up to the first failure, then bisection (geometric
    while the bracket spans more than a factor 2).

    With ``score`` (issue 18; x -> ln(eps(x) / target) of a point already passed to
    ``certified``, <= 0 exactly where it is certified, None where the bound gave no number):
    the steps follow the bound's own values. Step-up: the crossing predicted by a secant of
    the score in ln x (slope 1 from a single point: eps ~ eps0 near the bottom), overshot by
    20% and capped at a factor 64 per step. Refinement: Brent's method on the score in ln x
    (:func:`_brent_refinement`), then bisection if a bracket of relative width rtol is still
    not reached (a point without a number, or a non-monotone bound).
    """
    if score is None:
        return _largest_certified_bisection(certified, low, limit, rtol)
    high = None
    points: list[tuple[float, float]] = []     # (ln x, score) of certified points, in order


    def remember(x: float) -> None:
        value = score(x)
        if value is not None and math.isfinite(value):
            points.append((math.log(x), value))

    remember(low)
    while high is None:
        trial = min(low * 4.0, limit)
        if points and points[-1][1] < 0:
            ln_x, s_x = points[-1]
            slope = 1.0
            if len(points) >= 2 and points[-1][0] > points[-2][0]:
                fitted = (s_x - points[-2][1]) / (ln_x - points[-2][0])
                slope = fitted if fitted > 0.05 else 1.0
            predicted = math.exp(min(ln_x - s_x / slope, math.log(64.0 * low))) * 1.2
            trial = min(max(predicted, low * 1.05), low * 64.0, limit)
        if certified(trial):
            low = trial
            remember(trial)
            if trial >= limit:
                break
        else:
            high = trial
    if high is not None and high - low > rtol * low:
        low, high = _brent_refinement(certified, score, low, high, rtol)
    return _bisect(certified, low, high, rtol)  # safeguard: bisection


class _NoScore(Exception):
    """A point without a finite score: the refinement falls back to bisection."""


def _brent_refinement(certified, score, low: float, high: float, rtol: float):
    """Brent's method (scipy.optimize.brentq) on the score in ln x, started from the bracket
    (low certified, high not): every point it evaluates goes through ``certified``; the result
    is the tightest (certified, not certified) pair among them, so it only ever moves an end to
    a point evaluated on that side. Stops when the bracket is ~0.1 rtol wide in ln x."""
    tried: dict[float, bool] = {}
    ends = {math.log(low): low, math.log(high): high}   # exp(log x) may miss x by an ulp

    def fun(u: float) -> float:
        x = ends.get(u, math.exp(u))
        ok = certified(x)
        tried[x] = ok
        value = score(x)
        if value is None or not math.isfinite(value):
            raise _NoScore
        return min(value, -1e-300) if ok else max(value, 1e-300)

    try:
        optimize.brentq(fun, math.log(low), math.log(high), xtol=0.1 * rtol, rtol=1e-15,
                        maxiter=100)
    except (_NoScore, RuntimeError, ValueError):
        pass
    above = [x for x, ok in tried.items() if not ok and low < x < high]
    high = min(above, default=high)
    below = [x for x, ok in tried.items() if ok and low < x < high]
    low = max(below, default=low)
    return low, high


def _largest_certified_bisection(certified: Callable[[float], bool], low: float, limit: float,
                                 rtol: float) -> tuple[float, float | None]:
    high = None
    while high is None:
        trial = min(low * 4.0, limit)
        if certified(trial):
            low = trial
            if trial >= limit:
                break
        else:
            high = trial
    return _bisect(certified, low, high, rtol)


def largest_epsilon0(bound_name: str, randomizer_factory: Callable[[float], object], n: int,
                     target_epsilon: float, delta: float, *, rtol: float = 1e-4,
                     eps0_min: float = EPSILON0_MIN,
                     eps0_max: float = EPSILON0_MAX) -> Calibration:
    """The largest eps0 in [eps0_min, eps0_max] whose randomizer ``randomizer_factory(eps0)``
    the bound certifies at (target_epsilon, delta) with n users, to relative ``rtol``.

    Search (:func:`largest_certified`): steps up from eps0_min to bracket the crossing, then
    Brent's method and bisection. Raises ParameterError naming target_epsilon when even eps0_min
    is not certified. On the ``BoundSpec.delta_at`` path (one engine question per step) the
    search starts at eps0 = target_epsilon when that is certified (as it is for every upper
    bound that never exceeds eps0: the shuffled output is eps0-DP anyway), and the bracket is
    refined to min(rtol, DELTA_PATH_RTOL).
    """
    started = time.perf_counter()
    _check_target(bound_name, target_epsilon, delta)
    require_int_at_least("n", n, 2)
    require(0 < eps0_min < eps0_max, "eps0_min", eps0_min, f"must lie in (0, {eps0_max})")
    certified = _Certifier(bound_name, lambda e: (randomizer_factory(e), n), target_epsilon,
                           delta)
    if not certified(eps0_min):
        raise ParameterError("target_epsilon", target_epsilon,
                          f"{bound_name} does not certify it even at eps0 = {eps0_min:g} "
                          f"(n = {n}): {certified.reason(eps0_min)}")
    low = eps0_min
    if certified.delta_at is not None:
        rtol = min(rtol, DELTA_PATH_RTOL)
        if eps0_min < target_epsilon < eps0_max and certified(target_epsilon):
            low = target_epsilon
    low, high = largest_certified(certified, low, eps0_max, rtol, score=certified.score)
    outcome, epsilon, note = certified.certified_outcome(low)
    if high is None:
        note = "; ".join(filter(None, [f"certified up to the search limit eps0 = {eps0_max:g}",
                                       note]))
    return Calibration(bound_name, "epsilon0", low, (low, high), epsilon, target_epsilon, delta,
                       certified.evaluations(), time.perf_counter() - started, outcome, note)


def smallest_n(bound_name: str, randomizer, target_epsilon: float, delta: float, *,
               n_max: int = N_MAX) -> Calibration:
    """The smallest n in [2, n_max] with which the bound certifies (target_epsilon, delta) for
    ``randomizer``: doubling, then bisection on integers. Raises ParameterError naming
    target_epsilon when n_max users do not suffice."""
    started = time.perf_counter()
    _check_target(bound_name, target_epsilon, delta)
    require_int_at_least("n_max", n_max, 2)
    certified = _Certifier(bound_name, lambda n: (randomizer, int(n)), target_epsilon, delta)
    low, high = 1, 2  # low: not certified (n = 1 is no shuffle), high: candidate
    while not certified(high):
        if high >= n_max:
            raise ParameterError("target_epsilon", target_epsilon,
                              f"{bound_name} does not certify it with n = {n_max} users: "
                              f"{certified.reason(high)}")
        low, high = high, min(2 * high, n_max)
    while high - low > 1:
        mid = (low + high) // 2
        if certified(mid):
            high = mid
        else:
            low = mid
    outcome, epsilon, note = certified.certified_outcome(high)
    return Calibration(bound_name, "n", high, (high, low), epsilon, target_epsilon, delta,
                       certified.evaluations(), time.perf_counter() - started, outcome, note)


def _bisect(certified, low: float, high: float | None, rtol: float) -> tuple[float, float | None]:
    """Shrink [low, high] (low certified, high not) to relative width ``rtol`` by bisection
    (geometric while the bracket spans more than a factor 2); no upper end: nothing to do."""
    while high is not None and high - low > rtol * low:
        mid = math.sqrt(low * high) if high > 2 * low else 0.5 * (low + high)
        if certified(mid):
            low = mid
        else:
            high = mid
    return low, high
