"""Shuffled DP-SGD mathematics (issue 19): models, clipping, gradient randomizers, PCA.

Pure numpy/scipy (see docs/architecture.md, layers); the training loop is in
``shufflesim.simulator.learning``.
"""

from shufflesim.protocols.learning.clipping import (
    CLIP_POINTS,
    clip_client_means,
    clip_rows,
    clipped_client_means,
)
from shufflesim.protocols.learning.models import MLP, MODELS, Model, SoftmaxRegression, make_model
from shufflesim.protocols.learning.pca import PCA
from shufflesim.protocols.learning.randomizers import (
    RANDOMIZERS,
    DuchiL2,
    GaussianGradient,
    analytic_gaussian_sigma,
    classical_gaussian_sigma,
    gaussian_delta,
    log_gaussian_delta,
    mean_abs_coordinate,
)

__all__ = [
    "CLIP_POINTS", "MLP", "MODELS", "PCA", "RANDOMIZERS", "DuchiL2", "GaussianGradient", "Model",
    "SoftmaxRegression", "analytic_gaussian_sigma", "classical_gaussian_sigma",
    "clip_client_means", "clip_rows", "clipped_client_means", "gaussian_delta",
    "log_gaussian_delta", "make_model", "mean_abs_coordinate",
]
