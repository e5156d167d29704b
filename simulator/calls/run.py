"""The ``run`` capability: a scenario (a path, TOML text, a dict or a loaded Scenario) run
through the runner, its tables returned and, with an output directory, written as
``OUT/<name>/*.parquet``. ``shufflesim run`` adds signal handling and printing; the Python API
(``shufflesim.run``) writes nothing unless given ``out``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from pathlib import Path

from shufflesim.simulator.calls.toml_text import to_toml
from shufflesim.simulator.errors import UserError
from shufflesim.simulator.execution.executors import DASK, LOCAL, default_workers, make_executor
from shufflesim.simulator.execution.trace import record_start, span
from shufflesim.simulator.lazy import lazy_module

cost = lazy_module("shufflesim.simulator.calls.cost")

results = lazy_module("shufflesim.simulator.results.tables")
resume = lazy_module("shufflesim.simulator.execution.resume")
runner = lazy_module("shufflesim.simulator.execution.runner")
loader = lazy_module("shufflesim.simulator.scenario.loader")
model = lazy_module("shufflesim.simulator.scenario.model")


def load(scenario, seed: int | None = None):
    """The validated Scenario of a path (str or Path naming an existing ``.toml`` file), TOML
    text, a dict of the same keys, or a Scenario; ``seed`` overrides its seed."""
    record_start("driver-start")  # when tracing (execution/trace.py): creation to here
    with span("load"):
        return _load(scenario, seed)


def check_outline(scenario) -> None:
    """For a scenario file (a path), its first checks (simulator.scenario.loader.check_outline:
    the file, TOML, top-level keys, name, seed, sweep), which import no section: ``shufflesim
    run`` makes them before starting worker processes, so that a file refused there costs no
    worker (issue 32). The load repeats them, with the same errors."""
    if _is_path(scenario):
        loader.check_outline(scenario)


def _is_path(scenario) -> bool:
    return isinstance(scenario, Path) or (isinstance(scenario, str) and "\n" not in scenario
                                          and scenario.strip().endswith(".toml"))


def _load(scenario, seed):
    if isinstance(scenario, model.Scenario):
        loaded = scenario
    elif isinstance(scenario, Mapping):
        loaded = loader.parse_scenario(to_toml(scenario), base_dir=Path.cwd())
    elif _is_path(scenario):
        loaded = loader.load_scenario(scenario)
    elif isinstance(scenario, str):
        loaded = loader.parse_scenario(scenario, base_dir=Path.cwd())
    else:
        raise UserError(f"scenario = {scenario!r}: expected a path, TOML text or a dict")
    return loaded if seed is None else loaded.with_seed(seed)


def plan(loaded, workers: int | None = None):
    """Cost before work (simulator.calls.cost): the scenario's own limits applied, its time and
    memory estimated and checked (a run that cannot finish within the limits is refused with
    a remedy). Returns the estimate."""
    with span("plan"):
        cost.apply_scenario_limits(loaded)
        return cost.check(cost.run_cost(loaded), workers or default_workers())


#: What a run's worker processes import while the driver loads the scenario (start).
WARM_MODULES = ("shufflesim.simulator.execution.warm_imports",)


def start(workers: int | None = None, executor: str | None = None,
          scheduler: str | None = None):
    """The executor of a run, started before the scenario is loaded (a context manager):
    with more than one local worker, the worker processes start now and import what the
    run's units need (WARM_MODULES) while this process loads and plans the scenario (issue
    32: a worker's start costs about as much as the load); :func:`execute` with ``pool``
    runs on it. Workers a short run does not use are ended when it closes."""
    kind = executor or (DASK if scheduler is not None else LOCAL)
    pool = make_executor(kind, workers, scheduler)
    pool.warm(WARM_MODULES)
    return pool


def execute(loaded, out: Path | str | None = None, *, workers: int | None = None,
            executor: str | None = None, scheduler: str | None = None, progress=None,
            pool=None):
    """Run ``loaded`` (after :func:`plan`): (tables, run directory or None). With ``out`` the
    units' part files go to ``out/<name>/.parts`` (an interrupted run resumes from them);
    without, nothing is written. ``pool``: an executor from :func:`start` (the caller closes
    it), else one is made from ``workers``, ``executor`` and ``scheduler`` and closed."""
    kind = executor or (DASK if scheduler is not None else LOCAL)
    run_dir = None if out is None else Path(out) / loaded.name
    with contextlib.nullcontext(pool) if pool is not None else \
            make_executor(kind, workers, scheduler) as pool:
        tables = runner.run_scenario(
            loaded, progress=progress, executor=pool, run_dir=run_dir,
            memory_per_worker=cost.memory_per_worker(min(pool.workers,
                                                         loaded.total_repetitions)))
    return tables, run_dir


def metadata(loaded) -> dict[str, str]:
    """The metadata every table of the run carries (scenario text, seed, version, commit)."""
    return results.run_metadata(loaded.text, loaded.seed)


def write(loaded, run_dir: Path, tables) -> list[Path]:
    """Write the tables into ``run_dir`` and drop its part files (the run is complete)."""
    with span("write"):
        written = results.write_tables(run_dir, tables, metadata(loaded))
        resume.finish(run_dir, written)
    return written


def run(scenario, out: Path | str | None = None, *, seed: int | None = None,
        workers: int | None = None, executor: str | None = None, scheduler: str | None = None,
        progress=None):
    """Load, run and (with ``out``) write: (Scenario, {table name: pyarrow Table}, written
    paths)."""
    loaded = load(scenario, seed)
    plan(loaded, workers)
    tables, run_dir = execute(loaded, out, workers=workers, executor=executor,
                              scheduler=scheduler, progress=progress)
    written = [] if run_dir is None else write(loaded, run_dir, tables)
    return loaded, tables, written
