"""Where the blocks of S start in the block pairs (blocks.py, neutral_blocks.py,
lower_blocks.py; issue 32).

A block [Sa, Sb] of the S window is replaced by one pair (its first or last S), and that
changes the loss scale of every S in it by about (S - Sa) / (2 S): the excess of a block is
about its weight pi_b times half its width. With a budget of B blocks, the total excess
sum_b pi_b w_b / 2 = (1/2) integral pi(S) w(S) dS under integral dS / w(S) = B is smallest for
w(S) proportional to pi(S)^(-1/2) (Lagrange). pi is a binomial law: +-8 standard deviations
of the window hold blocks of equal width where only the middle +-3 carry mass; with widths
proportional to pi^(-1/2) (capped at WIDEST times the narrowest) the same excess needs about
a third of the blocks (measured: 3 x 2^17 entries hold the values of 2^20 equal blocks).
The cap also bounds the smallest Sa / Sb of a block, which rdp.py's outside charge uses: 8
instead of 16 halves that loss (rdp-clone at n = 1e5, T = 1: +1.0e-4 instead of +1.9e-4
against 2^20 equal blocks) and costs the PLD methods nothing measurable (fmt21-clone
-1.1e-6 instead of -1.5e-6 at n = 1e5, T = 100).

Every layout gives a valid pair (a block pair dominates, or is dominated by, each pair of its
block, whatever the block's width: blocks.py); the layout only sets the tightness per entry.
"""

from __future__ import annotations

import numpy as np

#: Widest block / narrowest block (the tails of the S window, where pi is tiny; module
#: docstring).
WIDEST = 8.0
#: Up to this many (S, D) entries every S is its own block (the pair itself, exact, as with
#: the former budget of 2^20 entries: the Renyi outside charge of rdp.py then keeps its
#: shrink of 1).
EXACT_ENTRIES = 1 << 20


def layout(weight: np.ndarray, width: float, budget: int, exact: int) -> np.ndarray:
    """Block starts for ``weight.size`` values of S whose pairs have ``width`` entries each:
    one S per block up to ``exact`` entries (EXACT_ENTRIES with the default budgets), else
    :func:`block_starts` with ``budget`` entries."""
    if weight.size * width <= exact:
        return np.arange(weight.size)
    return block_starts(weight, max(1, int(budget // width)))


def block_starts(weight: np.ndarray, blocks: int, *, widest: float = WIDEST) -> np.ndarray:
    """Start indices (increasing, the first 0) of at most ``blocks`` contiguous blocks of the
    ``weight.size`` values of S, of widths about proportional to weight^(-1/2), at most
    ``widest`` times the narrowest (module docstring); every S its own block when
    ``blocks >= weight.size``."""
    size = int(weight.size)
    if blocks >= size or size <= 1:
        return np.arange(size)
    density = np.sqrt(np.maximum(np.asarray(weight, dtype=float), 0.0))
    top = float(density.max())
    if not top > 0:
        density = np.ones(size)
    else:
        np.maximum(density, top / widest, out=density)
    edge = np.cumsum(density)
    edge -= density                       # the left edge of each S, from 0
    label = np.floor(edge * (max(1, int(blocks)) / float(edge[-1] + density[-1])))
    return np.flatnonzero(np.diff(label, prepend=-1.0))


def block_ends(starts: np.ndarray, size: int) -> np.ndarray:
    """The last index of each block that starts at ``starts`` (blocks cover 0 .. size - 1)."""
    return np.append(starts[1:], size) - 1
