"""The registry of plot kinds (docs/architecture.md, "Registries and plug-ins").

A plot kind is a figure function ``(tables, figure_module) -> iterable of (name, Figure)``
(a generator, so that ``shufflesim plot`` draws, writes and drops one figure at a time; a
``common.LeftOut`` in place of a Figure says that the figure was left out, and why)
registered beside its definition with :func:`register_plot` (the name of the kind and the
table it reads); ``shufflesim plot`` draws every registered kind, in the order of ``PLOTS`` in
simulator/plugins.py (then registration within a module). A new kind is one module plus one
line there; a third party uses the entry-point group ``shufflesim.plugins``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from shufflesim.protocols.registry import Registry


@dataclass(frozen=True)
class PlotKind:
    """A registered figure function and the result table it draws from."""

    name: str
    table: str
    plot: Callable


#: Every plot kind, in the order of simulator/plugins.py ``PLOTS``.
PLOTS: Registry[PlotKind] = Registry("plot kind", field="plot",
                                     declared="shufflesim.simulator.plugins:PLOTS")


def register_plot(name: str, table: str) -> Callable[[Callable], Callable]:
    """Decorator: register the figure function as the plot kind ``name`` reading ``table``."""

    def add(plot: Callable) -> Callable:
        PLOTS.register(PlotKind(name, table, plot))
        return plot

    return add
