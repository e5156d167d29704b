"""``shufflesim.design``: the ``design`` command's records (simulator.design) as a DataFrame."""

from __future__ import annotations

import pandas as pd

from shufflesim._frames import frame
from shufflesim.protocols.errors import require
from shufflesim.simulator.design import runner
from shufflesim.simulator.design.groups import design_groups
from shufflesim.simulator.design.output import records
from shufflesim.simulator.execution.blas import in_one_blas_thread


@in_one_blas_thread
def design(*, task: str, n, target_epsilon: float | None, delta: float, rounds: int = 1,
           **options) -> pd.DataFrame:
    """Rank every applicable randomizer (single- and multi-message, with their parameters)
    for a lifetime ``(target_epsilon, delta)`` over ``rounds`` rounds of ``n`` users: one row
    per candidate, the records of ``shufflesim design --json`` (rank, randomizer, parameters,
    epsilon0 or blanket_messages certified by a proven bound composed over the rounds, bound,
    epsilon, bits, messages, server_operations, predicted_mse / _l2 / _linf, ...).

    ``task``: "frequency" (give ``domain_size``), "mean" or "sum" (give ``interval=(low,
    high)``). ``options``: ``metric`` ("mse", "l2", "linf"), ``max_bits``, ``max_messages``,
    ``min_epsilon0``, ``max_epsilon0``, ``bound``, ``data`` ({"distribution": "zipf",
    "exponent": s}), ``binary``, ``only`` (randomizer names), ``thorough``, ``validate`` (R
    simulated repetitions of the 3 best), ``seed``. docs/design.md explains the method.

    >>> import shufflesim
    >>> t = shufflesim.design(task="frequency", domain_size=10, n=1000, target_epsilon=1.0,
    ...                       delta=1e-6, only=["krr"])
    >>> t.randomizer[0], round(float(t.epsilon0[0]), 2), t.bound[0]
    ('krr', 3.51, 'optimal-blanket')
    """
    groups = options.pop("groups", None)
    if groups is not None:
        require(target_epsilon is None, "target_epsilon", target_epsilon,
                "must be None with groups (each group has its own target)")
        table = design_groups(task, n, groups, delta, rounds, **options)
        options["groups"] = groups
    else:
        table = runner.design(task, n, target_epsilon, delta, rounds, **options)
    return frame(records(table), "design", task=task, n=n, target_epsilon=target_epsilon,
                 delta=delta, rounds=rounds, **options)
