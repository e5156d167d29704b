"""Unbiased frequency estimation from support counts, with its exact variance and covariance.

Every frequency oracle (brr, krr, subset, rappor, oue, blh, olh, hr) declares
``support_probabilities() = (p*, q*)``: a report from a user with value v supports v with
probability p*, and supports any given other value with probability q* (Wang et al. 2017,
"Locally differentially private protocols for frequency estimation", the "pure" protocols of
Sec. 3; 002 Sec. 5.1; 000 Sec. 6). ``aggregate`` turns n reports into the support counts C_v.

Estimator (Wang et al. 2017, Thm 2):  f_hat_v = (C_v / n - q*) / (p* - q*).

Assumptions: users randomize independently with the same eps0 (no per-user budgets), and the
frequencies are those of the n users (f_v = n_v / n, n_v the true counts). Then C_v is a sum of
n independent Bernoulli indicators with parameter p* (the n_v users holding v) or q* (the
others), so E[f_hat_v] = n_v / n and, exactly,

    Var(f_hat_v) = [n_v p*(1 - p*) + (n - n_v) q*(1 - q*)] / (n^2 (p* - q*)^2).

This holds for every oracle here although the indicators of one user are dependent across v
(k-RR and subset selection: fixed report size; HR: the Hadamard structure): only the marginal
law of each indicator enters Var(C_v). For blh / olh it is exact under a uniformly random hash
(the exact-hash mode; the idealized model in seeded mode).

Covariance: Cov(C_u, C_v) = sum_i [P_i(u and v supported) - P_i(u) P_i(v)]. The oracles declare
``support_pair_probabilities() = (r_own, r_other)``, P[a report supports u and v] when the
user's value is one of u, v or neither; HR adds ``support_pair_excess`` for the value w with
row(w) = row(u) xor row(v) (see protocols.randomizers.hadamard).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from shufflesim.protocols.estimators.base import CountEstimator, check_counts, check_n
from shufflesim.protocols.estimators.registry import register_estimator
from shufflesim.protocols.randomizers.base import Randomizer


@register_estimator
@dataclass(frozen=True)
class FrequencyEstimator(CountEstimator):
    """f_hat_v = (C_v / n - q*) / (p* - q*) for a frequency oracle (module docstring)."""

    name: ClassVar[str] = "frequency"
    target: ClassVar[str] = "frequency"

    @classmethod
    def fits(cls, randomizer: object) -> bool:
        return isinstance(randomizer, Randomizer) and hasattr(randomizer, "support_probabilities")

    @classmethod
    def needs(cls) -> str:
        return "a frequency oracle (a randomizer with support_probabilities)"

    @property
    def support_probabilities(self) -> tuple[float, float]:
        return tuple(float(p) for p in self.randomizer.support_probabilities())

    def estimate(self, counts, n):
        """Unbiased frequency estimates from support counts ``counts`` (..., d) of ``n`` reports
        (an int, or an array broadcasting against the leading axes, e.g. realized batch sizes).
        Not clipped: estimates may be negative or sum to other than one."""
        counts = check_counts("counts", counts, self.domain_size)
        n = check_n(n)
        p, q = self.support_probabilities
        return (counts / n[..., None] - q) / (p - q)

    def per_value_variance(self, true_counts, n):
        """Exact Var(f_hat_v) from the true counts n_v (real-valued allowed) and n."""
        p, q = self.support_probabilities
        n = np.asarray(n, dtype=float)[..., None]
        var_counts = true_counts * p * (1 - p) + (n - true_counts) * q * (1 - q)
        return var_counts / (n * n * (p - q) ** 2)

    def covariance(self, true_counts):
        """Exact covariance matrix of (f_hat_1, ..., f_hat_d), shape (..., d, d)."""
        true_counts = check_counts("true_counts", true_counts, self.domain_size)
        n = check_n(true_counts.sum(axis=-1))[..., None, None]
        p, q = self.support_probabilities
        r_own, r_other = (float(r) for r in self.randomizer.support_pair_probabilities())
        owners = true_counts[..., :, None] + true_counts[..., None, :]    # n_u + n_v
        cov_counts = owners * (r_own - p * q) + (n - owners) * (r_other - q * q)
        if hasattr(self.randomizer, "support_pair_excess"):
            cov_counts = cov_counts + self.randomizer.support_pair_excess(true_counts)
        d = self.domain_size
        diagonal = np.arange(d)
        var_counts = true_counts * p * (1 - p) + (n[..., 0] - true_counts) * q * (1 - q)
        cov_counts[..., diagonal, diagonal] = var_counts
        return cov_counts / (n * n * (p - q) ** 2)
