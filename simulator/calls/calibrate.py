"""The ``calibrate`` capability: the largest local budget eps0 (given n) or the smallest number
of users n (given eps0) with which each upper bound certifies a target central (eps, delta),
for one round or for a lifetime of ``rounds`` identical rounds (the per-round eps0). The
records are those of ``shufflesim calibrate --json`` and of ``shufflesim.calibrate``.
"""

from __future__ import annotations

from shufflesim.protocols.bounds.result import BoundKind
from shufflesim.protocols.errors import ParameterError, require, require_int_at_least
from shufflesim.simulator.calls.bounds import silent
from shufflesim.simulator.calls.rounds import (
    calibrate_rounds,
    composed_kind,
    upper_composed_methods,
)
from shufflesim.simulator.calls.setting import (
    build_randomizer,
    catalogue,
    check_setting,
    resolve_methods,
)
from shufflesim.simulator.errors import UserError
from shufflesim.simulator.execution.progress import ProgressReport
from shufflesim.simulator.lazy import lazy_module

calibration = lazy_module("shufflesim.protocols.bounds.calibration")
summation = lazy_module("shufflesim.protocols.randomizers.summation")

#: 004's own recipe for its summation protocol (Thm 3.1 applied to the k + 1 fixed-point
#: values, 004 Sec. 4.1): a calibration row of the ``summation`` randomizer.
RECIPE_004 = "004-thm3.1"


def recipe_004(params: dict, n: int, target_epsilon: float, delta: float) -> dict:
    """The eps0 (and gamma) 004 Thm 3.1 chooses for its summation protocol to be
    (target_epsilon, delta)-DP after shuffling n users (valid for target_epsilon <= 1); a row
    with the reason instead when the theorem does not apply."""
    record = {"method": RECIPE_004, "parameter": "epsilon0", "value": None, "epsilon": None,
              "target_epsilon": target_epsilon, "delta": delta, "status": "proven",
              "seconds": 0.0, "note": "", "error": "", "rounds": 1}
    try:
        r = summation.Summation.for_shuffle(n, target_epsilon, delta,
                                            params.get("precision", 10))
    except ParameterError as error:
        record["error"] = str(error)
        return record
    record.update(value=float(r.epsilon0), epsilon=float(target_epsilon),
                  note=f"gamma = {r.uniform_probability:.6g} (004 Thm 3.1, Sec. 4.1)")
    return record


def check(target_epsilon, delta, n, epsilon0, rounds) -> None:
    """The checks of the setting (exactly one of n and eps0; rounds need n; n, delta, target)."""
    if (n is None) == (epsilon0 is None):
        raise UserError("--n / --epsilon0: give exactly one (--n finds eps0, --epsilon0 finds n)")
    require_int_at_least("rounds", rounds, 1)
    if rounds > 1 and n is None:
        raise UserError(f"--rounds = {rounds}: calibration over rounds finds the per-round eps0 "
                        "for a given --n; give --n instead of --epsilon0")
    check_setting(n, delta)
    require(0 < target_epsilon < float("inf"), "target_epsilon", target_epsilon,
            "must be a finite number > 0")


def calibrate(randomizer_name: str, params: dict, target_epsilon: float, delta: float, *,
              n: int | None = None, epsilon0: float | None = None, methods=None,
              rounds: int = 1, progress: ProgressReport | None = None) -> list[dict]:
    """One record per upper bound (``methods``, default every applicable one; over rounds,
    every composed upper method): ``parameter`` (epsilon0 or n), its ``value``, the bound's
    ``epsilon`` there, ``status``, ``seconds``, ``rounds`` and ``error`` (a target the bound
    cannot reach is a record with the reason, not an exception)."""
    check(target_epsilon, delta, n, epsilon0, rounds)
    probe = build_randomizer(randomizer_name, 1.0 if epsilon0 is None else epsilon0, params)
    given = [methods] if isinstance(methods, str) else list(methods or ())
    recipe = (randomizer_name == "summation" and rounds == 1 and n is not None
              and (not given or RECIPE_004 in given))
    require(recipe or RECIPE_004 not in given, "method", RECIPE_004,
            "is 004's recipe for the summation randomizer, for one round given n")
    rest = [m for m in given if m != RECIPE_004]
    names = [] if given and not rest else resolve_methods(rest, composed=rounds > 1)
    if names is None:
        names = upper_composed_methods(probe) if rounds > 1 else [
            s.name for s in catalogue.applicable_bounds(probe) if s.kind is BoundKind.UPPER]
    for name in names:
        kind = (composed_kind(name) if rounds > 1 else catalogue.get_bound(name).kind)
        require(kind is BoundKind.UPPER, "method", name,
                "calibration needs an upper bound (this one is a lower bound)")

    def factory(e):
        return build_randomizer(randomizer_name, e, params)

    records = [recipe_004(params, n, target_epsilon, delta)] if recipe else []
    report = progress or silent("calibrating", "bounds")
    order = _cheap_first(names) if rounds > 1 else list(names)
    with report, report.heartbeat():
        for name in report.steps(order):
            try:
                if rounds > 1:
                    records.append(calibrate_rounds(name, factory, n, target_epsilon, delta,
                                                    rounds, start=_last_value(records)))
                    continue
                if epsilon0 is None:
                    result = calibration.largest_epsilon0(name, factory, n, target_epsilon,
                                                          delta)
                else:
                    result = calibration.smallest_n(name, probe, target_epsilon, delta)
            except ParameterError as error:
                if error.field != "target_epsilon":
                    raise
                status = ("" if rounds > 1 else catalogue.get_bound(name).status_label)
                records.append({"method": name, "parameter": "n" if n is None else "epsilon0",
                                "value": None, "epsilon": None, "status": status,
                                "seconds": 0.0, "rounds": rounds, "error": str(error)})
                continue
            record = result.record()
            record["error"] = ""
            record["rounds"] = 1
            records.append(record)
    if rounds > 1:       # the records in the order of the methods asked for
        rank = {name: i for i, name in enumerate(names)}
        records.sort(key=lambda r: rank.get(r["method"], -1))
    return records


#: Calibration over rounds runs the methods in this order (issue 32): the cheapest first, each
#: next one started at the value of the one before, which is usually close (clone pair, then the
#: blanket pair's PLD and Renyi bounds, then the composition theorems).
ROUNDS_ORDER = ("fmt21-clone", "rdp-clone", "optimal-blanket", "rdp-blanket", "brr-exact",
                "advanced", "basic")


def _cheap_first(names: list[str]) -> list[str]:
    """``names`` in the order of :data:`ROUNDS_ORDER` (names not in it keep their order, last)."""
    rank = {name: i for i, name in enumerate(ROUNDS_ORDER)}
    return sorted(names, key=lambda name: rank.get(name, len(rank)))


def _last_value(records: list[dict]) -> float | None:
    """The eps0 of the last method calibrated over rounds (a start for the next search)."""
    values = [r["value"] for r in records if r.get("value") is not None]
    return values[-1] if values else None
