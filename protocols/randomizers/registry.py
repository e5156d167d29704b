"""Name -> randomizer class registry."""

from __future__ import annotations

from dataclasses import MISSING, fields
from typing import Any

from shufflesim.protocols.errors import ParameterError

_REGISTRY: dict[str, type] = {}


def register(cls: type) -> type:
    """Class decorator: make ``cls`` available under ``cls.name``."""
    if cls.name in _REGISTRY:
        raise RuntimeError(f"randomizer {cls.name!r} registered twice")
    _REGISTRY[cls.name] = cls
    return cls


def unregister(name: str) -> type:
    """Remove the randomizer registered as ``name`` and return its class (for tests that
    register a randomizer of their own and must leave the registry as they found it)."""
    if name not in _REGISTRY:
        raise KeyError(f"randomizer {name!r} is not registered")
    return _REGISTRY.pop(name)


def randomizer_names() -> list[str]:
    return sorted(_REGISTRY)


def randomizer_class(name: str) -> type:
    try:
        return _REGISTRY[name]
    except KeyError:
        raise ParameterError(
            "randomizer.name", name, f"unknown randomizer; choose one of {randomizer_names()}"
        ) from None


def randomizer_parameters(name: str) -> list[str]:
    """The parameter (dataclass field) names of a registered randomizer."""
    return [f.name for f in fields(randomizer_class(name))]


def required_parameters(name: str) -> list[str]:
    """The parameters of a registered randomizer that have no default (no value is guessed)."""
    return [f.name for f in fields(randomizer_class(name))
            if f.default is MISSING and f.default_factory is MISSING]


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
