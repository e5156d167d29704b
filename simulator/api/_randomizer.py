"""``shufflesim.randomizer`` and ``shufflesim.estimator``: the objects a scenario or a command
builds from a name, built the same way (same validation, same one-line errors)."""

from __future__ import annotations

import dataclasses

from shufflesim.protocols import estimators as _estimators
from shufflesim.protocols.randomizers import Randomizer
from shufflesim.simulator.calls.setting import build_randomizer
from shufflesim.simulator.errors import UserError


def randomizer(name: str, epsilon0: float, **params) -> Randomizer:
    """The registered local randomizer ``name`` with local budget ``epsilon0`` and its
    parameters (``domain_size``, ``delta0``, ...: ``shufflesim.catalogue()["randomizers"]``
    lists them), as ``shufflesim bound --randomizer NAME --epsilon0 E --param K=V`` builds it.

    It has ``randomize(values, rng)`` (vectorized over users) and its bounds' decompositions;
    ``shufflesim.estimator(r)`` is its analyzer.

    >>> import numpy as np, shufflesim
    >>> r = shufflesim.randomizer("krr", epsilon0=2.0, domain_size=4)
    >>> r
    KRR(epsilon0=2.0, domain_size=4)
    >>> r.randomize(np.array([0, 1, 2, 3]), np.random.default_rng(0)).shape
    (4,)
    >>> shufflesim.randomizer("krr", epsilon0=0.0, domain_size=4)
    Traceback (most recent call last):
    ...
    shufflesim.protocols.errors.ParameterError: epsilon0 = 0.0: must be a finite number > 0
    """
    delta0 = params.pop("delta0", None)
    return build_randomizer(name, epsilon0, params, delta0)


def estimator(randomizer: Randomizer, name: str | None = None):
    """The analyzer's estimator for ``randomizer``: the registered estimator ``name``, or (None)
    the first registered one that fits it (``shufflesim.catalogue()["estimators"]``).

    >>> import shufflesim
    >>> shufflesim.estimator(shufflesim.randomizer("krr", epsilon0=1.0, domain_size=3)).name
    'frequency'
    """
    if name is not None:
        return _estimators.make_estimator(name, randomizer)
    for cls in _estimators.ESTIMATORS.values():
        if cls.fits(randomizer):
            return cls(randomizer)
    raise UserError(f"randomizer = {randomizer!r}: no registered estimator fits it")


def split(randomizer_or_name, epsilon0: float | None, params: dict):
    """(name, epsilon0, parameters, delta0) of a randomizer given by name (with ``epsilon0``
    and ``params``) or as a built object (then with neither)."""
    params = dict(params)
    if isinstance(randomizer_or_name, str):
        if epsilon0 is None:
            raise UserError(f"epsilon0 is required with a randomizer name "
                            f"({randomizer_or_name!r})")
        return randomizer_or_name, epsilon0, params, params.pop("delta0", None)
    if not isinstance(randomizer_or_name, Randomizer):
        raise UserError(f"randomizer = {randomizer_or_name!r}: expected a registered name or a "
                        "shufflesim.randomizer(...)")
    if epsilon0 is not None or params:
        given = sorted(params) + (["epsilon0"] if epsilon0 is not None else [])
        raise UserError(f"{', '.join(given)}: give the parameters to shufflesim.randomizer, not "
                        "beside a built randomizer")
    values = {f.name: getattr(randomizer_or_name, f.name)
              for f in dataclasses.fields(randomizer_or_name) if f.init}
    epsilon0 = values.pop("epsilon0")
    return type(randomizer_or_name).name, epsilon0, values, values.pop("delta0", None)
