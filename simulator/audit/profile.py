"""The claimed mechanism's privacy profile at the randomizer level (issue 29):
``implementation-profile``, an (eps0, delta0) claim tested where samples have power.

An (eps0, delta0) claim such as the registered ``gaussian`` is more than one point: the claimed
mechanism has a whole privacy profile delta(eps) (``delta_at``: for the Gaussian mechanism
N(0, sigma^2) at L2 sensitivity Delta, Balle and Wang 2018, Thm 8, exact). Its eps at a larger
delta, eps_claim(delta*) = min {eps : delta_at(eps) <= delta*}, bounds the eps of every pair of
inputs of the claimed mechanism at delta* (the profile is that of the worst pair, at the full
sensitivity), and of any post-processing of its reports (the audit's events). So if the
implementation is the claim, an empirical lower bound at delta* (randomizer_level.py, with
delta0 = delta*) exceeds eps_claim(delta*) with probability at most 1 - confidence, and a
larger one convicts the implementation.

Why: at the claimed delta0 (1e-6) the events that certify eps0 have probabilities near delta0
and 10^6 samples see a handful of them (a Gaussian client with sigma 20 % too small: eps_lb
0.74 < 1 at 10^6 samples); at delta* = PROFILE_DELTA (1e-2) the certifying events have
probabilities near 0.1 and the gap between the faulty client's eps(delta*) and the claim's is
still a quarter of it.

The run uses its own random stream (child key PROFILE_KEY) and its own error level; its
p-value is valid on its own (grading.Evidence), and Holm's procedure over the run's verdict
rows (grading.py) counts it as one more test. eps_claim(delta*) is the upper end of a
bisection (delta_at at it is <= delta*), so rounding only makes the verdict harder to reach.
"""

from __future__ import annotations

import math

import numpy as np

from shufflesim.simulator.audit.grading import Evidence
from shufflesim.simulator.audit.randomizer_level import audit_randomizer
from shufflesim.simulator.audit.sampling import child
from shufflesim.simulator.audit.tables import implementation_records
from shufflesim.simulator.audit.verdicts import (
    CONSISTENT,
    TOLERANCE,
    VIOLATED,
    ImplementationVerdict,
)

#: The delta at which the claim's profile is tested.
PROFILE_DELTA = 1e-2
#: Spawn key of the profile run's stream.
PROFILE_KEY = 0x9F01


def profile_epsilon(declared, delta: float) -> float | None:
    """eps_claim(delta) (module docstring), the upper end of a bisection; None when the claim
    declares no privacy profile (``delta_at``) or delta is at or above its delta at eps = 0."""
    delta_at = getattr(declared, "delta_at", None)
    if delta_at is None or not float(getattr(declared, "delta0", 0.0) or 0.0) > 0:
        return None

    def d(eps: float) -> float:
        return float(np.asarray(delta_at(eps)))

    if d(0.0) <= delta:
        return None
    lo, hi = 0.0, max(1.0, float(declared.epsilon0))
    while d(hi) > delta:
        lo, hi = hi, 2.0 * hi
        if hi > 1e4:
            return None
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        if d(mid) > delta:
            lo = mid
        else:
            hi = mid
    return hi


def profile_rows(tested, options, seed: np.random.SeedSequence, context: dict,
                 events=None) -> list[dict]:
    """The ``implementation-profile`` verdict row of ``tested`` (an ImplementationRandomizer
    whose claim declares a profile), or none."""
    declared = tested.claim.randomizer
    target = profile_epsilon(declared, PROFILE_DELTA)
    if target is None:
        return []
    audit = audit_randomizer(tested, options, child(seed, PROFILE_KEY), events=events,
                             delta0=PROFILE_DELTA)
    best = audit.best
    eps_lb = best.epsilon_lb
    alpha = 1.0 - options.confidence
    p = Evidence.of(best.bound, PROFILE_DELTA, alpha).p_value(target)
    where = (f"at delta = {PROFILE_DELTA:g}, confidence {options.confidence:g}, inputs "
             f"({best.x}, {best.x_prime}), event {best.event}")
    claim = f"{declared.name}(eps0 = {declared.epsilon0:g}, delta0 = {declared.delta0:g})"
    if math.isfinite(eps_lb) and eps_lb > target * (1 + TOLERANCE):
        verdict = VIOLATED
        sentence = (f"the implementation is not the claimed {claim}: eps lower bound "
                    f"{eps_lb:.6g} {where} exceeds the claimed mechanism's own eps "
                    f"{target:.6g} at that delta (its privacy profile)")
    else:
        verdict = CONSISTENT
        sentence = (f"no evidence against the claimed {claim}'s privacy profile: eps lower "
                    f"bound {eps_lb:.6g} <= its eps {target:.6g} ({where})")
    row = ImplementationVerdict("profile", verdict, sentence, eps_lb, options.confidence,
                                target, p_value=p, delta=PROFILE_DELTA)
    return implementation_records([row], {**context, "pair": f"{best.x} vs {best.x_prime}"},
                                  "randomizer", tested.implementation.source,
                                  seconds=audit.seconds)
