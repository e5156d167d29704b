"""Bounds on the law of the conditioning method's pool deviation Y = V - E V (engine/
conditioning.py, step 2; 000 Thm 12-14): its variance and a log-MGF bound psi(lam), and from
them the tail bounds of E(+-Y - a)_+ that the kink sum uses: min(phi, Chernoff) per kink
(phi(a) = (sqrt(Var + a^2) - a) / 2, the sharp mean-variance bound; Chernoff
E(Y - a)_+ <= E e^{lam (Y - a)} / (lam e)) and the geometric far sides.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from shufflesim.protocols.bounds.engine.common import U, chernoff_lambda, excess_bound


@dataclass
class Deviation:
    """Bounds on the law of Y = V - E V: its variance and a log-MGF bound psi(lam) >=
    log E e^{lam Y} (lam of either sign), as the sum of the pieces present."""

    var: np.ndarray
    binom_m: np.ndarray | None = None     # exact binomial part alpha (X - mq), X ~ Bin(m, q)
    binom_q: float = 0.0
    alpha: float = 0.0
    hoeffding_range: np.ndarray | None = None   # |alpha| (hi - lo) on a block
    bennett_n: np.ndarray | None = None   # Bennett part: n terms, variance v, bound M
    bennett_v: float = 0.0
    bennett_m: float = 0.0

    def restricted(self, mask):
        """The same bounds at the entries ``mask`` of the full shape (flattened)."""
        def part(x):
            return None if x is None else np.broadcast_to(x, mask.shape)[mask]
        return Deviation(part(self.var), part(self.binom_m), self.binom_q, self.alpha,
                         part(self.hoeffding_range), part(self.bennett_n), self.bennett_v,
                         self.bennett_m)

    def psi(self, lam):
        out = np.zeros(np.broadcast(lam, self.var).shape)
        with np.errstate(over="ignore", invalid="ignore"):
            if self.binom_m is not None and self.alpha != 0:
                x = lam * self.alpha
                out = out + self.binom_m * (np.log1p(self.binom_q * np.expm1(x)) - self.binom_q * x)
            if self.hoeffding_range is not None:
                out = out + (lam * self.hoeffding_range) ** 2 / 8.0
            if self.bennett_n is not None and self.bennett_v > 0:
                y = np.abs(lam) * self.bennett_m
                out = out + (self.bennett_n * self.bennett_v * (np.expm1(y) - y)
                             / self.bennett_m ** 2)
        return np.where(np.isnan(out), np.inf, out)


def chernoff_log(dev: Deviation, dist, sign):
    """log of the Chernoff bound E[(sign Y - dist)_+] <= E e^{lam (sign Y - dist)} / (lam e),
    at lam = chernoff_lambda(Var, dist) or 2^-j of it (j <= 6) where the log-MGF bound is over
    twice the Gaussian one (50-RR, eps0 = 0.1, n = 5e5: phi at 84 sd); returns (log b, lam)."""
    lam = chernoff_lambda(dev.var, dist)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        psi = dev.psi(sign * lam)
        log_b = np.where(np.isnan(psi), np.inf, psi - lam * dist - np.log(lam * np.e))
        heavy = ~(psi <= lam * lam * dev.var) & (dev.var > 0) & np.isfinite(lam)
        if np.any(heavy):
            shape = log_b.shape
            sub = dev.restricted(heavy)
            lam_h, best = lam[heavy], log_b[heavy]
            dist_h = np.broadcast_to(dist, shape)[heavy]
            sign_h = np.broadcast_to(sign, shape)[heavy]
            lam_best = lam_h
            for j in range(1, 7):
                lam_j = lam_h * 0.5 ** j
                cand = sub.psi(sign_h * lam_j) - lam_j * dist_h - np.log(lam_j * np.e)
                better = cand < best
                best, lam_best = np.where(better, cand, best), np.where(better, lam_j, lam_best)
            log_b, lam = log_b.copy(), np.array(lam, dtype=float, copy=True)
            log_b[heavy], lam[heavy] = best, lam_best
    return log_b, lam


def tail_bound(dev: Deviation, dist, sign):
    """min(phi, Chernoff) bound of E[(sign Y - dist)_+], dist >= 0 (sign = +-1 per element)."""
    log_b, _ = chernoff_log(dev, dist, sign)
    chern = np.exp(np.minimum(log_b, 700.0))
    return np.where(dev.var > 0, np.minimum(excess_bound(dev.var, dist), chern), 0.0)


def far_side(dev: Deviation, dist, sign, p_edge, ratio, step, side_pmax):
    """Bound of sum_{i >= 0} P[B = k_edge +- i] E[(sign Y - dist - i step)_+]: Chernoff at the
    lam of the first term gives a factor e^{-lam step} per kink; the pmf grows at most by
    ``ratio`` per kink (binomial pmf ratios are monotone), so the sum is geometric. Where
    ratio e^{-lam step} >= 1, ``side_pmax()`` (largest pmf of the side) replaces the growth.
    Every term is also at most phi(Var, dist) (phi decreases in the distance) and the pmfs sum
    to at most 1 (p_edge / (1 - ratio) where ratio < 1): the bound where Chernoff overflows."""
    log_b, lam = chernoff_log(dev, dist, sign)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        shrink = np.log(ratio) - lam * step
        geometric = np.exp(np.minimum(log_b, 700.0)) / -np.expm1(np.minimum(shrink, -1e-300))
        out = np.where(shrink < -1e-12, p_edge * geometric, np.inf)
        bad = ~np.isfinite(out) & (dev.var > 0)
        if bad.any():
            fallback = np.exp(np.minimum(log_b[bad], 700.0)) / -np.expm1(-lam[bad] * step)
            out = out.copy()
            out[bad] = side_pmax(bad) * fallback
    with np.errstate(divide="ignore", invalid="ignore"):      # the side's pmfs sum to this
        mass = np.where(ratio < 1.0, p_edge / (1.0 - ratio), 1.0)
    mass = np.minimum(np.nan_to_num(mass, nan=1.0, posinf=1.0) * (1 + 8 * U), 1.0)
    out = np.minimum(np.nan_to_num(out, nan=np.inf), excess_bound(dev.var, dist) * mass)
    return np.where(dev.var > 0, out, 0.0)
