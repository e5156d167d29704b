"""Privacy loss distribution of one round, discretised on the conservative side.

Input: a pair in count form (:class:`~protocols.accounting.pairs.CountModel`) and n. Output: for
each ordered direction, the law of the privacy loss under the first distribution (the "P side"
that ``dp_accounting`` stores) on a grid of step ``interval``, as a :class:`RoundPLD`.

The pair's outcomes come as aggregates (enumeration.py): sets of outcomes with their exact P-
and Q-masses (p, q), aggregate loss ell = ln(p / q) and an interval [lo, hi] of the losses inside.

Upper bounds (pessimistic). An aggregate is split into two outcomes at lo and hi with the same
total P- and Q-mass (mass p f at hi, f = (1 - e^(lo - ell)) / (1 - e^(lo - hi))); each of these
is split again between the two grid points e_i <= L <= e_{i+1} around it, keeping P- and
Q-mass (the "connect-the-dots" split of Doroshenko, Ghazi, Kamath, Kumar, Manurangsi 2022).
Merging the pieces gives the aggregate back, so the discretised pair dominates the pair by
post-processing, for every divergence with data processing (all hockey-stick divergences,
Renyi), and hence under composition (dominating pairs compose: Zhu, Dong, Wang 2022, Thm 10).
Unlike rounding up, splitting keeps E_P[e^-L] and adds only the variance of the split
(<= (hi - lo)^2 / 4 + interval^2 / 4 per round). All losses are widened by 1e-13 |L| + 1e-14
against rounding, and the share f is raised by 1e-12 relative (moving mass up is a first-order
stochastic increase of the loss, which keeps domination).
Masses from scipy's binomial functions carry a relative error <= :func:`mass_relative_error`
(clones.py measures them); every mass is multiplied by (1 - that), hence below its true value.
The P-mass outside the enumerated region (bounded in enumeration.py) goes to the infinite loss;
the rest of 1 - sum(masses) (the shaved part) goes to the largest grid loss carrying mass, above
every aggregate. Both are first-order stochastic increases of the loss distribution, which keep
a dominating pair (hockey-stick larger for every eps in R, Q-side mass still <= 1).

Where blocks.block_pairs_apply (symmetric pairs: lower bounds, and upper bounds of pairs
without a neutral group such as the clone pair) the outcomes come from blocks.py instead: a
dominating (upper) or dominated (lower) pair with exact losses (lo = hi), O(blocks x D) work;
the upper side then puts each mass at its widened loss (a first-order increase). Upper bounds
of symmetric pairs with a neutral group (the k-RR blanket pair) take the aggregates of
neutral_blocks.py: a dominating pair (blocks in S, h3 kept) aggregated as here, O(blocks x D).
Lower bounds of pairs with two informative groups of unequal weights (the 000 Thm 14 pairs of
the triples (x0, x1, x1) and (x0, x1, x0)) take the dominated block pairs of lower_blocks.py.

Lower bounds (optimistic). An aggregate is merged into one outcome at ell (a post-processing),
ell is lowered by 1e-13 |ell| + 1e-14, masses are shaved, and everything not enumerated is
dropped. The outcomes of each grid cell are then merged, and half-cells are merged across
neighbouring cells into outcomes whose loss is exactly a grid point (lower_grid.py: a
post-processing, with second-order error); what cannot be balanced is rounded *down* to the
grid. The composed curve is then at most the true one: the post-processed rounds compose to a
post-processing of the composition, and rounding down makes each per-round loss stochastically
smaller.
"""

from __future__ import annotations

import functools
import math
import time
from dataclasses import dataclass

import numpy as np

from shufflesim.protocols.accounting import lower_blocks, lower_grid, neutral_blocks
from shufflesim.protocols.accounting.aggregate_parts import DEFAULT_TAIL, DEFAULT_WEAK_RTOL
from shufflesim.protocols.accounting.blocks import block_pairs_apply, cached_block_aggregates
from shufflesim.protocols.accounting.pairs import CountModel
from shufflesim.protocols.errors import require
from shufflesim.protocols.lazy import lazy_functions

#: the pair's own enumeration (enumeration.py), on first use (issue 32: the block paths' rounds
#: never run it)
(cached_aggregates,) = lazy_functions("shufflesim.protocols.accounting.enumeration",
                                      "cached_aggregates")

#: Entries of the dominated block pairs when screening lower-bound candidates (``screen``).
SCREEN_ENTRIES = 1 << 16
#: Outcomes split onto the grid at once (issue 32: pieces whose arrays stay in the cache).
SPLIT_CHUNK = 1 << 15
#: Largest grid the accumulator accepts.
MAX_GRID = 1 << 26
#: Upper-bound grid: interval = (smallest per-round loss scale) / UPPER_RESOLUTION.
UPPER_RESOLUTION = 200.0
#: Lower-bound grid: interval = scale / max(LOWER_RESOLUTION_MIN, LOWER_RESOLUTION sqrt(T)).
#: Plain rounding down cost about T * interval / 2 in the composed loss and needed
#: 100 sqrt(T); the balanced merge of lower_grid.py halves the grid at T >= 64 (issue 32: on
#: the composition grid's 144 points exact-lower moved by -4.5e-4 .. +1.9e-3 relative, 137 of
#: them up; T = 1000 composes on 0.8 instead of 1.7 million points).
LOWER_RESOLUTION = 50.0
LOWER_RESOLUTION_MIN = 400.0


#: dp_accounting truncation of composed tails (pessimistic: to infinity).
TAIL_TRUNCATION = 1e-15
#: Floating-point slack of dp_accounting's FFT per pmf entry.
FFT_SLACK = 1e-14


def power(pld, times: int, pessimistic: bool):
    """``pld`` composed ``times`` times: dp_accounting's self-composition for the pessimistic
    (upper) side, binary powers of pairwise compositions for the optimistic (lower) side."""
    if times == 1:
        return pld
    if pessimistic:
        # dp_accounting's Chernoff truncation bound overflows harmlessly for some orders.
        with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
            return pld.self_compose(times, tail_mass_truncation=TAIL_TRUNCATION)
    result, base = None, pld
    while times:
        if times & 1:
            result = base if result is None else result.compose(base, TAIL_TRUNCATION)
        times >>= 1
        if times:
            base = base.compose(base, TAIL_TRUNCATION)
    return result


def pmf_size(pld) -> int:
    """The entries of a dp_accounting PLD's stored pmf(s) (FFT_SLACK is charged per entry)."""
    sizes = [pld._pmf_remove.size]  # noqa: SLF001 - size of the stored pmf(s)
    if not pld._symmetric:  # noqa: SLF001
        sizes.append(pld._pmf_add.size)  # noqa: SLF001
    return max(sizes)


def grid_interval(models_n, side: str, t_total: int) -> float:
    """The grid step of a composition of the rounds ``models_n`` ((CountModel, n) pairs) over
    ``t_total`` rounds: a fraction of the smallest per-round loss scale (tightness only; every
    step gives a valid discretisation)."""
    scales = [m.loss_scale(n) for m, n in models_n]
    scale = min(s for s in scales if s > 0) if any(s > 0 for s in scales) else 1e-3
    loss_max = max(m.loss_max for m, _ in models_n)
    if side == "upper":
        step = scale / UPPER_RESOLUTION
    else:
        step = scale / max(LOWER_RESOLUTION_MIN, LOWER_RESOLUTION * math.sqrt(t_total))
    return float(min(max(step, loss_max * 2e-7), loss_max / 50.0))


def mass_relative_error(n: int) -> float:
    """Allowance for the relative error of an atom's mass: three binomial factors, each within
    1e-11 + 1e-15 n (protocols.bounds.numerical.clones.pmf_relative_error, measured against mpmath),
    and the arithmetic."""
    return 4.0 * (1e-11 + 1e-15 * float(n)) + 1e-12


@dataclass(frozen=True)
class RoundPLD:
    """One direction's discretised privacy loss distribution.

    ``probs[i]`` is the P-mass at loss (lower_index + i) * interval; ``infinity`` the mass at
    +inf (upper side: mass outside the window, whose true loss is at most ``loss_max``).
    ``side``: "upper" (pessimistic) or "lower" (optimistic); ``atoms``: atoms enumerated;
    ``shaved``: mass moved to the top for upper bounds (or dropped for lower bounds).
    """

    side: str
    interval: float
    lower_index: int
    probs: np.ndarray
    infinity: float
    loss_max: float
    atoms: int
    shaved: float
    label: str
    seconds: float
    #: M-mass (reference multinomial) of the outcomes not enumerated (enumeration.py windows).
    outside_mass: float = 0.0

    def rounded_pmf(self) -> dict[int, float]:
        """{grid index: mass}, the input of create_from_rounded_probability."""
        nz = np.nonzero(self.probs)[0]
        return dict(zip((nz + self.lower_index).tolist(), self.probs[nz].tolist(), strict=True))

    def losses(self) -> np.ndarray:
        return (np.arange(self.probs.size) + self.lower_index) * self.interval

    def delta(self, epsilon: float) -> float:
        """Hockey-stick divergence of this discretised PLD at eps (single round)."""
        losses = self.losses()
        above = losses > epsilon
        return float(self.infinity + np.dot(-np.expm1(epsilon - losses[above]),
                                            self.probs[above]))


class _Accumulator:
    """Sums masses on integer grid indices, growing its range as needed."""

    def __init__(self) -> None:
        self.low = 0
        self.values = np.zeros(0)

    def add(self, index: np.ndarray, weight: np.ndarray, span: tuple[int, int] | None = None,
            ) -> None:
        """Add ``weight`` at the grid indices ``index`` (``span``: their (min, max), if
        known)."""
        if index.size == 0:
            return
        lo, hi = span if span is not None else (int(index.min()), int(index.max()))
        self.cover(lo, hi)
        self.values += np.bincount(index - self.low, weights=weight, minlength=self.values.size)

    def cover(self, lo: int, hi: int) -> None:
        """Grow the range to hold the indices lo .. hi."""
        if self.values.size == 0:
            self.low, self.values = lo, np.zeros(hi - lo + 1)
        elif lo < self.low or hi >= self.low + self.values.size:
            new_low = min(lo, self.low)
            new_high = max(hi, self.low + self.values.size - 1)
            require(new_high - new_low < MAX_GRID, "interval", None,
                    "discretisation grid too large; use a larger interval")
            grown = np.zeros(new_high - new_low + 1)
            grown[self.low - new_low:self.low - new_low + self.values.size] = self.values
            self.low, self.values = new_low, grown


def _split_to_grid(acc: _Accumulator, loss: np.ndarray, mass: np.ndarray,
                   interval: float) -> None:
    """Connect-the-dots split of outcomes (loss, mass) onto the two grid points around each
    loss, keeping P-mass and Q-mass (share of the upper point raised by 1e-12 relative).
    The arithmetic works in place, in three arrays (issue 32: with millions of outcomes each
    temporary array cost a pass of page faults; the values are those of the plain formulas,
    floor(L / interval), expm1(-(L - base interval)) / expm1(-interval), bit for bit)."""
    if loss.size == 0:
        return
    frac = np.divide(loss, interval)
    np.floor(frac, out=frac)
    index = frac.astype(np.int64)                    # base
    np.multiply(frac, interval, out=frac)
    np.subtract(loss, frac, out=frac)
    np.negative(frac, out=frac)
    np.expm1(frac, out=frac)
    np.divide(frac, math.expm1(-interval), out=frac)
    np.multiply(frac, 1 + 1e-12, out=frac)
    np.clip(frac, 0.0, 1.0, out=frac)
    lo, hi = int(index.min()), int(index.max())
    acc.cover(lo, hi + 1)
    index -= acc.low
    weight = np.subtract(1.0, frac)
    np.multiply(mass, weight, out=weight)
    acc.values += np.bincount(index, weights=weight, minlength=acc.values.size)
    index += 1
    np.multiply(mass, frac, out=weight)
    acc.values += np.bincount(index, weights=weight, minlength=acc.values.size)


def _widen(values: np.ndarray, up: bool) -> np.ndarray:
    """values +- (1e-13 |values| + 1e-14), in one new array."""
    pad = np.abs(values)
    np.multiply(pad, 1e-13, out=pad)
    np.add(pad, 1e-14, out=pad)
    return np.add(values, pad, out=pad) if up else np.subtract(values, pad, out=pad)


def _upper_direction(acc, mass, ell, lo, hi, interval) -> None:
    """Each aggregate split at its loss ends lo, hi keeping P- and Q-mass (module docstring),
    each end split onto the grid (:func:`_split_to_grid`); in place where it can be (the
    values of the plain formulas, bit for bit)."""
    lo, hi = _widen(lo, False), _widen(hi, True)
    ell = np.clip(ell, lo, hi)
    width = np.subtract(hi, lo)
    flat = ~(width > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        np.copyto(width, 1.0, where=flat)
        np.negative(width, out=width)
        np.expm1(width, out=width)
        share = np.subtract(lo, ell, out=ell)
        np.expm1(share, out=share)
        np.divide(share, width, out=share)
    np.copyto(share, 1.0, where=flat)
    np.multiply(share, 1 + 1e-12, out=share)
    np.clip(share, 0.0, 1.0, out=share)
    np.multiply(mass, share, out=width)
    _split_to_grid(acc, hi, width, interval)
    np.subtract(1.0, share, out=share)
    np.multiply(mass, share, out=share)
    _split_to_grid(acc, lo, share, interval)


def upper_split(agg, interval: float, direction: int) -> tuple[int, np.ndarray]:
    """(lowest grid index, masses) of the pessimistic split (module docstring: each aggregate
    at its two loss ends, each end between its two grid points; exact losses at the widened
    loss) of ``agg``'s P-masses of one ``direction`` (0: P0 with losses ell, 1: P1 with -ell)
    onto the grid of step ``interval``, the masses as enumerated: the split is linear in the
    masses, so a caller scales the result by its own allowance (the PLD by 1 - eta, the Renyi
    moments of rdp.py by 1 + eta). Memoised on ``agg`` (read-only arrays): a round's PLD and
    its Renyi curve split the same aggregates once (issue 32)."""
    key = (float(interval), int(direction))
    if key in agg.grids:
        return agg.grids[key]
    if direction == 0:
        mass, ell, lo, hi = agg.p0, agg.ell, agg.lo, agg.hi
    else:
        mass, ell, lo, hi = agg.p1, -agg.ell, -agg.hi, -agg.lo
    exact = agg.lo is agg.hi          # exact losses (block pairs): lo and hi are ell
    keep = mass > 0
    if not keep.all():
        mass, ell = mass[keep], ell[keep]
        if not exact:
            lo, hi = lo[keep], hi[keep]
    acc = _Accumulator()
    if exact:
        for first in range(0, mass.size, SPLIT_CHUNK):     # in pieces that stay in the cache
            part = slice(first, first + SPLIT_CHUNK)
            _split_to_grid(acc, _widen(ell[part], True), mass[part], interval)
    else:
        _upper_direction(acc, mass, ell, lo, hi, interval)
    acc.values.flags.writeable = False
    agg.grids[key] = (acc.low, acc.values)
    return agg.grids[key]


def _grid_interval(interval: float, loss_max: float) -> float:
    require(isinstance(interval, float) and 0 < interval < math.inf, "interval", interval,
            "must be a finite number > 0")
    require(2 * loss_max / interval < MAX_GRID, "interval", interval,
            f"too small for losses up to {loss_max:.3g}")
    return interval


def round_plds(model: CountModel, n: int, interval: float, side: str, *,
               tail: float = DEFAULT_TAIL, weak_rtol: float = DEFAULT_WEAK_RTOL,
               both: bool = True, screen: bool = False) -> list[RoundPLD]:
    """The discretised PLDs of (P0, P1) and, if ``both``, of (P1, P0), for ``side`` "upper"
    (split, pessimistic) or "lower" (merged and rounded down, optimistic); see the module
    docstring. ``tail``: binomial tail mass left out per window; ``weak_rtol``: relative width
    of the aggregates' loss intervals (enumeration.py). ``screen`` (lower side): the dominated
    block pairs with SCREEN_ENTRIES entries instead of their default budget (wider blocks: a
    valid, slightly lower, lower bound at a fraction of the work; exact-lower's screening of
    its candidates, compose.py)."""
    require(side in ("upper", "lower"), "side", side, "must be 'upper' or 'lower'")
    require(isinstance(n, (int, np.integer)) and n >= 1, "n", n, "must be an integer >= 1")
    start = time.perf_counter()
    interval = _grid_interval(float(interval), model.loss_max)
    eta = mass_relative_error(n)
    budget = {"max_entries": SCREEN_ENTRIES} if screen and side == "lower" else {}
    if block_pairs_apply(model, side):   # O(blocks x D) block pairs (blocks.py)
        agg = cached_block_aggregates(model, int(n), side, float(tail), **budget)
    elif side == "upper" and neutral_blocks.applies(model):   # the same with h3 (k-RR)
        agg = neutral_blocks.cached_neutral_block_aggregates(model, int(n), float(tail),
                                                             float(weak_rtol))
    elif side == "lower" and lower_blocks.applies(model):     # unequal weights (lower)
        agg = lower_blocks.cached_lower_block_aggregates(model, int(n), float(tail), **budget)
    else:
        agg = cached_aggregates(model, int(n), float(tail), float(weak_rtol))
    upper = side == "upper"
    out = []
    for d in range(2 if both else 1):
        acc = _Accumulator()
        mass = (agg.p0 if d == 0 else agg.p1) * (1.0 - eta)
        keep = mass > 0
        if upper:                         # split (shared with rdp.py), then scaled
            total = float((mass if keep.all() else mass[keep]).sum())
            acc.low, values = upper_split(agg, interval, d)
            acc.values = values * (1.0 - eta)
        else:                             # merged, balanced onto the grid (lower_grid.py)
            ell = agg.ell if d == 0 else -agg.ell
            other = agg.p1 if d == 0 else agg.p0     # the Q-masses
            if not keep.all():
                mass, ell, other = mass[keep], ell[keep], other[keep]
            total = float(mass.sum())
            acc.low, acc.values = lower_grid.balanced_floor(mass, other, ell, interval, eta)
        probs = np.clip(acc.values, 0.0, None)
        low = acc.low
        rest = max(0.0, 1.0 - total)
        if upper:
            bound = (agg.outside0 if d == 0 else agg.outside1) * (1 + eta)
            infinity = min(rest, bound)
            shaved = rest - infinity
            if shaved > 0:
                top = np.nonzero(probs)[0]
                if top.size:
                    probs[top[-1]] += shaved
                else:
                    infinity = rest
        else:
            infinity, shaved = 0.0, rest
        nz = np.nonzero(probs)[0]
        if nz.size:
            probs, low = probs[nz[0]:nz[-1] + 1], low + int(nz[0])
        label = model.label if d == 0 else model.label + " (reversed)"
        out.append(RoundPLD(side, interval, low, probs, float(infinity), model.loss_max,
                            agg.outcomes, float(shaved), label, time.perf_counter() - start,
                            float(agg.outside_mass)))
    return out


@functools.lru_cache(maxsize=16)
def cached_round_plds(model: CountModel, n: int, interval: float, side: str, tail: float,
                      weak_rtol: float, screen: bool = False) -> tuple[RoundPLD, ...]:
    """:func:`round_plds` of one round (one direction when the pair is swap-symmetric, both
    otherwise), cached per (model, n, grid, side, tail, weak_rtol): a pure function of its
    arguments (``model`` is a frozen CountModel, a RoundPLD is frozen and never written), so
    a cached value is the value a new call computes. Shared by the PLD composition, the
    advanced composition and calibration over rounds."""
    plds = tuple(round_plds(model, int(n), float(interval), side, tail=float(tail),
                            weak_rtol=float(weak_rtol), both=not model.is_swap_symmetric(),
                            screen=bool(screen)))
    for item in plds:
        item.probs.flags.writeable = False
    return plds
