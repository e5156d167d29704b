"""Vectorized test mechanisms for the audit's search tests and its power benchmark: k-RR, OUE,
Laplace and local hashing (with its support decoder), with planted faults (``leak``: a report
that reveals the input with that probability; ``top_bypass``: the top value is not
randomized)."""

from __future__ import annotations

import math

import numpy as np


def krr(eps, d, leak=0.0, top_bypass=False):
    p = math.exp(eps) / (math.exp(eps) + d - 1)

    def sample(v, rng):
        v = np.asarray(v, dtype=np.int64)
        keep = rng.random(v.shape) < p
        y = np.where(keep, v, (v + rng.integers(1, d, v.shape)) % d)
        if top_bypass:  # off-by-one: the client randomizes values 0..d-2 only
            y = np.where(v == d - 1, v, y)
        if leak:
            y = np.where(rng.random(v.shape) < leak, v + d, y)
        return y

    return sample


def oue(eps, d, leak=0.0):
    q = 1 / (math.exp(eps) + 1)

    def sample(v, rng):
        v = np.asarray(v, dtype=np.int64)
        y = rng.random(v.shape + (d,)) < q
        y[np.arange(v.size), v] = rng.random(v.shape) < 0.5
        if leak:
            clean = rng.random(v.shape) < leak
            y[clean] = False
            y[np.flatnonzero(clean), v[clean]] = True
        return y

    return sample


def laplace(eps, low=0.0, high=1.0):
    def sample(v, rng):
        return np.asarray(v, dtype=float) + rng.laplace(0.0, (high - low) / eps, np.shape(v))

    return sample


P31 = (1 << 31) - 1


def olh(eps, d):
    """Local hashing with hash h_(s)(x) = ((s1 x + s2) mod P) mod g and a support decoder."""
    g = int(round(math.exp(eps))) + 1
    p = math.exp(eps) / (math.exp(eps) + g - 1)

    def h(s1, s2, x):
        return ((s1 * np.asarray(x, dtype=np.int64) + s2) % P31) % g

    def sample(v, rng):
        v = np.asarray(v, dtype=np.int64)
        s1 = rng.integers(1, P31, v.shape)
        s2 = rng.integers(0, P31, v.shape)
        hv = h(s1, s2, v)
        keep = rng.random(v.shape) < p
        y = np.where(keep, hv, (hv + rng.integers(1, g, v.shape)) % g)
        return np.stack([y, s1, s2], axis=-1)

    def support(reports, x):
        r = np.asarray(reports, dtype=np.int64)
        return h(r[:, 1], r[:, 2], x) == r[:, 0]

    return sample, support
