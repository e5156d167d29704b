"""The three methods of the hockey-stick engine and the choice between them
(protocols.bounds.engine.core): exact enumeration of joint count vectors when there are few,
conditioning on the largest group (protocols.bounds.engine.conditioning) with its successive
refinements when the other groups have few joint outcomes, and the FFT otherwise.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from shufflesim.protocols.bounds.engine import band_shape, conditioning, mixture_shape
from shufflesim.protocols.bounds.engine.common import (
    Categories,
)
from shufflesim.protocols.bounds.engine.conditioning import (
    conditioning_bounds,
    main_pool_share,
    well_posed,
)
from shufflesim.protocols.bounds.engine.enumeration_size import composition_count
from shufflesim.protocols.bounds.engine.pool_window import applies as pool_law_applies
from shufflesim.protocols.lazy import lazy_functions, lazy_module

#: the exact sums' tables and evaluation, imported on their first use: whether they apply is
#: asked of band_shape and mixture_shape (issue 32)
exact_band = lazy_module("shufflesim.protocols.bounds.engine.exact_band")
zero_mixture = lazy_module("shufflesim.protocols.bounds.engine.zero_mixture")
#: the enumeration method itself (core.hockey_stick's "enumerate", the small groups' outcomes)
enumeration_bounds, joint_outcomes = lazy_functions(
    "shufflesim.protocols.bounds.engine.enumerate", "enumeration_bounds", "joint_outcomes")

ENUMERATE_MAX = 300_000      # joint count vectors for the "enumerate" method (auto)
#: One group with more count vectors than this goes to the exact band sum where it applies
#: (engine/exact_band.py; both are exact up to ~1e-9 relative): an eps search over 70 000-176 000
#: vectors (2-RR's blanket at n = 373, 3-RR's at n = 100) took 0.07-0.11 s, the band 0.01-0.02 s
#: (issue 32); at ~19 000 vectors (10-RR, n = 193) both take ~0.015 s.
ENUMERATE_BAND_ABOVE = 20_000
SHIFT_OUTCOMES_MAX = 256     # enumerated outcomes of the small groups beside the main one
MULTI_BLOCKS = (8, 32, 128, 512)   # refinements of the conditioning method, in order
LEAF_BUDGET = 1_000_000      # leaf evaluations allowed for one refinement
CHEAP_LEAVES = 50_000        # refinements below this cost go on even without progress
#: The single style's bracket within this many times the requested width is kept: the block
#: refinements gain at most that factor there, and each costs a plan (plans.multi_plan) and
#: ~30 ms at n = 5e4. Issue 32: at 10-RR, eps0 = 1, n = 5e4-6e4 (tables above
#: exact_band.MAX_CELLS) the polish's estimates ask for 1.7e-4 relative, the single style gives
#: 2.2e-4 (1.5e-4 from n = 7e4 on), and four 8-block refinements took 0.23 of 0.26 s; at 3-RR,
#: eps0 = 1, n = 4e4 the single style gives 3.6e-4 (2.16x; 0.39 -> 0.02 s). On 367 k-RR / brr /
#: oue / hr values 9 moved, each within its former stated error (largest 1.2e-5 relative).
BLOCKS_WORTH = 2.5
#: Where the pool is one category (2-RR's and binary RR's blankets: no pool variable X in
#: engine/exact_band.py), the single style is kept when its bracket is this narrow (relative):
#: there it is ~5e-8-1e-7 wide in ~1.5 ms, while the band's first table took 0.08-0.25 s at
#: n = 4e4-5e5 (issue 32)
SINGLE_EXACT = 1e-6
#: ... where the band's tables are larger than this (smaller ones cost less than the single
#: style's ~1.5 ms per evaluation)
SINGLE_FIRST_CELLS = 500_000
#: Bytes the enumeration may take (count vectors, their cached sub-problems, the temporaries
#: of their probabilities): many categories and few users (a continuous randomizer's fine
#: decomposition, n = 2) give few count vectors of many columns each (issue 26: 16 GB).
ENUMERATE_BYTES_MAX = 512 * 2**20
#: Float64 temporaries per cell of a group's count vectors in enumerate.group_outcomes.
_CELL_COPIES = 6


def _enumeration_size(cats: Sequence[Categories]) -> int:
    size = 1
    for cat in cats:
        size *= composition_count(cat.count, cat.c.size)
    return size


def enumeration_bytes(cats: Sequence[Categories], cap: int = ENUMERATE_BYTES_MAX) -> int:
    """An upper estimate of the enumeration's memory: per group, its count vectors (rows x
    categories, int64) times the temporaries, plus the sub-problems enumerate._compositions
    caches (for p parts, every total t <= count: sum_t C(t + p - 1, p - 1) = C(count + p, p)
    vectors of p columns), and the joint outcomes (four float64 arrays over the product).
    Stops counting once above ``cap`` (the answer is then > cap)."""
    total = 4 * 8 * _enumeration_size(cats)
    for cat in cats:
        parts = int(cat.c.size)
        total += _CELL_COPIES * 8 * composition_count(cat.count, parts) * parts
        for p in range(1, parts + 1):
            total += 8 * p * math.comb(int(cat.count) + p, p)
            if total > cap:
                return total
    return total


def _main_group(cats: Sequence[Categories]) -> int:
    return int(np.argmax([cat.count * cat.variance for cat in cats]))


def _single_first(cat: Categories) -> bool:
    """The band sum's S = alpha_t + d B (engine/exact_band.py: a pool of at most one category,
    no variable X) with tables of more than SINGLE_FIRST_CELLS cells."""
    shape = band_shape._shape(band_shape.reduced(cat)[0])
    return (shape is not None and shape.q == 1.0
            and band_shape._cells(cat.count, shape) > SINGLE_FIRST_CELLS)


def _conditioning(cats: list[Categories], rtol: float, atol: float,
                  threshold: float | None, decide_only: bool = False,
                  fft_gap: float = math.inf) -> tuple[float, float, bool]:
    """The conditioning method's bracket (the exact sums where they apply, else the single
    style, its exact-pool variant, then block refinements). ``fft_gap``: the relative width
    the FFT fallback is expected to reach (core.hockey_stick): a block refinement costlier
    than CHEAP_LEAVES, or after the exact-pool style (the blocks then rarely gain), is not run
    where that is under half the current width. The third value: whether the exact-pool style
    ran (its evaluations are costlier: :func:`needs_blocks`)."""
    if len(cats) == 1 and band_shape.applicable(cats[0]):
        # a binomial pool and tables of bounded size: the exact sum (engine/exact_band.py),
        # unless only the comparison with threshold is asked for and the single style
        # (no table) decides it, or the pool is one category and the single style is as
        # narrow as SINGLE_EXACT
        single_first = _single_first(cats[0])
        if single_first or (decide_only and threshold is not None):
            lo, hi = conditioning_bounds(cats[0], np.zeros(1), np.ones(1), np.zeros(1), 0)
            if decide_only and threshold is not None and (hi <= threshold or lo > threshold):
                return lo, hi, False
            if single_first and hi - lo <= max(SINGLE_EXACT * hi, atol):
                return lo, hi, False
        return (*exact_band.band_bounds(cats[0]), False)
    if len(cats) == 1 and mixture_shape.applicable(cats[0]):
        # an exact zero beside the band's shape (two-level randomizers' blankets)
        if decide_only and threshold is not None:
            lo, hi = conditioning_bounds(cats[0], np.zeros(1), np.ones(1), np.zeros(1), 0)
            if hi <= threshold or lo > threshold:
                return lo, hi, False
        return (*zero_mixture.mixture_bounds(cats[0]), False)
    main = _main_group(cats)
    others = [cat for i, cat in enumerate(cats) if i != main]
    if others:
        values, value_err, probs, rel = joint_outcomes(others)
        p_lo, p_hi = probs * (1 - rel), probs * (1 + rel)
    else:
        values, value_err, p_lo, p_hi = np.zeros(1), np.zeros(1), np.ones(1), np.ones(1)
    cat = cats[main]
    best_lo, best_hi = -math.inf, math.inf
    n_t = max(1.0, 20 * math.sqrt(cat.count * 0.25))
    previous_gap = math.inf
    blocks_help = main_pool_share(cat) >= 0.5
    exact_pool = exact_pool_applies(cat)
    chain_lo, chain_hi = best_lo, best_hi
    pooled = False
    for n_blocks in (0, -1, *MULTI_BLOCKS):
        if n_blocks < 0 and not exact_pool:
            continue
        leaves = n_t * (n_blocks + 4) * values.size
        if n_blocks > 0 and (not blocks_help or leaves > LEAF_BUDGET):
            break
        if (n_blocks > 0 and (leaves > CHEAP_LEAVES or exact_pool) and best_hi > 0
                and fft_gap < 0.5 * (best_hi - best_lo) / best_hi):
            # the FFT will follow and do better: at blh d = 4, eps0 = 4, n = 2683 the
            # exact-pool style left 3.2e-2, 8 and 32 blocks 2.8e-2 (50 ms), 128 and 512 blocks
            # 1.3e-2 (0.1-0.7 s), the FFT 7.9e-3 (~20 ms; issue 32)
            break
        # The shift probabilities are bracketed: the lower bound uses the lower probabilities,
        # the upper bound the upper ones (every term is >= 0). n_blocks = -1: the single style
        # with the exact law of the main pool count (EXACT_POOL), where the plain one is wide.
        if n_blocks < 0:
            pooled = True
            lo, hi = exact_pool_bounds(cat, values, p_lo, value_err, rtol)
            if others:
                hi = exact_pool_bounds(cat, values, p_hi, value_err, rtol)[1]
        else:
            lo, hi = conditioning_bounds(cat, values, p_lo, value_err, n_blocks)
            if others:
                hi = conditioning_bounds(cat, values, p_hi, value_err, n_blocks)[1]
        best_lo, best_hi = max(best_lo, lo), min(best_hi, hi)
        if n_blocks >= 0:                  # the blocks' own progress (below): without the pool
            chain_lo, chain_hi = max(chain_lo, lo), min(chain_hi, hi)
        if best_hi - best_lo <= max(rtol * best_hi, atol):
            break
        if n_blocks <= 0 and best_hi - best_lo <= BLOCKS_WORTH * max(rtol * best_hi, atol):
            break
        if threshold is not None and (best_hi <= threshold or best_lo > threshold):
            break
        if n_blocks < 0:
            continue
        # Blocks only shrink the part of the bracket due to the main pool category; stop when
        # the rest (the remainder's spread) dominates.
        gap = chain_hi - chain_lo
        if gap > 0.7 * previous_gap and n_t * (4 * n_blocks + 4) * values.size > CHEAP_LEAVES:
            break
        previous_gap = min(gap, previous_gap)
    return best_lo, best_hi, pooled


def _applicable(method: str, cats: list[Categories]) -> bool:
    if method == "enumerate":
        return (_enumeration_size(cats) <= ENUMERATE_MAX * 10
                and enumeration_bytes(cats) <= ENUMERATE_BYTES_MAX)
    if method == "conditioning":
        main = _main_group(cats)
        others = [cat for i, cat in enumerate(cats) if i != main]
        return _enumeration_size(others) <= SHIFT_OUTCOMES_MAX and well_posed(cats[main])
    return True


def exact_sum(cats: list[Categories]) -> bool:
    """Whether :func:`_conditioning` sums exactly (engine/exact_band.py). Its bracket is then
    the rounding of that sum: near eps0 (values a_j - e^eps b_j cancel) it is wide but the
    FFT's is no narrower (3-RR, eps0 = 8, n = 1e4; 50-RR, n = 720: the same bracket
    after 0.76-1.04 s of FFT, issue 32)."""
    return len(cats) == 1 and (band_shape.applicable(cats[0])
                               or mixture_shape.applicable(cats[0]))


def needs_blocks(cat: Categories, relative_width: float, rtol: float,
                 pooled: bool = False) -> bool:
    """Whether :func:`_conditioning`, asked for ``rtol`` at one group where an estimate had a
    bracket of ``relative_width``, would go on to block refinements (outside the exact band
    sum; ~0.1-0.45 s each at n = 3e4-3e5, where the single style costs ~3 ms).

    A width in (rtol, BLOCKS_WORTH rtol] may itself come from a block refinement (the single
    style wider than BLOCKS_WORTH rtol), after which only rtol stops the refinements: the
    single style is then computed (one evaluation) and decides. Issue 32: olh d = 4,
    eps0 = 4, n = 138950, the coarse end's 8-block width 4.1655e-4 against 2.5 x 1.6667e-4
    (single style: 0.36), and the polish ran 32 and 128 blocks (1.2 s) for -7.6e-6 of eps."""
    if not ((relative_width > rtol or pooled) and _select([cat]) == "conditioning"
            and not exact_sum([cat]) and main_pool_share(cat) >= 0.5):
        return False
    if pooled:
        # the estimate needed the exact-pool style, and the finer ones would too: ~2x an
        # evaluation with up to 8 chunks of rows at the polish's rtol (hr d = 16, eps0 = 4,
        # n = 138950: a polish of 4 evaluations took 0.04 of 0.1 s)
        return True
    if relative_width > BLOCKS_WORTH * rtol:
        return True
    lo, hi = conditioning_bounds(cat, np.zeros(1), np.ones(1), np.zeros(1), 0)
    return not (hi > 0 and hi - lo <= BLOCKS_WORTH * rtol * hi)


def exact_pool_applies(cat: Categories) -> bool:
    """Whether the conditioning method's single style has an exact-pool variant
    (engine/pool_law.py: a main pool category beside the pair, its window small enough)."""
    roles = conditioning.choose_roles(cat)
    if roles.main < 0:
        return False
    k = conditioning._coeffs(cat, roles)
    return pool_law_applies(cat.count, k.q, k.alpha)


def exact_pool_bounds(cat: Categories, values, probs, value_err,
                      rtol: float = 1e-3) -> tuple[float, float]:
    """The single style with the near kinks' terms also from the exact law of the main pool
    count (engine/pool_law.py): ~2x its cost; hr d = 16, eps0 = 4, n = 71969: a bracket of
    6.5e-4 instead of 5.3e-2, where the coarse eps search went on to 8- and 32-block
    refinements (~0.1 s an evaluation; issue 32). ``rtol``: the request (the rows are cut into
    chunks whose relative range of pool sizes is about that; up to 8)."""
    # through the module (not this module's name, which tests wrap to count block refinements)
    return conditioning.conditioning_bounds(cat, values, probs, value_err, 0,
                                            exact_pool=max(rtol, 1e-6))


def _select(cats: list[Categories]) -> str:
    size = _enumeration_size(cats)
    if (size > ENUMERATE_BAND_ABOVE and _applicable("conditioning", cats)
            and exact_sum(cats)):
        return "conditioning"         # the exact band sum (see _conditioning)
    if size <= ENUMERATE_MAX and enumeration_bytes(cats) <= ENUMERATE_BYTES_MAX:
        return "enumerate"
    if _applicable("conditioning", cats):
        return "conditioning"
    return "fft"
