"""The neighbouring inputs of an audit (simulator/audit/run.py): a given input checked against
the randomizer's domain, and the triple (x0, x1, x2) completed from the exact lower bound's
worst case (Su, Cheng and Wang, Thm 14's triple; shuffle_level.default_triple)."""

from __future__ import annotations

import math

from shufflesim.protocols.errors import require
from shufflesim.protocols.randomizers.base import Categorical
from shufflesim.simulator.audit.shuffle_level import default_triple


def as_input(randomizer, x, field: str = "input"):
    """``x`` as an input of the randomizer: an int for categorical domains (a TOML or command
    line 1.0 means input 1), a float otherwise; outside the input domain it is an error naming
    ``field``."""
    if x is None:
        return None
    domain = randomizer.input_domain
    if isinstance(domain, Categorical):
        require(math.isfinite(x) and float(x).is_integer() and 0 <= x < domain.size, field, x,
                f"{randomizer.name} takes integer inputs in [0, {domain.size})")
        return int(x)
    require(math.isfinite(x) and domain.low <= x <= domain.high, field, x,
            f"{randomizer.name} takes inputs in [{domain.low:g}, {domain.high:g}]")
    return float(x)


def audit_triple(settings, randomizer, n: int) -> tuple:
    """(x0, x1, x2) of a shuffle or pipeline audit: the settings' inputs (checked), the
    missing ones from the exact lower bound's triple (shuffle_level.default_triple)."""
    given = [as_input(randomizer, x, field)
             for x, field in ((settings.x0, "x0"), (settings.x1, "x1"), (settings.x2, "x2"))]
    require(given[0] is None or given[0] != given[1], "x1", settings.x1,
            "must differ from x0 (the neighbouring datasets differ in user 1's input)")
    if given[0] is not None and given[1] is not None and (
            given[2] is not None or settings.others is not None):
        return tuple(given)
    t = default_triple(randomizer, n, settings.delta[0])
    return tuple(t[i] if given[i] is None else given[i] for i in range(3))
