"""Certified parameters of a candidate: the largest per-round eps0 (single-message) or the
smallest number of blanket messages (multi-message) whose proven bound, composed over T rounds,
meets the lifetime target (eps, delta).

Single-message randomizers (pure eps0-LDP):

* T = 1: the catalogue's proven upper bounds, through protocols.bounds.calibration
  (``largest_epsilon0``): ``optimal-blanket`` (000 Thm 13, specific to the randomizer) and
  ``fmt21_numerical`` (002 Thm 3.2, generic: depends on eps0 alone).
* T > 1: the composed methods of protocols.accounting (``largest_epsilon0`` of
  protocols.accounting.calibrate): ``optimal-blanket`` (000 Thm 13 pair, PLD composition; for
  the randomizers of protocols.accounting.pairs.SUPPORTED) and ``fmt21-clone`` (002 Thm 3.2 pair,
  any eps0-LDP randomizer).

A row's eps0 is the largest of the values these certify, and the row names that method. The
generic methods depend on eps0 alone, so one calibration serves every candidate (cache key
``generic``); the specific ones are cached per randomizer family and parameters. The cache is a
module dictionary keyed by every argument of the calibration, so a cached value is the value a
new calibration would compute.

Multi-message protocols: per round, the proven ``multi-message-exact-upper`` bound (001 Sec. 4
with 000's exact two-count analysis) gives eps_r at delta_r; T rounds compose by basic
composition (T eps_r, T delta_r) or by advanced composition (Kairouz-Oh-Viswanath 2015 Thm 3.5:
protocols.accounting.baselines.advanced_epsilon) with delta = delta' + T delta_r; the smallest
valid result is used. b is found by doubling and bisection; the value returned was certified.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

from shufflesim.protocols.accounting import calibrate as rounds_calibration
from shufflesim.protocols.accounting import pairs
from shufflesim.protocols.accounting.baselines import advanced_epsilon
from shufflesim.protocols.accounting.compose import Round, compose_rounds
from shufflesim.protocols.bounds import calibration
from shufflesim.protocols.bounds.catalogue import evaluate
from shufflesim.protocols.errors import ParameterError
from shufflesim.simulator.design.candidates import Candidate

#: Largest number of blanket messages searched.
BLANKET_MAX = 1 << 16
#: Relative precision of the eps0 search over rounds (T > 1).
ROUNDS_RTOL = 2e-3
#: Fractions of delta given to delta' in the advanced composition of multi-message rounds.
ADVANCED_FRACTIONS = (0.1, 0.5)
MULTI_BOUND = "multi-message-exact-upper"

_CACHE: dict[tuple, object] = {}


@dataclass(frozen=True)
class Certificate:
    """The certified setting of one candidate (``ok``), or why there is none (``reason``) with
    the lifetime eps it reaches at its most private setting (``epsilon``, for the closest)."""

    ok: bool
    epsilon0: float | None
    blanket_messages: int | None
    bound: str
    epsilon: float | None
    note: str = ""
    reason: str = ""
    seconds: float = 0.0


def clear_cache() -> None:
    _CACHE.clear()


def bound_names(rounds: int) -> list[str]:
    """The bounds a design may be restricted to (``bound=``) for ``rounds`` rounds."""
    single = ["optimal-blanket", "fmt21_numerical"] if rounds == 1 else [
        "optimal-blanket", "fmt21-clone"]
    return [*single, MULTI_BOUND]


def single_methods(candidate: Candidate, rounds: int, thorough: bool = False
                   ) -> list[tuple[str, bool]]:
    """(method, generic) pairs tried for a single-message candidate. The specific
    optimal-blanket bound is tried for the randomizers whose pair has two output groups
    (protocols.accounting.pairs.SUPPORTED: k-RR, binary RR), where it is cheap; with
    ``thorough`` (T = 1 only) for every candidate (its engine takes seconds to minutes per
    calibration for OUE, RAPPOR, OLH, HR, subset, Laplace)."""
    cheap = candidate.randomizer in pairs.SUPPORTED
    if rounds == 1:
        specific = [("optimal-blanket", False)] if cheap or thorough else []
        return [*specific, ("fmt21_numerical", True)]
    specific = [("optimal-blanket", False)] if cheap else []
    return [*specific, ("fmt21-clone", True)]


def _calibrate(method: str, generic: bool, candidate: Candidate, n: int, rounds: int,
               target: float, delta: float, eps0_min: float, eps0_max: float):
    key = (method, candidate.generic_key if generic else candidate.family_key, n, rounds,
           target, delta, eps0_min, eps0_max)
    if key not in _CACHE:
        try:
            if rounds == 1:
                found = calibration.largest_epsilon0(
                    method, candidate.build, n, target, delta, eps0_min=eps0_min,
                    eps0_max=eps0_max)
                status = found.result.status_label
                _CACHE[key] = (found.value, found.epsilon, status, found.note)
            else:
                found = _rounds_search(method, candidate, n, rounds, target, delta, eps0_min,
                                       eps0_max)
                _CACHE[key] = (found.value, found.result.epsilon, found.result.status.value,
                               found.note)
        except ParameterError as error:
            _CACHE[key] = str(error)
    return _CACHE[key]


def _rounds_search(method, candidate, n, rounds, target, delta, eps0_min, eps0_max):
    """protocols.accounting.calibrate.largest_epsilon0 started from above: a composed PLD costs
    most at small eps0 (its grid follows the loss scale), so the start is the largest of
    eps0_max / 4, / 16, ... (and finally eps0_min) that is certified, and the search runs between
    it and 4 times it. Every value returned is one the calibration certified."""
    start = eps0_max / 4.0
    while start > eps0_min:
        try:
            return rounds_calibration.largest_epsilon0(
                candidate.build, target, delta, n=n, rounds=rounds, method=method,
                rtol=ROUNDS_RTOL, eps0_min=start, eps0_max=min(4.0 * start, eps0_max))
        except ParameterError as error:
            if error.field != "target_epsilon":
                raise
        start /= 4.0
    return rounds_calibration.largest_epsilon0(
        candidate.build, target, delta, n=n, rounds=rounds, method=method, rtol=ROUNDS_RTOL,
        eps0_min=eps0_min, eps0_max=min(4.0 * eps0_min, eps0_max) if eps0_min * 4 < eps0_max
        else eps0_max)


def _epsilon_at(method: str, candidate: Candidate, n: int, rounds: int, delta: float,
                eps0: float) -> float | None:
    """The method's lifetime eps at eps0 (for the closest candidate), None without one."""
    try:
        r = candidate.build(eps0)
        if rounds == 1:
            out = evaluate(method, r, n, delta)
            return out.result.epsilon if out.ok else None
        return compose_rounds([Round(r, n, rounds)], delta, method).epsilon
    except ParameterError:
        return None


def certify_single(candidate: Candidate, n: int, rounds: int, target: float, delta: float,
                   eps0_min: float, eps0_max: float, bound: str | None = None,
                   thorough: bool = False) -> Certificate:
    started = time.perf_counter()
    methods = single_methods(candidate, rounds, thorough or bound is not None)
    if bound is not None:
        methods = [(m, g) for m, g in methods if m == bound]
        if not methods:
            return Certificate(False, None, None, bound, None,
                               reason=f"bound {bound} does not apply to {candidate.randomizer}")
    best, reasons = None, []
    for method, generic in methods:
        out = _calibrate(method, generic, candidate, n, rounds, target, delta, eps0_min,
                         eps0_max)
        if isinstance(out, str):
            reasons.append(f"{method}: {out}")
            continue
        value, epsilon, status, note = out
        if status != "proven":
            reasons.append(f"{method}: status {status}")
            continue
        if best is None or value > best[1]:
            best = (method, value, epsilon, note)
    seconds = time.perf_counter() - started
    if best is None:
        closest = [e for m, _ in methods
                   if (e := _epsilon_at(m, candidate, n, rounds, delta, eps0_min)) is not None]
        return Certificate(False, None, None, methods[0][0] if methods else "",
                           min(closest, default=None), reason="; ".join(reasons),
                           seconds=time.perf_counter() - started)
    method, value, epsilon, note = best
    return Certificate(True, value, None, method, epsilon, note, seconds=seconds)


def multi_round_epsilon(randomizer, n: int, rounds: int, delta: float) -> tuple[float, str]:
    """The smallest proven lifetime eps over ``rounds`` rounds (module docstring) and how."""
    def per_round(delta_r: float) -> float:
        out = evaluate(MULTI_BOUND, randomizer, n, delta_r)
        if not out.ok:
            raise ParameterError("randomizer", randomizer.name, out.error)
        return float(out.result.epsilon)

    if rounds == 1:
        return per_round(delta), "one round"
    best = (rounds * per_round(delta / rounds), "basic composition, delta_r = delta / T")
    for fraction in ADVANCED_FRACTIONS:
        eps_r = per_round((1 - fraction) * delta / rounds)
        value = advanced_epsilon([(eps_r, rounds)], fraction * delta) * (1 + 1e-12)
        if value < best[0]:
            best = (value, f"advanced composition (KOV15), delta' = {fraction:g} delta")
    return best


def certify_multi(candidate: Candidate, n: int, rounds: int, target: float, delta: float,
                  blanket_max: int = BLANKET_MAX) -> Certificate:
    """The smallest b in [1, blanket_max] whose composed eps meets the target."""
    started = time.perf_counter()
    key = ("multi", candidate.family_key, n, rounds, target, delta, blanket_max)
    if key in _CACHE:
        return _CACHE[key]
    outcomes: dict[int, tuple[float, str]] = {}

    def eps_of(b: int) -> tuple[float, str]:
        if b not in outcomes:
            try:
                outcomes[b] = multi_round_epsilon(candidate.build(target, b), n, rounds, delta)
            except ParameterError as error:
                outcomes[b] = (math.inf, str(error))
        return outcomes[b]

    low, high = 0, 1          # low: not certified (0 blanket messages), high: to try
    while eps_of(high)[0] > target:
        if high >= blanket_max:
            eps, how = eps_of(high)
            result = Certificate(False, None, high, MULTI_BOUND, eps if eps < math.inf else None,
                                 reason=f"{blanket_max} blanket messages give eps = {eps:.4g} "
                                 f"> {target:g} ({how})",
                                 seconds=time.perf_counter() - started)
            _CACHE[key] = result
            return result
        low, high = high, min(2 * high, blanket_max)
    while high - low > 1:
        middle = (low + high) // 2
        if eps_of(middle)[0] <= target:
            high = middle
        else:
            low = middle
    eps, how = eps_of(high)
    per_round = eps if rounds == 1 else None
    if per_round is None:
        out = evaluate(MULTI_BOUND, candidate.build(target, high), n, delta / rounds)
        per_round = float(out.result.epsilon) if out.ok else target
    result = Certificate(True, per_round, high, MULTI_BOUND, eps, how,
                         seconds=time.perf_counter() - started)
    _CACHE[key] = result
    return result
