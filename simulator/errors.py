"""User-facing errors: the CLI prints them as one line and exits with code 2."""

from __future__ import annotations

from shufflesim.protocols.errors import portable, shown


class UserError(ValueError):
    """Bad input from the user (scenario, option, file, API argument). The message names field
    and value. A ValueError, so that the Python API raises ValueError subclasses only."""


class ScenarioError(UserError):
    """A scenario file is invalid: unknown key, wrong type or out-of-range value. Like
    ParameterError, it survives ``type(e)(*e.args)`` and pickling with the same line."""

    def __init__(self, key: str, value: object, requirement: str) -> None:
        self.key = key
        self.value = value
        self.requirement = requirement
        super().__init__(key, value, requirement)

    def __str__(self) -> str:
        return f"{self.key} = {shown(self.value)}: {self.requirement}"

    def __reduce__(self):
        return (type(self), (self.key, portable(self.value), self.requirement),
                dict(self.__dict__, value=portable(self.value)))
