"""Errors raised for invalid parameters.

Every validation failure names the offending field and its value, so that the command line can
print it as a single line.
"""

from __future__ import annotations

import datetime
import numbers


def shown(value: object) -> str:
    """``value`` as an error line shows it: plainly, as the user wrote it (numpy scalars as
    their Python value, dates in ISO form, arrays as lists), never ``np.float64(0.0)``."""
    if isinstance(value, (datetime.date, datetime.time)):
        return value.isoformat()
    item = getattr(value, "item", None)
    if item is not None and getattr(value, "shape", None) == ():  # a numpy scalar or 0-d array
        try:
            return repr(item())
        except (TypeError, ValueError):
            pass
    tolist = getattr(value, "tolist", None)
    if tolist is not None and getattr(value, "ndim", 0) >= 1 and getattr(value, "size", 9) <= 8:
        try:
            return repr(tolist())
        except (TypeError, ValueError):
            pass
    return repr(value)


class _Shown:
    """A value that could not cross a process boundary, kept as the text an error shows."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text


def portable(value: object) -> object:
    """``value`` itself when it is a plain, picklable literal, else its shown text (so an error
    carrying it pickles and prints the same line)."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, tuple) and all(v is None or isinstance(v, (bool, int, float, str))
                                        for v in value):
        return value
    return _Shown(shown(value))


class ParameterError(ValueError):
    """A parameter is out of its valid range or has the wrong type.

    Its ``args`` are its constructor's arguments ``(field, value, requirement)``, so it
    survives being re-created as ``type(e)(*e.args)`` (what SimPy does when a process fails)
    and pickling (process pools): both give the same one line. A value that cannot cross a
    process boundary travels as its shown text."""

    def __init__(self, field: str, value: object, requirement: str) -> None:
        self.field = field
        self.value = value
        self.requirement = requirement
        super().__init__(field, value, requirement)

    def __str__(self) -> str:
        return f"{self.field} = {shown(self.value)}: {self.requirement}"

    def __reduce__(self):
        return (type(self), (self.field, portable(self.value), self.requirement),
                dict(self.__dict__, value=portable(self.value)))


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
