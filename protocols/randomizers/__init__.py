"""Local randomizers: one module per family, all registered by name."""

from shufflesim.protocols.randomizers import (
    brr,  # noqa: F401  (registers)
    duchi,  # noqa: F401  (registers)
    gaussian,  # noqa: F401  (registers)
    hadamard,  # noqa: F401  (registers)
    krr,  # noqa: F401  (registers)
    laplace,  # noqa: F401  (registers)
    local_hash,  # noqa: F401  (registers)
    metric,  # noqa: F401  (registers)
    multi_message,  # noqa: F401  (registers)
    oue,  # noqa: F401  (registers)
    piecewise,  # noqa: F401  (registers)
    rappor,  # noqa: F401  (registers)
    subset,  # noqa: F401  (registers)
    summation,  # noqa: F401  (registers)
)
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
