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
    if EXACT_METHOD not in names:
        names.append(EXACT_METHOD)
    evaluations = [evaluate(name, randomizer, n, delta) for name in names]
    exact_eval = next(e for e in evaluations if e.spec.name == EXACT_METHOD)
    exact = float(exact_eval.result.epsilon) if exact_eval.ok else None
    return judge(evaluations, exact, empirical, confidence)
