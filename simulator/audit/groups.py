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
