"""User-facing errors: the CLI prints them as one line and exits with code 2."""

from __future__ import annotations


class UserError(ValueError):
    """Bad input from the user (scenario, option, file, API argument). The message names field
    and value. A ValueError, so that the Python API raises ValueError subclasses only."""


class ScenarioError(UserError):
    """A scenario file is invalid: unknown key, wrong type or out-of-range value."""

    def __init__(self, key: str, value: object, requirement: str) -> None:
        self.key = key
        self.value = value
        self.requirement = requirement
        super().__init__(f"{key} = {value!r}: {requirement}")
