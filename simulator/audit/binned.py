"""Continuous scalar claims at the shuffle level (issue 29): the reports binned at fixed cut
points, then the histogram attacks of the discrete case.

The shuffle level attacks a histogram over finitely many output groups. A continuous claim
(laplace, gaussian) has none; binning every report at cut points c_1 < ... < c_{B-1} is a
post-processing of each report, hence of the shuffled multiset, so

* any lower bound on the binned shuffled output's eps is one on the implementation's;
* under the claim, the binned shuffled output's eps is at most the continuous claim's, so the
  proven upper bounds of the *continuous* claim judge it (``implementation-shuffled``);
* the goodness of fit of the binned reports against the claim's bin probabilities
  (cdf differences) tests the claimed law (a Gaussian with sigma 20 % too small is seen there;
  (eps0, delta0) claims have no proven shuffled upper bound to compare with).

The cut points are quantiles of the claim's own sampler at x0 and x1 (``BINS`` equal-probability
cells of each, merged), drawn from a stream apart from the audit's samples, so they are fixed
before the samples they bin. The exact value beside each row is that of the binned claim (a
lower bound on the continuous claim's).
"""

from __future__ import annotations

import numpy as np

from shufflesim.protocols.errors import ParameterError, require
from shufflesim.protocols.randomizers.domains import Interval
from shufflesim.simulator.audit.sampling import child
from shufflesim.simulator.audit.shuffle_level import default_triple

#: Equal-probability cells per input of the pair.
BINS = 24
#: Claim samples per input used to place the cut points.
PILOT = 20_000
#: Spawn key of those samples.
CUTS_KEY = 0xB12


class BinnedClaim:
    """A continuous scalar claim seen through fixed cut points: a discrete randomizer with
    ``len(cuts) + 1`` outputs (module docstring)."""

    output_kind = "discrete"
    delta0 = 0.0
    multi_message = False
    output_shape = ()

    def __init__(self, declared, cuts: np.ndarray) -> None:
        self.continuous = declared
        self.cuts = np.asarray(cuts, dtype=float)
        self.name = f"{declared.name}[{self.cuts.size + 1} bins]"
        self.epsilon0 = float(declared.epsilon0)
        self.input_domain = declared.input_domain
        self.output_size = int(self.cuts.size + 1)

    def output_pmf(self, values) -> np.ndarray:
        values = np.asarray(values, dtype=float).reshape(-1)
        edges = np.concatenate(([-np.inf], self.cuts, [np.inf]))
        cdf = np.asarray(self.continuous.cdf(values[:, None], edges[None, :]), dtype=float)
        cdf[:, 0], cdf[:, -1] = 0.0, 1.0
        return np.clip(np.diff(cdf, axis=1), 0.0, None)

    def output_index(self, reports) -> np.ndarray:
        return np.searchsorted(self.cuts, np.asarray(reports, dtype=float), side="right")


def is_binnable(declared) -> bool:
    """A continuous claim with scalar reports, an interval of inputs and a cdf."""
    return (declared is not None and getattr(declared, "output_kind", "") == "continuous"
            and tuple(getattr(declared, "output_shape", (0,))) == ()
            and isinstance(declared.input_domain, Interval) and hasattr(declared, "cdf"))


def cut_points(declared, x0, x1, seed: np.random.SeedSequence) -> np.ndarray:
    """The cut points (module docstring)."""
    rng = np.random.default_rng(child(seed, CUTS_KEY))
    q = np.linspace(0, 1, BINS + 1)[1:-1]
    cuts = [np.quantile(np.asarray(declared.randomize(np.full(PILOT, x), rng), dtype=float), q)
            for x in (x0, x1)]
    return np.unique(np.round(np.concatenate(cuts), 12))


class BinnedImplementation:
    """The implementation under test with its reports binned (checked against the continuous
    claim first): what the shuffle level runs for a continuous claim."""

    def __init__(self, tested, binned: BinnedClaim) -> None:
        self.tested = tested
        self.declared = binned
        self.implementation = tested.implementation
        self.name = binned.name
        self.epsilon0 = binned.epsilon0

    def __getattr__(self, attr: str):
        declared = self.__dict__.get("declared")
        if declared is None or attr.startswith("__"):
            raise AttributeError(attr)
        return getattr(declared, attr)

    def randomize(self, values, rng, epsilon=None):
        return self.declared.output_index(self.tested.randomize(values, rng, epsilon))

    @staticmethod
    def output_index(reports) -> np.ndarray:
        return np.asarray(reports, dtype=np.int64)


def binned_pair(tested, x0, x1, seed):
    """(the binned implementation, its binned claim) for the pair (x0, x1)."""
    binned = BinnedClaim(tested.declared, cut_points(tested.declared, x0, x1, seed))
    return BinnedImplementation(tested, binned), binned


def continuous_triple(declared, n: int, delta: float, settings) -> tuple:
    """(x0, x1, x2): the settings' inputs, else the exact lower bound's triple, else (for an
    (eps0, delta0) claim, which has no exact lower bound) the claim's first candidate pair with
    the others at x1. Every other user holds x2 (no distribution over a continuum)."""
    require(settings.others is None, "others", settings.others, "a continuous claim is audited "
            "with every other user at one input x2")
    given = (settings.x0, settings.x1, settings.x2)
    try:
        triple = default_triple(declared, n, delta)
    except ParameterError:
        a, b = declared.neighbour_candidates().pairs[0]
        triple = (a, b, b)
    out = tuple(float(triple[i] if given[i] is None else given[i]) for i in range(3))
    require(out[0] != out[1], "x1", settings.x1, "must differ from x0")
    return out
