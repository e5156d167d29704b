"""The ``bound`` capability: every applicable amplification bound (or the named ones) for one
randomizer, eps0, n and delta, over one round or composed over ``rounds`` identical rounds, as
the records that ``shufflesim bound --json`` prints and ``shufflesim.bounds`` returns.

An upper bound below the best *proven* lower bound evaluated at the same point cannot be a
valid upper bound there (a non-proven bound outside the randomizers it holds for, or a defect):
its record carries ``below_proven_lower: true`` and the lower bound it falls below.
"""

from __future__ import annotations

from collections.abc import Mapping

from shufflesim.protocols.bounds.result import BoundKind, BoundStatus
from shufflesim.protocols.errors import require, require_int_at_least
from shufflesim.simulator.calls.setting import (
    build_randomizer,
    catalogue,
    check_setting,
    resolve_methods,
)
from shufflesim.simulator.execution.progress import ProgressReport
from shufflesim.simulator.lazy import lazy_module

personalized = lazy_module("shufflesim.protocols.bounds.personalized.bounds")
rounds_call = lazy_module("shufflesim.simulator.calls.rounds")  # --rounds above 1 only


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
            rounds_call.composed_records(randomizer, n, delta, rounds, names, report))


def budget_groups(budgets):
    """A BudgetProfile from ``{eps0: number of users}`` (or (eps0, count) pairs): per-user
    budgets for the personalized bounds (003; 000 Thm 13/14 per user, protocols.bounds.
    personalized)."""
    items = list(budgets.items()) if isinstance(budgets, Mapping) else list(budgets or ())
    require(len(items) > 0, "budgets", budgets, "needs at least one budget group eps0: count")
    return personalized.BudgetProfile.from_groups([float(e) for e, _ in items],
                                                  [c for _, c in items])


def bounds(randomizer_name: str, epsilon0: float | None, params: dict, n: int | None,
           delta: float, *, delta0: float | None = None, methods=None, rounds: int = 1,
           budgets=None, progress: ProgressReport | None = None) -> tuple[object, list[dict]]:
    """The ``bound`` command and ``shufflesim.bounds``: the setting checked, the randomizer
    built (:func:`build_randomizer`), then :func:`bound_records`. Returns (what was bounded,
    records).

    ``budgets`` (``{eps0: count}``): per-user budgets; the subject is then
    ``PersonalizedUsers(randomizer, profile)`` (the randomizer at the largest budget, unless
    ``epsilon0`` is given), n is the number of budgets (``n``, when given, must equal it) and
    the catalogue's personalized bounds apply."""
    if budgets is None:
        require(epsilon0 is not None, "epsilon0", epsilon0, "is required (or per-user budgets)")
        require(n is not None, "n", n, "is required")
        check_setting(n, delta)
        randomizer = build_randomizer(randomizer_name, epsilon0, params, delta0)
        return randomizer, bound_records(randomizer, n, delta, methods, rounds, progress)
    profile = budget_groups(budgets)
    require(n is None or n == profile.n, "n", n,
            f"must equal the number of per-user budgets ({profile.n})")
    require(rounds == 1, "rounds", rounds, "per-user budgets: the personalized bounds give an "
            "(eps, delta) value, not a privacy loss distribution, and do not compose over rounds")
    check_setting(profile.n, delta)
    top = float(profile.epsilons.max()) if epsilon0 is None else epsilon0
    randomizer = build_randomizer(randomizer_name, top, params, delta0)
    users = personalized.PersonalizedUsers(randomizer, profile)
    records = bound_records(users, profile.n, delta, methods, rounds, progress)
    mechanisms = {spec.name: spec.mechanism for spec in personalized.PERSONALIZED_SPECS}
    for record in records:
        record["mechanism"] = mechanisms.get(record["method"], "")
    # only bounds on the personalized mechanism itself are held to its proven lower bound
    # (the tagged and baseline protocols are other mechanisms)
    own = [r for r in records if r["mechanism"] == personalized.MECHANISM]
    check_against_proven_lower(own)
    for record in records:
        if record["mechanism"] != personalized.MECHANISM:
            record["below_proven_lower"] = False
    return users, records
