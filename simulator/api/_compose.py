"""``shufflesim.compose``: the ``compose`` command's records (simulator.calls.compose) as a
DataFrame."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd

from shufflesim._frames import frame
from shufflesim.simulator.calls import compose as compose_call
from shufflesim.simulator.execution.blas import in_one_blas_thread


@in_one_blas_thread
def compose(rounds: Sequence[Mapping] | Mapping, /, *, delta: float,
            method: str | Sequence[str] | None = None, mode: str = "rounds",
            n: int | None = None, rate: float | None = None) -> pd.DataFrame:
    """(eps, delta) of a composition, one row per method, as ``shufflesim compose --json``
    (mode, method, kind, epsilon, delta, rounds, parts, status, reference, note, error, ...).

    ``rounds``: a list of parts, each a dict ``{"randomizer": NAME, "epsilon0": E, <its
    parameters>}`` (or ``{"randomizer": shufflesim.randomizer(...)}``) with, in mode
    ``"rounds"``, ``n`` (users shuffled together) and ``repeat`` (identical rounds, default 1):
    heterogeneous rounds composed sequentially (privacy loss distributions of dominating pairs,
    Renyi DP, basic and advanced composition; ``method`` picks some). The one-round modes
    compose randomizers within one round of ``n`` users (000 Sec. 4): ``"joint"`` (each user
    runs every part), ``"parallel"`` (part i with its ``probability``) and ``"subsampled"``
    (one part, Poisson subsampling at ``rate``).

    >>> import shufflesim
    >>> year = [{"randomizer": "krr", "epsilon0": 1.0, "domain_size": 2, "n": 1000,
    ...          "repeat": 300},
    ...         {"randomizer": "krr", "epsilon0": 0.5, "domain_size": 2, "n": 2000,
    ...          "repeat": 65}]
    >>> t = shufflesim.compose(year, delta=1e-6, method=["fmt21-clone", "basic"])
    >>> t[["method", "kind", "rounds"]].values.tolist()
    [['fmt21-clone', 'upper', 365], ['basic', 'upper', 365]]
    >>> s = shufflesim.compose([{"randomizer": "krr", "epsilon0": 2.0, "domain_size": 2}],
    ...                        delta=1e-6, mode="subsampled", n=1000, rate=0.1)
    >>> s.method.tolist(), bool(s.epsilon[1] <= s.epsilon[0] < 2.0)
    (['optimal-blanket', 'exact-lower'], True)
    """
    parts = [rounds] if isinstance(rounds, Mapping) else list(rounds)
    records = compose_call.compose(parts, delta, mode=mode, methods=method, n=n, rate=rate)
    return frame(records, "compose", rounds=parts, delta=delta, method=method, mode=mode, n=n,
                 rate=rate)
