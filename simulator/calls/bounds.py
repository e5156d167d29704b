"""The ``bound`` capability: every applicable amplification bound (or the named ones) for one
randomizer, eps0, n and delta, over one round or composed over ``rounds`` identical rounds, as
the records that ``shufflesim bound --json`` prints and ``shufflesim.bounds`` returns.

An upper bound below the best *proven* lower bound evaluated at the same point cannot be a
valid upper bound there (a non-proven bound outside the randomizers it holds for, or a defect):
its record carries ``below_proven_lower: true`` and the lower bound it falls below.
"""

from __future__ import annotations

from shufflesim.protocols.bounds.result import BoundKind, BoundStatus
from shufflesim.protocols.errors import require_int_at_least
from shufflesim.simulator.calls.rounds import composed_records
from shufflesim.simulator.calls.setting import (
    build_randomizer,
    catalogue,
    check_setting,
    resolve_methods,
)
from shufflesim.simulator.execution.progress import ProgressReport


def records_with_checks(evaluations: list) -> list[dict]:
    """Each evaluation's record, with ``best_proven_lower`` (the largest lower bound of status
    ``proven`` computed at this point, or None) and ``below_proven_lower`` (an upper bound
    strictly below it)."""
    return check_against_proven_lower([ev.record() for ev in evaluations])


def check_against_proven_lower(records: list[dict]) -> list[dict]:
    """Add ``best_proven_lower`` and ``below_proven_lower`` to bound records (in place)."""
    lowers = [r["epsilon"] for r in records
              if r["kind"] == BoundKind.LOWER.value and r["epsilon"] is not None
              and r["statuses"] == [BoundStatus.PROVEN.value]]
    best = max(lowers) if lowers else None
    for r in records:
        r["best_proven_lower"] = best
        r["below_proven_lower"] = bool(
            best is not None and r["kind"] == BoundKind.UPPER.value
            and r["epsilon"] is not None and r["epsilon"] < best)
    return records


def silent(label: str, unit: str = "units") -> ProgressReport:
    """A progress report that prints nothing (the Python API's default)."""
    return ProgressReport(label, enabled=False, unit=unit)


def run_evaluations(randomizer, n: int, delta: float, names: list[str] | None,
                    report: ProgressReport) -> list:
    """The catalogue's evaluation of each bound (every applicable one when ``names`` is None),
    with progress on ``report``."""
    if names is None:
        names = [spec.name for spec in catalogue.applicable_bounds(randomizer)]
    results = []
    with report, report.heartbeat():
        for name in report.steps(names):
            results.append(catalogue.evaluate(name, randomizer, n, delta))
    return results


def bound_records(randomizer, n: int, delta: float, methods=None, rounds: int = 1,
                  progress: ProgressReport | None = None) -> list[dict]:
    """The bound records of ``randomizer`` (a built randomizer) shuffled among ``n`` users at
    ``delta``: one per bound (``methods``: names, default every applicable bound), single-round
    with ``rounds`` = 1, else composed over the rounds (simulator.calls.rounds), each with
    ``rounds`` and the proven-lower-bound check."""
    check_setting(n, delta)
    require_int_at_least("rounds", rounds, 1)
    report = progress or silent("bounds", "bounds")
    if rounds == 1:
        names = resolve_methods(methods)
        records = records_with_checks(run_evaluations(randomizer, n, delta, names, report))
        for record in records:
            record["rounds"] = 1
        return records
    names = resolve_methods(methods, composed=True)
    with report, report.heartbeat():
        return check_against_proven_lower(
            composed_records(randomizer, n, delta, rounds, names, report))


def bounds(randomizer_name: str, epsilon0: float, params: dict, n: int, delta: float, *,
           delta0: float | None = None, methods=None, rounds: int = 1,
           progress: ProgressReport | None = None) -> tuple[object, list[dict]]:
    """The ``bound`` command and ``shufflesim.bounds``: the setting checked, the randomizer
    built (:func:`build_randomizer`), then :func:`bound_records`. Returns (randomizer,
    records)."""
    check_setting(n, delta)
    randomizer = build_randomizer(randomizer_name, epsilon0, params, delta0)
    return randomizer, bound_records(randomizer, n, delta, methods, rounds, progress)
