"""Worst-case inputs at the shuffle level (issue 29): which neighbouring datasets to audit an
implementation on when the user names none.

The randomizer level searches input pairs; the shuffle level audited the inputs the user named
(or, for an implementation, users 2..n drawing uniformly from the domain, which passes every
value through the code but is far from the worst case: a client at 1.3 x its eps0 was seen at
eps_lb 1.2-1.3 there and at 2.2-2.4 at the exact lower bound's triple). Here the candidates are

* the triple (x0, x1, x2) at which the claimed randomizer's exact lower bound (000 Thm 14) is
  largest - the worst case of the claim, where a fault that scales every ratio shows most;
* the coverage default (x0, x1 of that triple, the others uniform over the domain);
* ``SAMPLED`` triples drawn from the domain with a generator seeded by the audit's seed (faults
  at inputs the claim does not single out, e.g. one value handled wrongly).

Each candidate is run on ``pilot`` trials per world from its own stream (child keys PILOT_KEY,
k), and two-stage in bulk on n times as many (two_stage_bulk.py: the same calls of the code,
a far less noisy score), and scored by the larger of its two empirical lower bounds there;
the best-scoring one (another candidate must beat the claim's worst case by the factor
MARGIN) is audited on the remaining trials from the audit's usual stream. The choice uses
only the pilot trials, which the final bound never sees, so no confidence is spent on it (the
same argument as the events' held-out selection, events.py). The pilots' goodness-of-fit rows
of the coverage candidate are kept (independent data; the fit verdict's Bonferroni correction
counts them), so a value that only the uniform others reach is still tested. The chosen
candidate is audited in full and, beside it, two-stage in bulk with n times the trials
(two_stage_bulk.py: the same calls of the code).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from shufflesim.protocols.randomizers.domains import Categorical
from shufflesim.simulator.audit.pipeline_level import audit_pipeline
from shufflesim.simulator.audit.sampling import child
from shufflesim.simulator.audit.shuffle_level import AuditOptions, audit_shuffle, default_triple
from shufflesim.simulator.audit.two_stage_bulk import (
    TWO_STAGE_KEY,
    BulkTwoStageSampler,
    audit_both,
    two_stage_trials,
)

#: Spawn key of the pilots' streams (apart from the final audit's).
PILOT_KEY = 0x9170
#: Random triples added to the claim's worst case and the coverage default.
SAMPLED = 2
#: Share of the trials spent on the pilots (all candidates together), and the least per pilot.
PILOT_SHARE = 0.2
MIN_PILOT = 200
#: Factor by which another candidate's pilot bound must beat the claim's worst case's to be
#: chosen: pilot bounds rest on small tail counts, and at equal scores the worst case of the
#: claim is where a fault that scales every ratio shows most (a client at 1.1 x its eps0 was
#: audited at a sampled triple on 2 of 4 seeds without it).
MARGIN = 1.05


@dataclasses.dataclass(frozen=True)
class Candidate:
    x0: object
    x1: object
    others: object  # x2, or a probability vector over the inputs
    label: str


def candidates(declared, n: int, delta: float, seed: np.random.SeedSequence) -> list[Candidate]:
    """The candidate neighbouring datasets (module docstring), the claim's worst case first."""
    x0, x1, x2 = default_triple(declared, n, delta)
    out = [Candidate(x0, x1, x2, "worst case of the claim (exact lower bound's triple)")]
    domain = declared.input_domain
    if not isinstance(domain, Categorical):
        return out
    d = domain.size
    out.append(Candidate(x0, x1, np.full(d, 1.0 / d), "others uniform over the domain"))
    rng = np.random.default_rng(child(seed, PILOT_KEY))
    seen = {(x0, x1, x2)}
    for _ in range(8 * SAMPLED):
        if len(out) >= 2 + SAMPLED or d < 2:
            break
        a, b = (int(v) for v in rng.choice(d, size=2, replace=False))
        c = int(rng.integers(d))
        if (a, b, c) not in seen:
            seen.add((a, b, c))
            out.append(Candidate(a, b, c, "sampled"))
    return out


def pilot_trials(trials: int, count: int) -> int:
    """Trials per world of each pilot (0: too few trials to search)."""
    per = int(trials * PILOT_SHARE) // max(count, 1)
    return per if per >= MIN_PILOT and trials - per * count >= MIN_PILOT else 0


def _choose(cands, per: int, run_pilot) -> tuple[int, list[float], list]:
    """Index of the candidate with the largest pilot bound (ties: the earlier), the scores and
    the pilot audits."""
    scores, audits = [], []
    for k, c in enumerate(cands):
        a = run_pilot(k, c)
        score = a.epsilon_lb(a.deltas[0])
        scores.append(score if math.isfinite(score) else 0.0)
        audits.append(a)
    return int(np.argmax(scores)), scores, audits


def _note(cands, scores, per: int, chosen: Candidate, previous: str) -> str:
    summary = "; ".join(f"{cand.label} ({cand.x0}, {cand.x1}, "
                        f"{'uniform' if np.ndim(cand.others) else cand.others}): {s:.3g}"
                        for cand, s in zip(cands, scores, strict=True))
    note = (f"inputs searched on {per} pilot trials per world each (not used by the bound): "
            f"{summary}; chosen: {chosen.label}")
    return f"{previous}; {note}" if previous else note


def search_pipeline(tested, n: int, deltas, options: AuditOptions,
                    seed: np.random.SeedSequence, *, config=None, permutation=None,
                    shuffler=None, progress=None):
    """The pipeline-level audit of ``tested`` at the better of the claim's worst case (every
    other user at the exact lower bound's x2) and the coverage default (the others cycle
    through the domain), chosen on pilot trials (module docstring). A user's shuffler is
    checked on the final run only (its pilots run the uniform shuffler)."""
    declared = tested.declared
    x0, x1, x2 = default_triple(declared, n, deltas[0])
    cands = [Candidate(x0, x1, x2, "worst case of the claim (exact lower bound's triple)")]
    if isinstance(declared.input_domain, Categorical):
        cands.append(Candidate(x0, x1, x2, "others cycle through the domain"))
    kwargs = {} if permutation is None else {"permutation": permutation}
    per = pilot_trials(options.trials, len(cands))
    if len(cands) == 1 or per == 0:
        return audit_pipeline(tested, n, deltas, options, seed, x0=x0, x1=x1, x2=x2,
                              config=config, progress=progress, shuffler=shuffler,
                              cover_domain=len(cands) > 1, **kwargs)
    pilot = dataclasses.replace(options, trials=per)
    best, scores, pilots = _choose(cands, per, lambda k, c: audit_pipeline(
        tested, n, deltas[:1], pilot, child(seed, PILOT_KEY, k), x0=c.x0, x1=c.x1, x2=c.others,
        config=config, with_exact=False, cover_domain=k == 1, **kwargs))
    final = dataclasses.replace(options, trials=options.trials - per * len(cands))
    c = cands[best]
    audit = audit_pipeline(tested, n, deltas, final, seed, x0=c.x0, x1=c.x1, x2=c.others,
                           config=config, progress=progress, shuffler=shuffler,
                           cover_domain=best == 1, **kwargs)
    coverage = () if best == 1 else tuple(
        dataclasses.replace(f, input=f"{f.input} (pilot, others cycle)") for f in pilots[1].fits)
    return dataclasses.replace(audit, fits=audit.fits + coverage,
                               note=_note(cands, scores, per, c, audit.note))


def _preferred(scores: list[float]) -> int:
    """The candidate to audit: the claim's worst case (the first) unless another one's pilot
    bound beats it by more than the factor MARGIN (ties: the earlier candidate)."""
    best = int(np.argmax(scores))
    return best if scores[best] > MARGIN * scores[0] else 0


def final_shuffle(tested, n, deltas, options, seed, x0, x1, others, progress=None,
                  two_stage: bool = False):
    """The audited run at (x0, x1, others): the full audit and the two-stage one in bulk
    (two_stage_bulk.audit_both), or the two-stage one alone (in bulk) when asked for."""
    if two_stage:
        return audit_shuffle(tested, n, deltas, options, seed, x0=x0, x1=x1, others=others,
                             progress=progress, two_stage=True,
                             sampler_type=BulkTwoStageSampler)
    return audit_both(tested, n, deltas, options, seed, x0=x0, x1=x1, others=others,
                      progress=progress)


def search_shuffle(tested, n: int, deltas, options: AuditOptions,
                   seed: np.random.SeedSequence, *, progress=None, two_stage: bool = False):
    """The shuffle-level audit of ``tested`` (an ImplementationRandomizer) at the candidate
    whose pilot bound is largest (module docstring). Returns the AttackAudit of the final run,
    its note naming the choice and every candidate's pilot bound."""
    declared = tested.declared
    cands = candidates(declared, n, deltas[0], seed)
    per = pilot_trials(options.trials, len(cands))
    if len(cands) == 1 or per == 0:
        return final_shuffle(tested, n, deltas, options, seed, cands[0].x0, cands[0].x1,
                             cands[0].others, progress, two_stage)
    pilot = dataclasses.replace(options, trials=per)
    scores, audits = [], []
    staged_pilot = dataclasses.replace(options, trials=two_stage_trials(per, n, declared))
    for k, c in enumerate(cands):
        a = audit_shuffle(tested, n, deltas[:1], pilot, child(seed, PILOT_KEY, k), x0=c.x0,
                          x1=c.x1, others=c.others, with_exact=False, two_stage=two_stage,
                          sampler_type=BulkTwoStageSampler if two_stage else None)
        score = a.epsilon_lb(deltas[0])
        if not two_stage:  # and in bulk two-stage: n x the trials for the same calls
            b = audit_shuffle(tested, n, deltas[:1], staged_pilot,
                              child(seed, PILOT_KEY, k, TWO_STAGE_KEY), x0=c.x0, x1=c.x1,
                              others=c.others, with_exact=False, two_stage=True,
                              sampler_type=BulkTwoStageSampler)
            score = max(score, b.epsilon_lb(deltas[0]))
        scores.append(score if math.isfinite(score) else 0.0)
        audits.append(a)
    best = _preferred(scores)
    final = dataclasses.replace(options, trials=options.trials - per * len(cands))
    c = cands[best]
    audit = final_shuffle(tested, n, deltas, final, seed, c.x0, c.x1, c.others, progress,
                          two_stage)
    coverage = [f for k, a in enumerate(audits) if np.ndim(cands[k].others) == 1
                and k != best for f in a.fits]
    summary = "; ".join(f"{cand.label} ({cand.x0}, {cand.x1}, "
                        f"{'uniform' if np.ndim(cand.others) else cand.others}): {s:.3g}"
                        for cand, s in zip(cands, scores, strict=True))
    note = (f"inputs searched on {per} pilot trials per world each (not used by the bound): "
            f"{summary}; chosen: {c.label}")
    if audit.note:
        note = f"{audit.note}; {note}"
    return dataclasses.replace(audit, fits=audit.fits + tuple(
        dataclasses.replace(f, input=f"{f.input} (pilot, others uniform)") for f in coverage),
        note=note)
