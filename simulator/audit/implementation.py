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

Modules: loading.py (loading and calling the function, global states, shufflers), claim.py
(:class:`Claim`), adapter.py (:class:`ImplementationRandomizer`), output_events.py (event
functions); this module gathers their public names.

Entry point: simulator.audit.run.audit_implementation (the same rows as ``shufflesim audit
--implementation`` and the scenario key ``[audit] implementation``).
"""

from __future__ import annotations

from shufflesim.simulator.audit.adapter import (
    ImplementationRandomizer,
    implementation_randomizer,
)
from shufflesim.simulator.audit.claim import (
    ENCODINGS,
    Claim,
)
from shufflesim.simulator.audit.loading import (
    FIELD,
    PROBES,
    Implementation,
    load_implementation,
    per_report,
    seed_global_state,
    shuffler_permutation,
)
from shufflesim.simulator.audit.output_events import (
    HASH_BUCKETS,
    CoordinateEvents,
    EventFunction,
    HashedEvents,
    ObservedOutputs,
    OutputIndex,
    default_events,
    report_hash,
)

__all__ = [
    "Claim",
    "CoordinateEvents",
    "ENCODINGS",
    "EventFunction",
    "FIELD",
    "HASH_BUCKETS",
    "HashedEvents",
    "Implementation",
    "ImplementationRandomizer",
    "ObservedOutputs",
    "OutputIndex",
    "PROBES",
    "default_events",
    "implementation_randomizer",
    "load_implementation",
    "per_report",
    "report_hash",
    "seed_global_state",
    "shuffler_permutation",
]
