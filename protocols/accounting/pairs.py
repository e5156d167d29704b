"""A round's pair of output distributions as a distribution over group counts.

Every pair used here has the form of 000 Thm 12-14. Outputs fall into groups j with reference
mass w_j and ratios (a_j, b_j) (:class:`~protocols.bounds.atoms.RatioAtoms`); the rest
1 - sum_j w_j is the "null" category (a = b = 0). Draw n categories i.i.d. from
(w_1, ..., w_m, 1 - sum w) and let h be the count vector, h ~ M = Mult(n; w, 1 - sum w). Then

    P0(h) = M(h) * A(h) / n,   P1(h) = M(h) * B(h) / n,   A(h) = sum_j h_j a_j, B = sum_j h_j b_j,

and the privacy loss at h is ln(A(h) / B(h)). Derivation (000 Thm 12/13 for the blanket,
Thm 14 for the exact pair): user 1's report falls in group j with probability w_j a_j (resp.
w_j b_j) and the n - 1 others are i.i.d. M-draws (for the blanket: a blanket sample with
probability gamma = sum_j w_j, else a report that does not depend on user 1 and is given to the
adversary, i.e. the null category), so P0(h) = sum_j w_j a_j Mult(n - 1)(h - e_j) and
Mult(n - 1)(h - e_j) = Mult(n)(h) h_j / (n w_j). The histogram h is sufficient (000 Thm 12).
Summing (P0 - e^eps P1)_+ over h gives 000's (1/n) E[(G_1 + ... + G_n)_+], so the hockey-stick
divergence of this pair is exactly the single-round quantity of the engine.

* Blanket pair (000 Thm 13): reference = blanket inf_x R(x). The mechanism's outputs on X0, X1
  are one post-processing of (P0, P1), so the pair dominates the mechanism for every divergence
  with data processing (hockey-stick for all eps in R, Renyi), whatever the other users hold.
* Exact pair (000 Thm 14): reference = R(x2); (P0, P1) *is* the law of the shuffled histogram for
  X0 = (x0, x2, ..., x2), X1 = (x1, x2, ..., x2) (after merging outputs of equal ratios, itself a
  sufficient statistic), hence a lower bound.
* Clone pair (002 Thm 3.2): C ~ Bin(n - 1, p), p = e^-eps0, clones split evenly between x0 and
  x1, user 1 reports x0 with probability q = e^eps0 / (e^eps0 + 1). It has the same form with two
  groups of weight p / 2 and a = (2q/p, 2(1-q)/p), b = (2(1-q)/p, 2q/p) (the identity above only
  needs P[user 1 in group j] = w_j a_j, not a valid 000 decomposition).

Groups with a_j = b_j ("neutral") carry no information on their own but dilute A and B; groups
with a_j != b_j are "informative". :class:`CountModel` holds at most two informative groups and
one neutral group (plus null). Lower bounds may merge groups (merging outputs is a
post-processing of the pair, so it can only lower the divergence); upper bounds may not, so a
randomizer whose blanket needs more is refused with a ParameterError naming it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from shufflesim.protocols.bounds.atoms import RatioAtoms, Rounding
from shufflesim.protocols.bounds.numerical.decompositions import (
    blanket_atoms,
    exact_pair_atoms,
    is_continuous,
    neighbour_candidates,
)
from shufflesim.protocols.errors import ParameterError, require

#: Ratios a, b equal to this relative precision make a group neutral.
_NEUTRAL_RTOL = 1e-12
#: Null weight below this is treated as 0 for exact pairs (their weights sum to 1 analytically).
_NULL_SNAP = 1e-12

#: Randomizers whose blanket atoms fit :class:`CountModel` (two informative groups and one
#: neutral group) and whose canonical pair (0, 1) is provably the worst (input symmetry).
SUPPORTED = ("brr", "krr")


@dataclass(frozen=True)
class CountModel:
    """A pair in the count form of the module docstring.

    ``a``, ``b``, ``w``: the informative groups (one or two, a != b); ``r``, ``w_neutral``: the
    neutral group (a = b = r; weight 0 if none); ``w_null``: the null category's weight;
    ``label``: what the pair is.
    """

    a: tuple[float, ...]
    b: tuple[float, ...]
    w: tuple[float, ...]
    r: float
    w_neutral: float
    w_null: float
    label: str

    @property
    def loss_max(self) -> float:
        """max |ln(a_j / b_j)|: every privacy loss of the pair lies in [-loss_max, loss_max]
        (A / B is a mediant of the ratios a_j / b_j and r / r = 1)."""
        return max(abs(math.log(x / y)) for x, y in zip(self.a, self.b, strict=True))

    @property
    def a_max(self) -> float:
        """Largest a_j or b_j (A / n and B / n never exceed it)."""
        return max(max(self.a), max(self.b), self.r)

    def swapped(self) -> CountModel:
        """The pair (P1, P0)."""
        return CountModel(self.b, self.a, self.w, self.r, self.w_neutral, self.w_null,
                          self.label + " (reversed)")

    def is_swap_symmetric(self) -> bool:
        """True when (P1, P0) is (P0, P1) with the informative groups exchanged: both
        directions then have the same privacy loss distribution."""
        if len(self.a) != 2:
            return False
        return (self.w[0] == self.w[1] and self.a[0] == self.b[1] and self.a[1] == self.b[0])

    def loss_scale(self, n: int) -> float:
        """Normal-approximation standard deviation of the loss, sqrt(sum_j w_j (a_j - b_j)^2 / n)
        (used only to choose discretisation intervals)."""
        var = sum(w * (x - y) ** 2 for x, y, w in zip(self.a, self.b, self.w, strict=True))
        return math.sqrt(var / n) if var > 0 else 0.0


def _is_neutral(a: float, b: float) -> bool:
    return abs(a - b) <= _NEUTRAL_RTOL * max(abs(a), abs(b))


def model_from_atoms(atoms: RatioAtoms, *, kind: str, label: str, name: str = "") -> CountModel:
    """The :class:`CountModel` of an atom set (exact rounding only).

    ``kind`` "upper": refuses atom sets with more than two informative or more than one neutral
    group. ``kind`` "lower": merges groups instead (neutral groups into one; informative groups
    by the sign of a - b), a post-processing of the pair that can only lower its divergence.
    """
    require(kind in ("upper", "lower"), "kind", kind, "must be 'upper' or 'lower'")
    require(atoms.rounding is Rounding.EXACT, "rounding", atoms.rounding.value,
            "composition needs exact (finite-group) decompositions")
    keep = atoms.weight > 0
    a, b, w = atoms.a[keep], atoms.b[keep], atoms.weight[keep]
    neutral = np.array([_is_neutral(x, y) for x, y in zip(a, b, strict=True)], dtype=bool)
    info = ~neutral
    w_null = max(0.0, 1.0 - float(w.sum()))
    if kind == "lower" and w_null < _NULL_SNAP:
        w_null = 0.0
    what = name or label
    if int(neutral.sum()) > 1:
        if kind == "upper":
            raise ParameterError("randomizer", what,
                                 f"its decomposition has {int(neutral.sum())} neutral groups of "
                                 "different ratios; composition supports one "
                                 f"(supported: {', '.join(SUPPORTED)})")
    if int(info.sum()) > 2:
        if kind == "upper":
            raise ParameterError("randomizer", what,
                                 f"its decomposition has {int(info.sum())} informative groups; "
                                 f"composition supports two (supported: {', '.join(SUPPORTED)})")
    wn = float(w[neutral].sum())
    r = float(np.dot(w[neutral], a[neutral]) / wn) if wn > 0 else 0.0
    ai, bi, wi = a[info], b[info], w[info]
    if ai.size > 2:  # lower bounds only: merge by the sign of a - b
        ai, bi, wi = _merge(ai, bi, wi)
    require(ai.size >= 1, "randomizer", what, "the pair is identical (no informative group)")
    return CountModel(tuple(float(x) for x in ai), tuple(float(x) for x in bi),
                      tuple(float(x) for x in wi), r, wn, w_null, label)


def _merge(a: np.ndarray, b: np.ndarray, w: np.ndarray):
    """Merge informative groups into (a > b) and (a < b): mass-weighted ratios."""
    out_a, out_b, out_w = [], [], []
    for g in (a > b, a < b):
        if g.any():
            wg = float(w[g].sum())
            out_a.append(float(np.dot(w[g], a[g]) / wg))
            out_b.append(float(np.dot(w[g], b[g]) / wg))
            out_w.append(wg)
    return np.array(out_a), np.array(out_b), np.array(out_w)


def _name(randomizer) -> str:
    return str(getattr(randomizer, "name", randomizer))


def check_supported(randomizer) -> None:
    """Raise ParameterError naming the randomizer unless its pairs fit the count form."""
    if _name(randomizer) not in SUPPORTED:
        raise ParameterError("randomizer", _name(randomizer),
                             "composition over rounds supports only "
                             f"{', '.join(SUPPORTED)} (their decompositions reduce to two "
                             "informative groups and one neutral group)")


def blanket_model(randomizer) -> CountModel:
    """The 000 Thm 13 blanket pair of ``randomizer`` for its canonical (worst) neighbour pair."""
    check_supported(randomizer)
    cand = neighbour_candidates(randomizer)
    require(cand.exhaustive and len(cand.pairs) == 1, "randomizer", _name(randomizer),
            "composition needs a provably worst neighbour pair")
    x0, x1 = cand.pairs[0]
    return model_from_atoms(blanket_atoms(randomizer, x0, x1), kind="upper",
                            label=f"000 Thm 13 blanket pair ({x0}, {x1})",
                            name=_name(randomizer))


def exact_models(randomizer) -> list[CountModel]:
    """The 000 Thm 14 exact pairs of ``randomizer``, one per candidate triple (x0, x1, x2)
    (groups merged where needed, see :func:`model_from_atoms`; any randomizer with finite
    output groups: merging keeps a valid, possibly weaker, lower bound)."""
    if is_continuous(randomizer):
        raise ParameterError("randomizer", _name(randomizer),
                             "composition needs finite output groups (continuous outputs are "
                             "not supported)")
    out = []
    for t in neighbour_candidates(randomizer).triples:
        out.append(model_from_atoms(exact_pair_atoms(randomizer, *t), kind="lower",
                                    label=f"000 Thm 14 exact pair (x0, x1, x2) = {t}",
                                    name=_name(randomizer)))
    return out


def clone_model(epsilon0: float) -> CountModel:
    """The 002 Thm 3.2 clone pair (C ~ Bin(n - 1, e^-eps0)) in count form (module docstring)."""
    require(isinstance(epsilon0, (int, float)) and 0 < epsilon0 <= 50, "epsilon0", epsilon0,
            "the clone pair is built for 0 < eps0 <= 50")
    p = math.exp(-epsilon0)
    q = 1.0 / (1.0 + math.exp(-epsilon0))
    a = (2 * q / p, 2 * (1 - q) / p)
    return CountModel(a, a[::-1], (p / 2, p / 2), 0.0, 0.0, 1.0 - p,
                      f"002 Thm 3.2 clone pair, eps0 = {epsilon0:g}")
