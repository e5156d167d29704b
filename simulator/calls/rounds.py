"""Bounds over a deployment's lifetime (``--rounds T`` of ``bound`` and ``calibrate``, the API's
``rounds=``).

A catalogue bound that composes (a dominating or exact pair with a privacy loss distribution:
optimal-blanket, exact-lower, fmt21_numerical) is reported as its composed method over T
identical rounds (protocols.accounting); the baselines a user compares with (basic and
advanced composition, Renyi DP of shuffling) come along; every other catalogue bound gets a row
saying why it does not compose. docs/composition.md says what is proven.
"""

from __future__ import annotations

import time

from shufflesim.protocols.bounds.result import BoundKind
from shufflesim.protocols.errors import ParameterError
from shufflesim.simulator.calls.heap import reuse_freed_memory
from shufflesim.simulator.lazy import lazy_module

compose = lazy_module("shufflesim.protocols.accounting.compose")
rounds_calibration = lazy_module("shufflesim.protocols.accounting.calibrate")
catalogue = lazy_module("shufflesim.protocols.bounds.catalogue")


def _composed_names(randomizer, names: list[str] | None) -> list[tuple[str, str | None, str]]:
    """(row name, composed method or None, why not) for each requested name; with no names,
    every composed method and every applicable catalogue bound that does not compose."""
    rows: list[tuple[str, str | None, str]] = []
    if names is None:
        rows += [(m, m, "") for m in compose.composed_method_names()
                 if compose.get_composed_method(m).applies(randomizer)]
        for spec in catalogue.applicable_facts(randomizer):  # no bound module imported
            method, why = compose.composition_support(spec.name)
            if method is None:
                rows.append((spec.name, None, why))
        return rows
    composed = set(compose.composed_method_names())
    for name in names:
        if name in composed:
            rows.append((name, name, ""))
            continue
        method, why = compose.composition_support(name)
        rows.append((name, method, why))
    return rows


def composed_records(randomizer, n: int, delta: float, rounds: int,
                     names: list[str] | None, report) -> list[dict]:
    """One record per row of :func:`_composed_names` (the same keys as a single-round bound
    record, with ``rounds``); ``report`` is a progress callback with ``doing``."""
    plan = _composed_names(randomizer, names)
    reuse_freed_memory()       # arrays of many MB come and go (heap.py)
    records = []
    for i, (name, method, why) in enumerate(plan):
        report.doing(name)
        report(i, len(plan))
        started = time.perf_counter()
        record = {"method": name, "kind": None, "epsilon": None, "delta": float(delta),
                  "rounds": rounds, "epsilon_error": None, "status": "", "statuses": [],
                  "reference": "", "seconds": 0.0, "note": "", "error": ""}
        if method is None:
            spec = catalogue.bound_facts(name)
            record.update(kind=spec.kind.value, status=spec.status.value,
                          statuses=spec.status_label.split(", "), reference=spec.reference,
                          error=f"does not compose over rounds: {why}")
        else:
            spec = compose.get_composed_method(method)
            record.update(kind=spec.kind.value, status=spec.status.value,
                          statuses=[spec.status.value], reference=spec.reference)
            try:
                result = compose.compose_rounds([compose.Round(randomizer, n, rounds)], delta,
                                                method)
                record.update(epsilon=float(result.epsilon), note=result.note,
                              reference=result.reference or spec.reference)
            except ParameterError as error:
                record["error"] = str(error)
        record["seconds"] = time.perf_counter() - started
        records.append(record)
    report.doing(None)
    report(len(plan), len(plan))
    return records


def composed_kind(name: str) -> BoundKind:
    """The kind of a composed method, or of the method a catalogue bound composes into (a
    catalogue bound that does not compose keeps its own kind)."""
    if name in compose.composed_method_names():
        return compose.get_composed_method(name).kind
    return catalogue.bound_facts(name).kind


def upper_composed_methods(randomizer=None) -> list[str]:
    """The composed upper methods (those that apply to ``randomizer`` when given)."""
    return [m for m in compose.composed_method_names()
            if compose.get_composed_method(m).kind is BoundKind.UPPER
            and (randomizer is None or compose.get_composed_method(m).applies(randomizer))]


def calibrate_rounds(name: str, factory, n: int, target_epsilon: float, delta: float,
                     rounds: int, start: float | None = None) -> dict:
    """The largest per-round eps0 whose ``rounds``-round composed bound ``name`` certifies
    the target, as a calibrate record; ``start``: where the search starts (e.g. the value of
    the method calibrated before, which is usually close)."""
    method, why = (name, "") if name in compose.composed_method_names() else \
        compose.composition_support(name)
    if method is None:
        raise ParameterError("method", name, f"does not compose over rounds: {why}")
    reuse_freed_memory()       # arrays of many MB come and go (heap.py)
    result = rounds_calibration.largest_epsilon0(factory, target_epsilon, delta, n=n,
                                                 rounds=rounds, method=method, start=start)
    record = result.record()
    record["method"] = name
    record["error"] = ""
    return record
