"""``shufflesim.audit``: the ``audit`` command's rows (simulator.calls.audit) as a DataFrame."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pandas as pd

from shufflesim._frames import frame
from shufflesim._randomizer import split
from shufflesim.simulator.calls import audit as audit_call
from shufflesim.simulator.errors import UserError
from shufflesim.simulator.execution.blas import in_one_blas_thread
from shufflesim.simulator.lazy import lazy_module

audit_tables = lazy_module("shufflesim.simulator.audit.tables")


@in_one_blas_thread
def audit(implementation: Callable | str | None = None, *, randomizer=None,
          trials: int | str = "auto",
          level: str = "shuffle", n: int | None = None, delta: float | Sequence[float] = (),
          epsilon0: float | None = None, bounds: str | Sequence[str] | None = None,
          verdicts: bool = True, confidence: float = 0.95, seed: int = 0,
          **claim) -> pd.DataFrame:
    """Audit a randomizer, or your own implementation of one: attacks with Clopper-Pearson
    confidence give empirical lower bounds on eps beside the exact lower bound, and each bound
    gets a verdict. The rows are those of ``shufflesim audit --json`` (``row_type`` attack, fit
    or verdict; level, attack, epsilon_lb, exact_lower, bound, verdict, ...).

    ``implementation``: None (the project's sampler of ``randomizer``), a callable
    ``(values, rng) -> reports`` or ``"FILE.py:FUNCTION"``. ``randomizer``: what it claims, a
    name (with ``epsilon0`` and parameters in ``claim``, e.g. ``domain_size=4``) or a
    ``shufflesim.randomizer(...)``; for a black box give ``claim_epsilon0=...`` (and
    ``domain_size`` or ``interval``) instead. ``level``: ``"randomizer"`` (one user's
    randomizer), ``"shuffle"`` or ``"pipeline"`` (both with ``n`` and ``delta``). Further
    keywords are the command's options (``attacks``, ``holdout_fraction``, ``shortlist``,
    ``x0``, ``x1``, ``x2``, ``others``, ``input_offset``, ``output_offset``, ``vectorized``,
    ``two_stage``, ``shuffler``, ``support``, ``permute``, ``claim_delta0``, ``output``;
    ``gradient={"clip": C, "dim": D, "examples_per_client": m}`` with ``claim_epsilon0`` and
    ``claim_delta0`` for a Gaussian gradient client). ``trials``: per world, or "auto" (the
    level's default capped by a time estimate, simulator/audit/auto_trials.py).

    >>> import numpy as np, shufflesim
    >>> def my_rr(values, rng):  # binary randomized response with eps0 = log 3
    ...     keep = rng.random(values.shape) < 0.75
    ...     return np.where(keep, values, 1 - values)
    >>> t = shufflesim.audit(my_rr, randomizer="krr", epsilon0=float(np.log(3)), domain_size=2,
    ...                      level="randomizer", trials=20_000, seed=1)
    >>> sorted(set(t.row_type))
    ['attack', 'fit', 'verdict']
    >>> bool((t[t.row_type == "verdict"].verdict != "violated").all())
    True
    """
    options = {k: claim.pop(k) for k in list(claim) if k in _OPTIONS}
    if randomizer is None:
        name, eps0, params, delta0 = None, epsilon0, {}, claim.pop("delta0", None)
        domain_size = claim.pop("domain_size", None)
        if claim:
            raise UserError(f"{', '.join(sorted(claim))}: not an option of "
                                       "shufflesim.audit (randomizer parameters need a "
                                       "randomizer)")
    else:
        name, eps0, params, delta0 = split(randomizer, epsilon0, claim)
        domain_size = params.pop("domain_size", None)
    deltas = (delta,) if isinstance(delta, int | float) else tuple(delta)
    _, _, settings, records = audit_call.audit(
        trials=trials, randomizer_name=name, epsilon0=eps0, params=params, delta0=delta0,
        implementation=implementation, domain_size=domain_size, n=n, deltas=deltas,
        level=level, confidence=confidence, bounds=bounds, verdicts=verdicts, seed=seed,
        **options)
    return frame(audit_tables.to_json_records(records), "audit",
                 implementation=implementation, randomizer=randomizer, epsilon0=epsilon0,
                 trials=settings.trials, level=level, n=n, delta=list(deltas), seed=seed,
                 **options)


#: The command's options that ``shufflesim.audit`` passes through by keyword.
_OPTIONS = ("claim_epsilon0", "claim_delta0", "interval", "output", "input_offset",
            "output_offset", "vectorized", "two_stage", "shuffler", "support",
            "holdout_fraction", "shortlist", "attacks", "x0", "x1", "x2", "others", "permute",
            "gradient")
