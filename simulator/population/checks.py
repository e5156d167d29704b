"""Validation helpers of the population's distributions: errors name the field
(:class:`~simulator.errors.ScenarioError`; the scenario loader prefixes the key path)."""

from __future__ import annotations

import math

import numpy as np

from shufflesim.simulator.errors import ScenarioError


def is_int(value: object) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def is_real(value: object) -> bool:
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool)


def require_int(name: str, value: object, minimum: int) -> None:
    if not is_int(value) or value < minimum:
        raise ScenarioError(name, value, f"must be an integer >= {minimum}")


def require_finite(name: str, value: object) -> None:
    if not is_real(value) or not math.isfinite(value):
        raise ScenarioError(name, value, "must be a finite number")


def require_positive(name: str, value: object) -> None:
    if not is_real(value) or not (0 < value < math.inf):
        raise ScenarioError(name, value, "must be a finite number > 0")


def require_interval(low: float, high: float) -> None:
    require_finite("low", low)
    require_finite("high", high)
    if not low < high:
        raise ScenarioError("high", high, f"must be greater than low = {low}")

