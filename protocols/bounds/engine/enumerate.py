"""Vectorized float enumeration of the count vectors (small problems), with error bounds.

The same sum as the exact oracle (protocols.bounds.engine.oracle), in float64: for each group the
count vectors k of its categories (Multinomial(count; w)), probability
exp(ln n! - sum_j ln k_j! + sum_j k_j ln w_j) with a bound on the exponent's rounding, and
value sum_j c_j k_j. Groups are combined by a Cartesian product. Used for tiny problems and to
enumerate the outcomes of small extra groups beside a large one (conditioning method).
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from shufflesim.protocols.bounds.engine.common import Categories, U


def composition_count(total: int, parts: int) -> int:
    return math.comb(total + parts - 1, parts - 1)


@lru_cache(maxsize=256)
def _compositions(total: int, parts: int) -> np.ndarray:
    if parts == 1:
        return np.array([[total]], dtype=np.int64)
    blocks = []
    for first in range(total, -1, -1):
        rest = _compositions(total - first, parts - 1)
        blocks.append(np.concatenate([np.full((rest.shape[0], 1), first, dtype=np.int64), rest],
                                     axis=1))
    out = np.concatenate(blocks, axis=0)
    out.setflags(write=False)
    return out


def compositions(total: int, parts: int) -> np.ndarray:
    """All count vectors of ``parts`` non-negative integers summing to ``total``, shape
    (C(total + parts - 1, parts - 1), parts) (built recursively on the first count, with the
    sub-problems cached)."""
    return _compositions(int(total), int(parts))


@lru_cache(maxsize=64)
def _log_factorials(n: int) -> tuple[np.ndarray, np.ndarray]:
    """ln k! for k = 0..n by cumulative sums of ln i, and a bound on their rounding error
    (each ln i within u relative, and the running sum within k u of its value)."""
    logs = np.log(np.arange(1, n + 1, dtype=float))
    lf = np.concatenate([[0.0], np.cumsum(logs)])
    k = np.arange(n + 1, dtype=float)
    err = 2 * U * (k + 1) * (lf + 1.0)
    return lf, err


def group_outcomes(cat: Categories) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(values, value_err, probs, prob_rel_err) over the count vectors of one group.

    P[k] = exp(ln n! - sum_j ln k_j! + sum_j k_j ln w_j); the error of the exponent (rounding
    of the log-factorials, of ln w_j and of the sums) gives the relative error of P."""
    counts = compositions(cat.count, cat.c.size)
    k = counts.astype(float)
    values = k @ cat.c
    value_err = cat.c.size * 2 * U * (k @ np.abs(cat.c))
    lf, lf_err = _log_factorials(cat.count)
    log_w = np.log(cat.w)
    expo = lf[cat.count] - lf[counts].sum(axis=1) + k @ log_w
    terms = lf[cat.count] + lf[counts].sum(axis=1) + k @ np.abs(log_w)
    expo_err = (lf_err[cat.count] + lf_err[counts].sum(axis=1) + 2 * U * (k @ np.abs(log_w))
                + (cat.c.size + 2) * U * terms)
    probs = np.exp(expo)
    rel = np.expm1(expo_err + 2 * U)
    return values, value_err, probs, rel


def joint_outcomes(cats: list[Categories]):
    """Outcomes of several independent groups: values add, probabilities multiply."""
    values = np.zeros(1)
    value_err = np.zeros(1)
    probs = np.ones(1)
    rel = np.zeros(1)
    for cat in cats:
        v, ve, p, r = group_outcomes(cat)
        values = (values[:, None] + v[None, :]).ravel()
        value_err = (value_err[:, None] + ve[None, :]).ravel() + 2 * U * np.abs(values)
        probs = (probs[:, None] * p[None, :]).ravel()
        rel = (rel[:, None] + r[None, :]).ravel() + 2 * U
    return values, value_err, probs, rel


def enumeration_bounds(cats: list[Categories]) -> tuple[float, float]:
    """Guaranteed (lower, upper) for E[(sum)_+] by full enumeration."""
    values, value_err, probs, rel = joint_outcomes(cats)
    lower = float((probs * (1 - rel)) @ np.maximum(values - value_err, 0.0))
    upper = float((probs * (1 + rel)) @ np.maximum(values + value_err, 0.0))
    n_terms = values.size
    return max(lower * (1 - 2 * n_terms * U), 0.0), upper * (1 + 2 * n_terms * U)
