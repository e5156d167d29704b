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


def _check(target_epsilon, delta, n, epsilon0, rounds) -> None:
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
    _check(target_epsilon, delta, n, epsilon0, rounds)
    probe = build_randomizer(randomizer_name, 1.0 if epsilon0 is None else epsilon0, params)
    names = resolve_methods(methods, composed=rounds > 1)
    if names is None:
        names = upper_composed_methods(probe) if rounds > 1 else [
            s.name for s in catalogue.applicable_bounds(probe) if s.kind is BoundKind.UPPER]
    for name in names:
        kind = (composed_kind(name) if rounds > 1 else catalogue.get_bound(name).kind)
        require(kind is BoundKind.UPPER, "method", name,
                "calibration needs an upper bound (this one is a lower bound)")

    def factory(e):
        return build_randomizer(randomizer_name, e, params)

    records = []
    report = progress or silent("calibrating", "bounds")
    with report, report.heartbeat():
        for name in report.steps(names):
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
    return records


def _last_value(records: list[dict]) -> float | None:
    """The eps0 of the last method calibrated over rounds (a start for the next search)."""
    values = [r["value"] for r in records if r.get("value") is not None]
    return values[-1] if values else None
