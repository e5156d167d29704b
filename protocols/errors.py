"""Errors raised for invalid parameters.

Every validation failure names the offending field and its value, so that the command line can
print it as a single line.
"""

from __future__ import annotations

import numbers


class ParameterError(ValueError):
    """A parameter is out of its valid range or has the wrong type."""

    def __init__(self, field: str, value: object, requirement: str) -> None:
        self.field = field
        self.value = value
        self.requirement = requirement
        super().__init__(f"{field} = {value!r}: {requirement}")


def require(condition: bool, field: str, value: object, requirement: str) -> None:
    """Raise :class:`ParameterError` unless ``condition`` holds."""
    if not condition:
        raise ParameterError(field, value, requirement)


def require_positive_finite(field: str, value: float) -> None:
    require(
        isinstance(value, numbers.Real)
        and not isinstance(value, bool)
        and 0 < value < float("inf"),
        field, value, "must be a finite number > 0",
    )


def require_int_at_least(field: str, value: int, minimum: int) -> None:
    require(
        isinstance(value, numbers.Integral) and not isinstance(value, bool) and value >= minimum,
        field, value, f"must be an integer >= {minimum}",
    )


def require_probability_open(field: str, value: float) -> None:
    require(
        isinstance(value, numbers.Real) and not isinstance(value, bool) and 0 < value < 1,
        field, value, "must lie in the open interval (0, 1)",
    )
