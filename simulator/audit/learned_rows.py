"""The learned attack and the profile test at delta* as rows of a shuffle-level audit of an
implementation with a continuous or vector claim (issue 29): what run.py and audit_gradient
add beside the histogram attacks.

One run of the user's code (learned_attack.learned_counts, its own streams under
learned_attack.LEARNED_KEY) feeds two statistics of each trial's multiset of raw reports: the
learned score, and the claim's own log likelihood ratio (claim_lr.claim_statistic, a fixed
function of the multiset; for a gradient client that of its projection). Rows:

* attack rows ``learned`` (both directions, each audited delta; tables.attack_records);
* when the claim has a pair bound (pair_upper.applies: gaussian, laplace, laplace_binary; the
  pair x0 vs x1 with the others at x1): ``implementation-shuffled-profile``, the test at a
  delta* chosen on held-out trials (shuffle_profile.py), with its attack row
  ``<statistic>-profile``;
* otherwise, when a proven catalogue upper bound of the claim at (n, delta) is given:
  ``implementation-learned`` per audited delta (learned_attack.learned_verdict).

Each verdict row rests on its own evaluated event and carries its own p-value (grading.Evidence),
so Holm's procedure (grading.py) counts it as one test group of its own.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

import numpy as np

from shufflesim.simulator.audit.claim_lr import claim_statistic
from shufflesim.simulator.audit.grading import Evidence
from shufflesim.simulator.audit.learned_attack import (
    NAME,
    Draw,
    learned_audit,
    learned_counts,
    learned_verdict,
)
from shufflesim.simulator.audit.pair_upper import applies
from shufflesim.simulator.audit.shuffle_level import AttackAudit, AuditOptions
from shufflesim.simulator.audit.shuffle_profile import ProfileChoice, claim_grid, profile_test
from shufflesim.simulator.audit.tables import attack_records, implementation_records
from shufflesim.simulator.audit.verdicts import (
    CONSISTENT,
    TOLERANCE,
    VIOLATED,
    ImplementationVerdict,
)

#: The fixed statistic's name (the claim's own likelihood ratio of the multiset).
CLAIM_LR = "claim-lr"


def implementation_draw(tested, x0, x1, n: int) -> Draw:
    """Trials of ``tested`` (an ImplementationRandomizer with its raw reports): user 1 at x0
    (world 0) or x1 (world 1), the others at x1."""
    x0_arr, x1_arr = np.asarray(x0), np.asarray(x1)
    dtype = np.result_type(x0_arr, x1_arr)

    def draw(world: int, trials: int, rng: np.random.Generator) -> np.ndarray:
        values = np.empty((trials, n) + x1_arr.shape, dtype=dtype)
        values[:, 0] = x0_arr if world == 0 else x1_arr
        values[:, 1:] = x1_arr
        return np.asarray(tested.randomize(values, rng))

    return draw


def claim_lr_score(declared, x0, x1) -> Callable[[np.ndarray], np.ndarray]:
    """The claim's log likelihood ratio of a (trials, n, dim) batch of scalar reports."""
    def score(reports: np.ndarray) -> np.ndarray:
        r = reports[..., 0] if reports.shape[-1] == 1 else reports
        return claim_statistic(declared, x0, x1, r)

    return score


def proven_minimum(bound_rows: list[dict], delta: float) -> tuple[str, float] | None:
    """(name, value) of the smallest proven upper bound among a run's catalogue verdict rows
    at ``delta`` that no exact computation has shown wrong, or None."""
    best = None
    for r in bound_rows:
        value = r.get("bound_epsilon")
        if (r.get("row_type") == "verdict" and r.get("bound_kind") == "upper"
                and r.get("bound_status") == "proven" and r.get("delta") == delta
                and r.get("subject") != "bound" and value is not None
                and math.isfinite(value) and (best is None or value < best[1])):
            best = (f"the proven upper bound {r['bound']}", float(value))
    return best


def profile_verdict(choice: ProfileChoice, confidence: float, claimed: str, n: int,
                    pair: str) -> ImplementationVerdict:
    """``implementation-shuffled-profile`` (shuffle_profile.py): the certified eps_lb at delta*
    against the claim's eps* there."""
    row = choice.row
    eps_lb, eps = row.epsilon_lb, choice.epsilon
    p = Evidence.of(row.bound, row.delta, 1.0 - confidence).p_value(eps)
    where = (f"{pair}, {row.attack} {row.direction}, event {row.event}; delta* = "
             f"{row.delta:.4g} and the direction chosen on held-out trials")
    if math.isfinite(eps_lb) and eps_lb > eps * (1 + TOLERANCE):
        verdict = VIOLATED
        sentence = (f"the implementation's shuffled output is not that of the claimed "
                    f"{claimed} with n = {n}: eps lower bound {eps_lb:.6g} at delta* = "
                    f"{row.delta:.4g} (confidence {confidence:g}; {where}) exceeds the "
                    f"claimed mechanism's eps* = {eps:.6g} there (its profile at the pair, "
                    "upper side)")
    else:
        verdict = CONSISTENT
        sentence = (f"no evidence against the claimed {claimed}'s shuffled profile: eps lower "
                    f"bound {eps_lb:.6g} <= eps* = {eps:.6g} at delta* = {row.delta:.4g} "
                    f"(confidence {confidence:g}; {where})")
    return ImplementationVerdict("shuffled-profile", verdict, sentence, eps_lb, confidence, eps,
                                 p_value=p, delta=row.delta)


def learned_rows(draw: Draw, declared, n: int, deltas, options: AuditOptions,
                 seed: np.random.SeedSequence, context: dict, *, x0, x1, source: str,
                 claimed: str, pair: str, bound_rows: list[dict] = (),
                 fixed: dict | None = None, profile_claim=None, profile_pair=None,
                 atoms=()) -> list[dict]:
    """The rows (module docstring) of ``draw``'s trials. ``fixed``: the fixed statistics
    (default: the claim's likelihood ratio at (x0, x1)); ``profile_claim`` and
    ``profile_pair``: the scalar claim and pair whose profile judges (default: ``declared``
    at (x0, x1)); ``bound_rows``: the run's catalogue verdict rows (proven bounds)."""
    start = time.perf_counter()
    if fixed is None:
        fixed = {CLAIM_LR: claim_lr_score(declared, x0, x1)} if hasattr(declared,
                                                                       "log_prob") else {}
    counts = learned_counts(draw, n, options, seed, atoms=atoms, fixed=fixed)
    audit = learned_audit(draw, n, deltas, options, seed, pair=pair, counts=counts[NAME],
                          randomizer=getattr(declared, "name", ""),
                          epsilon0=float(getattr(declared, "epsilon0", math.nan)),
                          implementation=source)
    records = attack_records(audit, context)
    verdicts = []
    claim = declared if profile_claim is None else profile_claim
    p0, p1 = (x0, x1) if profile_pair is None else profile_pair
    if applies(claim):
        choice = profile_test(list(counts.values()), claim_grid(claim, p0, p1, n),
                              options.confidence, options.shortlist)
        shown = AttackAudit(audit.level, audit.randomizer, audit.epsilon0, n, pair, options,
                            (choice.row,), audit.seconds, {}, (), source,
                            f"the test at delta* (shuffle_profile.py), eps* = "
                            f"{choice.epsilon:.6g}")
        records += attack_records(shown, context)
        verdicts.append(profile_verdict(choice, options.confidence, claimed, n, pair))
    else:
        for delta in audit.deltas:
            proven = proven_minimum(list(bound_rows), delta)
            if proven is not None:
                verdicts.append(learned_verdict(audit, delta, proven[1], proven[0], claimed))
    seconds = time.perf_counter() - start
    return records + implementation_records(verdicts, {**context, "pair": pair}, "shuffle",
                                            source, seconds=seconds, note=counts[NAME].note)
