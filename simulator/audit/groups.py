"""Output groups of a neighbouring pair, output by output: which group each enumerated output
of the declared randomizer falls in, and the pair's model (attacks.PairModel) built from the
declared pmf. The shuffle level maps the reports of an implementation under test through it,
the pipeline level the released reports (moved here from pipeline_level.py so that both levels
share it).

X0 = (x0, z2, ..., zn), X1 = (x1, z2, ..., zn), the others holding a fixed x2 or drawing their
inputs from a probability vector pi; outputs with equal ratio pairs (R(x0)(y) / m(y),
R(x1)(y) / m(y)), m the others' law, are one group (attacks.py explains why the group
histogram is sufficient).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from shufflesim.protocols.bounds.atoms import RatioAtoms
from shufflesim.protocols.errors import require
from shufflesim.protocols.randomizers.base import MAX_ENUMERABLE_OUTPUTS
from shufflesim.simulator.audit.attacks import PairModel

#: Relative precision at which outputs with equal ratios are merged into one group.
_MERGE = 2.0**-40


@dataclasses.dataclass(frozen=True)
class OutputGroups:
    """Outputs of an enumerable randomizer grouped for the pair, with the pair's model."""

    group: np.ndarray  # group of each output index
    order_bin: np.ndarray  # bin of each output for the order attack
    missing_bin: int  # bin of "no report at that position"
    order_bins: int
    model: PairModel
    rows: np.ndarray  # declared pmf rows: R(x0), R(x1), m (the others' law)


def others_law(randomizer, others) -> tuple[np.ndarray, str]:
    """The declared law m of one other user's report (x2 fixed, or the mixture over pi), and
    how to name it in a label."""
    if np.ndim(others) == 0:
        return np.asarray(randomizer.output_pmf(np.array([others])), dtype=float)[0], \
            f"x2 = {others}"
    pi = np.asarray(others, dtype=float)
    d = randomizer.input_domain.size
    require(pi.shape == (d,) and (pi >= 0).all() and abs(pi.sum() - 1) < 1e-9, "others",
            pi.tolist(), f"must be a probability vector over the {d} inputs")
    support = np.flatnonzero(pi)
    rows = np.asarray(randomizer.output_pmf(support), dtype=float)
    return pi[support] @ rows, f"others ~ {pi.tolist()}"


def output_groups(randomizer, n: int, x0, x1, others) -> OutputGroups:
    """Group the outputs by their ratio pair (a, b) and order them for the order attack;
    ``others`` is x2 or a probability vector over the inputs."""
    size = randomizer.output_size
    require(size is not None and size <= MAX_ENUMERABLE_OUTPUTS, "output_size", size,
            f"this audit needs at most {MAX_ENUMERABLE_OUTPUTS} discrete outputs")
    pair = np.asarray(randomizer.output_pmf(np.array([x0, x1])), dtype=float)
    ref_row, ref_label = others_law(randomizer, others)
    rows = np.vstack([pair, ref_row])
    positive = rows[2] > 0
    require(bool((rows[:2, ~positive] == 0).all()), "x2", others,
            "the others' reports must charge every output that R(x0) or R(x1) can produce")
    # Outputs no input of the pair can produce go to group 0 (they never occur).
    a = rows[0, positive] / rows[2, positive]
    b = rows[1, positive] / rows[2, positive]
    scale = max(float(a.max()), float(b.max()))
    keys = np.rint(np.stack([a, b], axis=1) / (scale * _MERGE)).astype(np.int64)
    _, inverse = np.unique(keys, axis=0, return_inverse=True)
    group = np.zeros(rows.shape[1], dtype=np.int64)
    group[positive] = inverse.reshape(-1)
    g = int(group.max()) + 1
    masses = [np.bincount(group, weights=row, minlength=g) for row in rows]
    ref = masses[2]
    atoms = RatioAtoms(masses[0] / ref, masses[1] / ref, ref / ref.sum())
    label = (f"(x0, x1, x2) = ({x0}, {x1}, {others})" if np.ndim(others) == 0
             else f"x0 = {x0}, x1 = {x1}, {ref_label}")
    model = PairModel(masses[0] / masses[0].sum(), masses[1] / masses[1].sum(), ref / ref.sum(),
                      int(n), label, atoms)
    with np.errstate(divide="ignore", invalid="ignore"):
        single = np.log(rows[0]) - np.log(rows[1])
    single = np.where(np.isnan(single), 0.0, single)  # outputs neither input can produce
    levels = np.unique(np.append(np.round(single, 12), 0.0))
    order_bin = np.searchsorted(levels, np.round(single, 12))
    missing = int(np.searchsorted(levels, 0.0))
    return OutputGroups(group, order_bin, missing, int(levels.size), model, rows)


#: Reports per block when matching ratio pairs to atoms (bounded memory: block x groups).
_MATCH_BLOCK = 1 << 15
#: Largest distance in (ln a, ln b) at which a report's ratio pair matches an atom.
_MATCH_TOLERANCE = 1e-7


@dataclasses.dataclass(frozen=True)
class RatioGroups:
    """Reports of an output space too large to enumerate (e.g. a unary encoding of more than
    20 values) mapped to the pair's groups by their declared ratio pair
    (ln R(x0)(y) / m(y), ln R(x1)(y) / m(y)), computed with the claim's ``log_prob``; the
    groups and their model come from the claim's decomposition (attacks.pair_model), so no
    output table is built. A report whose ratio pair is no atom's (the claim gives it another
    probability than any output it can produce, or probability 0) is ``unmatched``."""

    model: PairModel
    randomizer: object
    x0: object
    x1: object
    others: object
    log_a: np.ndarray
    log_b: np.ndarray

    @classmethod
    def build(cls, randomizer, model: PairModel, x0, x1, others) -> RatioGroups:
        with np.errstate(divide="ignore"):
            return cls(model, randomizer, x0, x1, others, np.log(model.atoms.a),
                       np.log(model.atoms.b))

    def _log_m(self, reports: np.ndarray) -> np.ndarray:
        r = self.randomizer
        if np.ndim(self.others) == 0:
            return np.asarray(r.log_prob(np.asarray(self.others), reports), dtype=float)
        pi = np.asarray(self.others, dtype=float)
        support = np.flatnonzero(pi)
        terms = np.stack([np.asarray(r.log_prob(np.asarray(x), reports), dtype=float)
                          + np.log(pi[x]) for x in support])  # a loop over the support
        return np.logaddexp.reduce(terms, axis=0)

    def groups_of(self, reports: np.ndarray) -> tuple[np.ndarray, int]:
        """(group of every report (leading axes kept), number of unmatched reports, which are
        put in group 0)."""
        r = self.randomizer
        shape = reports.shape[: reports.ndim - len(tuple(r.output_shape))]
        flat = reports.reshape((-1,) + tuple(r.output_shape))
        out = np.zeros(flat.shape[0], dtype=np.int64)
        unmatched = 0
        for start in range(0, flat.shape[0], _MATCH_BLOCK):  # blocks bound the memory
            y = flat[start:start + _MATCH_BLOCK]
            log_m = self._log_m(y)
            with np.errstate(invalid="ignore"):
                la = np.asarray(r.log_prob(np.asarray(self.x0), y), dtype=float) - log_m
                lb = np.asarray(r.log_prob(np.asarray(self.x1), y), dtype=float) - log_m
            with np.errstate(invalid="ignore"):
                dist = (np.abs(la[:, None] - self.log_a[None, :])
                        + np.abs(lb[:, None] - self.log_b[None, :]))
            dist = np.where(np.isnan(dist), np.inf, dist)
            best = np.argmin(dist, axis=1)
            ok = dist[np.arange(best.size), best] <= _MATCH_TOLERANCE
            unmatched += int((~ok).sum())
            out[start:start + y.shape[0]] = np.where(ok, best, 0)
        return out.reshape(shape), unmatched
