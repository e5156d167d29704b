"""The local randomizer interface.

A local randomizer R maps one user's value x to a random report y. Every randomizer in this
package is a frozen dataclass whose fields are its parameters (``epsilon0`` first), validated in
``__post_init__``, and it declares its exact output distribution, so that the bound engine, the
estimators and the auditor all derive what they need from the same object.

Conventions
-----------
* ``values`` arrays have users on their last axis and any leading batch axes in front (for
  example ``(repetitions, n)``). Categorical inputs are integers in ``[0, d)``; interval inputs
  are floats in ``[low, high]``.
* ``randomize`` returns an array of shape ``values.shape + output_shape``.
* Discrete outputs have an integer index in ``[0, output_size)`` (``output_index``); the declared
  distribution is ``log_prob(x, y)`` (natural log of the probability mass, or of the density for
  continuous outputs), broadcasting ``x`` against the leading axes of ``y``.
* ``aggregate(outputs)`` reduces the user axis to the sufficient statistic the estimators use
  (support counts for frequency oracles, sums for numeric mechanisms).
* Where the statistic can be sampled exactly without per-user reports,
  ``sample_aggregate(input_counts, rng)`` does so (``has_aggregate_sampler`` is True).

Its own analysis
----------------
A randomizer also declares what the bounds, estimators and auditor need to know about it: its
decomposition family and neighbour pairs, its variation-ratio row, its per-budget support
probabilities, whether it takes per-user budgets, its bytes per user. The declarations, their
defaults and their "not supported" answers are listed in protocols.randomizers.analysis; no
table elsewhere is keyed by a randomizer's name.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from shufflesim.protocols.errors import (
    ParameterError,
    require,
    require_int_at_least,
    require_positive_finite,
)
from shufflesim.protocols.randomizers.analysis import (
    MAX_ENUMERATED_INPUTS,
    PERMUTATION,
    DecompositionFamily,
    NeighbourCandidates,
    VariationRatioRow,
    enumerated_candidates,
    permutation_candidates,
)
from shufflesim.protocols.randomizers.domains import Categorical, Interval, OutputGroups

#: Largest output space for which ``output_pmf`` materialises the full matrix.
MAX_ENUMERABLE_OUTPUTS = 1 << 20


class Randomizer(ABC):
    """Base class of every local randomizer (see the module docstring for conventions)."""

    #: Registry name, used in scenarios and on the command line.
    name: ClassVar[str]
    #: Example parameters, epsilon0 included (odd values on purpose): every conformance suite
    #: builds the randomizer from them (``registry.example_randomizer``), as scikit-learn's
    #: checks build an estimator; a registered randomizer must declare them. Read-only.
    example: ClassVar[dict]
    #: "discrete" or "continuous" output.
    output_kind: ClassVar[str] = "discrete"
    #: True when ``randomize`` accepts a per-user ``epsilon`` array.
    supports_personalized: ClassVar[bool] = False
    #: True when ``sample_aggregate`` is implemented.
    has_aggregate_sampler: ClassVar[bool] = False
    #: How the bound engine decomposes it (protocols.randomizers.analysis); None: the discrete
    #: default when the output space is finite and enumerable, else "declares no decomposition".
    decomposition: ClassVar[DecompositionFamily | None] = None
    #: "permutation" when R is symmetric under every permutation of a categorical domain
    #: (permuting inputs permutes outputs): one neighbour pair is then enough (000 Sec. 8).
    input_symmetry: ClassVar[str | None] = None
    #: dtype of one report element; None: int64 for discrete, float64 for continuous outputs.
    report_dtype: ClassVar[type | None] = None

    epsilon0: float

    def __post_init__(self) -> None:
        require_positive_finite("epsilon0", self.epsilon0)

    # -- domains -------------------------------------------------------------------------
    @property
    @abstractmethod
    def input_domain(self) -> Categorical | Interval:
        """The set of valid inputs."""

    @property
    def output_size(self) -> int | None:
        """Number of possible outputs (a Python int, possibly huge); None if continuous."""
        return None

    @property
    def output_shape(self) -> tuple[int, ...]:
        """Trailing shape of one report as returned by ``randomize``."""
        return ()

    # -- sampling -------------------------------------------------------------------------
    @abstractmethod
    def randomize(
        self, values: np.ndarray, rng: np.random.Generator, epsilon: np.ndarray | None = None
    ) -> np.ndarray:
        """Randomize every value independently. ``epsilon`` (personalized budgets, broadcast to
        ``values.shape``) overrides ``epsilon0`` where ``supports_personalized``."""

    @abstractmethod
    def aggregate(self, outputs: np.ndarray) -> np.ndarray:
        """Reduce reports (users on the axis after the leading batch axes) to the statistic."""

    def sample_aggregate(self, input_counts: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Sample ``aggregate(randomize(values))`` exactly from the input histogram(s)
        ``input_counts`` of shape (..., d), without materialising per-user reports."""
        raise NotImplementedError(f"{self.name} has no sufficient-statistic sampler")

    # -- declared distribution ------------------------------------------------------------
    @abstractmethod
    def log_prob(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """log R(x)(y): log mass (discrete) or log density (continuous), broadcast."""

    def output_index(self, outputs: np.ndarray) -> np.ndarray:
        """Integer index in [0, output_size) of each discrete report."""
        raise NotImplementedError(f"{self.name} has no integer output index")

    def outputs_from_index(self, index: np.ndarray) -> np.ndarray:
        """Inverse of ``output_index``: the reports for the given indices."""
        raise NotImplementedError(f"{self.name} has no integer output index")

    def output_pmf(self, inputs: np.ndarray | None = None) -> np.ndarray:
        """Matrix P[i, j] = R(inputs[i])(output j) over the enumerated output space.

        ``inputs`` defaults to the whole categorical input domain.
        """
        size = self.output_size
        if size is None or size > MAX_ENUMERABLE_OUTPUTS:
            raise ParameterError(
                "output_size", size, f"output_pmf needs at most {MAX_ENUMERABLE_OUTPUTS} outputs"
            )
        if inputs is None:
            inputs = np.arange(self._categorical_input_size())
        inputs = np.asarray(inputs)
        outputs = self.outputs_from_index(np.arange(size))
        return np.exp(self.log_prob(inputs.reshape(-1, 1), outputs[None, ...]))

    def output_groups(self, anchors: tuple) -> OutputGroups:
        """Group outputs relative to ``anchors`` (see :class:`OutputGroups`).

        The default enumerates the output space; randomizers with huge output spaces override it.
        """
        pmf = self.output_pmf()
        anchors = tuple(int(a) for a in anchors)
        rows = pmf[list(anchors)]
        row_min = pmf.min(axis=0)
        # Outputs with identical per-output probabilities under the anchors and identical
        # minimum form a group. Compare log-probabilities rounded to 1e-12 (a relative
        # tolerance) so floating-point twins merge but tiny probabilities with different
        # ratios never do (an absolute rounding would merge them and bias the blanket).
        stacked = np.vstack([rows, row_min[None, :]]).T
        with np.errstate(divide="ignore"):
            keys = np.round(np.log(stacked), 12)
        _, inverse = np.unique(keys, axis=0, return_inverse=True)
        inverse = inverse.ravel()
        n_groups = int(inverse.max()) + 1
        mass = np.zeros((len(anchors), n_groups))
        for a in range(len(anchors)):
            mass[a] = np.bincount(inverse, weights=rows[a], minlength=n_groups)
        mass_min = np.bincount(inverse, weights=row_min, minlength=n_groups)
        return OutputGroups(anchors=anchors, mass=mass, mass_min=mass_min)

    # -- its own analysis (protocols.randomizers.analysis) ----------------------------------
    def neighbour_candidates(self, pair_grid: int | None = None) -> NeighbourCandidates:
        """Neighbour pairs / triples the bounds maximise over (000 Sec. 8).

        Default: ``input_symmetry == "permutation"`` gives the pair (0, 1); other categorical
        domains of at most MAX_ENUMERATED_INPUTS inputs enumerate every pair; otherwise a
        ParameterError says the randomizer declares none. ``pair_grid`` is for randomizers whose
        worst pair is unknown (a grid of pairs); others ignore it.
        """
        domain = self.input_domain
        if isinstance(domain, Categorical):
            if self.input_symmetry == PERMUTATION:
                return permutation_candidates(domain.size)
            if domain.size <= MAX_ENUMERATED_INPUTS:
                return enumerated_candidates(domain.size)
        raise ParameterError(
            "randomizer.name", self.name,
            f"{self.name} declares no neighbour candidates (set input_symmetry or override "
            "neighbour_candidates)")

    def blanket_inputs(self) -> np.ndarray:
        """Inputs whose output distributions' pointwise minimum is the blanket inf_x R(x)(y)
        (every R(x) is a mixture of them). Default: every categorical input."""
        return np.arange(self._categorical_input_size())

    def variation_ratio_parameters(self) -> VariationRatioRow | None:
        """(p, beta, q) of 001 Sec. 4 (Tables 1, 2, 5) for this randomizer; None: no specific
        row, the generic eps0-LDP row applies (001 Table 1, "general mechanisms")."""
        return None

    def support_arrays(self, epsilon) -> tuple[np.ndarray, np.ndarray] | None:
        """(p, q) support probabilities of a frequency oracle at every budget in ``epsilon``
        (arrays of its shape): a report supports its own value w.p. p and any other value w.p. q
        (Wang et al. 2017). None: not a frequency oracle with per-budget support probabilities
        (the personalized frequency estimators refuse it)."""
        return None

    def weighted_support(self, reports: np.ndarray, scale: np.ndarray) -> np.ndarray:
        """sum_i scale_i s_i(v) for every value v, s_i(v) = 1 when report i supports v
        (users on the axis after the leading batch axes; result (..., d)). Needed by the tagged
        personalized weightings; not supported unless overridden."""
        raise NotImplementedError(f"{self.name} does not expose its reports' support sets")

    @property
    def has_weighted_support(self) -> bool:
        """True when :meth:`weighted_support` is implemented."""
        return type(self).weighted_support is not Randomizer.weighted_support

    @property
    def bytes_per_user(self) -> int:
        """Bytes of one user's report as ``randomize`` returns it (``report_dtype`` times the
        elements of ``output_shape``). The batch path's memory plan still measures its working
        memory per user (reports plus temporaries) under tracemalloc: see
        simulator.batch.run.measure_bytes_per_user."""
        dtype = self.report_dtype
        if dtype is None:
            dtype = np.float64 if self.output_kind == "continuous" else np.int64
        return int(np.dtype(dtype).itemsize * int(np.prod(self.output_shape, dtype=np.int64)))

    # -- helpers --------------------------------------------------------------------------
    def _categorical_input_size(self) -> int:
        domain = self.input_domain
        if not isinstance(domain, Categorical):
            raise ParameterError("input_domain", domain, "needs a categorical input domain")
        return domain.size

    def _epsilon_array(self, values: np.ndarray, epsilon: np.ndarray | None) -> np.ndarray | float:
        """``epsilon0`` or the validated per-user override broadcast to ``values.shape``."""
        if epsilon is None:
            return self.epsilon0
        require(
            self.supports_personalized, "epsilon", "array",
            f"randomizer {self.name} does not support personalized budgets",
        )
        eps = np.broadcast_to(np.asarray(epsilon, dtype=float), np.shape(values))
        bad = ~(np.isfinite(eps) & (eps > 0))
        if bad.any():
            raise ParameterError("epsilon", float(eps[bad][0]), "must be a finite number > 0")
        return eps

    def check_values(self, values: np.ndarray) -> np.ndarray:
        """Validate inputs against the input domain; returns them as an array."""
        values = np.asarray(values)
        domain = self.input_domain
        if isinstance(domain, Categorical):
            if not np.issubdtype(values.dtype, np.integer):
                raise ParameterError("values", values.dtype, "categorical inputs must be integers")
            if values.size and (values.min() < 0 or values.max() >= domain.size):
                bad = values.min() if values.min() < 0 else values.max()
                raise ParameterError("values", int(bad), f"must lie in [0, {domain.size})")
        else:
            if values.size and not np.isfinite(values).all():
                bad = values[~np.isfinite(values)].flat[0]
                raise ParameterError("values", float(bad), "must be finite")
            if values.size and (values.min() < domain.low or values.max() > domain.high):
                bad = values.min() if values.min() < domain.low else values.max()
                raise ParameterError(
                    "values", float(bad), f"must lie in [{domain.low}, {domain.high}]"
                )
        return values


@dataclass(frozen=True)
class CategoricalRandomizer(Randomizer):
    """A randomizer over the categorical domain {0, ..., domain_size - 1} (domain_size >= 2): the
    fields and the validation that every frequency oracle shares. Subclasses add their own
    fields after these two."""

    epsilon0: float
    domain_size: int

    def __post_init__(self) -> None:
        super().__post_init__()
        require_int_at_least("domain_size", self.domain_size, 2)

    @property
    def input_domain(self) -> Categorical:
        return Categorical(self.domain_size)
