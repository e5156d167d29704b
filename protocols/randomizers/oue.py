"""Optimized unary encoding (OUE).

The true bit of the one-hot encoding is replaced by a uniform bit (a = 1/2) and every other bit is
set with probability b = 1 / (e^eps0 + 1) (Wang et al. 2017, Sec. 4.4; 000 App. A.3):

    R(x)(y) = e^{(d - 1 - |y_{-x}|) eps0} / (2 (1 + e^eps0)^{d - 1}).

Among unary encodings this choice minimises the variance of the frequency estimator. The shared
machinery (sampling, declared distribution, grouping) is :class:`UnaryEncoding`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from shufflesim.protocols.randomizers.analysis import VariationRatioRow, ldp_row
from shufflesim.protocols.randomizers.rappor import UnaryEncoding
from shufflesim.protocols.randomizers.registry import register


@register
@dataclass(frozen=True)
class OUE(UnaryEncoding):
    """Optimized unary encoding; supports per-user budgets (b depends on each user's eps)."""

    name = "oue"
    #: Example parameters (the conformance suites build it from them).
    example = dict(epsilon0=1.1, domain_size=5)
    supports_personalized = True

    def variation_ratio_parameters(self) -> VariationRatioRow:
        """Bits (x0, x1) are the only ones whose law differs: (1/2, q*) vs (q*, 1/2),
        q* = 1/(e+1); TV = (1 - 2 q*)/2. Not a row of 001; derived from the definition
        (001 App. G)."""
        return ldp_row(self.epsilon0, math.tanh(self.epsilon0 / 2.0) / 2.0,
                       "TV of OUE derived from the definition (001 App. G)")

    def log_bit_probabilities(self, epsilon=None):
        """a = 1/2, b = 1 / (e^eps + 1)."""
        eps = np.asarray(self.epsilon0 if epsilon is None else epsilon, dtype=float)
        log_half = np.full(eps.shape, -np.log(2.0))
        return log_half, log_half, -np.log1p(np.exp(eps)), -np.log1p(np.exp(-eps))
