"""The built-in plug-ins of ``shufflesim.simulator``, as data: for each registry, the ordered
modules that register into it (docs/architecture.md, "Registries and plug-ins").

Nothing here is imported until a registry is first read: the registry
(:class:`~shufflesim.protocols.registry.Registry`, ``declared="...:NAME"``) then imports the
modules of its tuple, in order, and sorts its items by it. The order is meaningful: the
audit's rows follow ``ATTACKS``, scenario sections are parsed, and table producers' units run, in
``SECTIONS`` order (the audit's before the bounds'). ``SECTIONS`` and ``TABLES`` map each
name to its module instead (protocols/registry.py: looked up by name). A new plug-in module adds
one line to each tuple it registers into (a new section: one entry); a third party uses the
entry-point group ``shufflesim.plugins`` instead.
"""

from __future__ import annotations

_S = "shufflesim.simulator."

#: Audit attacks (simulator/audit/levels.py, ``ATTACKS``): the order of the audit's rows.
ATTACKS: tuple[str, ...] = tuple(_S + m for m in (
    "audit.attacks",
    "audit.pipeline_level",
    "audit.search",
    "audit.approximate",
))

#: Audit levels (simulator/audit/levels.py, ``LEVELS``): ``--level``'s choices, in this order.
LEVELS: tuple[str, ...] = tuple(_S + m for m in (
    "audit.randomizer_level",
    "audit.shuffle_level",
    "audit.pipeline_level",
))

#: Scenario sections and their JSON Schemas (simulator/scenario/sections.py), and the table
#: producers a section module adds (simulator/scenario/producers.py, ``PRODUCERS``: their
#: units run in this order, the audit's before the bounds'): each optional section's name ->
#: its module, so that loading a scenario imports the modules of the sections it has, and no
#: other (issue 32).
SECTIONS: dict[str, str] = {name: _S + module for name, module in (
    ("audit", "audit.section"),
    ("learning", "learning.section"),
    ("pipeline", "pipeline.section"),
    ("bounds", "scenario.bounds"),
    ("limits", "scenario.limits"),
    ("calibrate", "calls.calibrate_section"),
    ("compose", "calls.compose_section"),
    ("rdp", "calls.rdp_section"),
)}

#: Result tables' schemas (simulator/results/tables.py, ``TABLE_SCHEMAS``): each table's name ->
#: the module that registers its schema, so that writing a table imports its module only.
TABLES: dict[str, str] = {name: _S + module for name, module in (
    ("utility", "results.tables"),
    ("audit", "audit.section"),
    ("learning", "learning.section"),
    ("bounds", "scenario.bounds"),
    ("calibrate", "calls.calibrate_section"),
    ("compose", "calls.compose_section"),
    ("rdp", "calls.rdp_section"),
    ("batches", "pipeline.unit"),
    ("users", "pipeline.unit"),
    ("design", "design.output"),
)}

#: Plot kinds (simulator/plotting/kinds.py, ``PLOTS``): ``shufflesim plot`` draws them in
#: this order.
PLOTS: tuple[str, ...] = tuple(_S + m for m in (
    "plotting.utility",
    "plotting.bounds",
    "plotting.lifetime",
    "plotting.audit",
    "plotting.batches",
    "plotting.learning",
    "plotting.multi_message",
))

#: Estimator targets (simulator/batch/targets.py, ``TARGETS``).
TARGETS: tuple[str, ...] = tuple(_S + m for m in (
    "batch.metrics",
    "batch.location",
))

#: Data distributions (simulator/population/base.py, ``DATA_DISTRIBUTIONS``).
DATA_DISTRIBUTIONS: tuple[str, ...] = tuple(_S + m for m in (
    "population.data",
    "population.files",
    "population.points",
))

#: Budget distributions (simulator/population/base.py, ``BUDGET_DISTRIBUTIONS``).
BUDGET_DISTRIBUTIONS: tuple[str, ...] = tuple(_S + m for m in (
    "population.budgets",
    "population.files",
))

__all__ = ["ATTACKS", "BUDGET_DISTRIBUTIONS", "DATA_DISTRIBUTIONS", "LEVELS", "PLOTS", "SECTIONS",
           "TABLES", "TARGETS"]
