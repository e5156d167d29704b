"""``shufflesim.bounds`` and ``shufflesim.calibrate``: the ``bound`` and ``calibrate`` commands'
records (simulator.calls) as DataFrames."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd

from shufflesim._frames import frame
from shufflesim._randomizer import split
from shufflesim.simulator.calls import bounds as bound_call
from shufflesim.simulator.calls import calibrate as calibrate_call
from shufflesim.simulator.execution.blas import in_one_blas_thread


@in_one_blas_thread
def bounds(randomizer, /, *, n: int | None = None, delta: float,
           epsilon0: float | None = None, methods: str | Sequence[str] | None = None,
           rounds: int = 1, budgets: Mapping[float, int] | None = None,
           **params) -> pd.DataFrame:
    """Amplification bounds (upper and lower) of ``randomizer`` shuffled among ``n`` users, at
    central ``delta``: one row per bound, the rows and columns of ``shufflesim bound --json``
    (method, kind, epsilon, delta, status, statuses, reference, seconds, note, error,
    best_proven_lower, below_proven_lower, rounds, ...).

    ``randomizer``: a registered name (then ``epsilon0`` and its parameters as keywords, e.g.
    ``domain_size=4``, ``delta0=1e-6``) or a ``shufflesim.randomizer(...)``. ``methods``: bound
    names (default every applicable bound; ``shufflesim.catalogue()["bounds"]``). ``rounds``:
    T > 1 composes each bound that composes over T identical rounds (000 Sec. 4 through privacy
    loss distributions) beside basic, advanced and Renyi composition (``compose`` takes
    heterogeneous rounds). ``budgets`` (``{eps0: number of users}``): per-user budgets, for
    the personalized bounds (003; n is the number of budgets).

    >>> import shufflesim
    >>> t = shufflesim.bounds("krr", epsilon0=2.0, domain_size=4, n=10_000, delta=1e-6,
    ...                       methods=["optimal-blanket", "exact-lower"])
    >>> t[["method", "kind"]].to_string(index=False).split("\\n")[1:]
    ['optimal-blanket upper', '    exact-lower lower']
    >>> bool(t.epsilon[1] <= t.epsilon[0])
    True
    """
    if budgets is not None and isinstance(randomizer, str) and epsilon0 is None:
        name, eps0, values, delta0 = randomizer, None, dict(params), params.get("delta0")
        values.pop("delta0", None)
    else:
        name, eps0, values, delta0 = split(randomizer, epsilon0, params)
    built, records = bound_call.bounds(name, eps0, values, n, delta, delta0=delta0,
                                       methods=methods, rounds=rounds, budgets=budgets)
    return frame(records, "bounds", randomizer=repr(built), n=n, delta=delta,
                 methods=methods, rounds=rounds, budgets=budgets)


@in_one_blas_thread
def calibrate(randomizer, /, *, target_epsilon: float, delta: float, n: int | None = None,
              epsilon0: float | None = None, methods: str | Sequence[str] | None = None,
              rounds: int = 1, **params) -> pd.DataFrame:
    """The largest local budget eps0 (given ``n``) or the smallest number of users n (given
    ``epsilon0``) with which each upper bound certifies ``(target_epsilon, delta)``; with
    ``rounds`` = T > 1, the largest per-round eps0 whose T-round composed bound meets the
    lifetime target. One row per bound, as ``shufflesim calibrate --json`` (method, parameter,
    value, epsilon, status, seconds, rounds, error).

    ``randomizer``: a registered name with its parameters as keywords (``epsilon0`` selects
    the smallest-n search), or a ``shufflesim.randomizer(...)`` (its eps0 then selects the
    smallest-n search unless ``n`` is given).

    >>> import shufflesim
    >>> t = shufflesim.calibrate("krr", domain_size=2, target_epsilon=0.5, delta=1e-6,
    ...                          n=10_000, methods="optimal-blanket")
    >>> t.parameter[0], bool(0.5 >= t.epsilon[0] > 0.49)
    ('epsilon0', True)
    """
    if isinstance(randomizer, str):
        name, values = randomizer, dict(params)
        delta0 = values.get("delta0")
    else:
        name, eps0, values, delta0 = split(randomizer, None, params)
        if delta0 is not None:
            values["delta0"] = delta0
        if n is None:
            epsilon0 = eps0
    records = calibrate_call.calibrate(name, values, target_epsilon, delta, n=n,
                                       epsilon0=epsilon0, methods=methods, rounds=rounds)
    return frame(records, "calibrate", randomizer=name, parameters=values,
                 target_epsilon=target_epsilon, delta=delta, n=n, epsilon0=epsilon0,
                 methods=methods, rounds=rounds, delta0=delta0)
