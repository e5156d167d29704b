"""``shufflesim.run``: a scenario run (simulator.calls.run), its tables as DataFrames."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pandas as pd

from shufflesim._frames import provenance
from shufflesim.simulator.calls import run as run_call


def run(scenario: str | Path | Mapping, /, out: str | Path | None = None, *,
        workers: int | None = None, seed: int | None = None) -> dict[str, pd.DataFrame]:
    """Run a scenario, as ``shufflesim run``: ``{table name: DataFrame}`` (``utility``, and
    ``bounds``, ``audit``, ``compose``, ... when the scenario has those sections), equal to the
    Parquet tables the command writes.

    ``scenario``: a path to a ``.toml`` file, TOML text, or a dict of the same keys
    (docs/scenarios.md). ``out=None`` writes nothing; with ``out`` the tables are also written
    to ``out/<name>/*.parquet`` (and an interrupted run resumes from there). ``workers``:
    worker processes (default: the cores; work under a second runs in this process).
    ``seed`` overrides the scenario's. Each DataFrame's ``.attrs`` holds the run's metadata
    (scenario text, seed, version, commit) and the call's provenance.

    >>> import shufflesim
    >>> tables = shufflesim.run({
    ...     "name": "tiny", "seed": 1, "repetitions": 2,
    ...     "population": {"n": 200, "data": {"distribution": "uniform", "domain_size": 4},
    ...                    "budget": {"distribution": "constant", "epsilon0": 1.0}},
    ...     "randomizer": {"name": "krr", "domain_size": 4},
    ...     "estimator": {"name": "frequency"}}, workers=1)
    >>> sorted(tables), len(tables["utility"])
    (['utility'], 16)
    >>> tables["utility"].attrs["seed"]
    '1'
    """
    loaded, tables, written = run_call.run(scenario, out, seed=seed, workers=workers)
    meta = run_call.metadata(loaded)
    frames = {}
    for name, table in tables.items():
        frame = table.to_pandas()
        frame.attrs.update(meta)
        frame.attrs.update(provenance("run", scenario=loaded.name, out=out, workers=workers,
                                      seed=loaded.seed))
        frame.attrs["written"] = [str(p) for p in written if p.stem == name]
        frames[name] = frame
    return frames
