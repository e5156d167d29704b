"""Modules imported on first use, so that the command line starts fast (issue 32).

``optimize = lazy_module("scipy.optimize")`` at the top of a module binds the name at once (the
import is where a reader expects it), but imports the module only when one of its attributes is
first read: ``shufflesim --help`` and a command's argument checks then never pay for
scipy.stats, pandas or the audit stack, and a bound that never calls a root finder never pays
for scipy.optimize (about 0.15 s of CPU: linprog's HiGHS, scipy.spatial, scipy.sparse).

The binding is a stand-in that forwards every attribute to the real module, imported with the
ordinary :func:`importlib.import_module` at that moment (through
:func:`shufflesim.protocols.import_gc.import_module`); nothing is put in ``sys.modules``
before then. (The standard library's ``importlib.util.LazyLoader`` does put a half-made module
there, and a package made that way runs its submodules twice when one of them is imported
directly first: two copies of one class.) A module already imported is returned as it is.

:func:`lazy_functions` does the same for functions imported by name (``from m import f, g``):
one stand-in per function, which imports the module on its first call and calls the real
function (the real functions themselves when the module is already imported).
"""

from __future__ import annotations

import sys
from types import ModuleType

from shufflesim.protocols import import_gc


class _Deferred(ModuleType):
    """Forwards attribute reads to the module of the same name, imported on the first read."""

    def __getattr__(self, attribute: str):
        return getattr(import_gc.import_module(self.__name__), attribute)

    def __repr__(self) -> str:
        return f"<module {self.__name__!r} (imported on first use)>"


def lazy_module(name: str) -> ModuleType:
    """The module ``name``, imported when one of its attributes is first used."""
    return sys.modules.get(name) or _Deferred(name)


def lazy_functions(name: str, *functions: str) -> tuple:
    """Stand-ins for the functions ``functions`` of module ``name``, which is imported on the
    first call of any of them (for ``from name import f, g`` at the top of a module that calls
    f or g only on some paths). A stand-in pickles as the real function."""
    module = sys.modules.get(name)
    if module is not None:
        return tuple(getattr(module, function) for function in functions)
    return tuple(_DeferredFunction(name, function) for function in functions)


def _real_function(name: str, function: str):
    return getattr(sys.modules.get(name) or import_gc.import_module(name), function)


class _DeferredFunction:
    """Calls ``name.function``, importing module ``name`` on the first call."""

    def __init__(self, name: str, function: str):
        self._module, self.__name__, self.__qualname__ = name, function, function
        self.__doc__ = f"{name}.{function} (its module imported on the first call)"

    def __call__(self, *args, **kwargs):
        return _real_function(self._module, self.__name__)(*args, **kwargs)

    def __reduce__(self):
        return _real_function, (self._module, self.__name__)

    def __repr__(self) -> str:
        return f"<function {self._module}.{self.__name__} (imported on first call)>"
