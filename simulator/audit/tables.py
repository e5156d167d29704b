"""The ``audit`` result table: one row per setting x attack x direction, per goodness-of-fit test,
and per setting x bound verdict (``row_type`` says which; columns that do not apply are null).

Columns (docs: results/README and docs/results.md):

* setting: point, overrides, randomizer, n, epsilon0, delta, level (randomizer | shuffle |
  pipeline), row_type (attack | fit | verdict), pair (the neighbouring inputs);
* attack rows: attack, direction ("X0 vs X1": the bound on D(P0 || P1); randomizer level:
  "x vs x'"), event, trials (evaluation trials per world), selection_trials, count0 / count1
  (the event's count in world 0 / 1), p0 / p1 (their frequencies), p0_limit / p1_limit (the
  one-sided Clopper-Pearson limit used: lower for the numerator world, upper for the other),
  epsilon_lb (ln((P_num_lo - delta) / P_den_hi), >= 0), confidence (of this row alone),
  exact_lower (000 Thm 14 for this pair and direction) and ratio = epsilon_lb / exact_lower
  (randomizer level: delta = 0, pair and direction "x vs x'", ratio = epsilon_lb / declared
  eps0);
* fit rows: statistic, p_value, trials (samples of that input), pair (the input);
* verdict rows: bound, bound_kind, bound_status, bound_epsilon, bound_error, exact_lower (the
  catalogue's exact lower bound), epsilon_lb / confidence (the setting's empirical lower bound
  and its confidence), verdict, reason, tightness (upper / exact);
* seconds (wall time of the audit or the bound) and note;
* subject (verdict rows): what a ``violated`` verdict blames - ``implementation`` (the user's
  code under test is not what it claims: its own rows ``implementation-ldp``,
  ``implementation-fit``, ``implementation-shuffled``, and a bound exceeded only by the
  empirical lower bound of an implementation), ``bound`` (a bound below the exact lower bound
  of the declared mechanism, or a lower bound above a proven upper bound) or ``randomizer`` (a
  project randomizer's sampler against its own declaration);
* implementation: the implementation under test (``path.py:function`` or
  ``module:function``; null when the project's own sampler was audited). Fit rows also come
  from the shuffle and pipeline levels of an implementation (pair ``X0`` / ``X1``: pooled
  output counts of that world).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Annotated

import pyarrow as pa

from shufflesim.simulator.audit.randomizer_level import RandomizerAudit
from shufflesim.simulator.audit.shuffle_level import DIRECTIONS, AttackAudit
from shufflesim.simulator.audit.verdicts import (
    CONSISTENT,
    SUBJECT_IMPLEMENTATION,
    SUBJECT_RANDOMIZER,
    VIOLATED,
    ImplementationVerdict,
    Verdict,
    fit_verdict,
    ldp_verdict,
    verdict_subject,
)
from shufflesim.simulator.results.records import Record


@dataclass(frozen=True)
class AuditRow(Record):
    """One row of the ``audit`` table (docs/results.md): the columns of every row type
    (attack, verdict, fit, randomizer, implementation), null where a type has no value."""

    point: Annotated[int, pa.int32()]
    overrides: str
    randomizer: str
    n: int | None
    epsilon0: float
    delta: float | None
    level: str
    row_type: str
    pair: str | None
    attack: str | None
    direction: str | None
    event: str | None
    trials: int | None
    selection_trials: int | None
    count0: int | None
    count1: int | None
    p0: float | None
    p1: float | None
    p0_limit: float | None
    p1_limit: float | None
    epsilon_lb: float | None
    confidence: float | None
    exact_lower: float | None
    ratio: float | None
    statistic: float | None
    p_value: float | None
    bound: str | None
    bound_kind: str | None
    bound_status: str | None
    bound_epsilon: float | None
    bound_error: float | None
    verdict: str | None
    reason: str | None
    tightness: float | None
    seconds: float | None
    note: str | None
    subject: str | None
    implementation: str | None
    adjusted_p_value: float | None
    strength: str | None
    test_group: int | None


AUDIT_SCHEMA = AuditRow.schema()

COLUMNS = AuditRow.columns()


def _row(context: Mapping, **values) -> dict:
    row = dict.fromkeys(COLUMNS)
    row.update(context)
    row.update(values)
    return row


def attack_records(audit: AttackAudit, context: Mapping) -> list[dict]:
    """Rows of a shuffle- or pipeline-level audit."""
    out = []
    for r in audit.rows:
        b = r.bound
        forward = r.direction == DIRECTIONS[0]
        count0, count1 = (b.count_a, b.count_b) if forward else (b.count_b, b.count_a)
        lim0, lim1 = (b.p_a_lower, b.p_b_upper) if forward else (b.p_b_upper, b.p_a_lower)
        out.append(_row(
            context, n=audit.n, delta=r.delta, level=audit.level, row_type="attack",
            pair=audit.pair, attack=r.attack, direction=r.direction, event=r.event,
            trials=b.trials, selection_trials=b.selection_trials, count0=count0, count1=count1,
            p0=count0 / b.trials, p1=count1 / b.trials, p0_limit=lim0, p1_limit=lim1,
            epsilon_lb=r.epsilon_lb, confidence=r.row_confidence, exact_lower=r.exact,
            ratio=r.ratio, seconds=audit.seconds,
            note=f"{b.events} event(s) evaluated; exact error {r.exact_error}"
            if r.exact_error is not None else f"{b.events} event(s) evaluated",
            implementation=audit.implementation or None))
    for f in audit.fits:
        out.append(_row(context, n=audit.n, level=audit.level, row_type="fit", pair=f.input,
                        attack=f.test, trials=f.samples, statistic=f.statistic,
                        p_value=f.p_value, note="" if f.dof is None else f"dof {f.dof}",
                        implementation=audit.implementation or None))
    return out


def randomizer_records(audit: RandomizerAudit, context: Mapping) -> list[dict]:
    """Rows of a randomizer-level audit: pairs, fits, and the two verdicts (declared eps0 as
    an upper bound on the implementation's LDP eps; goodness of fit)."""
    out = []
    for p in audit.pairs:
        b = p.bound
        out.append(_row(
            context, delta=audit.delta0, level="randomizer", row_type="attack",
            pair=f"({p.x}, {p.x_prime})", attack="ldp", direction=f"{p.x} vs {p.x_prime}",
            event=p.event, trials=b.trials, selection_trials=b.selection_trials,
            count0=b.count_a, count1=b.count_b, p0=b.p_a, p1=b.p_b, p0_limit=b.p_a_lower,
            p1_limit=b.p_b_upper, epsilon_lb=p.epsilon_lb, confidence=p.row_confidence,
            ratio=p.epsilon_lb / audit.epsilon0, seconds=audit.seconds))
    for f in audit.fits:
        out.append(_row(context, level="randomizer", row_type="fit", pair=str(f.input),
                        attack=f.test, trials=f.samples, statistic=f.statistic,
                        p_value=f.p_value, note="" if f.dof is None else f"dof {f.dof}"))
    confidence = audit.options.confidence
    best = audit.best
    if audit.implementation:
        claimed = f"{audit.randomizer}(eps0 = {audit.epsilon0:g}{_delta0(audit)})"
        verdicts = [ldp_verdict(audit.epsilon_lb, audit.epsilon0, confidence,
                                (best.x, best.x_prime), best.event, audit.delta0),
                    fit_verdict(audit.fit_p_value, confidence, claimed, len(audit.fits),
                                f"events: {audit.events}")]
        return out + implementation_records(verdicts, {**context, "delta": audit.delta0},
                                            "randomizer", audit.implementation,
                                            seconds=audit.seconds, note=audit.note)
    approximate = audit.delta0 > 0  # (eps0, delta0)-LDP: the bound is at delta0
    out.append(_row(
        context, delta=audit.delta0, level="randomizer", row_type="verdict",
        bound="declared-eps0-delta0" if approximate else "declared-eps0",
        bound_kind="upper", bound_status="declared", bound_epsilon=audit.epsilon0,
        epsilon_lb=audit.epsilon_lb, confidence=confidence,
        verdict=VIOLATED if audit.ldp_violated else CONSISTENT,
        reason=(f"empirical eps0 lower bound {audit.epsilon_lb:.6g}"
                + (f" at delta0 {audit.delta0:g}" if approximate else "")
                + f" at pair ({best.x}, {best.x_prime}) "
                + ("> " if audit.ldp_violated else "<= ") + f"declared eps0 {audit.epsilon0:g}"
                + (f": not (eps0, delta0) = ({audit.epsilon0:g}, {audit.delta0:g})-LDP"
                   if approximate and audit.ldp_violated else "")),
        tightness=audit.epsilon0 / audit.epsilon_lb if audit.epsilon_lb > 0 else None,
        seconds=audit.seconds, note=audit.note, subject=SUBJECT_RANDOMIZER))
    p = audit.fit_p_value
    out.append(_row(
        context, level="randomizer", row_type="verdict", bound="goodness-of-fit",
        bound_status="declared", p_value=p, confidence=confidence,
        verdict=("not-evaluated" if p is None else VIOLATED if audit.fit_rejected
                 else CONSISTENT),
        reason=("no goodness-of-fit test for these outputs" if p is None else
                f"Bonferroni p-value {p:.3g} " + ("<" if audit.fit_rejected else ">=")
                + f" {1 - confidence:.3g}"), subject=SUBJECT_RANDOMIZER))
    return out


def _delta0(audit: RandomizerAudit) -> str:
    return f", delta0 = {audit.delta0:g}" if audit.delta0 > 0 else ""


def implementation_records(verdicts: Iterable[ImplementationVerdict], context: Mapping,
                           level: str, implementation: str, seconds: float | None = None,
                           note: str = "") -> list[dict]:
    """Verdict rows about the implementation under test (subject ``implementation``)."""
    out = []
    for v in verdicts:
        values = dict(level=level, row_type="verdict", bound=v.bound, bound_kind="claim",
                      bound_status="checked" if v.exact else "claimed",
                      bound_epsilon=v.bound_epsilon,
                      epsilon_lb=v.epsilon_lb, confidence=v.confidence, p_value=v.p_value,
                      verdict=v.verdict, reason=v.sentence, seconds=seconds, note=note,
                      subject=SUBJECT_IMPLEMENTATION, implementation=implementation)
        if v.delta is not None:
            values["delta"] = v.delta
        out.append(_row(context, **values))
    return out


def verdict_records(verdicts: Iterable[Verdict], context: Mapping, level: str,
                    implementation: str = "") -> list[dict]:
    out = []
    for v in verdicts:
        out.append(_row(
            context, n=v.n, delta=v.delta, level=level, row_type="verdict", bound=v.bound,
            bound_kind=v.kind, bound_status=v.status, bound_epsilon=v.epsilon,
            bound_error=v.epsilon_error, exact_lower=v.exact_lower,
            epsilon_lb=v.empirical_lower, confidence=v.empirical_confidence,
            verdict=v.verdict, reason=v.reason, tightness=v.tightness, note=v.note,
            subject=verdict_subject(v, bool(implementation)),
            implementation=implementation or None,
            # an exact violation (not statistical) has p-value 0 (grading.py)
            p_value=0.0 if v.verdict == VIOLATED and (
                v.kind != "upper" or verdict_subject(v, True) != SUBJECT_IMPLEMENTATION)
            else None))
    return out


def _clean(value):
    """Non-finite floats stay floats in Parquet but become null in JSON."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def to_table(records: list[dict]) -> pa.Table:
    return AuditRow.from_columns({name: [r[name] for r in records] for name in COLUMNS})


def to_json_records(records: list[dict]) -> list[dict]:
    """Records without null columns, non-finite floats as null."""
    return [{k: _clean(v) for k, v in r.items() if v is not None} for r in records]
