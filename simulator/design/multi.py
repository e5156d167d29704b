"""Certified number of blanket messages of a multi-message protocol over T rounds.

Per round, the proven ``multi-message-exact-upper`` bound (001 Sec. 4 protocols with 000's exact
two-count analysis; protocols.bounds.multi_message) gives eps_r at delta_r. T identical rounds
compose by

* basic composition (Dwork et al. 2006): (T eps_r, T delta_r), delta_r = delta / T;
* advanced composition (Kairouz, Oh, Viswanath 2015, Thm 3.5;
  protocols.accounting.baselines.advanced_epsilon): (eps', delta' + T delta_r) with
  delta' = f delta, delta_r = (1 - f) delta / T, f in ADVANCED_FRACTIONS.

Each split s of delta thus asks for a per-round eps_r(b, delta_r(s)) <= need(s), the largest
per-round eps whose composition meets the target (the composition is increasing in eps_r, so
need(s) is found by bisection on the formula, with no bound evaluation). The split is chosen at
b = 1 (the smallest ratio eps_r / need), and b is searched for that split: a first guess from
eps_r ~ 1/sqrt(b) (the blanket's variance grows like b), then steps of 1.5 to a bracket and
bisection on integers. Every b reported was certified by an evaluation at that b (the bound's
eps at delta_r(s) <= need(s)); the lifetime eps reported is the composition at that eps_r.
"""

from __future__ import annotations

import math
import time

from shufflesim.protocols.accounting.baselines import advanced_epsilon
from shufflesim.protocols.bounds.catalogue import evaluate
from shufflesim.protocols.errors import ParameterError
from shufflesim.simulator.design.candidates import Candidate
from shufflesim.simulator.design.certificate import CACHE, Certificate

MULTI_BOUND = "multi-message-exact-upper"
#: Largest number of blanket messages searched.
BLANKET_MAX = 1 << 16
ADVANCED_FRACTIONS = (0.1, 0.5)


def splits(rounds: int, delta: float) -> list[tuple[str, float, float | None]]:
    """(label, delta_r, advanced fraction or None for basic) of every split of delta."""
    if rounds == 1:
        return [("one round", delta, None)]
    out = [("basic composition, delta_r = delta / T", delta / rounds, None)]
    out += [(f"advanced composition (KOV15), delta' = {f:g} delta", (1 - f) * delta / rounds, f)
            for f in ADVANCED_FRACTIONS]
    return out


def composed(eps_r: float, rounds: int, delta: float, fraction: float | None) -> float:
    """The lifetime eps of ``rounds`` rounds of eps_r under a split (module docstring)."""
    if fraction is None:
        return rounds * eps_r
    return advanced_epsilon([(eps_r, rounds)], fraction * delta) * (1 + 1e-12)


def need(target: float, rounds: int, delta: float, fraction: float | None) -> float:
    """The largest per-round eps whose composition is <= target (bisection on the formula;
    the value returned satisfies the inequality)."""
    if fraction is None:
        value = target / rounds
        while composed(value, rounds, delta, None) > target:
            value = math.nextafter(value, 0.0)
        return value
    low, high = 0.0, target
    for _ in range(200):
        middle = 0.5 * (low + high)
        if composed(middle, rounds, delta, fraction) <= target:
            low = middle
        else:
            high = middle
    return low


def certify_multi(candidate: Candidate, n: int, rounds: int, target: float, delta: float,
                  blanket_max: int = BLANKET_MAX) -> Certificate:
    """The smallest b in [1, blanket_max] found for the chosen split (module docstring)."""
    started = time.perf_counter()
    key = ("multi", candidate.family_key, n, rounds, target, delta, blanket_max)
    if key in CACHE:
        return CACHE[key]
    evaluated: dict[tuple[int, float], float] = {}

    def eps_r(b: int, delta_r: float) -> float:
        if (b, delta_r) not in evaluated:
            try:
                out = evaluate(MULTI_BOUND, candidate.build(target, b), n, delta_r)
                evaluated[b, delta_r] = float(out.result.epsilon) if out.ok else math.inf
            except ParameterError:
                evaluated[b, delta_r] = math.inf
        return evaluated[b, delta_r]

    options = [(label, d_r, f, need(target, rounds, delta, f))
               for label, d_r, f in splits(rounds, delta)]
    label, delta_r, fraction, limit = min(options, key=lambda o: eps_r(1, o[1]) / o[3])

    def ok(b: int) -> bool:
        return eps_r(b, delta_r) <= limit

    guess = eps_r(1, delta_r) / limit
    guess = 1 if not math.isfinite(guess) else min(max(1, math.ceil(guess * guess)), blanket_max)
    low, high = 0, None                    # low: fails (0 = no blanket), high: certified
    b = guess
    while True:
        if ok(b):
            high = b
            if b == 1 or (low and b - low <= 1):
                break
            nxt = max(low + 1, int(b / 1.5))
            if nxt >= b:
                break
            b = nxt
        else:
            low = b
            if high is not None or b >= blanket_max:
                break
            b = min(blanket_max, max(b + 1, math.ceil(b * 1.5)))
    if high is None:
        e = eps_r(blanket_max, delta_r)
        reach = composed(e, rounds, delta, fraction) if math.isfinite(e) else None
        result = Certificate(False, None, blanket_max, MULTI_BOUND, reach,
                             reason=f"{blanket_max} blanket messages do not meet it ({label})",
                             seconds=time.perf_counter() - started)
        CACHE[key] = result
        return result
    while high - low > 1:
        middle = (low + high) // 2
        if ok(middle):
            high = middle
        else:
            low = middle
    e = eps_r(high, delta_r)
    result = Certificate(True, e, high, MULTI_BOUND, composed(e, rounds, delta, fraction),
                         f"{label}; per-round eps {e:.4g} at delta_r = {delta_r:.3g}",
                         seconds=time.perf_counter() - started)
    CACHE[key] = result
    return result
