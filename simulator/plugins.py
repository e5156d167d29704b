"""Every built-in plug-in, imported in one place.

Plug-ins register themselves beside their code, in registries that live in modules importing
no plug-in (so no import comes back to its importer). Importing this module fills every
registry; the entry points that read them import it: the scenario loader, the runner and the
command line's ``list``. The registries are re-exported here for readers that need them filled.

The order of the imports is the order of registration: scenario sections are parsed, and table
producers' units run, in that order (the audit's units before the bounds').
"""

from __future__ import annotations

# First: the command line binds protocols.randomizers with simulator.cli.lazy; a submodule
# imported before its lazy package has run would run twice (two Randomizer classes). Reading a
# name of the package runs it.
from shufflesim.protocols.randomizers import Randomizer  # noqa: F401

# audit attacks (registration order: the order of the audit's rows)
from shufflesim.simulator.audit import attacks, pipeline_level  # noqa: F401

# scenario sections with their tables: [audit] (per-point producer), [bounds], [pipeline]
from shufflesim.simulator.audit import section as audit_section  # noqa: F401

# randomizer-level attacks on an implementation: input/event search, (eps0, delta0) audit
from shufflesim.simulator.audit.approximate import ApproximateLDPAudit  # noqa: F401
from shufflesim.simulator.audit.levels import ATTACKS
from shufflesim.simulator.audit.search import InputEventSearch  # noqa: F401

# estimator targets
from shufflesim.simulator.batch import location, metrics  # noqa: F401

# the registries, filled
from shufflesim.simulator.batch.targets import TARGETS
from shufflesim.simulator.execution.producers import PRODUCERS

# [learning]: shuffled DP-SGD (issue 19), its section, table and per-point producer
from shufflesim.simulator.learning import section as learning_section  # noqa: F401
from shufflesim.simulator.pipeline import section as pipeline_section  # noqa: F401

# data and budget distributions
from shufflesim.simulator.population import budgets, data, files, points  # noqa: F401
from shufflesim.simulator.population.base import BUDGET_DISTRIBUTIONS, DATA_DISTRIBUTIONS
from shufflesim.simulator.results.tables import TABLE_SCHEMAS
from shufflesim.simulator.scenario import bounds  # noqa: F401
from shufflesim.simulator.scenario import calibrate as calibrate_section  # noqa: F401
from shufflesim.simulator.scenario import compose as compose_section  # noqa: F401  ([compose])
from shufflesim.simulator.scenario import rdp as rdp_section  # noqa: F401  ([rdp])
from shufflesim.simulator.scenario.sections import SECTIONS

__all__ = ["ATTACKS", "BUDGET_DISTRIBUTIONS", "DATA_DISTRIBUTIONS", "PRODUCERS", "SECTIONS",
           "TABLE_SCHEMAS", "TARGETS"]
