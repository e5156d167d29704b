"""The scenario section ``[limits]`` (issue 26): the limits of the cost estimate made before a
run (simulator/calls/cost.py) and of each call to user code (simulator/usercode.py), written in the
scenario instead of on the command line. A flag given on the command line wins.

Keys: ``max_seconds`` (work estimated to take longer is refused; default one day, 0: no
limit), ``max_memory_mb`` (memory one worker may take; default: the machine's memory shared
by the workers, 0: no limit) and ``call_timeout`` (seconds one call to user code may take;
default 60, 0: no limit). The section registers itself with the scenario loader
(simulator/plugins.py declares this module).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from shufflesim.simulator.errors import ScenarioError
from shufflesim.simulator.scenario.convert import ParseContext, parse_dataclass
from shufflesim.simulator.scenario.sections import register_section

SECTION = "limits"


def _seconds_or_none(key: str, value: Any) -> None:
    if value is None:
        return
    if not (isinstance(value, (int, float)) and not isinstance(value, bool)
            and 0 <= value < math.inf):
        raise ScenarioError(f"{SECTION}.{key}", value, "must be a number >= 0 (0: no limit)")


@dataclass(frozen=True)
class LimitsSection:
    """The parsed ``[limits]`` section (module docstring); None: the default."""

    max_seconds: float | None = None
    max_memory_mb: float | None = None
    call_timeout: float | None = None

    def __post_init__(self) -> None:
        for key in ("max_seconds", "max_memory_mb", "call_timeout"):
            _seconds_or_none(key, getattr(self, key))


def parse_section(table: Mapping[str, Any], context: ParseContext | None = None
                  ) -> LimitsSection:
    """Parse the ``[limits]`` table (the scenario loader's section parser)."""
    return parse_dataclass(LimitsSection, table, SECTION, context)


register_section(SECTION, parse_section)
