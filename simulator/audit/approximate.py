"""An (eps0, delta0) audit of a black-box local randomizer (issue 17, item 4).

(eps0, delta0)-LDP means P[R(a) in E] <= e^eps0 P[R(b) in E] + delta0 for all inputs a, b and
events E. With one-sided Clopper-Pearson limits on fresh samples (confidence.py), an event E
fixed in advance gives

    delta0 >= delta_lb(E) = lower(P[E | a]) - e^eps0 upper(P[E | b]),
    eps0   >= eps_lb(E)   = ln((lower(P[E | a]) - delta0) / upper(P[E | b]))   (at the claimed
                                                                               delta0).

Pairs and events come from the search (search.py) with the objective "delta": half of the
``certify`` candidates (rounded up) are the best ranked on selection samples by their predicted
delta_lb at the claimed eps0, the other half the best by their predicted eps_lb at delta0; all
are certified on fresh samples with every limit at error level alpha / (2 certify). All
limits then hold together with probability >= confidence, so both statements (the maximum
delta_lb over the certified events, and the maximum eps_lb at delta0) hold together at that
confidence.

Verdict: the implementation is not (eps0, delta0)-LDP when max delta_lb > delta0 (equivalently
some certified event has eps_lb > eps0 at delta0).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from shufflesim.protocols.errors import require
from shufflesim.simulator.audit.levels import Level, register_attack
from shufflesim.simulator.audit.search import (
    Certified,
    SearchOptions,
    SearchResult,
    certified_evidence,
    search,
    search_records,
)
from shufflesim.simulator.audit.tables import implementation_records
from shufflesim.simulator.audit.verdicts import CONSISTENT, VIOLATED, ImplementationVerdict


@dataclass(frozen=True)
class ApproximateAudit:
    epsilon0: float
    delta0: float
    search: SearchResult

    @property
    def confidence(self) -> float:
        return self.search.confidence

    @property
    def best_delta(self) -> Certified:
        return max(self.search.certified, key=lambda c: c.delta_gap(self.epsilon0))

    @property
    def delta_lb(self) -> float:
        """A lower bound on the smallest delta for which the implementation is
        (epsilon0, delta)-LDP, at ``confidence`` (clipped at 0)."""
        return max(0.0, self.best_delta.delta_gap(self.epsilon0))

    @property
    def epsilon_lb(self) -> float:
        """A lower bound on the smallest eps for which it is (eps, delta0)-LDP."""
        return self.search.epsilon_lb

    @property
    def violated(self) -> bool:
        return self.delta_lb > self.delta0

    def verdict(self) -> str:
        b = self.best_delta
        head = f"({self.epsilon0:g}, {self.delta0:g})-LDP"
        if not self.violated:
            return (f"consistent with {head}: delta lower bound {self.delta_lb:.4g}, eps "
                    f"lower bound at delta0 {self.epsilon_lb:.4g}, confidence "
                    f"{self.confidence:g}")
        return (f"the implementation is not {head}: delta lower bound {self.delta_lb:.4g} "
                f"> {self.delta0:g} at confidence {self.confidence:g} on inputs ({b.x}, "
                f"{b.x_prime}), event {b.event}; eps lower bound at delta0 "
                f"{self.epsilon_lb:.4g}")


def audit_approximate(sample, domain, epsilon0: float, delta0: float, options: SearchOptions,
                      seed: np.random.SeedSequence | int, *, support=None,
                      inputs=None) -> ApproximateAudit:
    """The (epsilon0, delta0) audit of ``sample`` (module docstring); ``options`` as for
    search.search (its delta, objective and epsilon0 are set here)."""
    require(isinstance(epsilon0, (int, float)) and math.isfinite(epsilon0) and epsilon0 >= 0,
            "epsilon0", epsilon0, "must be a finite number >= 0")
    require(isinstance(delta0, (int, float)) and 0 <= delta0 < 1, "delta0", delta0,
            "must lie in [0, 1)")
    opts = replace(options, delta=float(delta0), objective="delta", epsilon0=float(epsilon0))
    result = search(sample, domain, opts, seed, support=support, inputs=inputs)
    return ApproximateAudit(float(epsilon0), float(delta0), result)


def approximate_records(audit: ApproximateAudit, context: dict,
                        implementation: str = "") -> list[dict]:
    """Rows of the audit table: the search's attack rows (epsilon at delta0) and the verdict
    ``implementation-approximate-ldp`` (its sentence gives the delta lower bound)."""
    rows = [r for r in search_records(audit.search, audit.epsilon0, context, implementation,
                                      attack="approximate") if r["row_type"] == "attack"]
    verdict = ImplementationVerdict(
        "approximate-ldp", VIOLATED if audit.violated else CONSISTENT, audit.verdict(),
        audit.epsilon_lb, audit.confidence, audit.epsilon0, delta=audit.delta0)
    out = implementation_records([verdict], {**context, "delta": audit.delta0},
                                 "randomizer", implementation, seconds=audit.search.seconds,
                                 note=f"delta lower bound {audit.delta_lb:.6g}")
    # its p-value: the event with the largest delta gap, "eps at delta0 > eps0"
    out[0]["p_value"] = certified_evidence(audit.search, audit.best_delta,
                                           audit.delta0).p_value(audit.epsilon0)
    return rows + out


@register_attack("approximate", levels=(Level.RANDOMIZER,),
                 description="an (eps0, delta0) audit: delta lower bound P_a_lo(E) - e^eps0 "
                             "P_b_hi(E) over searched pairs and events, and eps at delta0",
                 note="simulator/audit/approximate.py")
class ApproximateLDPAudit:
    """The randomizer-level (eps0, delta0) attack: ``run`` is :func:`audit_approximate`,
    ``rows`` runs it and returns its audit-table rows."""

    name = "approximate"
    run = staticmethod(audit_approximate)

    @staticmethod
    def rows(sample, domain, *, epsilon0: float, trials: int, confidence: float, seed,
             context: dict, implementation: str = "", delta0: float = 0.0, support=None,
             **options) -> list[dict]:
        audit = audit_approximate(sample, domain, epsilon0, delta0,
                                  SearchOptions(trials, confidence, **options), seed,
                                  support=support)
        return approximate_records(audit, context, implementation)
