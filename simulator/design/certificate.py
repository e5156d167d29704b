"""What certification returns (:class:`Certificate`) and the calibrations' cache, shared by
simulator.design.certify (single-message) and simulator.design.multi (multi-message)."""

from __future__ import annotations

from dataclasses import dataclass

#: Calibrations by every argument they depend on, so a cached value is the value a new
#: calibration would compute (one per randomizer family and parameters, or per generic bound).
CACHE: dict[tuple, object] = {}


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
    CACHE.clear()
