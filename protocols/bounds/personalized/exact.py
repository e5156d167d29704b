"""The exact pair with heterogeneous budgets (000 Thm 14 generalized; module docstring of
protocols.bounds.personalized.bounds): delta(eps) = sum_c2 w(c2) E[(alpha + linear(X))_+] with
closed forms in binomial tails for the three cases x2 = x1, x2 = x0 and x2 elsewhere.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import special

from shufflesim.protocols.bounds.engine.common import REL_SPECIAL, Estimate, U, leaf_positive_part
from shufflesim.protocols.bounds.personalized.blanket import _KRRFamily
from shufflesim.protocols.bounds.personalized.profile import (
    REL_LOG,
    poisson_binomial,
)
from shufflesim.protocols.distributions import binom
from shufflesim.protocols.errors import require


def _perturbation(magnitude_a, beta, t, v, rho, rel):
    """Bound on |E[(alpha' + beta' B)_+] - E[(alpha + beta B)_+]|, B ~ Bin(t, rho), when alpha
    and beta carry relative errors <= rel with |alpha| parts summing to ``magnitude_a`` and
    v = alpha / beta: the integrand moves by at most rel (magnitude_a + beta B), and only where
    one of the two is positive, B >= x* - 1 when that shift is below one step
    (rel (magnitude_a / beta + t) < 1); otherwise everywhere."""
    k = np.maximum(np.floor(-v) + 1.0, 0.0)
    j = np.maximum(k - 1.0, 0.0)
    tail = binom.sf(j - 1.0, t, rho)                                     # P[B >= j]
    tail_b = t * rho * binom.sf(j - 2.0, np.maximum(t - 1.0, 0.0), rho)  # E[B 1{B >= j}]
    local = magnitude_a * tail + beta * tail_b
    with np.errstate(divide="ignore", invalid="ignore"):
        shift_ok = rel * (magnitude_a / beta + t) < 1.0
    full = magnitude_a + beta * t * rho
    return rel * np.where(shift_ok, local, full) * (1 + REL_SPECIAL) + 8 * U * full


# ----------------------------------------------------------------------------------------------
# Exact pair: delta(eps) = sum_c2 w(c2) E[(alpha + linear)_+]
# ----------------------------------------------------------------------------------------------
PATTERNS = ("x2=x1", "x2=x0", "x2-other")


@dataclass
class _ExactPair:
    """Precomputed, eps-independent parts of the exact-pair delta for one target budget and one
    pattern (module docstring)."""

    family: _KRRFamily
    target_epsilon: float
    n: int
    pattern: str
    c2: np.ndarray            # window of the count at x2
    log_a: np.ndarray         # log w(c2) + log F(c2)
    log_b: np.ndarray         # log w(c2) + log F(c2 - 1)
    outside: float            # P_2(c2 outside the window) * e^eps_t: bound on its contribution
    pi_dropped: float         # mass of M left out of F
    rel: float                # relative error of exp(log_a), exp(log_b)

    @classmethod
    def build(cls, family: _KRRFamily, target_epsilon: float, others_values, others_counts,
              pattern: str) -> _ExactPair:
        require(pattern in PATTERNS, "pattern", pattern, f"must be one of {PATTERNS}")
        k = family.k
        require(pattern != "x2-other" or k >= 3, "pattern", pattern, "needs k >= 3")
        n = int(np.sum(others_counts)) + 1
        pi = family.others_law(others_values, others_counts)
        # c2 = n - Y, Y ~ PB over all n users of gamma_i (k - 1) / k (outputs other than x2,
        # everyone at x2): its window, and its left-out mass.
        values = np.append(np.asarray(others_values, dtype=float), target_epsilon)
        counts = np.append(np.asarray(others_counts, dtype=np.int64), 1)
        # 1 - gamma (k - 1) / k = e^eps / (e^eps + k - 1) = p (computed directly)
        y = poisson_binomial(family.gamma(values) * (k - 1) / k, counts,
                             1.0 / (1.0 + (k - 1) * np.exp(-values)))
        c2 = (n - y.support)[::-1]
        outside = (y.dropped + 0.0) * math.exp(target_epsilon) * (1 + y.rel_err)
        m = pi.support.astype(float)
        log_pi = np.log(np.maximum(pi.pmf, 1e-300))
        base = log_pi + special.gammaln(m + 1.0) - m * math.log(k)
        cs = np.concatenate([[c2[0] - 1], c2]).astype(float)
        log_f = np.full(cs.size, -np.inf)
        step = max(1, (1 << 22) // max(1, m.size))
        for start in range(0, cs.size, step):  # chunks of c2 (memory bound)
            c = cs[start:start + step, None]
            j = c - (n - 1) + m[None, :]
            with np.errstate(invalid="ignore"):
                terms = np.where(j >= 0, base[None, :] - special.gammaln(np.maximum(j, 0) + 1.0),
                                 -np.inf)
            log_f[start:start + step] = special.logsumexp(terms, axis=1)
        log_w = (n - c2) * math.log(k - 1) - special.gammaln(n - c2 + 1.0)
        return cls(family, float(target_epsilon), n, pattern, c2.astype(np.int64),
                   log_w + log_f[1:], log_w + log_f[:-1], float(outside), float(pi.dropped),
                   REL_LOG + float(pi.rel_err))

    def delta(self, epsilon: float) -> Estimate:
        """delta(eps) for the pair, bracketed (lower and upper)."""
        growth = math.exp(epsilon)
        drop = -math.expm1(epsilon)                        # 1 - e^eps
        p, q = self.family.pq(self.target_epsilon)
        gap = self.family.gap(self.target_epsilon)         # p - q
        k = self.family.k
        n_rest = (self.n - self.c2).astype(float)
        ea = np.exp(self.log_a)
        eb = np.exp(self.log_b)
        r = 1.0 / (k - 1)
        if self.pattern == "x2-other":
            value, err = self._other_value(ea, eb, n_rest, q, gap, growth, drop, r)
        else:
            if self.pattern == "x2=x1":
                # q - e^eps p = -q expm1(eps + eps_t)
                alpha_a = ea * drop * q * n_rest
                alpha_b = eb * (-q * math.expm1(epsilon + self.target_epsilon))
                beta, rho, shift = ea * gap, r, 0.0
            else:  # x2 = x0: alpha - beta X with X ~ Bin(N', r) = alpha - beta N' + beta X'
                # p - e^eps q = -p expm1(eps - eps_t)
                alpha_a = ea * drop * q * n_rest
                alpha_b = eb * (-p * math.expm1(epsilon - self.target_epsilon))
                beta, rho, shift = ea * growth * gap, 1.0 - r, 1.0
            alpha = alpha_a + alpha_b - shift * beta * n_rest
            pos = beta > 0
            safe = np.where(pos, beta, 1.0)
            v = alpha / safe
            leaf, leaf_err = leaf_positive_part(n_rest, v, 0.0, 1.0, rho)
            value = np.where(pos, beta * leaf, np.maximum(alpha, 0.0))
            magnitude_a = np.abs(alpha_a) + np.abs(alpha_b) + shift * beta * n_rest
            moved = _perturbation(magnitude_a, safe, n_rest, v, rho, self.rel)
            err = np.where(pos, beta * leaf_err + moved, (self.rel + 8 * U) * magnitude_a)
        total = float(np.sum(value))
        slack = float(np.sum(err)) + 4 * U * total * self.c2.size
        # Left-out mass of M changes delta by at most (1 + e^eps) times it; c2 outside the
        # window adds at most e^eps_t P_2(outside) (P_0 <= e^eps_t P_2, (P0 - e P1)_+ <= P0).
        lower = max(0.0, total - slack - (1 + growth) * self.pi_dropped)
        upper = total + slack + (1 + growth) * self.pi_dropped + self.outside
        return Estimate(lower, lower, upper, "heterogeneous-exact")

    def _other_value(self, ea, eb, n_rest, q, gap, growth, drop, r):
        """x2 outside {x0, x1}: (X, Y) ~ trinomial(N'; r, r), S = X + Y ~ Bin(N', 2r),
        X | S ~ Bin(S, 1/2); integrand alpha - kappa e S + kappa (1 + e) X."""
        alpha_a = drop * q * ea * n_rest
        alpha_b = drop * q * eb
        alpha = alpha_a + alpha_b
        kappa = ea * gap
        two_r = 2.0 * r
        mean = n_rest * two_r
        sd = np.sqrt(np.maximum(n_rest * two_r * (1 - two_r), 0.0))
        half = int(math.ceil(9.0 * float(sd.max(initial=0.0)) + 10))
        s = np.round(mean)[:, None] + np.arange(-half, half + 1)[None, :]
        inside = (s >= 0) & (s <= n_rest[:, None])
        s = np.clip(s, 0, n_rest[:, None])
        weight = np.where(inside, binom.pmf(s, n_rest[:, None], two_r), 0.0)
        beta = kappa * (1 + growth)
        pos = beta > 0
        safe = np.where(pos, beta, 1.0)[:, None]
        v = (alpha[:, None] - kappa[:, None] * growth * s) / safe
        leaf, leaf_err = leaf_positive_part(s, v, 0.0, 1.0, 0.5)
        inner = np.where(pos[:, None], safe * leaf, np.maximum(alpha[:, None], 0.0))
        # alpha - kappa e S is perturbed through ea, eb (relative self.rel) as a whole.
        magnitude_a = (np.abs(alpha_a) + np.abs(alpha_b))[:, None] + kappa[:, None] * growth * s
        moved = _perturbation(magnitude_a, safe, s, v, 0.5, self.rel)
        inner_err = np.where(pos[:, None], safe * leaf_err + moved,
                             (self.rel + 8 * U) * magnitude_a)
        value = np.sum(weight * inner, axis=1)
        err = np.sum(weight * (inner_err + (REL_SPECIAL + 4 * U) * inner), axis=1)
        # S outside its window: the integrand is at most P_0's numerator,
        # ea (q N' + (p - q) X) + eb q, whose mass there is bounded with binomial tails.
        lo_edge = np.round(mean) - half
        hi_edge = np.round(mean) + half
        tail_p = binom.cdf(lo_edge - 1, n_rest, two_r) + binom.sf(hi_edge, n_rest,
                                                                             two_r)
        nm1 = np.maximum(n_rest - 1, 0)
        tail_s = n_rest * two_r * (binom.cdf(lo_edge - 2, nm1, two_r)
                                   + binom.sf(hi_edge - 1, nm1, two_r))
        err = err + (ea * q * n_rest + eb * q) * tail_p + ea * gap * 0.5 * tail_s
        return value, err
