"""What a run's worker process imports while the driver loads the scenario (issue 32): the
units, and every table producer's module through the producers' registry (the run's state
names its producers, so the worker imports their modules anyway when the state arrives; the
driver's load reads the same registry). Importing this module does it: it is the module
that ``shufflesim run`` asks its workers to import early (calls/run.py start,
executors.ProcessExecutor.warm)."""

from __future__ import annotations

from shufflesim.simulator.execution import units  # noqa: F401 (imported for its imports)
from shufflesim.simulator.scenario.producers import PRODUCERS

PRODUCERS.names()  # loads every declared producer's module
