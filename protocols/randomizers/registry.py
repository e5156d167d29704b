"""The randomizers' registry (one :class:`~protocols.registry.Registry`): a randomizer class
registers itself beside its definition with ``@register``."""

from __future__ import annotations

from dataclasses import MISSING, fields
from typing import Any

from shufflesim.protocols.errors import ParameterError
from shufflesim.protocols.registry import Registry

#: Every randomizer class, by its ``name``.
RANDOMIZERS: Registry[type] = Registry("randomizer", field="randomizer.name",
                                       declared="shufflesim.protocols.plugins:RANDOMIZERS")


def register(cls: type) -> type:
    """Class decorator: make ``cls`` available under ``cls.name``."""
    return RANDOMIZERS.register(cls)


def unregister(name: str) -> type:
    """Remove the randomizer registered as ``name`` and return its class (for tests that
    register a randomizer of their own and must leave the registry as they found it)."""
    return RANDOMIZERS.remove(name)


def randomizer_names() -> list[str]:
    return RANDOMIZERS.names()


def randomizer_class(name: str) -> type:
    """The class registered as ``name``; ParameterError (field ``randomizer.name``) naming the
    closest registered name otherwise."""
    return RANDOMIZERS.get(name)


def randomizer_parameters(name: str) -> list[str]:
    """The parameter (dataclass field) names of a registered randomizer."""
    return [f.name for f in fields(randomizer_class(name))]


def required_parameters(name: str) -> list[str]:
    """The parameters of a registered randomizer that have no default (no value is guessed)."""
    return [f.name for f in fields(randomizer_class(name))
            if f.default is MISSING and f.default_factory is MISSING]


def example_parameters(name: str) -> dict[str, Any]:
    """The example parameters the randomizer registered as ``name`` declares (``example``);
    ParameterError when it declares none."""
    cls = randomizer_class(name)
    example = getattr(cls, "example", None)
    if example is None:
        raise ParameterError("randomizer.name", name, "declares no example parameters "
                             "(the class attribute ``example``)")
    return dict(example)


def example_randomizer(name: str, **override: Any):
    """The randomizer ``name`` built from its example parameters, ``override`` on top."""
    return make_randomizer(name, **{**example_parameters(name), **override})


def make_randomizer(name: str, **params: Any):
    """Instantiate the registered randomizer ``name``; unknown or missing parameters are
    errors naming the parameter."""
    cls = randomizer_class(name)
    allowed = randomizer_parameters(name)
    for key in params:
        if key not in allowed:
            raise ParameterError(
                f"randomizer.{key}", params[key],
                f"unknown parameter for {name}; allowed: {allowed}",
            )
    for key in required_parameters(name):
        if key not in params:
            raise ParameterError(f"randomizer.{key}", None, f"is required for {name}")
    return cls(**params)
