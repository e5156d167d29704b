"""Memory plans checked before a run starts: a unit that cannot fit is refused with one line
that names the key to change and a change that works, instead of failing deep in numpy.

Two checks:

* :func:`check_batch_setup` (when a sweep point's batch setup is built, a function of the
  scenario): on the reports path a repetition's data (one value, and with per-user budgets one
  budget, per user) stay in memory whole while its users are randomized in slices, so
  ``shuffle = "skip"`` cannot help when they alone exceed the budget; the aggregate path needs a
  few arrays over the domain per repetition. Every refusal offers a remedy that passes both
  checks: ``batch.path = "aggregate"`` when the scenario allows it (its memory does not grow
  with n), a larger ``batch.memory_mb`` when this machine has that much, else a smaller
  ``population.n``.
* :func:`check_machine` (before a run's first unit): a unit's estimated peak must fit in this
  machine's memory (physical memory, or the cgroup limit when lower).

Estimates are those of simulator.batch.run's memory plan (bytes per user measured under tracemalloc,
times a safety factor), so they err on the large side.
"""

from __future__ import annotations

import math
from typing import Any

from shufflesim.simulator.batch import machine as this_machine
from shufflesim.simulator.batch.machine import (  # noqa: F401  (re-exported)
    format_bytes,
    machine_bytes,
)
from shufflesim.simulator.errors import ScenarioError, UserError
from shufflesim.simulator.lazy import lazy_module

#: the scenario's model and the population (the run's setups); ``bound`` and ``calibrate`` ask
#: only machine_bytes and format_bytes of this module, without them (issue 32)
model = lazy_module("shufflesim.simulator.scenario.model")
population = lazy_module("shufflesim.simulator.population.base")

#: A simulator.batch.run.BatchSetup (not imported: that module imports this one).
BatchSetup = Any

MiB = 2**20
#: Bytes per user of a repetition's data kept whole on the reports path: int64 categories
#: (drawn as a histogram, no temporaries per user), or float64 values counted twice for the
#: temporaries of drawing or converting them.
CATEGORY_BYTES = 8
DATA_BYTES = 16
#: The same for per-user budgets.
BUDGET_BYTES = 16
#: Share of batch.memory_mb the whole data of a repetition may take (the rest is for slices).
DATA_SHARE = 0.5
#: Share of the machine's memory a remedy may ask for.
MACHINE_SHARE = 0.8


def _affordable_mb(mb: int) -> bool:
    machine = this_machine.machine_bytes()
    return machine is None or mb * MiB <= MACHINE_SHARE * machine


def data_bytes_per_user(setup: BatchSetup) -> int:
    """Bytes per user of one repetition's data (and budgets) on the reports path."""
    categories = setup.data.kind == population.CATEGORICAL and setup.domain_size is not None
    values = CATEGORY_BYTES if categories else DATA_BYTES
    return values + (0 if setup.budget.is_constant else BUDGET_BYTES)


def aggregate_path_possible(setup: BatchSetup) -> bool:
    """Whether ``batch.path = "aggregate"`` is valid for this setup (simulator.scenario.model)."""
    return (setup.randomizer.has_aggregate_sampler and setup.data.kind == population.CATEGORICAL
            and setup.budget.is_constant and not getattr(setup.estimator, "uses_budgets", False))


def domain_bytes(domain_size: int | None) -> int:
    """Working bytes of one repetition's arrays over the domain (counts, aggregate, estimate)."""
    return 64 * (domain_size or 1) + 64


def check_domain(setup: BatchSetup, memory_mb: int) -> None:
    """Refuse a domain whose per-repetition arrays alone exceed the budget (checked before the
    reports path's memory probe, which would allocate them)."""
    need = domain_bytes(setup.domain_size)
    if need <= memory_mb * MiB:
        return
    mb = math.ceil(2 * need / MiB)
    remedy = (f"raise batch.memory_mb to at least {mb}" if _affordable_mb(mb)
              else "use a smaller domain (domain_size)")
    raise ScenarioError(
        "batch.memory_mb", memory_mb,
        f"one repetition's arrays over a domain of {setup.domain_size} values need about "
        f"{format_bytes(need)}, more than the budget: {remedy}")


def check_batch_setup(setup: BatchSetup, memory_mb: int) -> None:
    """Refuse a reports-path setup whose repetitions cannot fit ``memory_mb`` (module
    docstring). Called with the measured bytes per user."""
    if setup.path is not model.BatchPath.REPORTS:
        return
    memory = memory_mb * MiB
    per_repetition = setup.bytes_per_repetition
    if per_repetition <= memory:
        return
    data = setup.n * data_bytes_per_user(setup)
    perform = setup.shuffle is model.ShuffleMode.PERFORM
    if data <= DATA_SHARE * memory:
        if not perform:
            return  # users are randomized in slices within the budget
        mb = math.ceil(per_repetition / MiB)
        raise_mb = (f"raise batch.memory_mb to at least {mb}, or " if _affordable_mb(mb)
                    else "")
        raise ScenarioError(
            "batch.shuffle", setup.shuffle.value,
            f"one repetition's reports need about {format_bytes(per_repetition)}, more than "
            f"batch.memory_mb = {memory_mb}: {raise_mb}set batch.shuffle = \"skip\" "
            "(estimators read only the permutation-invariant aggregate, so the shuffle does "
            "not change them)")
    # The data of one repetition alone exceed the budget: slicing the users cannot help.
    if aggregate_path_possible(setup):
        remedy = ('set batch.path = "aggregate" (it samples each repetition\'s aggregate '
                  "directly; its memory does not grow with n)")
    else:
        mb = math.ceil(data / DATA_SHARE / MiB)
        if _affordable_mb(mb):
            remedy = f"raise batch.memory_mb to at least {mb}"
            if perform:
                remedy += ' and set batch.shuffle = "skip"'
        else:
            users = (memory // setup.bytes_per_user if perform
                     else int(DATA_SHARE * memory) // data_bytes_per_user(setup))
            remedy = f"lower population.n to at most {max(users, 1)}"
    skip = "" if perform else ', even with batch.shuffle = "skip"'
    raise ScenarioError(
        "batch.path", setup.path.value,
        f"one repetition of population.n = {setup.n} users needs about {format_bytes(data)} "
        f"for its data alone (the reports path keeps them whole{skip}), more than "
        f"batch.memory_mb = {memory_mb} allows: {remedy}")


def unit_peak_bytes(setup: BatchSetup, repetitions: int | None = None) -> int:
    """Estimated peak working memory of one unit of a batch setup (of at most ``repetitions``
    repetitions, the point's)."""
    per_repetition = setup.bytes_per_repetition
    if per_repetition > setup.memory_bytes:  # one repetition, its users in slices
        return max(setup.memory_bytes, per_repetition if setup.bytes_per_user == 0 else 0)
    block = min(setup.unit_repetitions, setup.memory_bytes // per_repetition,
                repetitions or setup.unit_repetitions)
    return max(1, block) * per_repetition


def check_machine(points, setups, allowed: float | None = None,
                  source: str = "this machine's memory") -> None:
    """Refuse a run one of whose units would need more than this machine's memory, or than
    ``allowed`` bytes (the memory one worker may take: simulator/calls/cost.py, named
    ``source``)."""
    machine = this_machine.machine_bytes()
    if allowed is None and machine is None:
        return
    limit = machine if allowed is None else allowed
    for point, setup in zip(points, setups, strict=True):
        if not hasattr(setup, "memory_bytes"):  # a pipeline setup has no memory plan
            continue
        peak = unit_peak_bytes(setup, point.settings.repetitions)
        if peak > limit:
            if allowed is None:
                mb = max(16, int(MACHINE_SHARE * machine) // MiB)
                raise UserError(
                    f"batch.memory_mb = {setup.memory_bytes // MiB}: a unit needs about "
                    f"{format_bytes(peak)}, more than this machine's memory "
                    f"({format_bytes(machine)}): lower batch.memory_mb to at most {mb}")
            mb = max(1, int(limit) // MiB)
            raise UserError(
                f"batch.memory_mb = {setup.memory_bytes // MiB}: a unit needs about "
                f"{format_bytes(peak)}, more than a worker may take ({format_bytes(limit)}, "
                f"{source}): lower batch.memory_mb to at most {mb}, use fewer --workers or "
                "raise --max-memory")
