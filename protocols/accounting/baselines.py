"""Baselines a user compares with: basic and advanced composition of per-round (eps, delta).

Each round t is (eps_t, delta_t)-DP with eps_t the single-round ``optimal-blanket`` bound
(000 Thm 13, protocols.bounds.numerical.optimal, conservative side of the engine) at delta_t.

* ``basic`` (Dwork, Kenthapadi, McSherry, Mironov, Naor 2006; Dwork-Roth Thm 3.16): the
  composition is (sum eps_t, sum delta_t)-DP; here delta_t = delta / T.
* ``advanced`` (Kairouz, Oh, Viswanath 2015, Thm 3.5, heterogeneous form; Dwork, Rothblum,
  Vadhan 2010 with the sharper mean): for every delta' > 0 the adaptive composition is
  (eps', delta' + sum delta_t)-DP with
      eps' = min(sum eps_t, sum eps_t tanh(eps_t / 2) + sqrt(2 log(1/delta') sum eps_t^2)).
  (An (eps_t, delta_t)-DP round is delta_t-close to an eps_t-DP one; for eps-DP the privacy loss
  lies in [-eps, eps] with mean <= eps tanh(eps / 2), and Azuma-Hoeffding bounds the sum.)
  Per round, (eps_t, delta_t) is read off the round's privacy profile (profile.py: the
  hockey-stick curve of the pessimistic PLD of the 000 Thm 13 pair, the one optimal-blanket
  composes, cached per (randomizer, n, grid)), each eps_t capped at the round's eps0 (pure
  eps0-DP). The closed form is then minimised in one dimension over the split
  delta = delta' + T delta_t: every grid eps_t of the profile for one kind of round, a fine
  grid of fractions delta' / delta otherwise (vectorized; every candidate is a valid
  guarantee, the smallest is reported). No eps search per candidate (issue 32).

``naive_epsilon``: T x eps(delta), the number a user would write down without composition
theorems -- not a valid (eps, delta) guarantee (its delta is T delta); reported for comparison.
"""

from __future__ import annotations

import math
import time

import numpy as np

from shufflesim.protocols.accounting import pairs
from shufflesim.protocols.accounting.aggregate_parts import DEFAULT_TAIL, DEFAULT_WEAK_RTOL
from shufflesim.protocols.accounting.pld import grid_interval
from shufflesim.protocols.accounting.profile import round_profile
from shufflesim.protocols.accounting.rounds import (
    ComposedMethod,
    ComposedResult,
    normalize_rounds,
    total_rounds,
)
from shufflesim.protocols.bounds.numerical.blanket_delta import optimal_blanket_delta
from shufflesim.protocols.bounds.result import BoundKind, BoundStatus
from shufflesim.protocols.errors import ParameterError, require, require_probability_open
from shufflesim.protocols.lazy import lazy_functions

#: eps(delta) of one round (numerical/optimal.py), loaded on first use (issue 32): the
#: composition's fast paths ask delta(eps) questions (numerical/blanket_delta.py)
(optimal_blanket_epsilon,) = lazy_functions("shufflesim.protocols.bounds.numerical.optimal",
                                            "optimal_blanket_epsilon")

#: Fractions of delta given to delta' in the advanced composition of several kinds of round
#: (the former fixed choices and a fine logit grid between 1e-6 and 1 - 1e-6).
SEARCH_FRACTIONS = (0.02, 0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 0.9)
ADVANCED_FRACTIONS = np.unique(np.concatenate([
    SEARCH_FRACTIONS,
    1.0 / (1.0 + np.exp(-np.linspace(-13.8, 13.8, 2001)))]))


#: Relative width of the final bracket of :func:`round_epsilon` (the engine's own eps search
#: polishes to about 1.7e-4; questions much closer to the crossing make the engine refine for
#: 0.2-0.7 s each).
ROUND_EPSILON_RTOL = 1e-4
#: Engine questions :func:`round_epsilon` asks before it hands over to the engine's eps search.
MAX_QUESTIONS = 40


def round_epsilon(randomizer, n: int, delta_t: float,
                  start: tuple[float, float] | None = None) -> float:
    """The single-round optimal-blanket eps at delta_t (000 Thm 13, upper side), found by
    engine questions (optimal.optimal_blanket_delta with threshold delta_t, a few ms each at
    n = 1e5) instead of the engine's eps search (0.4-2 s at delta_t = 1e-8; issue 32): the
    smallest point of the lattice eps0 (1 + ROUND_EPSILON_RTOL)^-k (k = 0, 1, ...) whose upper
    delta the engine certifies <= delta_t, i.e. a valid (eps, delta_t) guarantee of the round,
    at most a factor 1 + ROUND_EPSILON_RTOL above the crossing. The bracket of lattice indices
    starts at k = 0 (eps0: a pure eps0-LDP round has delta(eps0) = 0) and is narrowed by regula
    falsi on ln(delta / delta_t) (Illinois variant; each question rounded to the lattice on the
    side not hit last), by quartering or geometric bisection while an end has no finite value.
    Randomizers outside pairs.SUPPORTED, or a search that does not settle in MAX_QUESTIONS
    questions, take the engine's eps search.

    ``start`` = (eps, width[, slope]): an eps near the answer, a scale of its error and the
    slope of ln delta there, e.g. the round's profile eps at delta_t, its grid step and the
    profile's slope (profile.py, when another method has built it). The bracket then starts
    at eps's lattice point, then the crossing the slope predicts from there and the lattice
    point below it, then 2, 8, 32 widths below eps, instead of at eps0 (issue 32: 3-4
    questions instead of 11-12 at n = 1e5-1e6). Only the
    questions change: as the engine's certification is monotone in eps, the answer is the same
    lattice point with or without a start, so ``basic`` does not depend on which methods ran
    before it in the process."""
    n, delta_t = int(n), float(delta_t)
    if getattr(randomizer, "name", None) not in pairs.SUPPORTED:
        return optimal_blanket_epsilon(randomizer, n, delta_t).epsilon
    eps0 = float(randomizer.epsilon0)
    step = math.log1p(ROUND_EPSILON_RTOL)

    def point(k: int) -> float:
        return eps0 * math.exp(-k * step)

    def index(eps: float) -> float:
        return math.log(eps0 / eps) / step

    def score(k: int) -> float:
        value = optimal_blanket_delta(randomizer, n, point(k), threshold=delta_t).delta
        return math.log(value / delta_t) if value > 0 else -math.inf

    # hi: certified index (larger eps), lo: uncertified index (smaller eps), lo > hi;
    # lo = None while no uncertified point is known (eps = 0 is never asked)
    hi, lo = 0, None
    g_lo, g_hi = math.inf, math.nan
    if start is not None and 0.0 < start[0] < eps0:
        guess, width = float(start[0]), float(start[1])
        slope = float(start[2]) if len(start) > 2 else math.nan
        k = max(1, math.ceil(index(guess)))
        g = score(k)
        if g > 0:
            lo, g_lo = k, g
        else:
            hi, g_hi = k, g
            cross = point(k) - g / slope if slope < 0 and math.isfinite(g) else 0.0
            if cross > 0.0:     # the crossing the slope predicts: its lattice point, the next
                below = max(hi + 1, math.floor(index(cross)))
                for kk in (below, below + 1):
                    if kk <= hi:
                        continue
                    g = score(kk)
                    if g > 0:
                        lo, g_lo = kk, g
                        break
                    hi, g_hi = kk, g
            for factor in (2.0, 8.0, 32.0):
                if lo is not None:
                    break
                x = guess - factor * width
                if x <= 0.0:
                    break
                k = max(hi + 1, math.ceil(index(x)))
                g = score(k)
                if g > 0:
                    lo, g_lo = k, g
                    break
                hi, g_hi = k, g
    if math.isnan(g_hi):
        g_hi = score(hi)
        if g_hi > 0:
            return optimal_blanket_epsilon(randomizer, n, delta_t).epsilon
    side = 0
    for _ in range(MAX_QUESTIONS):
        if lo is not None and lo - hi <= 1:
            return point(hi)
        if lo is None:
            k_est = index(point(hi) / 4.0)
        elif math.isfinite(g_hi) and math.isfinite(g_lo):
            x_hi, x_lo = point(hi), point(lo)
            k_est = index(x_hi - g_hi * (x_hi - x_lo) / (g_hi - g_lo))
        else:
            k_est = (hi + lo) / 2.0
        # rounded to the lattice on the side not hit last: a good estimate then closes the
        # bracket in two questions
        k = math.floor(k_est) if side == -1 else math.ceil(k_est)
        k = max(k, hi + 1) if lo is None else min(max(k, hi + 1), lo - 1)
        g = score(k)
        if g > 0:
            lo, g_lo = k, g
            if side == -1:
                g_hi *= 0.5
            side = -1
        else:
            hi, g_hi = k, g
            if side == 1:
                g_lo *= 0.5
            side = 1
    return optimal_blanket_epsilon(randomizer, n, delta_t).epsilon


#: Grid steps each way over which _profile_start reads the slope of the profile's ln delta.
SLOPE_STEPS = 3


def _profile_start(randomizer, n: int, delta_t: float,
                   t: int) -> tuple[float, float, float] | None:
    """(eps, grid step, slope of ln delta in eps) of the round's profile at delta_t when
    ``advanced`` (or another method) has built that profile in this process
    (profile.round_profile.peek), else None: a start for :func:`round_epsilon`, never built
    for it."""
    try:
        model = pairs.blanket_model(randomizer)
    except ParameterError:
        return None
    interval = grid_interval([(model, int(n))], "upper", int(t))
    prof = round_profile.peek(model, int(n), interval, float(DEFAULT_TAIL),
                              float(DEFAULT_WEAK_RTOL))
    if prof is None:
        return None
    eps = float(prof.epsilon_for([delta_t])[0])
    if not math.isfinite(eps):
        return None
    # the slope of ln delta there (a few grid steps each way): a guess of the crossing
    j, m = int(round(eps / prof.interval)), SLOPE_STEPS
    slope = math.nan
    if m <= j < prof.delta.size - m and prof.delta[j + m] > 0 and prof.delta[j - m] > 0:
        slope = math.log(prof.delta[j + m] / prof.delta[j - m]) / (2 * m * prof.interval)
    return eps, prof.interval, slope


def _round_epsilons(rounds, delta_t: float) -> list[tuple[float, int]]:
    t = total_rounds(rounds)
    return [(round_epsilon(r.randomizer, int(r.n), delta_t,
                           _profile_start(r.randomizer, int(r.n), delta_t, t)), r.repeat)
            for r in rounds]


def basic(rounds, delta: float, **_options) -> ComposedResult:
    start = time.perf_counter()
    rounds = normalize_rounds(rounds)
    require_probability_open("delta", delta)
    t = total_rounds(rounds)
    if t == 1:  # one round: basic composition is the single-round bound itself, as asked
        eps = optimal_blanket_epsilon(rounds[0].randomizer, int(rounds[0].n), delta).epsilon
    else:
        eps = sum(e * k for e, k in _round_epsilons(rounds, delta / t))
    return ComposedResult("basic", BoundKind.UPPER, math.nextafter(eps, math.inf), delta, t,
                          BoundStatus.PROVEN, "basic composition (Dwork et al. 2006) of "
                          "per-round optimal-blanket eps at delta / T",
                          time.perf_counter() - start, None, f"delta_t = {delta / t:.3g}")


def basic_round_target(target_epsilon: float, rounds: int) -> float:
    """The largest per-round eps_t with rounds x eps_t <= target_epsilon in floating point
    (basic composition of T rounds at eps_t then stays within the target, rounded up)."""
    eps_t = target_epsilon / rounds
    while eps_t > 0 and math.nextafter(rounds * eps_t, math.inf) > target_epsilon:
        eps_t = math.nextafter(eps_t, 0.0)
    return eps_t


def basic_question(randomizer, n: int, rounds: int, target_epsilon: float,
                   delta: float) -> tuple[float, float, float]:
    """Does basic composition of ``rounds`` identical rounds certify (target_epsilon, delta)?
    It does exactly when one round is (eps_t, delta / T)-DP with eps_t = target / T
    (:func:`basic_round_target`), i.e. when the single-round optimal-blanket delta at eps_t
    (the engine's upper side, optimal.optimal_blanket_delta, asked as a calibration question
    with threshold delta / T) is at most delta / T; then the T rounds are (T eps_t, delta)-DP
    (Dwork-Roth Thm 3.16). One engine delta question instead of an eps search (issue 32:
    about 6 ms instead of 0.4-2 s at n = 1e5, delta / T = 1e-8). Returns (delta_t, delta / T,
    eps_t); certified when delta_t <= delta / T."""
    eps_t = basic_round_target(float(target_epsilon), int(rounds))
    threshold = float(delta) / int(rounds)
    value = optimal_blanket_delta(randomizer, int(n), eps_t, threshold=threshold).delta
    return float(value), threshold, eps_t


def advanced_epsilon(epsilons, delta_prime: float) -> float:
    """eps' of the heterogeneous advanced composition for per-round eps (list of (eps, repeat))."""
    total = sum(e * k for e, k in epsilons)
    mean = sum(k * e * math.tanh(e / 2) for e, k in epsilons)
    square = sum(k * e * e for e, k in epsilons)
    return min(total, mean + math.sqrt(2 * math.log(1 / delta_prime) * square))


def _advanced_values(eps_t: np.ndarray, delta_t: np.ndarray, repeats, delta: float):
    """Closed form of the heterogeneous advanced composition for candidate splits: ``eps_t``
    (rounds x candidates) with per-round delta ``delta_t`` (candidates); inf where invalid."""
    k = np.asarray(repeats, dtype=float)[:, None]
    t = float(np.sum(k))
    delta_prime = delta - t * delta_t
    ok = (delta_prime > 0) & np.all(np.isfinite(eps_t), axis=0)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        log_term = np.log(1.0 / np.where(ok, delta_prime, 1.0))
        e = np.where(np.isfinite(eps_t), eps_t, 0.0)
        total = np.sum(k * e, axis=0)
        value = np.sum(k * e * np.tanh(e / 2), axis=0) + np.sqrt(2 * log_term
                                                                 * np.sum(k * e * e, axis=0))
    return np.where(ok, np.minimum(total, value), np.inf)


def _advanced_by_search(rounds, delta: float, t: int, start: float) -> ComposedResult:
    """Randomizers without a blanket pair in count form (pairs.SUPPORTED): eps_t by the
    single-round optimal-blanket eps search at the former fixed fractions."""
    best = (math.inf, None)
    for frac in SEARCH_FRACTIONS:
        value = advanced_epsilon(_round_epsilons(rounds, (1 - frac) * delta / t), frac * delta)
        if value < best[0]:
            best = (value, frac)
    eps, frac = best
    return ComposedResult("advanced", BoundKind.UPPER, eps * (1 + 1e-12), delta, t,
                          BoundStatus.PROVEN, "advanced composition (Kairouz-Oh-Viswanath 2015 "
                          "Thm 3.5) of per-round optimal-blanket (eps_t, delta_t)",
                          time.perf_counter() - start, None,
                          f"delta' = {frac:g} delta, delta_t = {(1 - frac) * delta / t:.3g}")


def advanced(rounds, delta: float, *, tail: float = DEFAULT_TAIL,
             weak_rtol: float = DEFAULT_WEAK_RTOL, **_options) -> ComposedResult:
    start = time.perf_counter()
    rounds = normalize_rounds(rounds)
    require_probability_open("delta", delta)
    t = total_rounds(rounds)
    try:
        models = [(pairs.blanket_model(r.randomizer), int(r.n)) for r in rounds]
    except ParameterError:        # no blanket pair in count form: per-round eps searches
        return _advanced_by_search(rounds, delta, t, start)
    interval = grid_interval(models, "upper", t)
    profiles = [round_profile(m, n, interval, float(tail), float(weak_rtol)) for m, n in models]
    caps = np.array([float(r.randomizer.epsilon0) for r in rounds])[:, None]
    repeats = [r.repeat for r in rounds]
    if len(rounds) == 1:          # every grid eps of the profile is a candidate
        delta_t = np.asarray(profiles[0].delta, dtype=float)
        eps_t = (np.arange(delta_t.size) * profiles[0].interval)[None, :]
        delta_t = np.where(eps_t[0] >= caps[0, 0], 0.0, delta_t)   # pure eps0-DP above eps0
        eps_t = np.minimum(eps_t, caps)
    else:
        delta_t = (1.0 - ADVANCED_FRACTIONS) * delta / t
        eps_t = np.minimum(np.array([p.epsilon_for(delta_t) for p in profiles]), caps)
    values = _advanced_values(eps_t, delta_t, repeats, float(delta))
    best = int(np.argmin(values))
    eps = float(values[best])
    require(math.isfinite(eps), "delta", delta, "too small for advanced composition")
    return ComposedResult("advanced", BoundKind.UPPER, eps * (1 + 1e-12), delta, t,
                          BoundStatus.PROVEN, "advanced composition (Kairouz-Oh-Viswanath 2015 "
                          "Thm 3.5) of per-round optimal-blanket (eps_t, delta_t)",
                          time.perf_counter() - start, interval,
                          f"delta' = {1 - t * float(delta_t[best]) / delta:.4g} delta, "
                          f"delta_t = {float(delta_t[best]):.3g}, eps_t = "
                          f"{', '.join(f'{float(e):.4g}' for e in eps_t[:, best])} (profile of "
                          f"the pessimistic PLD, grid {interval:.3g})")


def naive_epsilon(rounds, delta: float) -> float:
    """T x (single-round optimal-blanket eps at delta): not a guarantee at delta (see module)."""
    rounds = normalize_rounds(rounds)  # the single-round rows' own value (engine eps search)
    return sum(optimal_blanket_epsilon(r.randomizer, int(r.n), delta).epsilon * r.repeat
               for r in rounds)


METHODS = (
    ComposedMethod("basic", BoundKind.UPPER, BoundStatus.PROVEN,
                   "basic composition of per-round optimal-blanket (eps, delta / T)",
                   "every round with an optimal-blanket bound", basic),
    ComposedMethod("advanced", BoundKind.UPPER, BoundStatus.PROVEN,
                   "advanced composition (KOV15 Thm 3.5) of per-round optimal-blanket bounds",
                   "every round with an optimal-blanket bound", advanced),
)
