"""One fresh device of the fresh-device mode (fresh_devices.py), the only code a worker process
imports besides the client: kept small so that starting a device costs little more than
importing numpy and the client."""

from __future__ import annotations

import numpy as np

from shufflesim.simulator.audit.loading import load_implementation


def device(spec, vectorized, values: np.ndarray, seed: np.random.SeedSequence) -> np.ndarray:
    """Load the client in this (new) process and randomize one batch with a generator of its
    own, without seeding the global random states (a freshly started device)."""
    impl = load_implementation(spec, vectorized=vectorized, seed_global=False)
    return np.asarray(impl.call(values, np.random.default_rng(seed)))
