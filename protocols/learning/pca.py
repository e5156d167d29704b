"""PCA input layer (003 Sec. "Experiments": "an initial PCA input layer with 60 components").

Fitted on the training split only, then applied to both splits, so nothing about the test set
leaks into the features. Tall matrices (n >= 4 d, e.g. MNIST's 60,000 x 784) take the
eigenvectors of the d x d scatter matrix X^T X of the centred data (one matrix product and a
symmetric eigendecomposition: about 1 s single-threaded for MNIST, against several for the SVD);
others the thin SVD. Both give the same components up to rounding (the leading eigenvalues are
well separated from zero; tests/test_learning_data.py compares them).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from shufflesim.protocols.errors import require, require_int_at_least


@dataclass(frozen=True)
class PCA:
    """``mean`` (d,), ``components`` (k, d) orthonormal rows, ``explained_variance`` (k,)."""

    mean: np.ndarray
    components: np.ndarray
    explained_variance: np.ndarray

    @classmethod
    def fit(cls, x: np.ndarray, n_components: int) -> PCA:
        x = np.asarray(x, dtype=float)
        require_int_at_least("n_components", n_components, 1)
        require(n_components <= min(x.shape), "n_components", n_components,
                f"must be <= min(n_examples, n_features) = {min(x.shape)}")
        mean = x.mean(axis=0)
        centred = x - mean
        if x.shape[0] >= 4 * x.shape[1]:
            values, vectors = np.linalg.eigh(centred.T @ centred)
            order = np.argsort(values)[::-1]
            s = np.sqrt(np.maximum(values[order], 0.0))
            vt = vectors[:, order].T
        else:
            _, s, vt = np.linalg.svd(centred, full_matrices=False)
        # Deterministic sign: the largest-magnitude loading of each component is positive.
        signs = np.sign(vt[np.arange(vt.shape[0]), np.abs(vt).argmax(axis=1)])
        signs[signs == 0] = 1.0
        vt = vt * signs[:, None]
        var = s**2 / max(x.shape[0] - 1, 1)
        return cls(mean, vt[:n_components], var[:n_components])

    def transform(self, x: np.ndarray) -> np.ndarray:
        return (np.asarray(x, dtype=float) - self.mean) @ self.components.T
