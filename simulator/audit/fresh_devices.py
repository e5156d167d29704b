"""Fresh-device mode (issue 29): does the implementation's randomness repeat across devices?

A single-process audit cannot see a client that seeds numpy's global generator at import (or
uses a fixed key): every call after the first continues one stream, and the audit itself seeds
the global state before each call. Here ``devices`` short-lived worker processes (``spawn``:
each imports the client afresh; one task per process) each run one small batch - the same
``BATCH`` inputs, cycling through the domain - with its own generator and *without* the audit's
seeding of the global state, as a freshly started device would.

Test. Devices are paired (1, 2), (3, 4), ...: disjoint pairs are independent. For a pair, M is
the number of positions at which the two batches' reports are equal. Under the claim the
positions agree independently with probability q_i = sum_y P(y | x_i)^2 (the claimed output
pmf; 0 for a continuous law), so M is Poisson-binomial and P[M >= m] is computed exactly
(dynamic programming over the BATCH positions). The p-value is the smallest pair's tail times
the number of pairs (Bonferroni); it enters the run's Holm family (grading.py). The sentence
says what repeated (how many reports, in which devices).
"""

from __future__ import annotations

import multiprocessing
import pickle

import numpy as np

from shufflesim.protocols.errors import require
from shufflesim.protocols.randomizers.base import MAX_ENUMERABLE_OUTPUTS
from shufflesim.protocols.randomizers.domains import Categorical
from shufflesim.simulator.audit.device_worker import device
from shufflesim.simulator.audit.sampling import child
from shufflesim.simulator.audit.tables import implementation_records
from shufflesim.simulator.audit.verdicts import CONSISTENT, VIOLATED, ImplementationVerdict

#: Reports per device (one batch).
BATCH = 64
#: Default number of fresh devices.
DEVICES = 4
#: Spawn key of the devices' generators.
DEVICE_KEY = 0xDE7


def device_inputs(domain, size: int = BATCH) -> np.ndarray:
    """The batch every device randomizes: the domain's values in turn (categorical) or an even
    grid over its interval."""
    if isinstance(domain, Categorical):
        return np.arange(size) % domain.size
    return np.linspace(float(domain.low), float(domain.high), size)


def agreement_probabilities(declared, values: np.ndarray) -> np.ndarray:
    """q_i = P[two independent reports of values[i] are equal] under the claim (module
    docstring): sum_y P(y | x)^2 for an enumerable law, 0 for a continuous one, 1 (no
    information) when the claim gives neither."""
    if declared is None:
        return np.ones(values.size)
    if getattr(declared, "output_kind", "discrete") == "continuous":
        return np.zeros(values.size)
    size = getattr(declared, "output_size", None)
    if size is None or size > MAX_ENUMERABLE_OUTPUTS:
        return np.ones(values.size)
    pmf = np.asarray(declared.output_pmf(values), dtype=float).reshape(values.size, -1)
    return np.minimum(1.0, (pmf ** 2).sum(axis=1))


def tail_at_least(q: np.ndarray, m: int) -> float:
    """P[sum of independent Bernoulli(q_i) >= m] (exact, dynamic programming)."""
    dist = np.zeros(q.size + 1)
    dist[0] = 1.0
    for p in q:
        dist[1:] = dist[1:] * (1 - p) + dist[:-1] * p
        dist[0] *= 1 - p
    return float(min(1.0, dist[m:].sum()))


def run_devices(implementation, declared, domain, seed: np.random.SeedSequence, *,
                devices: int = DEVICES, vectorized=None, input_offset: int = 0) -> list:
    """Each device's reports (module docstring), from ``devices`` fresh processes."""
    require(isinstance(devices, int) and devices >= 2, "fresh_devices", devices,
            "needs at least 2 devices")
    spec = implementation.source if isinstance(implementation.source, str) and (
        ".py:" in implementation.source) else implementation.function
    try:
        pickle.dumps(spec)
    except Exception:  # a lambda or a function defined inside another
        require(False, "fresh_devices", implementation.source, "needs the implementation as "
                "path/file.py:function or an importable module:function (a fresh process "
                "imports it)")
    values = device_inputs(domain) + input_offset
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(processes=min(2, devices), maxtasksperchild=1) as pool:
        tasks = [(spec, vectorized, values, child(seed, DEVICE_KEY, k)) for k in range(devices)]
        return pool.starmap(device, tasks)


def fresh_device_verdict(reports: list, declared, domain, confidence: float
                         ) -> ImplementationVerdict:
    """The verdict row ``implementation-fresh-devices`` (module docstring)."""
    values = device_inputs(domain)
    q = agreement_probabilities(declared, values)
    flat = [np.asarray(r).reshape(values.size, -1) for r in reports]
    pairs = [(a, a + 1) for a in range(0, len(flat) - 1, 2)]
    best_p, best = 1.0, None
    for a, b in pairs:
        equal = np.all(flat[a] == flat[b], axis=1)
        m = int(equal.sum())
        p = tail_at_least(q, m) if m else 1.0
        if best is None or p < best_p:
            best_p, best = p, (a, b, m)
    p_value = min(1.0, best_p * len(pairs))
    identical = sum(bool(np.array_equal(flat[0], f)) for f in flat)
    a, b, m = best
    what = (f"all {values.size} reports identical in {identical} of {len(flat)} fresh devices"
            if identical > 1 else f"{m} of {values.size} reports equal in devices {a + 1} and "
            f"{b + 1}")
    tally = (f"{len(flat)} fresh processes, one batch of {values.size} reports each on the same "
             f"inputs; {what}; chance under the claim p = {p_value:.3g}")
    bad = p_value < 1.0 - confidence
    sentence = (f"the implementation's randomness repeats across fresh devices (seeded at "
                f"import or a fixed key?): {tally}" if bad
                else f"no repeated randomness across fresh devices: {tally}")
    return ImplementationVerdict("fresh-devices", VIOLATED if bad else CONSISTENT, sentence,
                                 confidence=confidence, p_value=p_value)


def fresh_device_rows(settings, tested, seed: np.random.SeedSequence, rows: list[dict]
                      ) -> list[dict]:
    """The ``implementation-fresh-devices`` verdict row of an audit of ``tested`` (an
    adapter.ImplementationRandomizer) with ``settings.fresh_devices`` devices, sharing the
    setting columns of the audit's ``rows``."""
    claim = tested.claim
    reports = run_devices(tested.implementation, claim.randomizer, claim.input_domain, seed,
                          devices=settings.fresh_devices, vectorized=settings.vectorized,
                          input_offset=claim.input_offset)
    verdict = fresh_device_verdict(reports, claim.randomizer, claim.input_domain,
                                   settings.confidence)
    keys = ("point", "overrides", "randomizer", "epsilon0", "n")
    context = ({k: rows[0][k] for k in keys} if rows else
               {"point": 0, "overrides": "{}", "randomizer": tested.name,
                "epsilon0": float(claim.epsilon0), "n": None})
    return implementation_records([verdict], context, settings.level.value,
                                  tested.implementation.source)
