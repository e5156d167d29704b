"""The ``design`` table's row (issue 27's record convention, simulator.results.records): its
fields, in order, are the columns of design.parquet, of ``shufflesim design --json`` and of
``shufflesim.design(...)``; docs/design.md defines each."""

from __future__ import annotations

from dataclasses import dataclass

from shufflesim.simulator.results.records import Record


@dataclass(frozen=True)
class DesignRow(Record):
    """One candidate deployment (per budget group with groups)."""

    rank: int | None
    group: str | None
    n: int
    randomizer: str
    parameters: str
    kind: str
    epsilon0: float | None
    blanket_messages: int | None
    bound: str
    epsilon: float | None
    target_epsilon: float
    delta: float
    rounds: int
    meets_target: bool
    bits: int | None
    messages: int | None
    server_operations: float | None
    predicted_mse: float | None
    predicted_l2: float | None
    predicted_linf: float | None
    validated_repetitions: int | None
    empirical_mse: float | None
    empirical_mse_low: float | None
    empirical_mse_high: float | None
    empirical_l2: float | None
    empirical_l2_low: float | None
    empirical_l2_high: float | None
    empirical_linf: float | None
    empirical_linf_low: float | None
    empirical_linf_high: float | None
    epsilon0_not_proven: float | None
    bound_not_proven: str | None
    note: str
    reason: str
    seconds: float
