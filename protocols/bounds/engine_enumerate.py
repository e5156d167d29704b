"""Vectorized float enumeration of the count vectors (small problems), with error bounds.

The same sum as the exact oracle (protocols.bounds.enumeration), in float64: for each group the
count vectors k of its categories (Multinomial(count; w)), probability as a chain of binomial
pmfs P[k] = prod_j Bin(k_j; count - k_1 - ... - k_{j-1}, w_j / (w_j + ... + w_K)), and value
sum_j c_j k_j. Groups are combined by a Cartesian product. Used for tiny problems and to
enumerate the outcomes of small extra groups beside a large one (conditioning method).
"""

from __future__ import annotations

import math
from itertools import combinations

import numpy as np
from scipy import stats

from protocols.bounds.engine_common import REL_SPECIAL, Categories, U


def composition_count(total: int, parts: int) -> int:
    return math.comb(total + parts - 1, parts - 1)


def compositions(total: int, parts: int) -> np.ndarray:
    """All count vectors of ``parts`` non-negative integers summing to ``total`` (stars and
    bars), shape (C(total + parts - 1, parts - 1), parts)."""
    if parts == 1:
        return np.array([[total]], dtype=np.int64)
    bars = np.array(list(combinations(range(total + parts - 1), parts - 1)), dtype=np.int64)
    bars = bars.reshape(-1, parts - 1)
    edges = np.concatenate([np.full((bars.shape[0], 1), -1), bars,
                            np.full((bars.shape[0], 1), total + parts - 1)], axis=1)
    return np.diff(edges, axis=1) - 1


def group_outcomes(cat: Categories) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(values, value_err, probs, prob_rel_err) over the count vectors of one group."""
    k = compositions(cat.count, cat.c.size).astype(float)
    values = k @ cat.c
    value_err = cat.c.size * 2 * U * (k @ np.abs(cat.c))
    probs = np.ones(k.shape[0])
    remaining = np.full(k.shape[0], float(cat.count))
    tail_w = np.cumsum(cat.w[::-1])[::-1]           # w_j + ... + w_K
    for j in range(cat.c.size - 1):
        share = min(1.0, cat.w[j] / tail_w[j])
        probs *= stats.binom.pmf(k[:, j], remaining, share)
        remaining -= k[:, j]
    rel = (cat.c.size - 1) * (REL_SPECIAL + 4 * U) + cat.count * 8 * U
    return values, value_err, probs, np.full(k.shape[0], rel)


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
