"""The neighbouring pair as output groups, and the distinguishing statistics (attacks).

Neighbouring datasets X0 = (x0, z2, ..., zn) and X1 = (x1, z2, ..., zn) differ in user 1; the
others hold a fixed x2 or are drawn i.i.d. from a distribution pi over inputs. Either way every
other user's report has the law m = R(x2) (or the mixture sum_x pi(x) R(x)), independently.

Outputs are merged into groups with equal ratios (a, b) = (R(x0)(y) / m(y), R(x1)(y) / m(y)):
the group histogram h of the shuffled reports is a sufficient statistic for telling X0 from X1
(000 Thm 12 and 14): with h_y the number of reports equal to y,

    P0(h) / P1(h) = sum_y h_y a(y) / sum_y h_y b(y),

because P0(h) = Mult(n, m)(h) * sum_y (h_y / n) a(y) (user 1 is any of the n exchangeable
positions). These are exactly the atoms of 000 Thm 14 (``exact_pair_atoms``), and for a mixture
reference the same computation holds with m in place of R(x2), so the exact divergence of the
attacked pair is available for comparison.

A statistic ("attack") maps the group histograms of a chunk of trials to integer bins ordered
so that tail events {bin >= t} and {bin <= t} are the candidate rejection regions:

* :class:`LikelihoodRatioAttack`: the log-likelihood ratio of the histogram (the optimal test,
  Neyman-Pearson). With two groups it is monotone in the count of one group, which is then the
  bin (exact, n + 1 bins); otherwise log LR in [-L, L] (L = max |ln(a / b)| <= eps0) is cut into
  ``resolution`` equal bins. Merging close LR values into one bin only coarsens the candidate
  events; every event stays valid.
* :class:`CountAttack`: the count of one output group (a simple count-threshold test).

Each attack class is registered beside its definition (simulator.audit.levels.register_attack)
and builds its instances for one pair (:meth:`Attack.build`); :func:`build_attacks` builds the
requested attacks of a level in registration order.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any

import numpy as np

from shufflesim.protocols.bounds.atoms import RatioAtoms, Rounding
from shufflesim.protocols.bounds.numerical.atom_sets import atoms_from_masses
from shufflesim.protocols.bounds.numerical.decompositions import (
    exact_pair_atoms,
    has_decomposition,
    is_continuous,
)
from shufflesim.protocols.errors import ParameterError, require
from shufflesim.simulator.audit.levels import ATTACKS, Level, attack_names, register_attack

#: Default number of bins of the log-likelihood ratio with more than two groups.
LR_RESOLUTION = 4096
#: Count attacks on at most this many groups (the most informative ones).
MAX_COUNT_ATTACKS = 2


@dataclass(frozen=True)
class PairModel:
    """The output-group laws of a neighbouring pair (see the module docstring).

    p0[j], p1[j]: probability that user 1's report falls in group j under x0 / x1;
    ref[j]: the same for every other user; n: users; label: how the pair was built;
    atoms: the Thm 14 atoms (a = p0 / ref, b = p1 / ref, weight ref).
    """

    p0: np.ndarray
    p1: np.ndarray
    ref: np.ndarray
    n: int
    label: str
    atoms: RatioAtoms

    def __post_init__(self) -> None:
        require(isinstance(self.n, int) and self.n >= 2, "n", self.n, "must be an integer >= 2")
        for name in ("p0", "p1", "ref"):
            v = getattr(self, name)
            if v.ndim != 1 or v.shape != self.ref.shape or (v < 0).any():
                raise ParameterError(name, v.tolist(), "must be a non-negative 1-D vector")
            if abs(float(v.sum()) - 1.0) > 1e-9:
                raise ParameterError(name, float(v.sum()), "group probabilities must sum to 1")

    @property
    def groups(self) -> int:
        return int(self.ref.shape[0])

    @property
    def log_ratio(self) -> np.ndarray:
        """ln(a_j / b_j) = ln(p0_j / p1_j) for each group (finite for an LDP randomizer)."""
        with np.errstate(divide="ignore"):
            return np.log(self.p0) - np.log(self.p1)

    def world(self, w: int) -> np.ndarray:
        """User 1's group law in world w (0: x0, 1: x1)."""
        require(w in (0, 1), "world", w, "must be 0 or 1")
        return self.p0 if w == 0 else self.p1

    @classmethod
    def from_atoms(cls, atoms: RatioAtoms, n: int, label: str) -> PairModel:
        require(atoms.rounding is Rounding.EXACT, "atoms", atoms.rounding.value,
                "the shuffle-level audit needs exact (finite) output groups")
        w = atoms.weight / atoms.weight.sum()
        p0, p1 = atoms.a * w, atoms.b * w
        return cls(p0 / p0.sum(), p1 / p1.sum(), w, int(n), label, atoms)


def require_finite_groups(randomizer) -> None:
    """The shuffle and pipeline audits attack a histogram over finitely many output groups
    and compare with 000 Thm 14's exact lower bound: both need a pure eps0-LDP randomizer with
    a decomposition (one-line refusal naming why otherwise)."""
    name = randomizer.name
    require(not getattr(randomizer, "multi_message", False), "randomizer", name,
            "is a multi-message randomizer: the pipeline-level audit attacks the output groups "
            "of one report per user; audit it at the shuffle level (level = shuffle), which "
            "attacks the shuffled messages")
    require(float(getattr(randomizer, "delta0", 0.0) or 0.0) == 0.0, "randomizer", name,
            "is (eps0, delta0)-LDP with delta0 > 0: the shuffle and pipeline audits need a pure "
            "eps0-LDP randomizer (finite output groups for the histogram attacks, a finite "
            "privacy-loss range for the exact lower bound, 000 Thm 14); audit it at the "
            "randomizer level (level = randomizer), which gives its (eps0, delta0) verdict")
    if not has_decomposition(randomizer):
        raise ParameterError("randomizer", name,
                             "declares no decomposition: the shuffle and pipeline audits need "
                             "finite output groups and the exact lower bound (000 Thm 14); "
                             "audit it at the randomizer level (level = randomizer)")
    require(not is_continuous(randomizer), "randomizer", randomizer.name,
            "has continuous ratios (only rounded atoms): the shuffle and pipeline audits need "
            "exact finite output groups")


def pair_model(randomizer, n: int, x0, x1, others) -> PairModel:
    """The pair X0 = (x0, others), X1 = (x1, others) of ``randomizer`` with n users.

    ``others``: an input x2 held by users 2..n, or a probability vector over the categorical
    input domain from which each of them draws its input independently.
    """
    require_finite_groups(randomizer)
    if np.ndim(others) == 0:
        atoms = exact_pair_atoms(randomizer, x0, x1, others)
        return PairModel.from_atoms(atoms, n, f"(x0, x1, x2) = ({x0}, {x1}, {others})")
    pi = np.asarray(others, dtype=float)
    d = randomizer._categorical_input_size()
    require(pi.shape == (d,) and (pi >= 0).all() and abs(pi.sum() - 1) < 1e-9, "others",
            pi.tolist(), f"must be a probability vector over the {d} inputs")
    support = [int(x) for x in np.flatnonzero(pi)]
    anchors = sorted({int(x0), int(x1), *support})
    groups = randomizer.output_groups(tuple(anchors))
    mass = np.asarray(groups.mass)
    index = {x: i for i, x in enumerate(anchors)}
    reference = sum(pi[x] * mass[index[x]] for x in support)
    atoms = atoms_from_masses(mass[index[int(x0)]], mass[index[int(x1)]], reference)
    return PairModel.from_atoms(atoms, n, f"x0 = {x0}, x1 = {x1}, others ~ {pi.tolist()}")


class HistogramChunk:
    """The group histograms of a chunk of trials.

    With two groups only the count of group 1 is stored (``column(0) = n - column(1)``), which
    keeps the hot path of binary randomizers one integer per trial.
    """

    def __init__(self, n: int, counts: np.ndarray) -> None:
        self.n = n
        self.counts = counts  # (trials,) count of group 1 when 1-D, else (trials, groups)

    @property
    def trials(self) -> int:
        return int(self.counts.shape[0])

    def column(self, j: int) -> np.ndarray:
        if self.counts.ndim == 1:
            return self.counts if j == 1 else self.n - self.counts
        return self.counts[:, j]

    def dot(self, v: np.ndarray) -> np.ndarray:
        if self.counts.ndim == 1:
            return (self.n - self.counts) * v[0] + self.counts * v[1]
        return self.counts @ v


class Attack(ABC):
    """A statistic of the attacked outputs (here the group histogram), binned (see the module
    docstring). A subclass registered with ``register_attack`` is an attack of the audit."""

    name: str
    bins: int

    @classmethod
    def build(cls, setting: AttackSetting) -> list[Attack]:
        """The instances of this attack for ``setting`` (none when it has nothing to add)."""
        return [cls(setting.model)]

    @abstractmethod
    def bin(self, chunk: HistogramChunk) -> np.ndarray:
        """Integer bin in [0, bins) of every trial of the chunk."""

    def describe(self, side: str, threshold: int) -> str:
        """A readable description of the tail event {bin >= t} (side "upper") or {bin <= t}."""
        op = ">=" if side == "upper" else "<="
        return f"{self.name} bin {op} {threshold}"


@dataclass(frozen=True)
class AttackSetting:
    """What attacks are built for: the attacked pair, the attacks requested and the options.
    ``outputs``: at the pipeline level, the pair's output groups (pipeline_level.OutputGroups).
    """

    model: PairModel
    names: tuple[str, ...]
    resolution: int = LR_RESOLUTION
    max_counts: int = MAX_COUNT_ATTACKS
    outputs: Any = None


@register_attack("lr", levels=(Level.SHUFFLE, Level.PIPELINE),
                 description="the likelihood ratio of the shuffled histogram, thresholded: the "
                             "optimal test")
class LikelihoodRatioAttack(Attack):
    """The log-likelihood ratio ln(P0(h) / P1(h)) of the group histogram, binned."""

    name = "lr"

    @classmethod
    def build(cls, setting: AttackSetting) -> list[Attack]:
        return [cls(setting.model, setting.resolution)]

    def __init__(self, model: PairModel, resolution: int = LR_RESOLUTION) -> None:
        require(isinstance(resolution, int) and resolution >= 2, "resolution", resolution,
                "must be an integer >= 2")
        self.a = model.atoms.a
        self.b = model.atoms.b
        log_ratio = model.log_ratio
        self.two_groups = model.groups == 2
        if self.two_groups:
            # LR is monotone in the count of group 1: increasing when group 1 favours x0.
            self.increasing = bool(log_ratio[1] >= log_ratio[0])
            self.bins = model.n + 1
            self.limit = float(np.max(np.abs(log_ratio)))
        else:
            self.limit = float(np.max(np.abs(log_ratio))) * (1 + 1e-12) + 1e-300
            self.bins = resolution

    def bin(self, chunk: HistogramChunk) -> np.ndarray:
        if self.two_groups:
            return chunk.column(1 if self.increasing else 0)
        score = np.log(chunk.dot(self.a)) - np.log(chunk.dot(self.b))
        scaled = np.floor((score + self.limit) / (2 * self.limit) * self.bins)
        return np.clip(scaled, 0, self.bins - 1).astype(np.int64)

    def describe(self, side: str, threshold: int) -> str:
        op = ">=" if side == "upper" else "<="
        if self.two_groups:
            group = 1 if self.increasing else 0
            return f"lr (count of g{group}) {op} {threshold}"
        width = 2 * self.limit / self.bins
        edge = -self.limit + (threshold if side == "upper" else threshold + 1) * width
        return f"log LR {op} {edge:.6g}"


@register_attack("count", levels=(Level.SHUFFLE, Level.PIPELINE),
                 description="the count of one output group in the shuffled histogram, "
                             "thresholded")
class CountAttack(Attack):
    """The count of reports in output group j (bins 0..n)."""

    @classmethod
    def build(cls, setting: AttackSetting) -> list[Attack]:
        """One count attack per informative group (a != b), at most ``max_counts``, the most
        informative first; none with two groups when "lr" is also requested (the count is then
        the likelihood-ratio test itself, and the same statistic twice would only split the
        confidence)."""
        model = setting.model
        if model.groups == 2 and "lr" in setting.names:
            return []
        info = np.abs(model.log_ratio)
        order = [int(j) for j in np.argsort(-info, kind="stable") if info[j] > 1e-12]
        return [cls(model, j) for j in order[: setting.max_counts]]

    def __init__(self, model: PairModel, group: int, name: str | None = None) -> None:
        require(0 <= group < model.groups, "group", group, f"must lie in [0, {model.groups})")
        self.group = group
        self.bins = model.n + 1
        self.name = name or f"count[g{group}]"

    def bin(self, chunk: HistogramChunk) -> np.ndarray:
        return chunk.column(self.group)

    def describe(self, side: str, threshold: int) -> str:
        op = ">=" if side == "upper" else "<="
        return f"{self.name} {op} {threshold}"


def build_attacks(model: PairModel, names=None, resolution: int = LR_RESOLUTION,
                  max_counts: int = MAX_COUNT_ATTACKS, *, level: Level | str = Level.SHUFFLE,
                  outputs: Any = None) -> list[Attack]:
    """The requested attacks of ``level`` for ``model`` (default: every one that applies), in
    registration order, each built by its class (:meth:`Attack.build`)."""
    allowed = attack_names(level)
    names = allowed if names is None else tuple(names)
    for name in names:
        require(name in allowed, "attacks", name, f"unknown attack; choose from "
                f"{list(allowed)}")
    setting = AttackSetting(model, names, resolution, max_counts, outputs)
    attacks: list[Attack] = []
    for spec in ATTACKS.values():
        if spec.name in names:
            attacks += spec.attack.build(setting)
    require(len(attacks) >= 1, "attacks", list(names), "no informative statistic for this pair")
    return attacks
