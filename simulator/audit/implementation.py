"""The implementation under test: a user's own randomizer code, what it claims, and how every
audit level runs it (issue 17).

API
---
An *implementation* is a Python callable ``function(values, rng) -> reports``:

* ``values``: a numpy array of inputs (any shape; categorical inputs are integers, interval
  inputs floats); ``rng``: a ``numpy.random.Generator`` seeded by the audit;
* ``reports``: an array whose leading axes are ``values.shape`` (followed by the report's own
  shape, e.g. ``(d,)`` for a unary encoding).

A function that handles one value at a time, ``function(value, rng) -> report``, is accepted
too: it is detected (calling it with a 3-value array raises or returns the wrong shape in any
of 64 probe calls, or 64 copies of one value always give 64 equal reports that change from
call to call: one random draw per call) or, better, declared with ``vectorized=False``, and is
then called once per report in :func:`per_report` (the one loop over reports in the audit),
with a ``RuntimeWarning`` about speed.

Name it with :func:`load_implementation`: a callable, ``"path/to/file.py:function"`` or
``"package.module:function"`` (importlib). A missing file, module or function, or an object
that is not callable, is a ``ParameterError`` on the field ``implementation`` (one line, exit
code 2 on the command line).

What it claims (:class:`Claim`), one of:

* a registered randomizer with its parameters (``Claim.registered("krr", epsilon0=2,
  domain_size=4)``): the declared output distribution (goodness of fit, the shuffle level's
  output groups and exact values), the output encoding (reports must be what that randomizer
  returns) and the bounds (verdicts);
* a pure black box: only ``epsilon0`` (and ``delta0``), with its input domain (``domain_size``
  d, or ``interval = (low, high)``) and its output encoding ``output``: ``"discrete"`` (scalar
  reports, indexed by their bytes), ``"vector"`` (reports are vectors; events hash or project
  them) or ``"continuous"`` (real scalars, binned at quantiles). A black box is audited at the
  randomizer level only (no declared distribution gives output groups or bounds).

Input numbering: the audit numbers categorical inputs 0..d-1. A client that numbers items from
1 is audited with ``input_offset = 1``: the audit passes ``x + input_offset`` to the function
and, for scalar integer reports, subtracts ``output_offset`` (default: ``input_offset``) from
the reports. A report outside the claimed encoding (a scalar outside [0, output_size), a
report of the wrong shape, a vector entry the declared randomizer never emits, a non-finite
number) is a ``ParameterError`` on ``implementation`` naming the report and the encoding.

Global random state: some clients draw from Python's ``random`` module or numpy's legacy
global ``np.random`` instead of the ``rng`` given. With ``seed_global = True`` (the default),
before every call batch the audit seeds both global states, ``random.seed(s)`` and
``np.random.seed(s % 2**32)``, with ``s`` a 64-bit integer drawn from the batch's generator
(itself seeded from the audit's SeedSequence). The same seed then gives the same rows, but only
when the implementation runs single-threaded in one process: a global state shared with other
threads, or re-seeded by the implementation itself, breaks reproducibility (not validity:
every bound holds for any source of randomness).

How each level runs it (:class:`ImplementationRandomizer` is the adapter: the claimed
randomizer's declarations, the user's ``randomize``):

* randomizer level (randomizer_level.audit_randomizer with ``events``): samples of the
  implementation per input, reduced by an *event function* (below); goodness of fit against
  the claimed distribution (chi-square on the events, exact declared pmf when the events are
  the outputs themselves, else a two-sample chi-square against the declared sampler), and an
  eps0 lower bound (events chosen on held-out samples);
* shuffle level (shuffle_level.audit_shuffle given the adapter): every trial is n reports of
  the implementation (X0 or X1 passed through the user's code), reduced to the group
  histogram (= the shuffled output), attacked with the histogram attacks, plus a pooled
  goodness of fit; ``two_stage`` runs only user 1's report through the code (the faster
  estimate; shuffle_level's docstring says exactly what it tests);
* pipeline level: the implementation inside the SimPy clients, with a user-supplied shuffler
  if given (:func:`shuffler_permutation`), other users' inputs cycling through the domain.

Event functions (for output spaces too large to tabulate, e.g. unary encodings over more than
20 values): any object with ``size`` (int) and ``label`` (str) attributes that maps an array of
reports to integer event indices in [0, size) (``__call__(reports) -> int64 array`` of shape
``reports.shape[:1]``). It must be fixed before the samples it is applied to are drawn (a
function of the claim, or of pilot samples from a separate stream). Built in:
:class:`OutputIndex` (the claimed randomizer's output index), :class:`CoordinateEvents` (the
bits of a few coordinates of binary vectors), :class:`HashedEvents` (a hash of each report's
bytes into buckets), :class:`ObservedOutputs` (black-box scalars seen in a pilot sample).

Entry point: simulator.audit.run.audit_implementation (the same rows as ``shufflesim audit
--implementation`` and the scenario key ``[audit] implementation``).
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import math
import random
import sys
import warnings
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from shufflesim.protocols.errors import ParameterError, require
from shufflesim.protocols.randomizers import make_randomizer
from shufflesim.protocols.randomizers.base import MAX_ENUMERABLE_OUTPUTS
from shufflesim.protocols.randomizers.domains import Categorical, Interval

FIELD = "implementation"
#: Output encodings of a black box.
ENCODINGS = ("discrete", "vector", "continuous")
#: Events of the default hashed event function.
HASH_BUCKETS = 1024


# ------------------------------------------------------------------------------------------
# Loading and calling the user's function
# ------------------------------------------------------------------------------------------
def _load_object(spec: str) -> Any:
    require(isinstance(spec, str) and ":" in spec, FIELD, spec,
            "expected path/to/file.py:function or package.module:function")
    target, _, name = spec.rpartition(":")
    require(bool(target) and bool(name), FIELD, spec,
            "expected path/to/file.py:function or package.module:function")
    if target.endswith(".py") or "/" in target or "\\" in target:
        path = Path(target).expanduser()
        require(path.is_file(), FIELD, spec, f"no such file: {target}")
        module_name = f"_shufflesim_implementation_{abs(hash(str(path.resolve())))}"
        module = sys.modules.get(module_name)
        if module is not None:  # loaded once per process
            return _attribute(module, target, name, spec)
        loader_spec = importlib.util.spec_from_file_location(module_name, path)
        require(loader_spec is not None and loader_spec.loader is not None, FIELD, spec,
                f"cannot import {target}")
        module = importlib.util.module_from_spec(loader_spec)
        sys.modules[module_name] = module
        try:
            loader_spec.loader.exec_module(module)
        except Exception as error:  # the user's module failed while importing
            sys.modules.pop(module_name, None)
            raise ParameterError(FIELD, spec, f"importing {target} failed: "
                                 f"{type(error).__name__}: {error}") from None
    else:
        try:
            module = importlib.import_module(target)
        except ModuleNotFoundError as error:
            raise ParameterError(FIELD, spec, f"no module {error.name!r}") from None
        except Exception as error:
            raise ParameterError(FIELD, spec, f"importing {target} failed: "
                                 f"{type(error).__name__}: {error}") from None
    return _attribute(module, target, name, spec)


def _attribute(module, target: str, name: str, spec: str):
    obj = module
    for part in name.split("."):
        if not hasattr(obj, part):
            raise ParameterError(FIELD, spec, f"{target} has no function {name!r}")
        obj = getattr(obj, part)
    return obj


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
            return per_report(self.function, values, rng)
        try:
            reports = np.asarray(self.function(values, rng))
        except ParameterError:
            raise
        except Exception as error:
            raise ParameterError(FIELD, self.source, f"raised {type(error).__name__}: "
                                 f"{error}") from None
        if reports.shape[: values.ndim] != values.shape:
            raise ParameterError(FIELD, self.source,
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
    try:  # several probes: a scalar function may return its array argument by chance
        for s in range(PROBES):
            out = np.asarray(impl.function(probe, np.random.default_rng(s)))
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
    except Exception:
        ok = False
    if not ok:
        warnings.warn(f"implementation {impl.source}: not vectorized (calling it with an array "
                      "failed or returned the wrong shape); it is called once per report, "
                      "which is slow for large audits", RuntimeWarning, stacklevel=3)
    try:
        _VECTORIZED[impl.function] = ok
    except TypeError:
        pass
    return ok


def per_report(function: Callable, values: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """The one place that calls a non-vectorized implementation: once per value (a Python loop
    over reports; slow, hence the warning)."""
    flat = np.asarray(values).reshape(-1)
    try:
        reports = [function(v.item(), rng) for v in flat]
    except ParameterError:
        raise
    except Exception as error:
        raise ParameterError(FIELD, getattr(function, "__name__", repr(function)),
                             f"raised {type(error).__name__}: {error}") from None
    out = np.asarray(reports)
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


# ------------------------------------------------------------------------------------------
# The claim
# ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Claim:
    """What the implementation claims (module docstring): ``randomizer`` (a registered
    randomizer instance) or, for a black box, ``epsilon0`` (and ``delta0``) with
    ``domain_size`` or ``interval`` and ``output``."""

    randomizer: Any = None
    epsilon0: float | None = None
    delta0: float = 0.0
    domain_size: int | None = None
    interval: tuple[float, float] | None = None
    output: str = "discrete"
    input_offset: int = 0
    output_offset: int | None = None

    def __post_init__(self) -> None:
        if self.randomizer is not None:
            eps = float(self.randomizer.epsilon0)
            require(self.epsilon0 is None or math.isclose(self.epsilon0, eps), "epsilon0",
                    self.epsilon0, f"differs from the claimed randomizer's eps0 {eps:g}")
            object.__setattr__(self, "epsilon0", eps)
            require(self.domain_size is None and self.interval is None, "domain_size",
                    self.domain_size, "the claimed randomizer gives the input domain")
        else:
            require(self.epsilon0 is not None and math.isfinite(self.epsilon0)
                    and self.epsilon0 > 0, "epsilon0", self.epsilon0,
                    "a black-box claim needs eps0 > 0 (or name a registered randomizer)")
            require((self.domain_size is None) != (self.interval is None), "domain_size",
                    self.domain_size, "a black box needs its input domain: domain_size or "
                    "interval (one of them)")
            if self.domain_size is not None:
                require(isinstance(self.domain_size, int) and self.domain_size >= 2,
                        "domain_size", self.domain_size, "must be an integer >= 2")
            else:
                lo, hi = self.interval
                require(math.isfinite(lo) and math.isfinite(hi) and lo < hi, "interval",
                        self.interval, "must be finite (low, high) with low < high")
            require(self.output in ENCODINGS, "output", self.output,
                    f"must be one of {list(ENCODINGS)}")
        require(isinstance(self.delta0, (int, float)) and 0 <= self.delta0 < 1, "delta0",
                self.delta0, "must lie in [0, 1)")
        for name in ("input_offset", "output_offset"):
            v = getattr(self, name)
            require(v is None or (isinstance(v, (int, np.integer)) and not isinstance(v, bool)),
                    name, v, "must be an integer")

    @classmethod
    def registered(cls, name: str, *, epsilon0: float, input_offset: int = 0,
                   output_offset: int | None = None, **params) -> Claim:
        """The claim "this implements the registered randomizer ``name``(eps0, params)"."""
        return cls(make_randomizer(name, epsilon0=epsilon0, **params),
                   input_offset=input_offset, output_offset=output_offset)

    @property
    def black_box(self) -> bool:
        return self.randomizer is None

    @property
    def input_domain(self) -> Categorical | Interval:
        if self.randomizer is not None:
            return self.randomizer.input_domain
        if self.domain_size is not None:
            return Categorical(self.domain_size)
        return Interval(float(self.interval[0]), float(self.interval[1]))

    @property
    def scalar_integer_outputs(self) -> bool:
        """Reports are integer scalars (the output offset applies to them)."""
        if self.randomizer is not None:
            return (getattr(self.randomizer, "output_kind", "discrete") == "discrete"
                    and tuple(self.randomizer.output_shape) == ())
        return self.output == "discrete"

    @property
    def report_offset(self) -> int:
        if not self.scalar_integer_outputs:
            return 0
        return self.input_offset if self.output_offset is None else int(self.output_offset)

    def describe(self) -> str:
        if self.randomizer is not None:
            return repr(self.randomizer)
        dom = (f"domain_size={self.domain_size}" if self.domain_size is not None
               else f"interval={tuple(self.interval)}")
        return (f"black box eps0={self.epsilon0:g}, delta0={self.delta0:g}, {dom}, "
                f"output={self.output}")


# ------------------------------------------------------------------------------------------
# The adapter every level runs
# ------------------------------------------------------------------------------------------
class ImplementationRandomizer:
    """The claimed randomizer's declarations with the user's ``randomize`` (module docstring).

    Attribute access falls through to the claimed randomizer (declared distribution, output
    index, decomposition, bounds' applicability); ``randomize`` calls the implementation,
    applies the offsets and checks every report against the claimed encoding; the aggregate
    sampler is switched off so that nothing bypasses the user's code. A black-box claim has
    only ``name``, ``epsilon0``, ``input_domain`` and ``output_kind``.
    """

    has_aggregate_sampler = False

    def __init__(self, implementation: Implementation, claim: Claim) -> None:
        self.implementation = implementation
        self.claim = claim
        self.declared = claim.randomizer
        self.epsilon0 = float(claim.epsilon0)
        self.name = self.declared.name if self.declared is not None else "black-box"
        self._allowed_entries: np.ndarray | None = None

    def __getattr__(self, attr: str):
        declared = self.__dict__.get("declared")
        if declared is None or attr.startswith("__"):
            raise AttributeError(attr)
        return getattr(declared, attr)

    def __repr__(self) -> str:
        return f"{self.implementation.source} claiming {self.claim.describe()}"

    @property
    def input_domain(self):
        return self.claim.input_domain

    @property
    def output_kind(self) -> str:
        if self.declared is not None:
            return getattr(self.declared, "output_kind", "discrete")
        return "continuous" if self.claim.output == "continuous" else "discrete"

    def sample_aggregate(self, input_counts, rng):
        raise NotImplementedError("an implementation under test is always run report by report")

    def check_values(self, values):
        if self.declared is not None:
            return self.declared.check_values(values)
        return np.asarray(values)

    def randomize(self, values, rng, epsilon=None):
        """The implementation's reports of ``values`` (audit numbering), checked."""
        require(epsilon is None, "epsilon", "per-user", "an implementation under test runs at "
                "its claimed eps0 (no per-user budgets)")
        values = np.asarray(values)
        passed = values + self.claim.input_offset if self.claim.input_offset else values
        reports = self.implementation.call(passed, rng)
        return self.check_reports(reports, values.shape)

    def check_reports(self, reports: np.ndarray, shape: tuple) -> np.ndarray:
        """Reports in the audit's numbering, or a ParameterError naming the first report
        outside the claimed encoding."""
        reports = np.asarray(reports)
        tail = reports.shape[len(shape):]
        if self.declared is not None:
            expected = tuple(self.declared.output_shape)
            if tail != expected:
                self._outside(reports.reshape(-1)[:1],
                              f"reports of shape {tail} per input, the claimed "
                              f"{self.declared.name} reports shape {expected}")
        if self.output_kind == "continuous":
            bad = ~np.isfinite(reports.astype(float))
            if bad.any():
                self._outside(reports[bad][:1], "reports must be finite numbers")
            return reports
        if self.claim.scalar_integer_outputs:
            if not (np.issubdtype(reports.dtype, np.integer) or reports.dtype == bool):
                as_int = np.rint(reports.astype(float))
                bad = as_int != reports
                if bad.any():
                    self._outside(reports[bad][:1], "reports must be integers")
                reports = as_int.astype(np.int64)
            reports = reports.astype(np.int64) - self.claim.report_offset
            size = self.declared.output_size if self.declared is not None else None
            low_ok = reports >= 0
            bad = ~low_ok if size is None else ~(low_ok & (reports < size))
            if bad.any():
                shown = reports[bad][:1] + self.claim.report_offset
                encoding = (f"[{self.claim.report_offset}, {self.claim.report_offset + size})"
                            if size is not None else f">= {self.claim.report_offset}")
                self._outside(shown, f"outside the claimed encoding {encoding}")
            return reports
        if self.declared is not None:
            allowed = self._allowed()
            if allowed is not None and reports.size:
                bad = ~np.isin(reports, allowed)
                if bad.any():
                    self._outside(reports[bad][:1], f"an entry the claimed "
                                  f"{self.declared.name} never emits (its entries: "
                                  f"{allowed.tolist()})")
        return reports

    def _allowed(self) -> np.ndarray | None:
        """Entries of the declared randomizer's vector reports (from a pilot of its own
        sampler), when there are few of them (e.g. {0, 1})."""
        if self._allowed_entries is None:
            d = self.declared
            domain = d.input_domain
            x = (np.arange(min(domain.size, 64)) if isinstance(domain, Categorical)
                 else np.linspace(domain.low, domain.high, 16))
            pilot = np.asarray(d.randomize(np.repeat(x, 16), np.random.default_rng(0)))
            entries = np.unique(pilot)
            self._allowed_entries = entries if entries.size <= 16 else np.zeros(0)
        return self._allowed_entries if self._allowed_entries.size else None

    def _outside(self, example, reason: str) -> None:
        value = np.asarray(example).reshape(-1)
        shown = value[0].item() if value.size else None
        hint = ("; a client numbering items from 1 needs input_offset = 1"
                if self.claim.scalar_integer_outputs and self.claim.input_offset == 0 else "")
        raise ParameterError(FIELD, self.implementation.source,
                             f"returned report {shown!r}: {reason}{hint}")


def implementation_randomizer(implementation, claim: Claim, *, vectorized: bool | None = None
                              ) -> ImplementationRandomizer:
    """The adapter for ``implementation`` (anything :func:`load_implementation` takes)."""
    return ImplementationRandomizer(load_implementation(implementation, vectorized=vectorized),
                                    claim)


# ------------------------------------------------------------------------------------------
# Event functions
# ------------------------------------------------------------------------------------------
class EventFunction(Protocol):
    """Maps reports (leading axis: samples) to event indices in [0, size)."""

    size: int
    label: str

    def __call__(self, reports: np.ndarray) -> np.ndarray: ...


@dataclass(frozen=True)
class OutputIndex:
    """Every output is its own event: the claimed randomizer's output index."""

    randomizer: Any
    label: str = "outputs"

    @property
    def size(self) -> int:
        return int(self.randomizer.output_size)

    def __call__(self, reports: np.ndarray) -> np.ndarray:
        return np.asarray(self.randomizer.output_index(reports), dtype=np.int64)


@dataclass(frozen=True)
class CoordinateEvents:
    """The bits of a few coordinates of binary vector reports (unary encodings: coordinate j is
    the bit of value j): event = sum_k bit(coordinates[k]) 2^k."""

    coordinates: tuple[int, ...]
    label: str = ""

    def __post_init__(self) -> None:
        require(1 <= len(self.coordinates) <= 16, "coordinates", self.coordinates,
                "between 1 and 16 coordinates")
        if not self.label:
            object.__setattr__(self, "label", f"bits of coordinates {list(self.coordinates)}")

    @property
    def size(self) -> int:
        return 1 << len(self.coordinates)

    def __call__(self, reports: np.ndarray) -> np.ndarray:
        bits = np.asarray(reports)[:, list(self.coordinates)] != 0
        return bits.astype(np.int64) @ (1 << np.arange(len(self.coordinates), dtype=np.int64))


@dataclass(frozen=True)
class HashedEvents:
    """Each report's bytes hashed into ``buckets`` events (FNV-1a over the bytes, salted)."""

    buckets: int = HASH_BUCKETS
    salt: int = 0
    label: str = ""

    def __post_init__(self) -> None:
        require(isinstance(self.buckets, int) and 2 <= self.buckets <= MAX_ENUMERABLE_OUTPUTS,
                "buckets", self.buckets, f"must be an integer in [2, {MAX_ENUMERABLE_OUTPUTS}]")
        if not self.label:
            object.__setattr__(self, "label", f"hash of the report bytes into {self.buckets}")

    @property
    def size(self) -> int:
        return self.buckets

    def __call__(self, reports: np.ndarray) -> np.ndarray:
        return report_hash(reports, self.salt) % np.uint64(self.buckets)


def report_hash(reports: np.ndarray, salt: int = 0) -> np.ndarray:
    """64-bit FNV-1a hash of each report's bytes (leading axis: reports), vectorized over
    reports (a loop over the bytes of one report)."""
    arr = np.ascontiguousarray(reports)
    count = arr.shape[0] if arr.ndim else 1
    raw = arr.reshape(count, -1).view(np.uint8).reshape(count, -1)
    h = np.full(count, np.uint64(0xCBF29CE484222325) ^ np.uint64(salt), dtype=np.uint64)
    prime = np.uint64(0x100000001B3)
    with np.errstate(over="ignore"):
        for j in range(raw.shape[1]):
            h ^= raw[:, j].astype(np.uint64)
            h *= prime
    return h


@dataclass(frozen=True)
class ObservedOutputs:
    """Black-box scalar or vector reports: one event per distinct report seen in a pilot sample
    (drawn from its own random stream), one more event for every other report."""

    keys: np.ndarray  # sorted hashes of the pilot's distinct reports
    label: str = "reports seen in the pilot sample"

    @classmethod
    def from_pilot(cls, pilot: np.ndarray, limit: int = 4096) -> ObservedOutputs:
        hashes, counts = np.unique(report_hash(pilot), return_counts=True)
        if hashes.size > limit:
            hashes = np.sort(hashes[np.argsort(-counts, kind="stable")[:limit]])
        return cls(hashes)

    @property
    def size(self) -> int:
        return int(self.keys.size) + 1

    def __call__(self, reports: np.ndarray) -> np.ndarray:
        h = report_hash(reports)
        pos = np.searchsorted(self.keys, h)
        pos_c = np.minimum(pos, self.keys.size - 1)
        hit = (self.keys.size > 0) & (self.keys[pos_c] == h)
        return np.where(hit, pos_c, self.keys.size).astype(np.int64)


def default_events(randomizer, inputs) -> EventFunction | None:
    """The event function a level uses when none is given: None (the dense output index) for
    a tabulable output space; the bits of the audited inputs' coordinates for binary vector
    reports of a categorical claim; else hashed reports. Black boxes with discrete outputs get
    :class:`ObservedOutputs` from a pilot (built by the randomizer level)."""
    declared = getattr(randomizer, "declared", randomizer)
    if declared is None:
        return None
    size = getattr(declared, "output_size", None)
    if getattr(declared, "output_kind", "discrete") == "continuous":
        return None
    if size is not None and size <= MAX_ENUMERABLE_OUTPUTS:
        return None
    shape = tuple(declared.output_shape)
    if len(shape) == 1 and isinstance(declared.input_domain, Categorical) \
            and shape[0] == declared.input_domain.size and len(inputs) <= 16:
        return CoordinateEvents(tuple(int(x) for x in inputs))
    return HashedEvents()


def shuffler_permutation(shuffler: Callable) -> Callable[[np.random.Generator, int], np.ndarray]:
    """A user shuffler ``shuffler(messages, rng) -> shuffled messages`` as the pipeline's
    permutation hook: it is handed the message positions 0..size-1 and must return a
    permutation of them (else a ParameterError on ``shuffler``)."""

    def permutation(rng: np.random.Generator, size: int) -> np.ndarray:
        out = np.asarray(shuffler(np.arange(size), rng))
        require(out.shape == (size,) and np.array_equal(np.sort(out), np.arange(size)),
                "shuffler", getattr(shuffler, "__name__", repr(shuffler)),
                "must return a permutation of the messages it is given (same messages, "
                "reordered)")
        return out.astype(np.int64)

    return permutation
