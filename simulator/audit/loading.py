"""Loading and calling the implementation under test (issue 17; the API is in
simulator/audit/implementation.py's docstring): ``path/file.py:function`` or
``module:function`` to a callable, the vectorization probe, the one per-report loop, the seeding
of global random states, and a user's shuffler as the pipeline's permutation hook."""

from __future__ import annotations

import inspect
import random
import warnings
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from shufflesim.protocols.errors import require
from shufflesim.simulator.usercode import (
    UserCodeError,
    contained,
    load_function,
    numeric_array,
)

#: The field every error about the user's code names.
FIELD = "implementation"


def _load_object(spec: str) -> Any:
    return load_function(spec, FIELD)


@dataclass(frozen=True)
class Implementation:
    """A loaded implementation (module docstring). ``vectorized`` None: detected on the first
    call; ``seed_global``: seed ``random`` and ``np.random`` before every call batch."""

    function: Callable
    source: str
    vectorized: bool | None = None
    seed_global: bool = True

    def __post_init__(self) -> None:
        require(callable(self.function), FIELD, self.source, "is not callable")

    def call(self, values: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """The reports of ``values`` (one batch): global states seeded, vectorized or per
        report."""
        values = np.asarray(values)
        if self.seed_global:
            seed_global_state(rng)
        vectorized = self.vectorized
        if vectorized is None:
            vectorized = _detect_vectorized(self, values)
        if not vectorized:
            return per_report(self.function, values, rng, self.source)
        with contained(FIELD, self.source, self.function):
            reports = self.function(values, rng)
        reports = numeric_array(reports, FIELD, self.source, strings=True, complex_ok=True)
        if reports.shape[: values.ndim] != values.shape:
            raise UserCodeError(FIELD, self.source,
                                f"returned shape {reports.shape} for inputs of shape "
                                f"{values.shape}: reports must have the inputs' shape leading "
                                "(pass vectorized=False for a one-value-at-a-time function)")
        return reports


#: Probe calls of the vectorization check.
PROBES = 64
#: Detected vectorization, per function (the probe runs once per function per process).
_VECTORIZED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _detect_vectorized(impl: Implementation, values: np.ndarray) -> bool:
    try:
        return _VECTORIZED[impl.function]
    except (KeyError, TypeError):  # not seen yet, or not weakly referenceable
        pass
    probe = np.asarray(values).reshape(-1)[:3]
    if probe.size == 0:
        return True
    probe = np.resize(probe, 3)
    ok = True
    failure: UserCodeError | None = None
    try:  # several probes: a scalar function may return its array argument by chance
        with contained(FIELD, impl.source, impl.function):
            for s in range(PROBES):
                out = numeric_array(impl.function(probe, np.random.default_rng(s)), FIELD,
                                    impl.source, strings=True,
                                    complex_ok=True)
                ok = ok and out.ndim >= 1 and out.shape[0] == probe.shape[0]
                if not ok:
                    break
            if ok:  # one random draw per call, applied to the whole array: a scalar function
                same = np.full(64, probe[0])
                outs = [np.asarray(impl.function(same, np.random.default_rng(100 + s)))
                        for s in range(8)]
                constant = all(bool(np.all(o == o[:1])) for o in outs)
                varies = any(not np.array_equal(outs[0], o) for o in outs[1:])
                ok = not (constant and varies)
    except (UserCodeError, ValueError, TypeError) as error:
        ok = False
        failure = error if isinstance(error, UserCodeError) else None
    if not ok:  # it must work one value at a time, else its own error is the one line
        try:
            with contained(FIELD, impl.source, impl.function):
                single = impl.function(probe[0].item(), np.random.default_rng(0))
            numeric_array(single, FIELD, impl.source, strings=True, complex_ok=True)
        except UserCodeError as error:
            raise (failure or error) from None
        warnings.warn(f"implementation {impl.source}: not vectorized (calling it with an array "
                      "failed or returned the wrong shape); it is called once per report, "
                      "which is slow for large audits", RuntimeWarning, stacklevel=3)
    try:
        _VECTORIZED[impl.function] = ok
    except TypeError:
        pass
    return ok


def per_report(function: Callable, values: np.ndarray, rng: np.random.Generator,
               source: str | None = None) -> np.ndarray:
    """The one place that calls a non-vectorized implementation: once per value (a Python loop
    over reports; slow, hence the warning), each call contained (simulator/usercode.py)."""
    source = source or getattr(function, "__name__", repr(function))
    flat = np.asarray(values).reshape(-1)
    with contained(FIELD, source, function):
        reports = [function(v.item(), rng) for v in flat]
    for report in reports[:1]:
        numeric_array(report, FIELD, source, strings=True, complex_ok=True)
    out = numeric_array(reports, FIELD, source, strings=True, complex_ok=True)
    return out.reshape(np.shape(values) + out.shape[1:])


def seed_global_state(rng: np.random.Generator) -> None:
    """Seed Python's ``random`` and numpy's legacy global ``np.random`` from ``rng`` (module
    docstring: reproducible single-threaded only)."""
    s = int(rng.integers(0, 2**63 - 1))
    random.seed(s)
    np.random.seed(s % 2**32)  # noqa: NPY002 (the legacy global state, on purpose)


def load_implementation(spec: str | Callable | Implementation, *, vectorized: bool | None = None,
                        seed_global: bool = True) -> Implementation:
    """An :class:`Implementation` from a callable, ``path/file.py:function`` or
    ``module:function`` (module docstring)."""
    if isinstance(spec, Implementation):
        return spec
    if callable(spec):
        source = f"{getattr(spec, '__module__', '?')}:{getattr(spec, '__qualname__', spec)}"
        return Implementation(spec, source, vectorized, seed_global)
    obj = _load_object(spec)
    require(callable(obj) and not inspect.ismodule(obj), FIELD, spec, "is not callable")
    return Implementation(obj, spec, vectorized, seed_global)


def shuffler_permutation(shuffler: Callable, source: str | None = None
                         ) -> Callable[[np.random.Generator, int], np.ndarray]:
    """A user shuffler ``shuffler(messages, rng) -> shuffled messages`` as the pipeline's
    permutation hook: it is handed the message positions 0..size-1 and must return a
    permutation of them (else a ParameterError on ``shuffler``)."""

    label = source or getattr(shuffler, "__name__", repr(shuffler))

    def permutation(rng: np.random.Generator, size: int) -> np.ndarray:
        with contained("shuffler", label, shuffler):
            returned = shuffler(np.arange(size), rng)
        out = numeric_array(returned, "shuffler", label)
        if not (out.shape == (size,) and np.array_equal(np.sort(out), np.arange(size))):
            raise UserCodeError("shuffler", label, "must return a permutation of the messages "
                                "it is given (same messages, reordered)")
        return out.astype(np.int64)

    return permutation
