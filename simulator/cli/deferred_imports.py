"""numpy's submodules that scipy imports and a command never uses, loaded on first use instead
(issue 32: start-up of ``bound``).

``import scipy.special`` runs scipy's array-API layer, whose numpy namespace is a copy of every
public name of numpy (``scipy._lib.array_api_compat.numpy``: ``from numpy import *`` and a
``getattr`` of each name in ``dir(numpy)``). numpy 2 loads its submodules lazily, so that copy
imports all of them. Measured with scipy 1.17.1 and numpy 2.4.6 (CPU seconds, one process each,
after ``import numpy``): the test helpers :mod:`numpy.testing` (which imports :mod:`unittest`)
0.07, the Fortran wrapper generator :mod:`numpy.f2py` 0.064; in the ``bound`` row of issue 32,
:mod:`numpy.random` (its bit generators, and :mod:`secrets` / :mod:`hashlib` for seeding),
:mod:`numpy.polynomial` and :mod:`numpy.ctypeslib` together about 0.01. No one-answer command
runs any of them: their results are deterministic (no random draws), and they use no polynomial
classes nor ctypes. (:mod:`numpy.ma` is copied too, but numpy's own ``np.unique`` reads
``np.ma.is_masked``: it stays as it is.)

:func:`defer` puts a finder first on :data:`sys.meta_path` that answers for exactly the modules
of :data:`DEFERRED` with the spec the regular finders give, its loader wrapped in
:class:`importlib.util.LazyLoader` (the standard library's own tool for this, "for applications
where start-up time is critical"). Such an import makes the module object and binds it, and
runs the module's code only when an attribute of it is first read: a program that reads
``numpy.testing.assert_allclose`` gets the real function, and a module the copy only binds never
runs. Nothing else changes: every other import goes to the regular finders, and a module
imported before :func:`defer` is left as it is.

Only the console script's process calls :func:`defer`, for the commands that compute one answer
and exit (simulator/cli/app.py ``QUIET_IMPORTS``: ``bound``, ``calibrate``, ``compose``,
``list``, ``rdp``), before their first import of numpy: a program that imports shufflesim as a
library, and the long commands (``run``, ``audit``), keep their imports as they are. Python
3.11's LazyLoader takes no lock, so a deferred module must never be read first by two threads
at once. In these commands the only thread besides the main one is exact_band's table builder
(protocols/bounds/engine/exact_band.py), which reads none of them; tests/test_startup_imports.py
checks that every one-answer command, the table builder's path included, ends with all of them
unrun, so no thread ever raced to load one.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import sys

#: The deferred modules: imported by scipy's copy of the numpy namespace, run by no one-answer
#: command.
DEFERRED = frozenset({"numpy.f2py", "numpy.testing", "numpy.random", "numpy.polynomial",
                      "numpy.ctypeslib"})


class _DeferringFinder:
    """A meta-path finder (the protocol of :class:`importlib.abc.MetaPathFinder`, whose module
    is not imported for it) for the names of :data:`DEFERRED` only: the regular spec, lazily
    loaded (module docstring)."""

    def find_spec(self, fullname, path, target=None):
        if fullname not in DEFERRED:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path, target)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        spec.loader = importlib.util.LazyLoader(spec.loader)
        return spec


_FINDER = _DeferringFinder()


def defer() -> None:
    """From now on, the modules of :data:`DEFERRED` not yet imported load on first use (see
    the module docstring). Calling it again does nothing."""
    if _FINDER not in sys.meta_path:
        sys.meta_path.insert(0, _FINDER)
