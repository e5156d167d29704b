"""Graded, family-wise verdicts: a p-value per verdict row, Holm's step-down adjustment over
the verdict rows of one audit, and the strength of the evidence in words (issue 29).

**The p-value of an empirical exceedance.** A verdict "the empirical lower bound exceeds U"
(an upper bound U of the catalogue, the claimed eps0 of an implementation, the smallest proven
upper bound of a claimed mechanism) rests on one evaluated event S of one attack row: counts
k_A, k_B of t evaluation trials, two one-sided Clopper-Pearson limits at the error level
``limit_alpha`` each (confidence.py), the setting's error level alpha split (union bound) over
every row and shortlisted event, ``alpha = limit_alpha * F``. For an error level a, let
eps(a) = ln((P_A_lo(a) - delta) / P_B_hi(a)); it increases with a. The p-value is

    p = F * a*,   a* = inf {a : eps(a) > U},

(1 when no a < 1/2 gives eps(a) > U). It is valid: under "eps <= U" every one of the F / 2
candidate events exceeds U at level a with probability at most 2a, so by the union bound
P[p <= x] <= x. A violation found by an exact computation (the exact lower bound of 000 Thm 14
above a bound, a lower bound above a proven upper bound) is not statistical: p = 0.

**Family-wise error (Holm 1979, over test groups).** The verdict rows of one run form one
family. Rows whose p-values come from one evaluated event (``test_group``: the catalogue's upper
bounds U_1 <= ... <= U_k and ``implementation-shuffled``, all compared with the same empirical
lower bound) are one *test group*: they are nested thresholds of one confidence bound. Every
other row is a group of its own. With m rows, p-values p_(1) <= ... <= p_(m), and h_i the
number of groups that still hold a row among p_(i), ..., p_(m), the adjusted p-value of the
i-th row is

    max_{j <= i} min(1, h_j p_(j)),

and a row is ``violated`` when it is below alpha = 1 - confidence. Without shared groups
h_i = m - i + 1 and this is Holm's procedure (Holm, "A simple sequentially rejective multiple
test procedure", Scand. J. Statist. 6, 1979, Thm 1).

*Validity* (any dependence between the rows). Let G_0 be the groups holding at least one true
null hypothesis, g_0 their number, and for a group g in G_0 let j(g) be its true null with the
smallest p-value. (a) p_j(g) is a valid p-value: in a group of nested thresholds p_j = F a*(U_j)
increases with U_j (eps(a) is one increasing function of a for the whole group), so j(g) is the
true null with the smallest U; it is valid on its own (the paragraph above). A group of one row
is its row. (b) By the union bound over G_0, the event E = {p_j(g) > alpha / g_0 for every g in
G_0} has probability at least 1 - alpha. (c) On E no true null is rejected: the procedure
rejects rows in increasing order of p while h_i p_(i) < alpha; at the first true null it would
reject, say in group g, no true null has been rejected yet, so every group of G_0 still holds
a row and h_i >= g_0; then its p-value is below alpha / h_i <= alpha / g_0, and so is that of
j(g) (p_j(g) is the smallest of g's true nulls), contradicting E. Hence P[any false
"violated"] <= alpha. Counting one empirical bound's k nested comparisons once instead of k
times is what lets one confident exceedance show family-wise (issue 29: a client at 1.1 x its
eps0 at the shuffle level). Rows whose p-value is not
known are counted conservatively: a row violated at its own confidence c with p = 1 - c, a
consistent one with p = 1 (a larger p-value only makes the procedure more conservative).
``not-evaluated`` and ``reference`` rows are not tests and stay out of the family.

**Strength in words** (of the adjusted p-value p): ``certain`` (an exact computation),
``strong`` (p < 1e-6), ``clear`` (p < alpha / 10), ``marginal`` (p < alpha); a row that is not
violated has strength ``none``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from shufflesim.simulator.audit.confidence import (
    clopper_pearson_lower,
    clopper_pearson_upper,
    epsilon_from_limits,
)
from shufflesim.simulator.audit.events import EventBound

#: The family-wise procedure, as stated in every graded row's note.
METHOD = "Holm"
#: The column naming a row's test group (rows resting on one evaluated event; module docstring).
GROUP = "test_group"
#: Smallest error level tried (p-values below SMALLEST times the split factor read as 0).
SMALLEST = 1e-280
#: Adjusted p-values below this are "strong" evidence.
STRONG = 1e-6
VIOLATED = "violated"
CONSISTENT = "consistent"
TESTED = (VIOLATED, CONSISTENT)


@dataclass(frozen=True)
class Evidence:
    """What a verdict row's empirical lower bound rests on: one evaluated event's counts
    ``count_a``, ``count_b`` among ``trials`` evaluation trials per world, the error level
    ``limit_alpha`` of each of its two limits, the delta it was evaluated at, and the overall
    error level ``alpha`` of the statement (1 - confidence) that limit_alpha is a share of."""

    count_a: int
    count_b: int
    trials: int
    limit_alpha: float
    delta: float
    alpha: float

    @classmethod
    def of(cls, bound: EventBound, delta: float, alpha: float) -> Evidence:
        """The evidence of an evaluated tail event (events.EventBound)."""
        return cls(bound.count_a, bound.count_b, bound.trials, bound.limit_alpha,
                   float(delta), float(alpha))

    def epsilon(self, a: float) -> float:
        """ln((P_A_lo - delta) / P_B_hi) with both limits at error level ``a``."""
        try:
            lo = clopper_pearson_lower(self.count_a, float(self.trials), a)
            hi = clopper_pearson_upper(self.count_b, float(self.trials), a)
        except (OverflowError, FloatingPointError):  # beta quantiles at a ~ 1e-300
            return -math.inf
        return float(epsilon_from_limits(lo, hi, self.delta))

    def p_value(self, threshold: float) -> float:
        """p-value of "eps > threshold" (module docstring)."""
        if threshold is None or not math.isfinite(threshold):
            return 1.0
        top = 0.5 - 1e-12
        if not self.epsilon(top) > threshold:
            return 1.0
        lo, hi = math.log(SMALLEST), math.log(top)  # natural logs of the error level a
        if self.epsilon(math.exp(lo)) > threshold:
            return float(min(1.0, self.alpha / self.limit_alpha * SMALLEST))
        for _ in range(60):  # bisection on ln a: a* to ~1e-16 relative
            mid = 0.5 * (lo + hi)
            if self.epsilon(math.exp(mid)) > threshold:
                hi = mid
            else:
                lo = mid
        return float(min(1.0, self.alpha / self.limit_alpha * math.exp(hi)))


def attach_p_values(records: list[dict], audit, options) -> list[dict]:
    """Set the p-value (:class:`Evidence`) of the verdict rows whose empirical lower bound is
    the best of ``audit`` (a randomizer-level audit: its best pair at delta0; a shuffle or
    pipeline audit: its best row per delta) exceeding their bound. Rows are matched on delta
    and epsilon_lb, so that rows of other attacks keep their own; rows with a p-value already
    keep it. ``options.confidence`` gives the overall error level. The rows graded by one
    evaluated event share a ``test_group`` (counted once by :func:`grade`)."""
    alpha = 1.0 - options.confidence
    if hasattr(audit, "pairs"):  # randomizer level
        bests = [(audit.best, audit.delta0)]
    else:
        bests = [(audit.best(d), d) for d in audit.deltas]
    first = 1 + max((int(r[GROUP]) for r in records if r.get(GROUP) is not None), default=0)
    for k, (best, delta) in enumerate(bests):
        evidence = Evidence.of(best.bound, delta, alpha)
        for r in records:
            if (r.get("row_type") == "verdict" and r.get("bound_kind") != "lower"
                    and r.get("p_value") is None and r.get("bound_epsilon") is not None
                    and r.get("epsilon_lb") is not None and r.get("delta") == delta
                    and r["epsilon_lb"] == best.epsilon_lb):
                r["p_value"] = evidence.p_value(float(r["bound_epsilon"]))
                r[GROUP] = first + k  # one evaluated event: nested thresholds (docstring)
    return records


def holm(p_values: Sequence[float], groups: Sequence | None = None) -> np.ndarray:
    """Holm's step-down adjusted p-values over test groups (module docstring), in the input
    order; ``groups``: each row's group key (None: every row its own group, plain Holm)."""
    p = np.asarray(p_values, dtype=float)
    m = p.size
    if m == 0:
        return p
    order = np.argsort(p, kind="stable")
    if groups is None:
        remaining = m - np.arange(m)
    else:
        keys = [groups[i] if groups[i] is not None else ("row", i) for i in range(m)]
        seen: set = set()
        remaining = np.empty(m)
        for step in range(m - 1, -1, -1):  # groups holding a row at this step or later
            seen.add(keys[order[step]])
            remaining[step] = len(seen)
    scaled = np.minimum(1.0, remaining * p[order])
    adjusted = np.maximum.accumulate(scaled)
    out = np.empty(m)
    out[order] = adjusted
    return out


def strength(adjusted: float | None, alpha: float, violated: bool, exact: bool = False) -> str:
    """The evidence in words (module docstring); ``exact``: the row's violation was found by
    an exact computation (a statistical p-value that underflows to 0 is "strong")."""
    if not violated or adjusted is None:
        return "none"
    if exact:
        return "certain"
    if adjusted < STRONG:
        return "strong"
    if adjusted < alpha / 10:
        return "clear"
    return "marginal"


def _raw_p(record: dict) -> float:
    """The row's own p-value (module docstring): its ``p_value`` column when set."""
    p = record.get("p_value")
    if p is not None and math.isfinite(p):
        return float(p)
    if record["verdict"] == VIOLATED:
        conf = record.get("confidence")
        return 1.0 - float(conf) if conf is not None else 1.0
    return 1.0


def grade(records: list[dict], confidence: float) -> list[dict]:
    """Set ``p_value``, ``adjusted_p_value`` and ``strength`` of every verdict row of one run,
    and its verdict to the family-wise one at ``confidence`` (module docstring); a row's own
    ``p_value`` is set by the code that judged it. Returns ``records`` (changed in place)."""
    alpha = 1.0 - confidence
    family = [r for r in records if r.get("row_type") == "verdict" and r["verdict"] in TESTED]
    raw = [_raw_p(r) for r in family]
    adjusted = holm(raw, [r.get(GROUP) for r in family])
    m = len(family)
    tests = len({r.get(GROUP) if r.get(GROUP) is not None else ("row", i)
                 for i, r in enumerate(family)})
    for r, p, q in zip(family, raw, adjusted, strict=True):
        was = r["verdict"]
        r["p_value"] = p
        r["adjusted_p_value"] = float(q)
        violated = q < alpha
        r["verdict"] = VIOLATED if violated else CONSISTENT
        # exact findings: tables.verdict_records, a shuffler's permutation check
        exact = p == 0 and (r.get("subject") == "bound" or r.get("bound_status") == "checked")
        r["strength"] = strength(float(q), alpha, violated, exact)
        scope = f"{METHOD}-adjusted p = {q:.3g} over {m} verdict row(s) in {tests} test(s)"
        if was == VIOLATED and not violated:
            r["reason"] = (f"not significant family-wise ({scope} >= {alpha:.3g}); "
                           f"alone: {r['reason']}")
        else:
            r["reason"] = f"{r['reason']} [{scope}]"
    return records


def failing(records: list[dict], confidence: float) -> list[dict]:
    """The verdict rows that fail a CI gate at ``confidence``: violated rows about the
    implementation under test, the project's randomizer, or a proven bound, whose adjusted
    p-value is below 1 - confidence (an exact violation always fails)."""
    alpha = 1.0 - confidence
    out = []
    for r in records:
        if r.get("row_type") != "verdict" or r.get("verdict") != VIOLATED:
            continue
        q = r.get("adjusted_p_value")
        if q is not None and not q < alpha:
            continue
        proven = (r.get("bound_status") or "").split(", ") == ["proven"]
        if r.get("subject") in ("implementation", "randomizer") or proven:
            out.append(r)
    return out
