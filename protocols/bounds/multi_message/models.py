"""From a multi-message randomizer to the count models of
:mod:`shufflesim.protocols.bounds.multi_message.kernels` (the adapter; no name tables: it reads
only the contract of protocols/randomizers/multi_message/base.py: ``message_groups``,
``blanket_messages_per_client``, ``neighbour_candidates``).

The view and what is sufficient
-------------------------------
The analyzer sees the multiset of all n m messages. Fix a neighbour pair (x0, x1) for user 1 and
group the message alphabet so that every message of a group has the same probability under x0,
under x1 and under the blanket (``message_groups``); lambda_j(g) = P_xj(y) / B(y) is the
likelihood ratio of one message of group g. When every other message is a blanket message
(i.i.d. B), a uniform shuffle gives P_j(multiset) proportional to sum_k lambda_j(y_k) (sum over
the messages; the other factors do not depend on j), so the likelihood ratio of the view is

    P0 / P1 = sum_g c_g lambda_0(g) / sum_g c_g lambda_1(g),   c_g = messages in group g.

It depends on the group counts only through a two-dimensional statistic in two cases:

* **cells**: exactly one group ("cell 0") has lambda_0 > lambda_1, one ("cell 1") has
  lambda_1 > lambda_0, and lambda_0 = lambda_1 takes one common value on all other groups; the
  ratio is then a function of (c_0, c_1) (DUMP, balls-into-bins, binary summation);
* **product**: lambda_0 takes two values (groups H0 where it is high) and lambda_1 two values
  (H1), and the blanket and both input laws make the events "in H0" and "in H1" independent;
  the ratio is a function of (A, B) = (messages in H0, messages in H1), independent coordinates
  (Cheu et al.: the bit columns x0 and x1).

In either case the statistic is sufficient (the likelihood ratio is a function of it), so its
hockey-stick divergence is the exact divergence of the whole view.

Upper model (proven)
--------------------
Give the analyzer, besides the shuffled multiset, the multiset of the other users' *input*
messages, separately. Those are independent of user 1's input, so the divergence of this richer
view is that of "user 1's input message + the N = n b blanket messages of all users" (user 1's
own blanket messages are independent of its input too). The real view is a post-processing
of the richer one (merge the two multisets), so its divergence is at most the blanket-only
model's, for every dataset of the other users: a proven upper bound, computed exactly, for the
pairs the randomizer declares (``neighbour_candidates``: exhaustive under its permutation
symmetry).

Lower model (proven)
--------------------
A concrete neighbouring pair: the other users all hold x*. Any function of the view gives a
lower bound (data processing); the bound keeps the two-dimensional statistic above. The other
users' n - 1 input messages then add a second group of messages to it: ignored when they are
invisible to it (no mass in the cells, or all of it in one cell: a constant shift), a second
symmetric group (cells: each cell w.p. t, with symmetric blanket) or a second binomial per
coordinate (product). When they are invisible the lower model *is* the upper model and the
divergence is exact.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from shufflesim.protocols.bounds.engine.common import Estimate
from shufflesim.protocols.bounds.multi_message import kernels
from shufflesim.protocols.errors import ParameterError, require
from shufflesim.protocols.lazy import lazy_module

#: the blanket-only model's two-count sums (not the thinned model's)
two_count = lazy_module("shufflesim.protocols.bounds.numerical.two_count")

#: Largest (slices x window) table of the thinned lower model; beyond it the model is skipped
#: (its tables cost memory and time proportional to this).
THINNED_MAX_CELLS = 1_500_000
#: Relative tolerance when comparing likelihood ratios of groups.
RATIO_TOLERANCE = 1e-9
#: Groups whose mass under the blanket and under every anchor is below this are left out of
#: the classification (their ratios are underflow noise; their total mass is charged nowhere
#: else because it is below 1e-250 per group, far below every kernel's slack).
NEGLIGIBLE = 1e-250


def is_multi_message(randomizer) -> bool:
    """The applicability predicate of the multi-message bounds."""
    return bool(getattr(randomizer, "multi_message", False))


def _close(a, b) -> np.ndarray:
    return np.abs(np.asarray(a) - np.asarray(b)) <= RATIO_TOLERANCE * np.maximum(
        np.abs(a), np.abs(b))


@dataclass(frozen=True)
class CellModel:
    """Two cells: blanket masses (s0, s1), user (u0, u1) under X0 and (v0, v1) under X1,
    ``exhaustive``: every message lies in a cell; ``others``: the other users' input messages
    as (count, t0, t1), or None when they are invisible."""

    blanket: tuple[float, float]
    first: tuple[float, float]
    second: tuple[float, float]
    exhaustive: bool
    others: tuple[int, float, float] | None = None

    @property
    def symmetric(self) -> bool:
        return (self.blanket[0] == self.blanket[1] and self.first[0] == self.second[1]
                and self.first[1] == self.second[0])

    def delta(self, blanket_count: int, epsilon: float) -> Estimate:
        """max of both directions' divergence at eps."""
        if self.others is None:
            pair = two_count.TwoCountPair(blanket_count + 1, self.blanket, self.first,
                                          self.second, exhaustive=self.exhaustive)
            return two_count.two_count_delta(pair, epsilon)
        count, t0, t1 = self.others
        user = (self.first[0], self.first[1], max(0.0, 1.0 - sum(self.first)))
        return kernels.symmetric_cells_delta(
            [(blanket_count, self.blanket[0]), (count, t0)], user, epsilon)


@dataclass(frozen=True)
class ProductModel:
    """Independent coordinates: blanket P[in H0], P[in H1] = (pa, pb); user's under X0 and X1;
    others' input messages (count, wa, wb) or None."""

    blanket: tuple[float, float]
    first: tuple[float, float]
    second: tuple[float, float]
    others: tuple[int, float, float] | None = None

    def delta(self, blanket_count: int, epsilon: float) -> Estimate:
        forward, backward = _product_tables(self, blanket_count)
        return kernels.max_estimate([kernels.product_table_delta(forward, epsilon),
                                     kernels.product_table_delta(backward, epsilon)])


@lru_cache(maxsize=64)
def _product_tables(model: ProductModel, blanket_count: int) -> tuple[dict, dict]:
    """kernels.product_tables of both directions (eps-independent: built once per search)."""
    laws = []
    for coordinate in (0, 1):
        base = kernels.binomial_law(blanket_count, model.blanket[coordinate])
        if model.others is not None:
            base = base.convolve(kernels.binomial_law(model.others[0],
                                                      model.others[1 + coordinate]))
        laws.append((base.plus_bernoulli(model.first[coordinate]),
                     base.plus_bernoulli(model.second[coordinate])))
    (a0, a1), (b0, b1) = laws
    return (kernels.product_tables((a0, a1), (b0, b1)),
            kernels.product_tables((a1, a0), (b1, b0)))


def _negligible(groups) -> np.ndarray:
    return (groups.blanket < NEGLIGIBLE) & np.all(groups.mass < NEGLIGIBLE, axis=0)


@dataclass(frozen=True)
class ThinnedProductModel:
    """The product model after the analyzer drops the messages of a marker set (those more
    likely under x* than under the blanket, e.g. Cheu's bit x* = 1): ``keep`` = (blanket,
    other users' input, user 1) probabilities of being kept, ``columns`` the kept messages'
    column probabilities (the same for blanket and the others' kept messages), ``first`` /
    ``second`` user 1's kept columns under X0 / X1; ``others`` the count n - 1."""

    columns: tuple[float, float]
    first: tuple[float, float]
    second: tuple[float, float]
    keep: tuple[float, float, float]
    others: int

    def delta(self, blanket_count: int, epsilon: float) -> Estimate:
        """A lower estimate only (``upper`` = 1): the model serves the lower bound, whose
        search reads the lower side (protocols.bounds.multi_message.bounds)."""
        values = [kernels.thinned_product_lower(tables, epsilon)
                  for tables in _thinned_tables(self, blanket_count)]
        return kernels.interval(max(values, default=0.0), 1.0, "thinned-product")


def thinned_tables_of(model: ThinnedProductModel, blanket_count: int) -> tuple:
    """kernels.thinned_tables of the model (one per direction; none when too large)."""
    return _thinned_tables(model, blanket_count)


@lru_cache(maxsize=16)
def _thinned_tables(model: ThinnedProductModel, blanket_count: int) -> tuple:
    tail = kernels.THINNED_TAIL
    retained = kernels.binomial_law(blanket_count, model.keep[0], tail).convolve(
        kernels.binomial_law(model.others, model.keep[1], tail))
    last = int(retained.start + retained.pmf.size)
    width = max(np.diff(kernels.binomial_window(last, p, tail))[0] for p in model.columns)
    if retained.pmf.size * (width + 2) > THINNED_MAX_CELLS:
        return ()  # too large to tabulate: the cheap lower models stand alone
    forward = kernels.thinned_tables(retained, model.keep[2], model.columns, model.first,
                                     model.second)
    if model.columns[0] == model.columns[1] and model.first == model.second[::-1]:
        return (forward,)  # exchanging the columns maps P0 to P1: both directions agree
    return (forward, kernels.thinned_tables(retained, model.keep[2], model.columns,
                                            model.second, model.first))


def thinned_model(randomizer, x0: int, x1: int, x_star: int, n: int):
    """The :class:`ThinnedProductModel` of the pair with the others at x_star, or None when
    the messages do not fit it (no product family, no marker, kept columns not product, or the
    kept columns of blanket and others differ)."""
    if x_star in (x0, x1):
        return None
    groups = randomizer.message_groups((x0, x1, x_star))
    found = _classify(groups)
    if found is None or found[0] != "product":
        return None
    hi0, hi1 = found[1]
    lam2 = _ratios(groups, 2)
    keep = (groups.blanket > 0) & ~_negligible(groups)
    if not keep.any():
        return None
    kept = keep & ~_close(lam2, lam2[keep].max()) & (lam2 < lam2[keep].max())
    if not kept.any() or kept.sum() == keep.sum():
        return None
    laws = [groups.blanket, groups.mass[0], groups.mass[1], groups.mass[2]]
    probability, cols = [], []
    for law in laws:
        total = float(law[kept].sum())
        if total <= 0:
            return None
        conditional = np.where(kept, law, 0.0) / total
        if not _independent(conditional, hi0, hi1):
            return None
        probability.append(total)
        cols.append((float(conditional[hi0].sum()), float(conditional[hi1].sum())))
    if not (np.allclose(cols[0], cols[3], rtol=1e-12, atol=0)
            and abs(probability[1] - probability[2]) <= 1e-12 * probability[1]):
        return None
    return ThinnedProductModel(cols[0], cols[1], cols[2],
                               (probability[0], probability[3], probability[1]), n - 1)


def _ratios(groups, row: int) -> np.ndarray:
    blanket = np.where(_negligible(groups), 0.0, groups.blanket)
    mass = np.where(_negligible(groups), 0.0, groups.mass[row])
    require(bool(np.all((blanket > 0) | (mass == 0))), "randomizer", "multi-message",
            "an input message lands where no blanket message can: no blanket model")
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(blanket > 0, mass / np.where(blanket > 0, blanket, 1.0), 0.0)


def _classify(groups):
    """("cells", masks) or ("product", masks) for the anchors' first two rows, else None."""
    keep = (groups.blanket > 0) & ~_negligible(groups)
    lam0, lam1 = _ratios(groups, 0), _ratios(groups, 1)
    same = _close(lam0, lam1)
    cell0 = keep & ~same & (lam0 > lam1)
    cell1 = keep & ~same & (lam1 > lam0)
    rest = keep & same

    def uniform(mask, values):
        return mask.any() and bool(np.all(_close(values[mask], values[mask][0])))

    if (uniform(cell0, lam0) and uniform(cell0, lam1) and uniform(cell1, lam0)
            and uniform(cell1, lam1) and (not rest.any() or uniform(rest, lam0))):
        return "cells", (cell0, cell1, rest)
    hi0 = keep & _close(lam0, lam0[keep].max())
    hi1 = keep & _close(lam1, lam1[keep].max())
    lo0, lo1 = keep & ~hi0, keep & ~hi1
    if (lo0.any() and lo1.any() and uniform(lo0, lam0) and uniform(lo1, lam1)
            and _independent(groups.blanket, hi0, hi1)
            and all(_independent(groups.mass[j], hi0, hi1) for j in (0, 1))):
        return "product", (hi0, hi1)
    return None


def _independent(mass: np.ndarray, first: np.ndarray, second: np.ndarray) -> bool:
    joint = float(mass[first & second].sum())
    product = float(mass[first].sum()) * float(mass[second].sum())
    return abs(joint - product) <= 1e-10 * max(product, 1e-300) or joint == product


def pair_model(randomizer, x0: int, x1: int, x_star: int | None = None, n: int = 2):
    """The count model of the pair (x0, x1): the blanket-only model (x_star None) or the
    concrete pair with the n - 1 other users at x_star. ParameterError when the randomizer's
    messages fit neither family; None when x_star's messages fit no supported lower model."""
    anchors = (x0, x1) if x_star is None else (x0, x1, x_star)
    groups = randomizer.message_groups(anchors)
    found = _classify(groups)
    if found is None:
        raise ParameterError(
            "randomizer", getattr(randomizer, "name", randomizer),
            "its messages give no two-count sufficient statistic (neither cells nor "
            "independent coordinates): no exact multi-message model")
    kind, masks = found
    mass, blanket = groups.mass, groups.blanket
    if kind == "cells":
        cell0, cell1, rest = masks
        cells = (float(blanket[cell0].sum()), float(blanket[cell1].sum()))
        first = (float(mass[0][cell0].sum()), float(mass[0][cell1].sum()))
        second = (float(mass[1][cell0].sum()), float(mass[1][cell1].sum()))
        exhaustive = not rest.any() or float(blanket[rest].sum()) == 0.0
        model = CellModel(cells, first, second, exhaustive)
        if x_star is None:
            return model
        t0, t1 = float(mass[2][cell0].sum()), float(mass[2][cell1].sum())
        if t0 + t1 == 0.0 or max(t0, t1) >= 1.0 - 1e-15:
            return model  # invisible, or a constant shift of one count
        if model.symmetric and t0 == t1 and not exhaustive:
            return CellModel(cells, first, second, exhaustive, (n - 1, t0, t1))
        return None
    hi0, hi1 = masks
    cols = (float(blanket[hi0].sum()), float(blanket[hi1].sum()))
    first = (float(mass[0][hi0].sum()), float(mass[0][hi1].sum()))
    second = (float(mass[1][hi0].sum()), float(mass[1][hi1].sum()))
    if x_star is None:
        return ProductModel(cols, first, second)
    if not _independent(mass[2], hi0, hi1):
        return None
    others = (n - 1, float(mass[2][hi0].sum()), float(mass[2][hi1].sum()))
    return ProductModel(cols, first, second, others)


def candidate_pairs(randomizer) -> tuple[tuple, bool]:
    """(pairs, exhaustive) from the randomizer's ``neighbour_candidates``."""
    candidates = randomizer.neighbour_candidates()
    return tuple(tuple(int(x) for x in p) for p in candidates.pairs), bool(candidates.exhaustive)


def third_values(randomizer, x0: int, x1: int) -> list[int]:
    """Values x* for the other users in the lower model: one value outside {x0, x1} (any one,
    for the permutation-symmetric randomizers; else every value up to 16), then x0 and x1."""
    size = int(randomizer.input_domain.size)
    outside = [x for x in range(size) if x not in (x0, x1)]
    symmetric = getattr(randomizer, "input_symmetry", None) == "permutation"
    return (outside[:1] if symmetric else outside[:16]) + [x0, x1]
