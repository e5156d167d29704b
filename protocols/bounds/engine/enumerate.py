"""Vectorized float enumeration of the count vectors (small problems), with error bounds.

The same sum as the exact oracle (protocols.bounds.engine.oracle), in float64: for each group the
count vectors k of its categories (Multinomial(count; w)), probability
exp(ln n! - sum_j ln k_j! + sum_j k_j ln w_j) with a bound on the exponent's rounding, and
value sum_j c_j k_j. Groups are combined by a Cartesian product. Used for tiny problems and to
enumerate the outcomes of small extra groups beside a large one (conditioning method).

Only the values sum_j c_j k_j depend on eps: the count vectors and their probabilities depend on
(count, w) alone and are kept between evaluations (:func:`_count_law`, bounded in bytes), so an
eps search pays for them once (issue 32: 2-RR's three-category blanket at n = 373, 70 500 count
vectors, took 0.45 s for 8 evaluations, mostly rebuilding them).
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from shufflesim.protocols.bounds.engine.common import Categories, U
from shufflesim.protocols.bounds.engine.enumeration_size import composition_count  # noqa: F401
from shufflesim.protocols.bounds.engine.table_cache import bounded_cache

#: bytes of count vectors and probabilities kept between evaluations (:func:`_count_law`)
LAW_BYTES = 64 * 2**20


@lru_cache(maxsize=256)
def _compositions(total: int, parts: int) -> np.ndarray:
    """The count vectors in decreasing lexicographic order (first count = total, ..., 0, each
    followed by the rest's vectors in that order), built part by part with array operations.

    ``rows`` holds the vectors of j parts of every total 0..total, grouped by total in increasing
    order (group t starts at ``start[t]``); the vectors of j + 1 parts of total t are then the
    first start[t + 1] rows (remainders 0..t, i.e. first counts t..0), each prefixed by t minus
    its own total."""
    rows = np.arange(total + 1, dtype=np.int64)[:, None]
    sums = rows[:, 0].copy()
    start = np.arange(total + 2, dtype=np.int64)
    for j in range(2, parts + 1):
        if j == parts:
            prefix = rows[:start[total + 1]]
            out = np.concatenate([(total - sums[:start[total + 1]])[:, None], prefix], axis=1)
            out.setflags(write=False)
            return out
        lengths = start[1:]                        # group t of j + 1 parts: start[t + 1] rows
        group = np.repeat(np.arange(total + 1, dtype=np.int64), lengths)
        first_row = np.concatenate([[0], np.cumsum(lengths)])
        index = np.arange(first_row[-1], dtype=np.int64) - np.repeat(first_row[:-1], lengths)
        rows = np.concatenate([(group - sums[index])[:, None], rows[index]], axis=1)
        sums, start = group, first_row
    rows = rows[start[total]:start[total + 1]]
    rows.setflags(write=False)
    return rows


def compositions(total: int, parts: int) -> np.ndarray:
    """All count vectors of ``parts`` non-negative integers summing to ``total``, shape
    (C(total + parts - 1, parts - 1), parts), in decreasing lexicographic order."""
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


@bounded_cache(8, LAW_BYTES)
def _count_law(count: int, parts: int, w_bytes: bytes):
    """(k, probs, prob_rel_err) of Multinomial(count; w) over its count vectors (w as the bytes
    of a float64 array of ``parts`` entries): eps-independent, kept between evaluations.

    P[k] = exp(ln n! - sum_j ln k_j! + sum_j k_j ln w_j); the error of the exponent (rounding
    of the log-factorials, of ln w_j and of the sums) gives the relative error of P."""
    w = np.frombuffer(w_bytes, dtype=float)
    counts = compositions(count, parts)
    k = counts.astype(float)
    lf, lf_err = _log_factorials(count)
    log_w = np.log(w)
    expo = lf[count] - lf[counts].sum(axis=1) + k @ log_w
    terms = lf[count] + lf[counts].sum(axis=1) + k @ np.abs(log_w)
    expo_err = (lf_err[count] + lf_err[counts].sum(axis=1) + 2 * U * (k @ np.abs(log_w))
                + (parts + 2) * U * terms)
    probs = np.exp(expo)
    rel = np.expm1(expo_err + 2 * U)
    for array in (k, probs, rel):
        array.setflags(write=False)
    return k, probs, rel


def group_outcomes(cat: Categories) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(values, value_err, probs, prob_rel_err) over the count vectors of one group: the
    values sum_j c_j k_j with their rounding bound, and :func:`_count_law`'s probabilities."""
    w = np.ascontiguousarray(cat.w, dtype=float)
    k, probs, rel = _count_law(int(cat.count), int(cat.c.size), w.tobytes())
    values = k @ cat.c
    value_err = cat.c.size * 2 * U * (k @ np.abs(cat.c))
    return values, value_err, probs, rel


def joint_outcomes(cats: list[Categories]):
    """Outcomes of several independent groups: values add, probabilities multiply."""
    values = np.zeros(1)
    value_err = np.zeros(1)
    probs = np.ones(1)
    rel = np.zeros(1)
    if len(cats) == 1:    # the loop below with one group, without its copies (same numbers)
        v, ve, p, r = group_outcomes(cats[0])
        return v, ve + 2 * U * np.abs(v), p, r + 2 * U
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
