"""Composition of shuffled rounds through privacy loss distributions (issue 16).

A deployment is a list of :class:`Round` (randomizer, n users, repeat count). Every user's data
passes through the shuffler once per round; the question is the (eps, delta) of the whole
sequence for one user. :func:`compose_rounds` answers it with one of the methods of
:data:`COMPOSED_METHODS` (:func:`composed_method_names`, :func:`get_composed_method`):

* ``optimal-blanket`` (upper, proven): per round the 000 Thm 13 blanket pair, which dominates
  the shuffled mechanism for every divergence with data processing, whatever the other users
  hold (and however they choose it adaptively); its PLD (pld.py, pessimistic) is composed by
  one FFT (convolution.py, pessimistic truncation). Dominating pairs
  compose under adaptive composition (Zhu, Dong, Wang 2022, Thm 10), so the result is an upper
  bound for T adaptively chosen rounds as long as each round's randomizer is the one given.
* ``fmt21-clone`` (upper, proven): the same with the 002 Thm 3.2 clone pair (generic: uses only
  eps0). The sound counterpart of Koskela, Heikkila and Honkela's numerical accountant.
* ``exact-lower`` (lower, proven): the 000 Thm 14 pair of each candidate triple (the same in
  every round), its PLD rounded down and composed optimistically; the largest eps of them. For
  a fixed dataset pair the T-round output is the product of the rounds' outputs, so each is a
  lower bound on the T-round mechanism's eps.
* ``rdp-clone`` / ``rdp-blanket`` (upper, proven): Renyi DP of the pair per round (002 Sec. 6.1),
  summed over rounds (Mironov 2017, Prop. 1) and converted with Canonne, Kamath, Steinke 2020,
  Prop. 12; see rdp.py.
* ``basic`` and ``advanced`` (upper, proven): composition theorems applied to the per-round
  optimal-blanket (eps_t, delta_t); see baselines.py.

Upper bounds are capped at sum_t eps0_t (pure DP of each round, composed).
Both directions (P0 vs P1 and P1 vs P0) are composed separately and the larger eps is reported.
For the supported randomizers (pairs.SUPPORTED, input-symmetric) the two directions of a round
have the same PLD, so a round dominates every ordered neighbouring pair, whichever way the
user's data differ in each round.

Numerics (convolution.py): all rounds of one direction are composed by one FFT on a range
holding all but 1e-15 of the composed law on each side (Chernoff bound); the mass above it is
charged as if at +inf (upper side), the mass folded into it is subtracted (lower side), and the
FFT's floating-point noise is charged as 1e-14 per entry of the FFT, on the conservative side.
dp_accounting is not imported (its import alone costs about 1.2 s of CPU; issue 32).
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable, Sequence

from shufflesim.protocols.accounting import (
    baselines,
    blocks,
    brr_exact_methods,
    convolution,
    lower_blocks,
    neutral_blocks,
    pairs,
    pld,
    profile,
    rdp,
)
from shufflesim.protocols.accounting.aggregate_parts import DEFAULT_TAIL, DEFAULT_WEAK_RTOL
from shufflesim.protocols.accounting.convolution import Piece
from shufflesim.protocols.accounting.pld import RoundPLD, cached_round_plds, grid_interval
from shufflesim.protocols.accounting.rounds import (
    ComposedMethod,
    ComposedResult,
    Round,
    normalize_rounds,
    pure_cap,
    round_models,
    total_rounds,
)
from shufflesim.protocols.bounds.result import BoundKind, BoundStatus
from shufflesim.protocols.errors import require
from shufflesim.protocols.registry import Registry

__all__ = ["COMPOSED_METHODS", "COMPOSING_BOUNDS", "ComposedMethod", "ComposedResult", "Round",
           "clear_caches", "compose_models", "compose_rounds", "composed_method_names",
           "composition_support", "get_composed_method", "normalize_rounds", "pure_cap",
           "total_rounds"]



# ----------------------------------------------------------------------------------------------
# PLD composition
# ----------------------------------------------------------------------------------------------
def _pieces(plds: Sequence[RoundPLD], repeat: int) -> tuple[Piece, Piece]:
    """The (forward, backward) pieces of one kind of round (the same one twice when the pair
    is swap-symmetric and only one direction was computed)."""
    fwd = plds[0]
    bwd = plds[1] if len(plds) > 1 else plds[0]
    return (Piece(fwd.lower_index, fwd.probs, fwd.infinity, int(repeat)),
            Piece(bwd.lower_index, bwd.probs, bwd.infinity, int(repeat)))


def compose_models(models: Sequence[tuple], delta: float, side: str, *, interval=None,
                   tail: float = DEFAULT_TAIL, weak_rtol: float = DEFAULT_WEAK_RTOL,
                   screen: bool = False):
    """Compose per-round pairs: ``models`` is a list of (CountModel, n, repeat). Returns
    (epsilon, interval, per-round RoundPLD lists). Upper side: pessimistic; lower: optimistic.
    Each direction (P0 vs P1 in every round, P1 vs P0 in every round) is composed by one FFT
    (convolution.py) and the larger eps is reported. ``screen``: lower-side block pairs with a
    small budget (pld.round_plds), for screening candidates."""
    t_total = sum(rep for _, _, rep in models)
    if interval is None:
        interval = grid_interval([(m, n) for m, n, _ in models], side, t_total)
    per_round, forward, backward = [], [], []
    for model, n, repeat in models:
        plds = cached_round_plds(model, int(n), float(interval), side, float(tail),
                                 float(weak_rtol), bool(screen))
        per_round.append(plds)
        fwd, bwd = _pieces(plds, repeat)
        forward.append(fwd)
        backward.append(bwd)
    directions = [forward] if all(len(p) == 1 for p in per_round) else [forward, backward]
    eps = 0.0
    for pieces in directions:
        composed = convolution.compose(pieces, float(interval), side)
        if side == "upper":
            require(delta > composed.slack + composed.above, "delta", delta,
                    "too small for the floating-point slack of the composition "
                    f"({composed.slack + composed.above:.2g})")
        eps = max(eps, convolution.epsilon_for_delta(composed, float(delta)))
    return float(max(eps, 0.0)), float(interval), per_round


def _pld_method(name: str, model_of: Callable, side: str, reference: str, note: str):
    def compute(rounds, delta, *, interval=None, tail=DEFAULT_TAIL,
                weak_rtol=DEFAULT_WEAK_RTOL) -> ComposedResult:
        start = time.perf_counter()
        rounds, models = round_models(rounds, delta, model_of)
        eps, step, per_round = compose_models(models, delta, side, interval=interval,
                                              tail=tail, weak_rtol=weak_rtol)
        if side == "upper":
            eps = min(eps, pure_cap(rounds))
        kind = BoundKind.UPPER if side == "upper" else BoundKind.LOWER
        return ComposedResult(name, kind, eps, float(delta), total_rounds(rounds),
                              BoundStatus.PROVEN, reference, time.perf_counter() - start,
                              step, f"{note}; PLD grid interval {step:.3g}", per_round)
    return compute


def _pair_key(model) -> tuple:
    """A CountModel's distributions, the informative groups in either order."""
    return (tuple(sorted(zip(model.a, model.b, model.w, strict=True))), model.r,
            model.w_neutral, model.w_null)


#: exact-lower first screens its candidate pairs on a grid SCREEN_COARSENING times coarser,
#: with dominated block pairs of a small budget (pld.SCREEN_ENTRIES), and refines only those
#: that can matter (issue 32). 16 since the balanced lower grid (lower_grid.py): a screen
#: then lowers a value by 0.04-0.45 % (4x coarser: 0.06-0.62 %; 20 candidate pairs of brr,
#: 3-RR, 10-RR and subset-10 at n 1e4-1e6, T 1-1000), and the composition grid's 144
#: exact-lower values were identical with 4 and 16.
SCREEN_COARSENING = 16.0
#: A candidate whose screened value is below (1 - SCREEN_MARGIN) times the best refined value
#: is not refined (screening lowers a value by at most about 0.5 %, far less than this margin).
SCREEN_MARGIN = 0.05
#: Screening is skipped when every candidate is cheap (rounds x n below this).
SCREEN_FROM_WORK = 1e6


def _best_lower_method(name: str, models_of: Callable, reference: str, note: str):
    """A lower bound composed from each candidate pair in turn (candidate j of every round;
    a round with fewer candidates uses its first), and the largest eps of them: each is a real
    dataset pair, hence a lower bound (issue 31: the best 000 Thm 14 triple, not the first).

    With several candidates, no ``interval`` given and enough work (rounds x n of at least
    SCREEN_FROM_WORK), the candidates are first composed on a grid SCREEN_COARSENING times
    coarser from block pairs of a small budget (a valid, slightly lower, lower bound each);
    they are refined (the fine grid, the default budget) best first, and a candidate whose
    screened value is below (1 - SCREEN_MARGIN) times the best refined value keeps its
    screened value (k-RR: the triple (x0, x1, x2) beats (x0, x1, x1) by 10-30 %, so one fine
    composition instead of three); the first candidate is refined without a screen (issue 32:
    for k-RR its screen only ranked it first). Every value is a lower bound, so their maximum
    is one."""
    def compute(rounds, delta, *, interval=None, tail=DEFAULT_TAIL,
                weak_rtol=DEFAULT_WEAK_RTOL) -> ComposedResult:
        start = time.perf_counter()
        rounds, _ = round_models(rounds, delta, lambda r: None)
        per = [models_of(r.randomizer) for r in rounds]
        candidates = []
        seen: set = set()
        for j in range(max(len(m) for m in per)):
            models = [(m[j] if j < len(m) else m[0], int(r.n), r.repeat)
                      for m, r in zip(per, rounds, strict=True)]
            # a candidate equal to an earlier one up to swapping P0 and P1 (brr's and k-RR's
            # (0, 1, 1) and (0, 1, 0)) composes to the same eps: both directions are composed
            keys = [tuple(_pair_key(m) for m, _, _ in models),
                    tuple(_pair_key(m.swapped()) for m, _, _ in models)]
            if keys[0] in seen or keys[1] in seen:
                continue
            seen.update(keys)
            candidates.append(models)

        def run(models, step, screen=False):
            return compose_models(models, delta, "lower", interval=step, tail=tail,
                                  weak_rtol=weak_rtol, screen=screen)

        results = []          # (eps, step, per_round, label)
        work = sum(int(r.n) * r.repeat for r in rounds)
        if interval is None and len(candidates) > 1 and work >= SCREEN_FROM_WORK:
            def fine(models):            # each candidate's own fine grid, as without screening
                return grid_interval([(m, n) for m, n, _ in models], "lower",
                                     total_rounds(rounds))

            # the first candidate is refined at once, without a screen (k-RR: the triple
            # (x0, x1, x2), 10-30 % above the others, whose screen only ranked it first)
            results.append((*run(candidates[0], fine(candidates[0])),
                            candidates[0][0][0].label))
            coarse = [(run(models, fine(models) * SCREEN_COARSENING, True), fine(models), models)
                      for models in candidates[1:]]
            coarse.sort(key=lambda item: -item[0][0])
            for (eps_c, step_c, per_c), fine, models in coarse:
                best = max((r[0] for r in results), default=-math.inf)
                if results and eps_c < (1.0 - SCREEN_MARGIN) * best:
                    results.append((eps_c, step_c, per_c, models[0][0].label))
                    continue
                results.append((*run(models, fine), models[0][0].label))
        else:
            results = [(*run(models, interval), models[0][0].label) for models in candidates]
        eps, step, per_round, label = max(results, key=lambda r: r[0])
        return ComposedResult(name, BoundKind.LOWER, eps, float(delta), total_rounds(rounds),
                              BoundStatus.PROVEN, reference, time.perf_counter() - start,
                              step, f"{note}; best: {label}; PLD grid interval {step:.3g}",
                              per_round)
    return compute


def _clone_of(randomizer):
    return pairs.clone_model(float(randomizer.epsilon0))


# ----------------------------------------------------------------------------------------------
# Registry
# ----------------------------------------------------------------------------------------------
COMPOSED_METHODS: Registry[ComposedMethod] = Registry("composed method", field="method")

#: the pair's own enumeration: a round on the block paths never imports it (issue 32), and
#: :func:`clear_caches` then has no cache of it to empty
ENUMERATION = "shufflesim.protocols.accounting.enumeration"
_register = COMPOSED_METHODS.register


_register(ComposedMethod(
    "optimal-blanket", BoundKind.UPPER, BoundStatus.PROVEN,
    "000 Thm 13 blanket pair as a dominating pair; PLD composition (dp_accounting)",
    f"randomizers {', '.join(pairs.SUPPORTED)}; adaptive rounds",
    _pld_method("optimal-blanket", pairs.blanket_model, "upper",
                "000 Thm 13 (dominating pair) + Zhu-Dong-Wang 2022 Thm 10 (composition)",
                "blanket pair of each round, pessimistic PLD")))
_register(ComposedMethod(
    "fmt21-clone", BoundKind.UPPER, BoundStatus.PROVEN,
    "002 Thm 3.2 clone pair as a dominating pair; PLD composition (dp_accounting)",
    "any eps0-LDP randomizer with eps0 <= 50; adaptive rounds",
    _pld_method("fmt21-clone", _clone_of, "upper",
                "002 Thm 3.2 (clone pair) + Zhu-Dong-Wang 2022 Thm 10 (composition)",
                "clone pair of each round, pessimistic PLD")))
_register(ComposedMethod(
    "exact-lower", BoundKind.LOWER, BoundStatus.PROVEN,
    "000 Thm 14 exact pair, composed (lower bound for X0 = (x0, x2, ..), X1 = (x1, x2, ..) "
    "in every round)",
    f"randomizers {', '.join(pairs.SUPPORTED)}",
    _best_lower_method("exact-lower", pairs.exact_models, "000 Thm 14, composed exactly",
                       "exact pair of each round (the best candidate triple), optimistic PLD")))


for _method in (*baselines.METHODS, *rdp.METHODS, *brr_exact_methods.METHODS):
    _register(_method)


def composed_method_names() -> list[str]:
    return COMPOSED_METHODS.names()


def get_composed_method(name: str) -> ComposedMethod:
    return COMPOSED_METHODS.get(name)


def compose_rounds(rounds, delta: float, method: str = "optimal-blanket",
                   **options) -> ComposedResult:
    """The (eps, delta) of the whole sequence of ``rounds`` by ``method`` (see the module
    docstring); ``rounds``: a Round or a list of Rounds."""
    return get_composed_method(method).compute(rounds, delta, **options)


def clear_caches() -> None:
    """Empty the per-round caches of the accounting package (aggregates, round PLDs, profiles).
    They only save work when the same round comes again (the methods of one ``bound --rounds``
    share a round's PLD); a calibration over rounds never asks the same eps0 twice and calls
    this after every evaluation, so that its memory stays that of one evaluation (issue 32)."""
    for cached in (blocks.cached_block_aggregates, lower_blocks.cached_lower_block_aggregates,
                   neutral_blocks.cached_neutral_block_aggregates, pld.cached_round_plds,
                   profile.round_profile):
        cached.cache_clear()
    enumeration = sys.modules.get(ENUMERATION)  # its cache is empty unless it was imported
    if enumeration is not None:
        enumeration.cached_aggregates.cache_clear()


#: Catalogue bounds (protocols.bounds.catalogue) that compose, and the composed method.
COMPOSING_BOUNDS = {"optimal-blanket": "optimal-blanket", "exact-lower": "exact-lower",
                    "fmt21_numerical": "fmt21-clone", "brr-exact": "brr-exact",
                    "brr-exact-lower": "brr-exact-lower"}


def composition_support(bound_name: str) -> tuple[str | None, str]:
    """(composed method, "") for a catalogue bound that composes, else (None, why not)."""
    if bound_name in COMPOSING_BOUNDS:
        return COMPOSING_BOUNDS[bound_name], ""
    return None, ("gives only an (eps, delta) value, not a dominating pair or a privacy loss "
                  "distribution; over T rounds use 'basic' or 'advanced' composition of "
                  "'optimal-blanket', or the composed methods "
                  f"{', '.join(sorted(set(COMPOSING_BOUNDS.values())))}")
