"""What a bound is (:class:`BoundSpec`), the outcome of evaluating one (:class:`BoundEvaluation`)
and the registry every bound module adds its bounds to (:data:`BOUNDS`).

A bound module defines its functions and, below them, exports its bounds as data, a tuple
``SPECS`` that :data:`BOUNDS` reads when it imports the module (``exported="SPECS"``)::

    SPECS: tuple[BoundSpec, ...] = (
        BoundSpec("efmrtt19", BoundKind.UPPER, "reference", BoundStatus.PROVEN,
                  "regime in words", any_ldp, generic(efmrtt19_epsilon)),
    )

(:func:`register` remains for plug-ins registered by a call: third parties, tests.)

protocols/plugins.py lists every built-in bound module (``BOUNDS``, imported on the registry's
first read);
protocols.bounds.catalogue is the public API over the registry. This module is light on
purpose (standard library, the result types and the registry), so that every bound module can
import it.

Statuses (design.md Sec. 2): ``proven``, ``approximate`` (an asymptotic constant dropped) and
``relies-on-stronger-clone-reduction`` (000 Sec. 3.3); a bound with more than one caveat lists
the others in ``also`` (003's mu-GDP bound is both approximate and reliant on the
stronger-clone reduction).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from shufflesim.protocols.bounds.result import BoundKind, BoundResult, BoundStatus
from shufflesim.protocols.registry import Registry


class _Statuses:
    """The statuses of a bound with ``status`` and ``also`` (BoundSpec, BoundFacts)."""

    @property
    def statuses(self) -> tuple[BoundStatus, ...]:
        return (self.status, *self.also)

    @property
    def status_label(self) -> str:
        return ", ".join(s.value for s in self.statuses)


@dataclass(frozen=True)
class BoundFacts(_Statuses):
    """What the catalogue knows of a built-in bound before importing the module that computes
    it (protocols/bounds/declared.py; issue 32): its name, kind, primary status and further
    caveats, reference, and ``applies_to``, a predicate of this module equal to the bound's
    own (tests/test_bound_facts.py checks every fact against the module's BoundSpec)."""

    name: str
    kind: BoundKind
    status: BoundStatus
    reference: str
    applies_to: Callable[[object], bool]
    also: tuple[BoundStatus, ...] = ()


@dataclass(frozen=True)
class BoundSpec(_Statuses):
    """One registered bound.

    name: the method name (also ``BoundResult.method``); kind: upper or lower; reference: paper
    and theorem; status: the primary status, ``also``: further caveats; regime: where the bound
    is valid, in words (the compute function raises ParameterError outside it); scope: "generic"
    (any eps0-LDP randomizer), "specific" (uses the randomizer's structure) or "personalized"
    (users with per-user budgets); accepts_delta0: whether it holds for (eps0, delta0)-LDP
    randomizers with delta0 > 0 (default False: it needs a pure eps0-LDP randomizer, and
    protocols.bounds.catalogue.evaluate refuses one with delta0 > 0, saying so).

    delta_at (optional, upper bounds): ``delta_at(randomizer, n, epsilon, threshold)`` is the
    bound's own delta at epsilon, on the conservative side of its numerical error, so that the
    bound certifies (epsilon, delta) whenever ``delta_at(...) <= delta``; it may stop refining
    once its answer is decided against ``threshold`` (<= it, or certainly above it), and it
    raises ParameterError where ``compute`` would. Calibration
    (protocols.bounds.calibration) asks it one question per step instead of running the
    bound's whole eps search (issue 18).
    """

    name: str
    kind: BoundKind
    reference: str
    status: BoundStatus
    regime: str
    applies_to: Callable[[object], bool]
    compute: Callable[[object, int, float], BoundResult]
    scope: str = "generic"
    also: tuple[BoundStatus, ...] = ()
    accepts_delta0: bool = False
    delta_at: Callable[[object, int, float, float], float] | None = None

    @property
    def delta0_label(self) -> str:
        """What the catalogue shows about delta0 > 0."""
        return "accepted" if self.accepts_delta0 else "refused (pure eps0-LDP only)"

    def delta0_refusal(self, subject) -> str | None:
        """The one-line reason this bound refuses ``subject`` (its delta0 > 0 and the bound needs
        a pure eps0-LDP randomizer), or None."""
        delta0 = randomizer_delta0(subject)
        if self.accepts_delta0 or delta0 == 0:
            return None
        label = getattr(getattr(subject, "randomizer", subject), "name", type(subject).__name__)
        return (f"{self.name} needs a pure eps0-LDP randomizer (delta0 = 0); {label} has "
                f"delta0 = {delta0:g}")



@dataclass(frozen=True)
class BoundEvaluation:
    """The outcome of one bound at one setting: a result, or the reason there is none."""

    spec: BoundSpec
    n: int
    delta: float
    result: BoundResult | None = None
    error: str = ""
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.result is not None

    @property
    def status_label(self) -> str:
        """The statuses that apply: the result's own status (a bound may downgrade itself, e.g.
        a maximum over a grid of candidate pairs) and the spec's further caveats."""
        primary = self.result.status if self.result is not None else self.spec.status
        rest = [s for s in self.spec.statuses if s is not primary]
        return ", ".join(s.value for s in (primary, *rest))

    def record(self) -> dict:
        """A flat JSON-ready record (keys: method, kind, epsilon, delta, epsilon_error, status,
        statuses, reference, seconds, note, error)."""
        r = self.result
        return {
            "method": self.spec.name,
            "kind": self.spec.kind.value,
            "epsilon": None if r is None else float(r.epsilon),
            "delta": float(self.delta),
            "epsilon_error": None if r is None else float(r.epsilon_error),
            "status": (r.status if r is not None else self.spec.status).value,
            "statuses": self.status_label.split(", "),
            "reference": r.reference if r is not None and r.reference else self.spec.reference,
            "seconds": float(self.seconds),
            "note": "" if r is None else r.note,
            "error": self.error,
        }


#: Every registered bound by name (an unknown name is a ParameterError on the field "method").
BOUNDS: Registry[BoundSpec] = Registry("bound", field="method",
                                    declared="shufflesim.protocols.plugins:BOUNDS",
                                    exported="SPECS")


def register(spec: BoundSpec) -> BoundSpec:
    """Add ``spec`` to :data:`BOUNDS` (a name registered twice is a RuntimeError)."""
    return BOUNDS.register(spec)


# ------------------------------------------------------------------------------------------
# Applicability predicates and adapters
# ------------------------------------------------------------------------------------------
def single_message(randomizer) -> bool:
    """False for multi-message randomizers (``multi_message``: several messages per user, 001
    Table 3; not eps0-LDP): the single-message bounds refuse them."""
    return not getattr(randomizer, "multi_message", False)


def any_ldp(randomizer) -> bool:
    """Generic bounds: every randomizer is eps0-LDP with eps0 = randomizer.epsilon0."""
    return getattr(randomizer, "epsilon0", None) is not None and single_message(randomizer)


def named(*names: str) -> Callable[[object], bool]:
    """The predicate "the randomizer is one of ``names``"."""
    def predicate(randomizer) -> bool:
        return getattr(randomizer, "name", None) in names
    predicate.__doc__ = f"randomizer is one of {names}"
    return predicate


def krr_domain(smallest: int, largest: int | None = None) -> Callable[[object], bool]:
    """The predicate "k-RR with smallest <= k (<= largest)"."""
    def predicate(randomizer) -> bool:
        if not named("krr")(randomizer):
            return False
        k = int(getattr(randomizer, "domain_size", 0))
        return smallest <= k and (largest is None or k <= largest)
    predicate.__doc__ = f"k-RR with {smallest} <= k" + (f" <= {largest}" if largest else "")
    return predicate


def metric_dp(randomizer) -> bool:
    """Randomizers declaring metric privacy (``metric_variation_ratio``)."""
    return bool(getattr(randomizer, "metric_privacy", False)) and hasattr(
        randomizer, "metric_variation_ratio")


def multi_message(randomizer) -> bool:
    """Multi-message randomizers (several messages per user, 001 Table 3)."""
    return bool(getattr(randomizer, "multi_message", False))


def personalized_users(*names: str) -> Callable[[object], bool]:
    """The predicate "users with per-user budgets (protocols.bounds.personalized.bounds.
    PersonalizedUsers), of one of the randomizers ``names`` (none: any)"."""
    def predicate(subject) -> bool:
        return getattr(subject, "output_kind", None) == "personalized" and (
            not names or getattr(getattr(subject, "randomizer", None), "name", "?") in names)
    predicate.__doc__ = "per-user budgets" + (f" of one of {names}" if names else "")
    return predicate


def randomizer_delta0(subject) -> float:
    """The delta0 of an (eps0, delta0)-LDP randomizer (its ``delta0`` field), 0.0 for a pure
    eps0-LDP one; a subject wrapping a randomizer (personalized users) answers for it."""
    delta0 = getattr(subject, "delta0", None)
    if delta0 is None and hasattr(subject, "randomizer"):
        delta0 = getattr(subject.randomizer, "delta0", None)
    return 0.0 if delta0 is None else float(delta0)


def discrete_output(randomizer) -> bool:
    return (getattr(randomizer, "output_kind", "discrete") == "discrete"
            and single_message(randomizer))


def generic(function: Callable[[float, int, float], BoundResult]):
    """Adapt f(epsilon0, n, delta) to compute(randomizer, n, delta)."""
    def compute(randomizer, n: int, delta: float) -> BoundResult:
        return function(float(randomizer.epsilon0), n, delta)
    return compute


def generic_delta(function: Callable[[float, float, int], float]):
    """Adapt delta(epsilon, epsilon0, n) to delta_at(randomizer, n, epsilon, threshold) (a
    function that has no refinement to stop ignores the threshold)."""
    def delta_at(randomizer, n: int, epsilon: float, threshold: float) -> float:
        return function(epsilon, float(randomizer.epsilon0), n)
    return delta_at
