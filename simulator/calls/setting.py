"""What the bound, calibrate, compose and audit calls share: the randomizer built from a name,
eps0 and parameters (delta0 included), the checks of the setting (n, delta), and validated
bound names. The command line and the Python API both go through these, so both refuse the
same inputs with the same one-line message.
"""

from __future__ import annotations

from shufflesim.protocols.errors import (
    ParameterError,
    require_int_at_least,
    require_probability_open,
)
from shufflesim.simulator.errors import UserError
from shufflesim.simulator.lazy import lazy_module

randomizers = lazy_module("shufflesim.protocols.randomizers")
catalogue = lazy_module("shufflesim.protocols.bounds.catalogue")
accounting = lazy_module("shufflesim.protocols.accounting.compose")


def with_delta0(name: str, params: dict, delta0: float | None) -> dict:
    """``params`` with ``delta0`` as the randomizer's ``delta0`` parameter. A pure eps0-LDP
    randomizer (no such parameter) accepts only delta0 = 0."""
    if delta0 is None:
        return params
    if "delta0" in params:
        raise UserError("give delta0 once: --delta0 or --param delta0=..., not both")
    if "delta0" not in randomizers.randomizer_parameters(name):
        if delta0 == 0:
            return params
        approximate = [r for r in randomizers.randomizer_names()
                       if "delta0" in randomizers.randomizer_parameters(r)]
        raise ParameterError("delta0", delta0,
                             f"{name} is a pure eps0-LDP randomizer (delta0 = 0); delta0 > 0 "
                             f"is a parameter of {approximate}")
    return {**params, "delta0": delta0}


def build_randomizer(name: str, epsilon0: float, params: dict, delta0: float | None = None):
    """The registered randomizer ``name`` with local budget ``epsilon0``, its parameters and
    (for an (eps0, delta0)-LDP randomizer) ``delta0``, validated by the randomizer itself."""
    return randomizers.make_randomizer(name, epsilon0=epsilon0,
                                       **with_delta0(name, dict(params), delta0))


def check_setting(n: int | None, delta: float | None) -> None:
    """n >= 2 users (when given) and delta in (0, 1) (when given)."""
    if n is not None:
        require_int_at_least("n", n, 2)
    if delta is not None:
        require_probability_open("delta", delta)


def resolve_methods(methods, field: str = "method", composed: bool = False) -> list[str] | None:
    """Validated bound names, without repeats (None or empty: every applicable bound);
    ``composed`` also accepts the composed methods over rounds (protocols.accounting)."""
    if not methods:
        return None
    if isinstance(methods, str):
        methods = (methods,)
    names: list[str] = []
    extra = set(accounting.composed_method_names()) if composed else set()
    for name in methods:
        try:
            if name not in extra:
                catalogue.bound_facts(name)  # validated without importing its module
        except ParameterError as error:
            requirement = error.requirement
            if composed:
                requirement += f"; composed methods: {sorted(extra)}"
            raise ParameterError(field, name, requirement) from None
        if name not in names:
            names.append(name)
    return names
