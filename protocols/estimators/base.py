"""What every estimator repeats, in one place: the frozen dataclass holding its randomizer and
refusing one it does not fit, the checks of ``n`` and of count vectors, the users' true inputs of
a variance call, and the variance plumbing of the count (frequency-type) estimators.

An estimator is built for a randomizer as ``cls(randomizer)`` (protocols.estimators.registry);
:class:`Estimator` runs ``fits`` at construction and raises ParameterError (field
``estimator.name``, naming what it ``needs``) for a randomizer it does not fit.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from shufflesim.protocols.errors import ParameterError, require
from shufflesim.protocols.randomizers.base import Randomizer


def check_n(n, dtype=float) -> np.ndarray:
    """``n`` (an int or an array of numbers of users) as an array of ``dtype``; ParameterError
    unless every entry is finite and > 0. ``dtype=None`` keeps the input's type (an int n stays
    an int, and so does the value the error names)."""
    n_arr = np.asarray(n, dtype=dtype)
    bad = ~(np.isfinite(n_arr) & (n_arr > 0))
    if bad.any():
        raise ParameterError("n", n_arr[bad].flat[0].item(), "must be a number of users > 0")
    return n_arr


def check_counts(field: str, counts, domain_size: int) -> np.ndarray:
    """``counts`` (..., domain_size) as a float array; ParameterError for another last axis or a
    negative or non-finite entry."""
    counts = np.asarray(counts, dtype=float)
    if counts.ndim == 0 or counts.shape[-1] != domain_size:
        raise ParameterError(field, counts.shape, f"needs shape (..., {domain_size})")
    if (counts < 0).any() or not np.isfinite(counts).all():
        raise ParameterError(field, float(counts[~(counts >= 0)].flat[0]), "must be >= 0")
    return counts


def user_values(values, n) -> np.ndarray:
    """The true inputs of a variance call: an array with the n users on the last axis (checked
    against ``n``), or a scalar meaning that all n users hold it (broadcast to shape (n,))."""
    values = np.asarray(values)
    if values.ndim == 0:
        require(isinstance(n, (int, np.integer)) and n >= 1, "n", n, "must be an integer >= 1")
        return np.broadcast_to(values, (int(n),))
    require(values.shape[-1] == n, "n", n,
            f"must equal the number of users on the last axis of values ({values.shape[-1]})")
    return values


def refusal(estimator_name: str, randomizer: object, needs: str) -> ParameterError:
    """The error for an estimator built for a randomizer it does not fit; ``needs`` completes
    "it needs ..." (e.g. "a numeric randomizer, one of [...]")."""
    label = getattr(randomizer, "name", type(randomizer).__name__)
    return ParameterError("estimator.name", estimator_name,
                          f"does not fit randomizer {label!r}; it needs {needs}")


@dataclass(frozen=True)
class Estimator:
    """An estimator for one randomizer; subclasses set ``name`` (their registry key) and
    ``target`` (what they estimate: the name of the simulator's target that measures their
    error, e.g. "frequency", "mean", "sum"), and say which randomizers they fit (``fits``)
    and, for the error otherwise, what they need."""

    randomizer: Randomizer

    name: ClassVar[str]
    target: ClassVar[str]
    #: Whether the batch path hands the estimator each report's budget (``aggregate(reports,
    #: budgets)``; the personalized estimators): False here, the reports alone.
    uses_budgets: ClassVar[bool] = False

    def __post_init__(self) -> None:
        if not self.fits(self.randomizer):
            raise refusal(self.name, self.randomizer, self.needs())

    @classmethod
    def fits(cls, randomizer: object) -> bool:
        """Whether this estimator can be built for ``randomizer``."""
        return isinstance(randomizer, Randomizer)

    @classmethod
    def needs(cls) -> str:
        """What a fitting randomizer is, for the error message ("it needs ...")."""
        return "a local randomizer"


@dataclass(frozen=True)
class CountEstimator(Estimator):
    """A frequency-type estimator: estimates f_v for every value v of the input domain, with an
    exact per-value variance given the true counts n_v (``per_value_variance``, by subclass)."""

    @property
    def domain_size(self) -> int:
        return self.randomizer.input_domain.size

    def per_value_variance(self, true_counts, n):
        """Exact Var(f_hat_v) from the true counts n_v (real-valued allowed) and n."""
        raise NotImplementedError

    def variance(self, true_counts):
        """Exact Var(f_hat_v) given the true counts (..., d) of the n = sum_v n_v users."""
        true_counts = check_counts("true_counts", true_counts, self.domain_size)
        return self.per_value_variance(true_counts, check_n(true_counts.sum(axis=-1)))

    def variance_from_frequencies(self, frequencies, n):
        """Exact Var(f_hat_v) given the true frequencies f_v (n_v = f_v n) and n."""
        frequencies = check_counts("frequencies", frequencies, self.domain_size)
        n = check_n(n)
        return self.per_value_variance(frequencies * n[..., None], n)
