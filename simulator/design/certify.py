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

Multi-message protocols: simulator.design.multi.
"""

from __future__ import annotations

import time

from shufflesim.protocols.accounting import calibrate as rounds_calibration
from shufflesim.protocols.accounting import pairs
from shufflesim.protocols.accounting.compose import Round, compose_rounds
from shufflesim.protocols.bounds import calibration
from shufflesim.protocols.bounds.catalogue import evaluate
from shufflesim.protocols.errors import ParameterError
from shufflesim.simulator.design.candidates import Candidate
from shufflesim.simulator.design.certificate import CACHE as _CACHE  # noqa: N811
from shufflesim.simulator.design.certificate import Certificate
from shufflesim.simulator.design.multi import MULTI_BOUND

#: Relative precision of the eps0 search over rounds (T > 1).
ROUNDS_RTOL = 2e-3

def bound_names(rounds: int) -> list[str]:
    """The bounds a design may be restricted to (``bound=``) for ``rounds`` rounds."""
    single = ["optimal-blanket", "fmt21_numerical"] if rounds == 1 else [
        "optimal-blanket", "fmt21-clone"]
    return [*single, MULTI_BOUND]


def single_methods(candidate: Candidate, rounds: int, thorough: bool = False
                   ) -> list[tuple[str, bool]]:
    """(method, generic) pairs tried for a single-message candidate, the generic one first (its
    value starts the specific one's search over rounds). The specific
    optimal-blanket bound is tried for the randomizers whose pair has two output groups
    (protocols.accounting.pairs.SUPPORTED: k-RR, binary RR), where it is cheap; with
    ``thorough`` (T = 1 only) for every candidate (its engine takes seconds to minutes per
    calibration for OUE, RAPPOR, OLH, HR, subset, Laplace)."""
    cheap = candidate.randomizer in pairs.SUPPORTED
    if rounds == 1:
        specific = [("optimal-blanket", False)] if cheap or thorough else []
        return [("fmt21_numerical", True), *specific]
    specific = [("optimal-blanket", False)] if cheap else []
    return [("fmt21-clone", True), *specific]


def _calibrate(method: str, generic: bool, candidate: Candidate, n: int, rounds: int,
               target: float, delta: float, eps0_min: float, eps0_max: float, hint=None):
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
                                       eps0_max, hint)
                _CACHE[key] = (found.value, found.result.epsilon, found.result.status.value,
                               found.note)
        except ParameterError as error:
            _CACHE[key] = str(error)
    return _CACHE[key]


def _rounds_search(method, candidate, n, rounds, target, delta, eps0_min, eps0_max,
                   hint=None):
    """protocols.accounting.calibrate.largest_epsilon0 started near the answer (issue 32's
    ``start``): at ``hint`` (the value the generic method certified, which the specific
    optimal-blanket pair can only improve) or else eps0_max / 4. A composed PLD costs most at
    small eps0 (its grid follows the loss scale), so the search comes from above rather than
    walking up from eps0_min; the value returned is one the calibration certified."""
    return rounds_calibration.largest_epsilon0(
        candidate.build, target, delta, n=n, rounds=rounds, method=method, rtol=ROUNDS_RTOL,
        eps0_min=eps0_min, eps0_max=eps0_max, start=hint if hint else eps0_max / 4.0)


def _epsilon_at(method: str, generic: bool, candidate: Candidate, n: int, rounds: int,
                delta: float, eps0: float) -> float | None:
    """The method's lifetime eps at eps0 (for the closest candidate), None without one;
    cached like the calibrations."""
    key = ("at", method, candidate.generic_key if generic else candidate.family_key, n, rounds,
           delta, eps0)
    if key not in _CACHE:
        _CACHE[key] = _evaluate_at(method, candidate, n, rounds, delta, eps0)
    return _CACHE[key]


def _evaluate_at(method: str, candidate: Candidate, n: int, rounds: int, delta: float,
                 eps0: float) -> float | None:
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
                         eps0_max, hint=None if best is None else best[1])
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
        closest = [e for m, g in methods
                   if (e := _epsilon_at(m, g, candidate, n, rounds, delta, eps0_min)) is not None]
        return Certificate(False, None, None, methods[0][0] if methods else "",
                           min(closest, default=None), reason="; ".join(reasons),
                           seconds=time.perf_counter() - started)
    method, value, epsilon, note = best
    return Certificate(True, value, None, method, epsilon, note, seconds=seconds)


#: The non-proven bound of the separate column (001's variation-ratio bound, which rests on the
#: stronger-clone reduction that 000 Sec. 3.3 shows to be flawed).
NOT_PROVEN = "variation-ratio"


def not_proven(candidate: Candidate, n: int, rounds: int, target: float, delta: float,
               eps0_min: float, eps0_max: float) -> tuple[float | None, str]:
    """(eps0, label) that the non-proven :data:`NOT_PROVEN` bound would allow, for the
    separate column; T = 1 only (it gives an (eps, delta) value, not a pair that composes):
    (None, why) otherwise or when it certifies nothing."""
    if rounds > 1:
        return None, f"{NOT_PROVEN}: does not compose over rounds"
    out = _calibrate(NOT_PROVEN, False, candidate, n, rounds, target, delta, eps0_min, eps0_max)
    if isinstance(out, str):
        return None, f"{NOT_PROVEN}: {out}"
    return out[0], f"{NOT_PROVEN} ({out[2]})"
