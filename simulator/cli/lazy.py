"""Modules loaded on first use, so that the command line starts fast.

``catalogue = lazy_module("protocols.bounds.catalogue")`` at the top of a command module binds
the name at once (the import is where a reader expects it), but runs the module only when an
attribute is first read: ``shufflesim --help`` and a command's argument checks then never pay
for scipy.stats, pandas or the audit stack. This is the standard library's
:class:`importlib.util.LazyLoader`; a module already imported is returned as it is.
"""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType


def lazy_module(name: str) -> ModuleType:
    """The module ``name``, executed when one of its attributes is first used."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None:
        raise ModuleNotFoundError(f"No module named {name!r}", name=name)
    loader = importlib.util.LazyLoader(spec.loader)
    spec.loader = loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    loader.exec_module(module)
    parent, _, child = name.rpartition(".")
    if parent:  # as the import system does: the package's attribute names its submodule
        setattr(sys.modules[parent], child, module)
    return module
