"""A learned distinguishing attack (as DP-Sniper does: Bichsel et al., "DP-Sniper: Black-Box
Discovery of Differential Privacy Violations using Classifiers", IEEE S&P 2021): a classifier
trained to tell the outputs of R(a) from those of R(b); its score, thresholded, is an event.

The classifier is L2-regularised logistic regression on standardised output features. It is
fitted by Newton's method (iteratively reweighted least squares) in numpy, or by scikit-learn's
``LogisticRegression`` when the ``learn`` extra is installed and ``backend="sklearn"`` is asked
for; the default ``"auto"`` uses numpy, so results do not depend on what is installed.

Validity never depends on the classifier: the audit (search.py) trains it on selection samples
only, chooses its threshold on other selection samples, and certifies the event {score >= t} on
fresh samples. A poor classifier only costs power.
"""

from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass

import numpy as np

from shufflesim.protocols.errors import require

#: Newton iterations (logistic regression converges in a handful on these problems).
MAX_ITERATIONS = 12
#: L2 penalty on the weights (not the intercept), per sample.
RIDGE = 1e-4


@dataclass(frozen=True)
class LogisticModel:
    """score(x) = w . (x - mean) / scale + b: larger means "more like R(a)"."""

    weights: np.ndarray
    intercept: float
    mean: np.ndarray
    scale: np.ndarray

    @property
    def raw_weights(self) -> tuple[np.ndarray, float]:
        """(w, b) with score(x) = x . w + b on unstandardised features."""
        w = self.weights / self.scale
        return w, float(self.intercept - self.mean @ w)

    def score(self, features: np.ndarray) -> np.ndarray:
        w, b = self.raw_weights
        return linear(np.asarray(features, dtype=float), w) + b

    def describe(self, limit: int = 3) -> str:
        order = np.argsort(-np.abs(self.weights), kind="stable")[:limit]
        terms = ", ".join(f"f{int(j)}:{self.weights[j]:+.3g}" for j in order)
        return f"logistic score (largest weights {terms})"


def linear(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """x @ w on one BLAS thread (see _one_blas_thread)."""
    with _one_blas_thread():
        return x @ w


def _standardise(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    scale = np.where(scale > 1e-12, scale, 1.0)
    return (x - mean) / scale, mean, scale


def _newton(z: np.ndarray, y: np.ndarray, ridge: float) -> tuple[np.ndarray, float]:
    """Penalised maximum likelihood of logistic regression (IRLS), intercept unpenalised."""
    m, f = z.shape
    design = np.hstack([z, np.ones((m, 1))])
    beta = np.zeros(f + 1)
    penalty = np.full(f + 1, ridge * m)
    penalty[-1] = 0.0
    for _ in range(MAX_ITERATIONS):
        eta = np.clip(design @ beta, -30, 30)
        p = 1.0 / (1.0 + np.exp(-eta))
        grad = design.T @ (y - p) - penalty * beta
        w = p * (1 - p)
        hess = (design * w[:, None]).T @ design + np.diag(penalty) + 1e-9 * np.eye(f + 1)
        step = np.linalg.solve(hess, grad)
        beta = beta + step
        if np.max(np.abs(step)) < 1e-5:
            break
    return beta[:-1], float(beta[-1])


def fit_logistic(features_a: np.ndarray, features_b: np.ndarray,
                 backend: str = "auto", ridge: float = RIDGE) -> LogisticModel:
    """A classifier of features of R(a) (label 1) against R(b) (label 0); ``ridge``: the L2
    penalty on the standardised weights, per sample."""
    require(backend in ("auto", "numpy", "sklearn"), "backend", backend,
            "must be auto, numpy or sklearn")
    require(isinstance(ridge, (int, float)) and 0 < ridge < math.inf, "ridge", ridge,
            "must be a positive number")
    fa = np.asarray(features_a, dtype=float).reshape(len(features_a), -1)
    fb = np.asarray(features_b, dtype=float).reshape(len(features_b), -1)
    require(fa.shape[1] == fb.shape[1] and len(fa) >= 2 and len(fb) >= 2, "features",
            (fa.shape, fb.shape), "need at least two samples of each input, same width")
    x = np.vstack([fa, fb])
    y = np.concatenate([np.ones(len(fa)), np.zeros(len(fb))])
    z, mean, scale = _standardise(x)
    if backend == "sklearn":
        from sklearn.linear_model import LogisticRegression  # the learn extra

        model = LogisticRegression(C=1.0 / (ridge * len(y)), max_iter=200)
        model.fit(z, y)
        return LogisticModel(model.coef_[0].copy(), float(model.intercept_[0]), mean, scale)
    with _one_blas_thread():
        weights, intercept = _newton(z, y, ridge)
    return LogisticModel(weights, intercept, mean, scale)


def _one_blas_thread():
    """Small matrix products run fastest on one BLAS thread (on a loaded machine many threads
    made a fit 20x slower); threadpoolctl (installed with the learn extra) sets it when
    present."""
    try:
        from threadpoolctl import threadpool_limits  # optional (scikit-learn's dependency)
    except ImportError:
        return contextlib.nullcontext()
    return threadpool_limits(limits=1, user_api="blas")
