"""Imports without garbage-collector passes, in a command-line process (issue 32: start-up).

A command imports 300-400 modules of its own, numpy's and scipy's while it runs (the bounds
catalogue, the randomizer registry and :func:`shufflesim.protocols.lazy.lazy_module` import on
first use). Each import makes thousands of long-lived objects (functions, classes, module
dicts), and CPython's cyclic collector scans every new one, again and again as it ages: about
100 collections and 0.017 s of CPU per ``bound`` command (k-RR, n = 1e5 over 100 rounds, or
cheu's exact lower bound), all spent on objects that live until the process ends.

:func:`import_module` is :func:`importlib.import_module`; in a process that called
:func:`for_commands` (the console script's process does, for the commands that compute one
answer and exit: ``bound``, ``calibrate``, ``compose``, ``list``, ``rdp``; simulator/cli/app.py
``QUIET_IMPORTS``) the collector is paused for
the outermost import in progress, and the objects alive when it ends are frozen out of every
later scan (:func:`gc.freeze`, meant for exactly this: objects made at start-up that live until
exit). Cyclic garbage alive at that moment is kept until exit, which a process that ends with
its command can afford; a program that imports shufflesim as a library never calls
:func:`for_commands`, so its collector is left alone.
"""

from __future__ import annotations

import gc
import importlib
import sys
import threading
from types import ModuleType

_lock = threading.Lock()
_state = {"on": False, "depth": 0, "resume": False}


def for_commands() -> None:
    """From now on, imports through :func:`import_module` pause the collector (a process that
    ends with its one command: simulator/cli/app.py)."""
    _state["on"] = True


def import_module(name: str) -> ModuleType:
    """:func:`importlib.import_module`, with the collector paused (see the module docstring)."""
    if not _state["on"] or name in sys.modules:
        return importlib.import_module(name)
    with _lock:
        if _state["depth"] == 0:
            _state["resume"] = gc.isenabled()
            gc.disable()
        _state["depth"] += 1
    try:
        return importlib.import_module(name)
    finally:
        with _lock:
            _state["depth"] -= 1
            if _state["depth"] == 0:
                gc.freeze()
                if _state["resume"]:
                    gc.enable()
