"""Modules imported on first use: :func:`shufflesim.protocols.lazy.lazy_module`, re-exported
for the simulator's modules (the implementation lives at the bottom of the layers, so that the
maths in protocols/ can defer scipy.optimize too)."""

from shufflesim.protocols.lazy import lazy_module

__all__ = ["lazy_module"]
