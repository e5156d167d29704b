"""Local randomizers: one module per family, each registered by name; protocols/plugins.py
declares the built-in ones (``RANDOMIZERS``: name -> ``"module:class"``): looking one name up
imports its module alone, reading the whole registry imports them all."""

from shufflesim.protocols.randomizers.base import Categorical, Interval, OutputGroups, Randomizer
from shufflesim.protocols.randomizers.registry import (
    make_randomizer,
    randomizer_class,
    randomizer_names,
    randomizer_parameters,
    required_parameters,
)

__all__ = [
    "Categorical",
    "Interval",
    "OutputGroups",
    "Randomizer",
    "make_randomizer",
    "randomizer_class",
    "randomizer_names",
    "randomizer_parameters",
    "required_parameters",
]
