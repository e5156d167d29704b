"""Estimators for personalized (heterogeneous) local budgets, with exact variances.

Setting (003, Chen, Cao and Ge, GSPA, Sec. "Application to mean and frequency estimation").
User i holds x_i and randomizes it with its own budget eps_i. Every estimator here is a linear
combination of per-user *debiased reports* d_i with E[d_i | x_i] = t(x_i):

* frequency oracles: d_i(v) = (s_i(v) - q_i) / (p_i - q_i), s_i(v) = 1 if report i supports v,
  with (p_i, q_i) the support probabilities at eps_i (Wang et al. 2017), t(x) = one-hot(x);
* numeric mechanisms: d_i = (y_i - a) / b with E[y_i | x] = a + b x, t(x) = x,

and the estimate is T = sum_i w_i d_i with weights w_i = w(eps_i) / sum_j w(eps_j):

* ``gspa`` (003's estimators). Frequency, 003 Alg. 2: w(eps) = p - q, which gives
  T_v = (C_v - sum_i q_i) / sum_i (p_i - q_i) from the support counts C_v alone; for binary RR,
  z = (A - B) / (n - 2B) with A the number of ones and B = sum_i 1 / (1 + e^eps_i). Mean,
  003 Alg. 1: w = 1, the plain average of the reports. Both read only the shuffled reports and the
  multiset of budgets (untagged).
* ``uniform``: w = 1 on debiased reports (the only weighting that is unbiased for the sample's
  own frequencies for every assignment of budgets to users). For frequencies it needs each
  report's budget (tagged reports).
* ``inverse_variance``: w(eps) = 1 / (nu(eps) + tau), nu(eps) the variance of d_i at a reference
  input (frequency: Var at value frequency f0 = ``reference_frequency``, default 1/d,
  [f0 p(1-p) + (1-f0) q(1-q)] / (p-q)^2; numeric: Var[y | x_ref] / b^2 at ``reference_value``,
  default the middle of the input interval) and tau = ``data_variance`` (default 0). With tau = 0
  the weights minimise the noise variance sum_i w_i^2 nu_i (Cauchy-Schwarz); with tau equal to
  the data's variance they minimise the design MSE below. Needs tagged reports.

Tagged reports. A weighting other than ``gspa`` needs to know which budget produced which report:
each report travels with its budget (or budget group) through the shuffler, i.e. the shuffler
permutes (budget, report) pairs. That reveals each report's budget group to the analyzer, so the
shuffle only hides a user among the users of its own budget group; the privacy of such a
protocol is that of separate shuffles per group (see protocols.bounds.personalized.bounds). 003's
estimators need no tags.

Unbiasedness (the assumption 003 makes implicitly: budgets independent of the data). For a fixed
assignment of budgets to users, E[T] = sum_i w_i t(x_i): equal to the sample's truth
t_bar = (1/n) sum_i t(x_i) for ``uniform`` (and for ``gspa`` means), but a budget-weighted
average otherwise. If the budgets are assigned to users uniformly at random, independently of
the data, E[T] = t_bar for every weighting; if the data are i.i.d. and independent of the
budgets, E[T] is the population truth.

Exact second moments (``values``: the users' true inputs, aligned with ``epsilon``):

* :meth:`variance`: Var[T | assignment] = sum_i w_i^2 v_i(x_i), v_i the exact variance of d_i;
* :meth:`expectation`, :meth:`mse` = variance + (E[T | assignment] - t_bar)^2;
* :meth:`design_mse`: E[(T - t_bar)^2] over a uniformly random assignment of the given budget
  multiset to the given data: sum_i w_i^2 vbar_i + S_ww S_tt / (n - 1), with
  vbar_i = (1/n) sum_j v_i(x_j), S_ww = sum_i (w_i - 1/n)^2 and S_tt = sum_j (t(x_j) - t_bar)^2
  (the variance of a linear permutation statistic, Hoeffding 1951). ``uniform`` has S_ww = 0.

Aggregation for the batch path (``uses_budgets``): :meth:`aggregate` (reports, budgets) -> an
additive per-repetition statistic (so user slices can be summed), :meth:`estimate` (statistic,
n) -> the estimates. Tagged estimators compute their statistic from the (report, budget) pairs;
it is a sum over pairs, hence invariant under the shuffler's joint permutation.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from shufflesim.protocols.errors import ParameterError, require
from shufflesim.protocols.estimators.mean import check_numeric_randomizer
from shufflesim.protocols.estimators.registry import register_estimator
from shufflesim.protocols.randomizers.base import Categorical, Randomizer

WEIGHTINGS = ("gspa", "uniform", "inverse_variance")
#: Working elements of one chunk in :meth:`design_mse` of numeric estimators.
_CHUNK = 1 << 22


def support_arrays(randomizer: Randomizer, epsilon) -> tuple[np.ndarray, np.ndarray]:
    """(p, q) support probabilities at every budget in ``epsilon`` (arrays of its shape), as the
    randomizer declares them (``Randomizer.support_arrays``: the vectorized counterpart of
    ``support_probabilities(eps)``); ParameterError when it declares none."""
    declared = (randomizer.support_arrays(np.asarray(epsilon, dtype=float))
                if isinstance(randomizer, Randomizer) else None)
    if declared is None:
        label = getattr(randomizer, "name", type(randomizer).__name__)
        raise ParameterError("estimator.name", "personalized frequency",
                             f"does not fit randomizer {label!r}; it needs a frequency oracle "
                             "that declares per-budget support probabilities (support_arrays)")
    return declared


def _check_weighting(weighting: str) -> None:
    require(weighting in WEIGHTINGS, "weighting", weighting, f"must be one of {WEIGHTINGS}")


def _budgets(randomizer: Randomizer, epsilon, shape) -> np.ndarray:
    """Per-user budgets broadcast to ``shape`` (``epsilon0`` when None), validated."""
    if epsilon is None:
        return np.full(shape, float(randomizer.epsilon0))
    eps = np.broadcast_to(np.asarray(epsilon, dtype=float), shape)
    bad = ~(np.isfinite(eps) & (eps > 0))
    if bad.any():
        raise ParameterError("epsilon", float(eps[bad][0]), "must be finite numbers > 0")
    return eps


def _normalized(raw: np.ndarray) -> np.ndarray:
    return raw / raw.sum(axis=-1, keepdims=True)


def _permutation_variance(w: np.ndarray, s_tt: np.ndarray, n: int) -> np.ndarray:
    """S_ww S_tt / (n - 1): variance of sum_i w_i t(x_pi(i)) over uniform permutations pi."""
    if n < 2:
        return np.zeros_like(s_tt)
    s_ww = np.square(w - 1.0 / n).sum(axis=-1)
    return s_ww[..., None] * s_tt / (n - 1) if s_tt.ndim > s_ww.ndim else s_ww * s_tt / (n - 1)


# ---------------------------------------------------------------------------------------------
# Frequencies
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class PersonalizedFrequencyEstimator:
    """Frequencies under personalized budgets (module docstring); ``weighting`` in WEIGHTINGS."""

    randomizer: Randomizer
    weighting: str = "gspa"
    reference_frequency: float | None = None
    data_variance: float = 0.0

    name: ClassVar[str] = "personalized_frequency"
    uses_budgets: ClassVar[bool] = True

    def __post_init__(self) -> None:
        _check_weighting(self.weighting)
        label = getattr(self.randomizer, "name", type(self.randomizer).__name__)
        oracle = isinstance(self.randomizer, Randomizer) and self.randomizer.support_arrays(
            np.asarray(float(self.randomizer.epsilon0))) is not None
        if not oracle:
            raise ParameterError("estimator.name", self.name,
                                 f"does not fit randomizer {label!r}; it needs a frequency oracle "
                                 "that declares per-budget support probabilities "
                                 "(support_arrays)")
        if self.tagged and not self.randomizer.has_weighted_support:
            raise ParameterError("estimator.name", self.name,
                                 f"weighting {self.weighting!r} needs each report's support set "
                                 f"(weighted_support), which {label!r} does not declare")
        f0 = self.reference_frequency
        require(f0 is None or (isinstance(f0, (int, float)) and 0 <= f0 <= 1),
                "reference_frequency", f0, "must be a number in [0, 1]")
        require(isinstance(self.data_variance, (int, float)) and self.data_variance >= 0,
                "data_variance", self.data_variance, "must be a number >= 0")

    @property
    def tagged(self) -> bool:
        """True when the estimate needs each report's budget (module docstring)."""
        return self.weighting != "gspa"

    @property
    def domain_size(self) -> int:
        return self.randomizer.input_domain.size

    # -- weights --------------------------------------------------------------------------
    def raw_weights(self, epsilon) -> np.ndarray:
        """Unnormalized w(eps_i)."""
        eps = np.asarray(epsilon, dtype=float)
        p, q = support_arrays(self.randomizer, eps)
        if self.weighting == "gspa":
            return p - q
        if self.weighting == "uniform":
            return np.ones(eps.shape)
        f0 = self.reference_frequency
        f0 = 1.0 / self.domain_size if f0 is None else float(f0)
        noise = (f0 * p * (1 - p) + (1 - f0) * q * (1 - q)) / np.square(p - q)
        return 1.0 / (noise + self.data_variance)

    def weights(self, epsilon) -> np.ndarray:
        """Normalized weights w_i (users on the last axis)."""
        return _normalized(self.raw_weights(epsilon))

    # -- batch path ----------------------------------------------------------------------------
    def aggregate(self, reports, epsilon=None) -> np.ndarray:
        """Additive statistic of the reports (users on the axis after the leading batch axes):
        gspa: [C_1..C_d, sum q_i, sum (p_i - q_i)]; tagged: [sum_i w~_i s_i(v) / (p_i - q_i)
        for each v, sum_i w~_i q_i / (p_i - q_i), sum_i w~_i] with w~ the raw weights."""
        reports = np.asarray(reports)
        lead = reports.shape[:reports.ndim - len(self.randomizer.output_shape)]
        eps = _budgets(self.randomizer, epsilon, lead)
        p, q = support_arrays(self.randomizer, eps)
        if not self.tagged:
            counts = self.randomizer.aggregate(reports).astype(float)
            return np.concatenate([counts, q.sum(axis=-1)[..., None],
                                   (p - q).sum(axis=-1)[..., None]], axis=-1)
        raw = self.raw_weights(eps)
        scale = raw / (p - q)
        supported = self._weighted_support(reports, scale)
        return np.concatenate([supported, (scale * q).sum(axis=-1)[..., None],
                               raw.sum(axis=-1)[..., None]], axis=-1)

    def _weighted_support(self, reports: np.ndarray, scale: np.ndarray) -> np.ndarray:
        """sum_i scale_i s_i(v) for every v, as the randomizer declares it
        (``Randomizer.weighted_support``: a weighted histogram of one-hot reports, a weighted sum
        of bit vectors for unary encodings)."""
        return self.randomizer.weighted_support(reports, scale)

    def estimate(self, statistic, n=None) -> np.ndarray:
        """Frequency estimates (..., d) from :meth:`aggregate`'s statistic (``n`` unused: the
        statistic carries the budget sums)."""
        stat = np.asarray(statistic, dtype=float)
        d = self.domain_size
        require(stat.shape[-1] == d + 2, "statistic", stat.shape,
                f"needs {d + 2} entries on the last axis (from aggregate)")
        return (stat[..., :d] - stat[..., d:d + 1]) / stat[..., d + 1:d + 2]

    def estimate_reports(self, reports, epsilon) -> np.ndarray:
        """Estimates straight from reports and their budgets (aggregate, then estimate)."""
        return self.estimate(self.aggregate(reports, epsilon))

    # -- exact moments --------------------------------------------------------------------
    def _per_user_variance(self, values, p, q) -> np.ndarray:
        """v_i(x_i)(v): (..., n, d)."""
        d = self.domain_size
        own = np.asarray(values)[..., None] == np.arange(d)
        pp, qq = p[..., None], q[..., None]
        var = np.where(own, pp * (1 - pp), qq * (1 - qq))
        return var / np.square(pp - qq)

    def _prepare(self, values, epsilon):
        values = self.randomizer.check_values(np.asarray(values))
        require(values.ndim >= 1 and values.shape[-1] >= 1, "values", values.shape,
                "needs the users on the last axis")
        eps = _budgets(self.randomizer, epsilon, values.shape)
        p, q = support_arrays(self.randomizer, eps)
        return values, eps, p, q

    def truth(self, values) -> np.ndarray:
        """The sample's frequencies t_bar (..., d)."""
        values = np.asarray(values)
        return (values[..., None] == np.arange(self.domain_size)).mean(axis=-2)

    def expectation(self, values, epsilon) -> np.ndarray:
        """E[T | assignment] = sum_i w_i 1[x_i = v] (..., d)."""
        values, eps, _, _ = self._prepare(values, epsilon)
        w = self.weights(eps)
        return np.einsum("...n,...nd->...d", w,
                         (values[..., None] == np.arange(self.domain_size)).astype(float))

    def variance(self, values, epsilon) -> np.ndarray:
        """Var[T_v | assignment] = sum_i w_i^2 v_i(x_i)(v), exact (..., d)."""
        values, eps, p, q = self._prepare(values, epsilon)
        w = self.weights(eps)
        return np.einsum("...n,...nd->...d", w * w, self._per_user_variance(values, p, q))

    def mse(self, values, epsilon) -> np.ndarray:
        """E[(T_v - t_bar_v)^2 | assignment] = variance + bias^2 (..., d)."""
        bias = self.expectation(values, epsilon) - self.truth(values)
        return self.variance(values, epsilon) + bias * bias

    def design_mse(self, values, epsilon) -> np.ndarray:
        """E[(T_v - t_bar_v)^2] over a uniformly random assignment of the budgets ``epsilon``
        to the users holding ``values`` (module docstring), exact (..., d)."""
        values, eps, p, q = self._prepare(values, epsilon)
        n = values.shape[-1]
        w = self.weights(eps)
        f = self.truth(values)                                        # (..., d)
        own = f[..., None, :] * (p * (1 - p))[..., None]
        other = (1 - f[..., None, :]) * (q * (1 - q))[..., None]
        vbar = (own + other) / np.square(p - q)[..., None]          # (..., n, d)
        noise = np.einsum("...n,...nd->...d", w * w, vbar)
        s_tt = n * f * (1 - f)
        return noise + _permutation_variance(w, s_tt, n)


# ---------------------------------------------------------------------------------------------
# Means
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class PersonalizedMeanEstimator:
    """Mean of numeric inputs under personalized budgets (module docstring)."""

    randomizer: Randomizer
    weighting: str = "gspa"
    reference_value: float | None = None
    data_variance: float = 0.0

    name: ClassVar[str] = "personalized_mean"
    uses_budgets: ClassVar[bool] = True

    def __post_init__(self) -> None:
        _check_weighting(self.weighting)
        check_numeric_randomizer(self.name, self.randomizer)
        require(bool(getattr(self.randomizer, "supports_personalized", False)), "estimator.name",
                self.name, f"needs a randomizer that takes per-user budgets; "
                f"{self.randomizer.name} does not (use mean)")
        require(isinstance(self.data_variance, (int, float)) and self.data_variance >= 0,
                "data_variance", self.data_variance, "must be a number >= 0")

    @property
    def tagged(self) -> bool:
        return self.weighting == "inverse_variance"

    @property
    def _affine(self) -> tuple[float, float]:
        a, b = self.randomizer.report_affine
        return float(a), float(b)

    @property
    def _reference(self) -> float:
        if self.reference_value is not None:
            return float(self.reference_value)
        domain = self.randomizer.input_domain
        if isinstance(domain, Categorical):
            return 0.5 * (domain.size - 1)
        return 0.5 * (domain.low + domain.high)

    def raw_weights(self, epsilon) -> np.ndarray:
        eps = np.asarray(epsilon, dtype=float)
        if self.weighting != "inverse_variance":
            return np.ones(eps.shape)
        b = self._affine[1]
        noise = self.randomizer.report_variance(np.full(eps.shape, self._reference), eps) / b**2
        return 1.0 / (noise + self.data_variance)

    def weights(self, epsilon) -> np.ndarray:
        return _normalized(self.raw_weights(epsilon))

    def aggregate(self, reports, epsilon=None) -> np.ndarray:
        """[sum_i w~_i y_i, sum_i w~_i] (users on the last axis)."""
        y = np.asarray(reports, dtype=float)
        eps = _budgets(self.randomizer, epsilon, y.shape)
        raw = self.raw_weights(eps)
        return np.stack([(raw * y).sum(axis=-1), raw.sum(axis=-1)], axis=-1)

    def estimate(self, statistic, n=None) -> np.ndarray:
        stat = np.asarray(statistic, dtype=float)
        require(stat.shape[-1] == 2, "statistic", stat.shape,
                "needs 2 entries on the last axis (from aggregate)")
        a, b = self._affine
        return (stat[..., 0] / stat[..., 1] - a) / b

    def estimate_reports(self, reports, epsilon) -> np.ndarray:
        return self.estimate(self.aggregate(reports, epsilon))

    def _prepare(self, values, epsilon):
        values = np.asarray(self.randomizer.check_values(np.asarray(values)), dtype=float)
        require(values.ndim >= 1 and values.shape[-1] >= 1, "values", values.shape,
                "needs the users on the last axis")
        return values, _budgets(self.randomizer, epsilon, values.shape)

    def _variance(self, x, eps) -> np.ndarray:
        return self.randomizer.report_variance(x, eps) / self._affine[1] ** 2

    def truth(self, values) -> np.ndarray:
        return np.asarray(values, dtype=float).mean(axis=-1)

    def expectation(self, values, epsilon) -> np.ndarray:
        values, eps = self._prepare(values, epsilon)
        return (self.weights(eps) * values).sum(axis=-1)

    def variance(self, values, epsilon) -> np.ndarray:
        """Var[T | assignment] = sum_i w_i^2 Var[y_i | x_i] / b^2, exact."""
        values, eps = self._prepare(values, epsilon)
        w = self.weights(eps)
        return (w * w * self._variance(values, eps)).sum(axis=-1)

    def mse(self, values, epsilon) -> np.ndarray:
        bias = self.expectation(values, epsilon) - self.truth(values)
        return self.variance(values, epsilon) + bias * bias

    def design_mse(self, values, epsilon) -> np.ndarray:
        """E[(T - x_bar)^2] over a uniformly random assignment of the budgets to the users,
        exact; vbar_i = (1/n) sum_j Var[y | x_j, eps_i] / b^2 is computed for each distinct
        budget (in chunks)."""
        values, eps = self._prepare(values, epsilon)
        n = values.shape[-1]
        w = self.weights(eps)
        flat_x = values.reshape(-1, n)
        flat_e = eps.reshape(-1, n)
        flat_w = w.reshape(-1, n)
        noise = np.empty(flat_x.shape[0])
        for row in range(flat_x.shape[0]):  # a loop over batch rows (each vectorized)
            distinct, inverse = np.unique(flat_e[row], return_inverse=True)
            vbar = np.empty(distinct.size)
            step = max(1, _CHUNK // n)
            for start in range(0, distinct.size, step):  # chunks of distinct budgets
                block = distinct[start:start + step, None]
                vbar[start:start + step] = self._variance(flat_x[row][None, :], block).mean(axis=1)
            noise[row] = (flat_w[row] ** 2 * vbar[inverse.reshape(-1)]).sum()
        s_tt = np.square(values - values.mean(axis=-1, keepdims=True)).sum(axis=-1)
        return noise.reshape(values.shape[:-1]) + _permutation_variance(w, s_tt, n)


# ---------------------------------------------------------------------------------------------
# Registered names (protocols.estimators.make_estimator(name, randomizer))
# ---------------------------------------------------------------------------------------------
@register_estimator
@dataclass(frozen=True)
class GspaFrequencyEstimator(PersonalizedFrequencyEstimator):
    """003 Alg. 2, generalized to frequency oracles: (C_v - sum q_i) / sum (p_i - q_i)."""
    name: ClassVar[str] = "gspa_frequency"
    target: ClassVar[str] = "frequency"
    weighting: str = "gspa"


@register_estimator
@dataclass(frozen=True)
class UniformFrequencyEstimator(PersonalizedFrequencyEstimator):
    """Equal weights on tagged debiased reports (unbiased for every assignment)."""
    name: ClassVar[str] = "uniform_frequency"
    target: ClassVar[str] = "frequency"
    weighting: str = "uniform"


@register_estimator
@dataclass(frozen=True)
class WeightedFrequencyEstimator(PersonalizedFrequencyEstimator):
    """Inverse-variance weights on tagged debiased reports (module docstring)."""
    name: ClassVar[str] = "weighted_frequency"
    target: ClassVar[str] = "frequency"
    weighting: str = "inverse_variance"


@register_estimator
@dataclass(frozen=True)
class GspaMeanEstimator(PersonalizedMeanEstimator):
    """003 Alg. 1: the plain average of the reports (debiased by the affine map)."""
    name: ClassVar[str] = "gspa_mean"
    target: ClassVar[str] = "mean"
    weighting: str = "gspa"


@register_estimator
@dataclass(frozen=True)
class WeightedMeanEstimator(PersonalizedMeanEstimator):
    """Inverse-variance weights on tagged reports (module docstring)."""
    name: ClassVar[str] = "weighted_mean"
    target: ClassVar[str] = "mean"
    weighting: str = "inverse_variance"
