"""Exact small-n oracle for E[(G_1 + ... + G_n)_+] (the test oracle of the hockey-stick engine).

The users of one group are i.i.d. copies of a GPARV given as :class:`RatioAtoms`
(000, Def. 9 and Thm 12-14): G = a_j - e^eps b_j with probability weight_j, and G = 0 with the
remaining probability. The counts of the atoms in a group of ``count`` users are
Multinomial(count; weights), so

    E[(sum_i G_i)_+] = sum over count vectors k of  multinom(k) * prod_j w_j^k_j * (sum_j c_j k_j)_+

with c_j = a_j - e^eps b_j. This module enumerates every count vector of every group (groups are
independent: the sum runs over their Cartesian product) in :mod:`decimal` arithmetic with
``precision`` significant digits. The inputs are taken at their exact binary values and e^eps is
correctly rounded (``Decimal.exp``), so with the default 50 digits the result is exact to far below
1e-40 relative: it is the oracle every faster method is tested against.

Conventions shared with the engine: atoms of zero weight are ignored; if the weights of a group
sum to more than 1 (RatioAtoms tolerates 1e-12) they are rescaled to sum to exactly 1.

Cost: the number of count vectors, prod over groups of C(count + m, m) with m atoms of non-zero
weight (e.g. 135 751 for n = 40 and four atoms). :func:`enumeration_size` gives it;
``max_outcomes`` bounds it.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from decimal import Decimal, localcontext
from itertools import product

from shufflesim.protocols.bounds.atoms import RatioAtoms
from shufflesim.protocols.errors import ParameterError

Group = tuple[RatioAtoms, int]


def _compositions(total: int, parts: int) -> Iterator[tuple[int, ...]]:
    """All tuples of ``parts`` non-negative integers summing to ``total``."""
    if parts == 1:
        yield (total,)
        return
    for first in range(total, -1, -1):
        for rest in _compositions(total - first, parts - 1):
            yield (first, *rest)


def _group_size(atoms: RatioAtoms, count: int) -> int:
    m = int((atoms.weight > 0).sum())
    return math.comb(count + m, m)


def enumeration_size(groups: Sequence[Group]) -> int:
    """Number of joint count vectors :func:`exact_hockey_stick` visits."""
    size = 1
    for atoms, count in groups:
        size *= _group_size(atoms, int(count))
    return size


def _group_outcomes(atoms: RatioAtoms, count: int,
                    growth: Decimal) -> list[tuple[Decimal, Decimal]]:
    """(value, probability) of every count vector of one group, in the current decimal context."""
    keep = atoms.weight > 0
    c = [Decimal(float(a)) - growth * Decimal(float(b))
         for a, b in zip(atoms.a[keep], atoms.b[keep], strict=True)]
    w = [Decimal(float(x)) for x in atoms.weight[keep]]
    total = sum(w, Decimal(0))
    if total > 1:
        w = [x / total for x in w]
        total = Decimal(1)
    w0 = 1 - total
    c.append(Decimal(0))
    w.append(w0)
    # Powers w_j^k for k = 0..count, computed once.
    powers = []
    for x in w:
        row = [Decimal(1)]
        for _ in range(count):
            row.append(row[-1] * x)
        powers.append(row)
    fact = [math.factorial(k) for k in range(count + 1)]
    out = []
    for ks in _compositions(count, len(w)):
        coef = fact[count]
        for k in ks:
            coef //= fact[k]
        prob = Decimal(coef)
        value = Decimal(0)
        for j, k in enumerate(ks):
            if k:
                prob *= powers[j][k]
                value += k * c[j]
        if prob:
            out.append((value, prob))
    return out


def exact_hockey_stick(groups: Sequence[Group], epsilon: float, *, precision: int = 50,
                       max_outcomes: int = 2_000_000) -> Decimal:
    """E[(sum_i G_i)_+] over independent groups of i.i.d. users, by exact enumeration.

    ``groups`` is a sequence of (RatioAtoms, count). Returns a :class:`~decimal.Decimal` with
    ``precision`` significant digits (see the module docstring for the accuracy).
    """
    if not groups:
        raise ParameterError("groups", groups, "must contain at least one (RatioAtoms, count)")
    for atoms, count in groups:
        if not isinstance(atoms, RatioAtoms):
            raise ParameterError("groups", atoms, "each group must be (RatioAtoms, count)")
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise ParameterError("count", count, "must be an integer >= 0")
    if not (isinstance(epsilon, (int, float)) and math.isfinite(epsilon)):
        raise ParameterError("epsilon", epsilon, "must be a finite number")
    size = enumeration_size(groups)
    if size > max_outcomes:
        raise ParameterError("groups", f"{size} count vectors",
                             f"exceeds max_outcomes = {max_outcomes}")
    with localcontext() as ctx:
        ctx.prec = precision
        growth = Decimal(float(epsilon)).exp()
        per_group = [_group_outcomes(atoms, int(count), growth) for atoms, count in groups]
        total = Decimal(0)
        for combo in product(*per_group):
            value = sum((v for v, _ in combo), Decimal(0))
            if value > 0:
                prob = Decimal(1)
                for _, p in combo:
                    prob *= p
                total += prob * value
        return +total


def exact_delta(groups: Sequence[Group], n: int, epsilon: float, **kwargs) -> float:
    """(1/n) E[(sum_i G_i)_+] as a float (000 Thm 12-14), by :func:`exact_hockey_stick`."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ParameterError("n", n, "must be an integer >= 1")
    return float(exact_hockey_stick(groups, epsilon, **kwargs) / n)
