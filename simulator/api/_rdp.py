"""``shufflesim.rdp``: Renyi DP curves of the shuffled mechanism (simulator.calls.rdp) as a
DataFrame."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from shufflesim._frames import frame
from shufflesim._randomizer import split
from shufflesim.simulator.calls import rdp as rdp_call
from shufflesim.simulator.execution.blas import in_one_blas_thread


@in_one_blas_thread
def rdp(randomizer, /, *, n: int | None = None, rounds: int = 1,
        orders: float | Sequence[float] | None = None,
        method: str | Sequence[str] | None = None, delta: float | None = None,
        epsilon0: float | None = None, **params) -> pd.DataFrame:
    """Renyi DP curve eps(alpha) of ``randomizer`` shuffled among ``n`` users (002 Sec. 6.1),
    over ``rounds`` identical rounds: one row per (method, order) as ``shufflesim rdp --json``
    (method, order, rdp_epsilon, rounds, parts, delta, epsilon, reference, error).

    ``randomizer``: a name (with ``epsilon0`` and its parameters), a
    ``shufflesim.randomizer(...)``, or a list of rounds as for ``shufflesim.compose`` (dicts
    with randomizer, epsilon0, parameters, ``n`` and ``repeat``). ``method``: ``rdp-blanket``
    (000 Thm 13 pair; k-RR, binary RR) and/or ``rdp-clone`` (002 clone pair; any eps0-LDP
    randomizer). With ``delta``, ``epsilon`` is the (eps, delta)-DP each order certifies.

    >>> import shufflesim
    >>> c = shufflesim.rdp("krr", epsilon0=1.0, domain_size=2, n=1000, rounds=10,
    ...                    orders=[8, 32], method="rdp-blanket", delta=1e-6)
    >>> c[["order", "rdp_epsilon", "epsilon"]].round(4).values.tolist()
    [[8.0, 0.0636, 1.6066], [32.0, 0.2543, 0.5564]]
    """
    if isinstance(randomizer, Sequence) and not isinstance(randomizer, str):
        parts = [dict(p) for p in randomizer]
    else:
        name, eps0, values, delta0 = split(randomizer, epsilon0, params)
        if delta0 is not None:
            values["delta0"] = delta0
        parts = [{"randomizer": name, "epsilon0": eps0, "n": n, "repeat": rounds, **values}]
    records = rdp_call.curve(parts, orders=orders, methods=method, delta=delta)
    return frame(records, "rdp", rounds=parts, orders=orders, method=method, delta=delta)



