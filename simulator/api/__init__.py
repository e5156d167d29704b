"""shufflesim: simulate, bound and audit the shuffle model of differential privacy, from Python.

The public API is flat and small; each function is the same call as its command
(``shufflesim bound``, ``calibrate``, ``compose``, ``audit``, ``run``, ``list``), with the same
validation (bad input raises a ``ValueError`` subclass with the command's one-line message) and
the same numbers, returned as a ``pandas.DataFrame`` whose ``.attrs`` keep the provenance
(version, call, parameters). docs/api.md is the tutorial and the reference.

>>> import shufflesim
>>> table = shufflesim.bounds("krr", epsilon0=1.0, domain_size=2, n=1000, delta=1e-6,
...                           methods=["optimal-blanket"])
>>> round(float(table.epsilon[0]), 4)
0.1487

Names load on first use (module ``__getattr__``), so ``import shufflesim`` reads no numerical
library. This folder (simulator/api/) *is* the ``shufflesim`` package (pyproject.toml maps it by
``package-dir``); it is not importable under its folder's name ``shufflesim.simulator.api``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if __name__ != "shufflesim":  # e.g. shufflesim.simulator.api in an editable install
    raise ImportError(f"{__name__} is the folder of the shufflesim package: import shufflesim "
                      "(a second copy under another name would hold second copies of its "
                      "classes)")

from shufflesim.simulator import __version__  # noqa: E402  (after the guard)

#: Public name -> the private module that defines it (imported on first use).
_LAZY: dict[str, str] = {
    "audit": "shufflesim._audit",
    "bounds": "shufflesim._bounds",
    "calibrate": "shufflesim._bounds",
    "catalogue": "shufflesim._catalogue",
    "compose": "shufflesim._compose",
    "design": "shufflesim._design",
    "estimator": "shufflesim._randomizer",
    "plot": "shufflesim._plot",
    "randomizer": "shufflesim._randomizer",
    "rdp": "shufflesim._rdp",
    "run": "shufflesim._run",
}

#: The public names (tests/test_api.py: exactly the names of _LAZY and __version__).
__all__ = [
    "__version__",
    "audit",
    "bounds",
    "calibrate",
    "catalogue",
    "compose",
    "design",
    "estimator",
    "plot",
    "randomizer",
    "rdp",
    "run",
]

if TYPE_CHECKING:  # for type checkers and editors: the same names, imported eagerly
    from shufflesim._audit import audit
    from shufflesim._bounds import bounds, calibrate
    from shufflesim._catalogue import catalogue
    from shufflesim._compose import compose
    from shufflesim._design import design
    from shufflesim._plot import plot
    from shufflesim._randomizer import estimator, randomizer
    from shufflesim._rdp import rdp
    from shufflesim._run import run


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'shufflesim' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later reads skip __getattr__
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
