"""Verdicts: every registered bound beside the exact and the empirical lower bounds.

For one setting (randomizer, n, delta), each applicable bound of the catalogue
(protocols.bounds.catalogue) is evaluated and judged (docs/architecture.md, "The auditor"):

* an upper bound U is ``violated`` when the exact lower bound of 000 Thm 14 (the catalogue's
  ``exact-lower``, maximised over neighbour triples) or the empirical lower bound (at its stated
  confidence) exceeds it, and ``consistent`` otherwise. Both sides are conservative numbers
  (U rounded up, the exact value rounded down, each by its own numerical error), so a strict
  comparison already means "beyond numerical error"; a relative slack ``TOLERANCE`` absorbs the
  floating-point rounding of closed forms. An empirical violation is a statistical statement: it
  is wrong with probability at most 1 - confidence.
* any other lower bound L is ``violated`` when it exceeds a *proven* upper bound (one of the two
  is then wrong; the reason names the upper bound).
* ``exact-lower`` itself is the ``reference``; a bound outside its validity regime is
  ``not-evaluated`` with the reason (never silently dropped).

The tightness ratio is U / exact lower.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from shufflesim.protocols.bounds.catalogue import BoundEvaluation, applicable_bounds, evaluate
from shufflesim.protocols.bounds.result import BoundKind, BoundStatus

EXACT_METHOD = "exact-lower"
#: The exact lower bound of multi-message randomizers.
MULTI_EXACT_METHOD = "multi-message-exact-lower"
#: Relative slack of every comparison (floating-point rounding of closed forms).
TOLERANCE = 1e-9

CONSISTENT = "consistent"
VIOLATED = "violated"
NOT_EVALUATED = "not-evaluated"
REFERENCE = "reference"


@dataclass(frozen=True)
class Verdict:
    """One bound at one setting, judged against the lower bounds."""

    bound: str
    kind: str
    status: str
    reference: str
    n: int
    delta: float
    epsilon: float | None
    epsilon_error: float | None
    exact_lower: float | None
    empirical_lower: float | None
    empirical_confidence: float | None
    verdict: str
    reason: str
    tightness: float | None
    note: str = ""

    @property
    def proven(self) -> bool:
        return self.status.split(", ") == [BoundStatus.PROVEN.value]


def _exceeds(lower: float | None, upper: float) -> bool:
    return lower is not None and math.isfinite(lower) and lower > upper * (1 + TOLERANCE)


def judge(evaluations: list[BoundEvaluation], exact: float | None, empirical: float | None,
          confidence: float | None) -> list[Verdict]:
    """Verdicts for already evaluated bounds (module docstring)."""
    proven_uppers = [e for e in evaluations if e.ok and e.spec.kind is BoundKind.UPPER
                     and e.status_label == BoundStatus.PROVEN.value]
    out = []
    for e in evaluations:
        r = e.result
        kind = e.spec.kind.value
        base = dict(bound=e.spec.name, kind=kind, status=e.status_label,
                    reference=r.reference if r is not None and r.reference else e.spec.reference,
                    n=e.n, delta=float(e.delta),
                    epsilon=None if r is None else float(r.epsilon),
                    epsilon_error=None if r is None else float(r.epsilon_error),
                    exact_lower=exact, empirical_lower=empirical,
                    empirical_confidence=confidence, note="" if r is None else r.note)
        if r is None:
            out.append(Verdict(**base, verdict=NOT_EVALUATED, reason=e.error, tightness=None))
            continue
        eps = float(r.epsilon)
        if e.spec.name == EXACT_METHOD:
            out.append(Verdict(**base, verdict=REFERENCE, reason="000 Thm 14 exact lower bound",
                               tightness=1.0 if exact else None))
            continue
        tightness = eps / exact if exact and exact > 0 and math.isfinite(eps) else None
        if e.spec.kind is BoundKind.UPPER:
            reasons = []
            if _exceeds(exact, eps):
                reasons.append(f"exact lower bound {exact:.6g} > {eps:.6g}")
            if _exceeds(empirical, eps):
                reasons.append(f"empirical lower bound {empirical:.6g} > {eps:.6g} "
                               f"(confidence {confidence:g})")
            verdict = VIOLATED if reasons else CONSISTENT
            reason = "; ".join(reasons) or "no lower bound exceeds it"
        else:
            above = [u for u in proven_uppers if _exceeds(eps, u.result.epsilon)]
            verdict = VIOLATED if above else CONSISTENT
            reason = ("; ".join(f"exceeds proven upper bound {u.spec.name} = "
                                f"{u.result.epsilon:.6g}" for u in above)
                      or "below every proven upper bound")
        out.append(Verdict(**base, verdict=verdict, reason=reason, tightness=tightness))
    return out


def bound_verdicts(randomizer, n: int, delta: float, *, empirical: float | None = None,
                   confidence: float | None = None, names: list[str] | None = None
                   ) -> list[Verdict]:
    """Evaluate the bounds ``names`` (default: every bound applicable to ``randomizer``) at
    (n, delta) and judge them; the exact lower bound is always evaluated."""
    if names is None:
        names = [spec.name for spec in applicable_bounds(randomizer)]
    names = list(dict.fromkeys(names))
    # a multi-message randomizer's exact lower bound is its own (protocols/bounds/multi_message)
    exact_name = MULTI_EXACT_METHOD if getattr(randomizer, "multi_message", False) \
        else EXACT_METHOD
    if exact_name not in names:
        names.append(exact_name)
    evaluations = [evaluate(name, randomizer, n, delta) for name in names]
    exact_eval = next(e for e in evaluations if e.spec.name == exact_name)
    exact = float(exact_eval.result.epsilon) if exact_eval.ok else None
    return judge(evaluations, exact, empirical, confidence)


# ------------------------------------------------------------------------------------------
# Verdicts on an implementation under test (issue 17)
# ------------------------------------------------------------------------------------------
#: ``subject`` of a verdict: what a "violated" row says is wrong.
SUBJECT_IMPLEMENTATION = "implementation"  # the user's code is not what it claims
SUBJECT_BOUND = "bound"  # a bound is below a lower bound of the declared mechanism
SUBJECT_RANDOMIZER = "randomizer"  # a project randomizer's sampler against its declaration


@dataclass(frozen=True)
class ImplementationVerdict:
    """One statement about the implementation under test: ``check`` is "ldp" (the randomizer
    level's eps0 lower bound against the claimed eps0), "fit" (its reports against the claimed
    distribution) or "shuffled" (the shuffled output's lower bound against the smallest proven
    upper bound of the claimed mechanism); ``sentence`` is the finding in words."""

    check: str
    verdict: str
    sentence: str
    epsilon_lb: float | None = None
    confidence: float | None = None
    bound_epsilon: float | None = None
    p_value: float | None = None
    delta: float | None = None
    #: found by an exact check, not a statistical test (a shuffler's permutation check)
    exact: bool = False

    @property
    def bound(self) -> str:
        return f"implementation-{self.check}"


def _eps_words(epsilon0: float, delta0: float) -> str:
    return (f"({epsilon0:g}, {delta0:g})-LDP" if delta0 > 0 else f"{epsilon0:g}-LDP")


def ldp_verdict(epsilon_lb: float, epsilon0: float, confidence: float, inputs: tuple,
                event: str, delta0: float = 0.0) -> ImplementationVerdict:
    """"the implementation is not eps0-LDP: lower bound X at confidence C on inputs (a, b),
    event E" when X > eps0 (beyond TOLERANCE), else consistent."""
    a, b = inputs
    claim = _eps_words(epsilon0, delta0)
    where = f"at confidence {confidence:g} on inputs ({a}, {b}), event {event}"
    if _exceeds(epsilon_lb, epsilon0):
        sentence = (f"the implementation is not {claim}: lower bound {epsilon_lb:.6g} "
                    f"{where}")
        verdict = VIOLATED
    else:
        sentence = (f"no evidence against {claim}: largest lower bound {epsilon_lb:.6g} <= "
                    f"{epsilon0:g} ({where})")
        verdict = CONSISTENT
    return ImplementationVerdict("ldp", verdict, sentence, epsilon_lb, confidence, epsilon0,
                                 delta=delta0)


def fit_verdict(p_value: float | None, confidence: float, claimed: str, tests: int,
                where: str = "") -> ImplementationVerdict:
    """"the implementation does not follow the claimed distribution" when the Bonferroni
    p-value of its goodness-of-fit tests is below 1 - confidence."""
    if p_value is None:
        return ImplementationVerdict("fit", NOT_EVALUATED, "no goodness-of-fit test (no "
                                     "declared distribution for these reports)",
                                     confidence=confidence)
    rejected = p_value < 1.0 - confidence
    scope = f" ({where})" if where else ""
    if rejected:
        sentence = (f"the implementation does not follow the claimed distribution of "
                    f"{claimed}{scope}: Bonferroni p-value {p_value:.3g} < {1 - confidence:.3g} "
                    f"over {tests} test(s)")
    else:
        sentence = (f"its reports fit the claimed distribution of {claimed}{scope}: Bonferroni "
                    f"p-value {p_value:.3g} >= {1 - confidence:.3g} over {tests} test(s)")
    return ImplementationVerdict("fit", VIOLATED if rejected else CONSISTENT, sentence,
                                 confidence=confidence, p_value=p_value)


def shuffled_verdict(epsilon_lb: float | None, confidence: float, verdicts: list[Verdict],
                     claimed: str, n: int, delta: float, where: str,
                     claim_pair: float | None = None) -> ImplementationVerdict:
    """The shuffled output of the implementation against the smallest *proven* upper bound of
    the claimed mechanism at (n, delta) (bounds that the exact lower bound already exceeds are
    left out: they are at fault themselves): above it, the implementation's shuffled output is
    not that of the claimed mechanism (the bound is proven for the claim, so the code is at
    fault, at the stated confidence). ``claim_pair``: the claimed mechanism's own eps at the
    audited pair (shuffle_level.claim_pair_epsilon, upper side of the engine's error), compared
    with too - the only comparison for a claim without a proven shuffled bound ((eps0, delta0)
    claims, binned continuous ones)."""
    proven = [(f"the proven upper bound {v.bound}", v.epsilon) for v in verdicts
              if v.kind == BoundKind.UPPER.value and v.proven
              and v.epsilon is not None and math.isfinite(v.epsilon)
              and not _exceeds(v.exact_lower, v.epsilon)]  # a bound below exact is at fault
    if claim_pair is not None and math.isfinite(claim_pair):
        proven.append(("the claim's own eps at the audited pair (000 Thm 14, engine)",
                       float(claim_pair)))
    if epsilon_lb is None or not proven:
        return ImplementationVerdict("shuffled", NOT_EVALUATED, "no empirical lower bound or "
                                     "no proven upper bound to compare", epsilon_lb,
                                     confidence, delta=delta)
    name, value = min(proven, key=lambda v: v[1])
    best = _Named(name, value)
    if _exceeds(epsilon_lb, best.epsilon):
        sentence = (f"the implementation's shuffled output is not that of the claimed "
                    f"{claimed} with n = {n}: central eps lower bound {epsilon_lb:.6g} at "
                    f"confidence {confidence:g} ({where}) exceeds {best.bound} = "
                    f"{best.epsilon:.6g} at delta = {delta:g}")
        verdict = VIOLATED
    else:
        sentence = (f"no evidence against the claim after shuffling: central eps lower bound "
                    f"{epsilon_lb:.6g} <= {best.bound} = {best.epsilon:.6g} "
                    f"(confidence {confidence:g}, {where})")
        verdict = CONSISTENT
    return ImplementationVerdict("shuffled", verdict, sentence, epsilon_lb, confidence,
                                 best.epsilon, delta=delta)


@dataclass(frozen=True)
class _Named:
    bound: str
    epsilon: float


def verdict_subject(v: Verdict, implementation: bool) -> str:
    """Who a bound verdict blames: the bound (the exact lower bound of the declared mechanism
    exceeds it, or it is another lower bound above a proven upper bound), or - in an audit of
    an implementation - the implementation when only the empirical lower bound exceeds it."""
    if (implementation and v.verdict == VIOLATED and v.kind == BoundKind.UPPER.value
            and not _exceeds(v.exact_lower, v.epsilon if v.epsilon is not None else math.inf)):
        return SUBJECT_IMPLEMENTATION
    return SUBJECT_BOUND
