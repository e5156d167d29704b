"""Modules imported on first use: :func:`shufflesim.simulator.lazy.lazy_module`, re-exported
for the command modules (the implementation lives below the entry points, beside its other
users)."""

from shufflesim.simulator.lazy import lazy_module

__all__ = ["lazy_module"]
