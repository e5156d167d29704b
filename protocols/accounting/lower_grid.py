"""A round's optimistic (lower-bound) PLD on the grid with second-order error: each grid cell's
outcomes are merged, and a share of each cell is merged with part of the next cell above so
that the group's privacy loss is exactly that cell's grid point (issue 32). The dual, for
lower bounds, of the connect-the-dots split of Doroshenko, Ghazi, Kamath, Kumar, Manurangsi
2022 (which splits outcomes for upper bounds).

Rounding every loss down to the grid (the former lower side, pld.py) moves the P-law down by
about interval / 2 per round, so a T-round composition needed a grid sqrt(T) times finer than
the upper side's (1.7 million points at T = 1000). Here a round's pair is replaced by a
*post-processing* of it (a dominated pair, for every divergence with data processing, hence
after composition too: the T-round mechanism of the post-processed rounds is a
post-processing of the T-round mechanism), built in three steps, every one a post-processing:

1. the outcomes with loss in [g_j, g_j+1) (g_j = j interval) are merged into one outcome of
   masses (P_j, Q_j) and loss l_j = ln(P_j / Q_j) in [g_j, g_j+1);
2. that outcome is split into a_j and b_j with shares s_j and 1 - s_j of both its masses (a
   biased coin flip; any share is valid: s_j = r_j / (1 + r_j) with r_j the ratio of b_k's
   excess to a whole cell j's deficit (below), then SHARE_PASSES passes of
   s_j = (1 - s_k) r_j, so that a_j and b_k balance when the cells are alike, and a cell far
   above its neighbour below gives most of its mass to b);
3. a_j (loss below g_k, k the next cell above j holding an outcome) is merged with a part phi
   of b_k (loss at least g_k) so that the merged outcome has loss exactly g_k: phi = D / E,
   with the deficit D = e^g Q(a_j) - P(a_j) = P(a_j) expm1(g_k - l_j) and the excess
   E = P(b_k) - e^g Q(b_k) = P(b_k) (-expm1(-(l_k - g_k))). When D > E, all of b_k and the
   part psi = E / D of a_j are merged instead.

What is left over (the rest of b_k, the rest 1 - psi of a_j, each b_j) keeps its own loss,
which is then rounded *down* to the grid, as before (a stochastically smaller P-law per round:
the composed hockey-stick divergence E_P[(1 - e^{eps - sum L})_+] only decreases). So every
b_j stays at g_j (where plain rounding puts it), a_j moves up to g_k as far as the balance
allows, and the rest of a_j stays at g_j: never below plain rounding. The part moved makes up
for the rounding of b_k (psi D = E), so the first-order loss of rounding down cancels in
part.

Conservative side of the numbers: the P-masses are those pld.py already shaved (each below
its true value), the Q-masses the other direction's raised by 2 eta (above theirs), so the
cells' losses are below the true ones, and they are lowered again by 1e-13 |l| + 1e-14 against
rounding; D uses P raised by 3 eta (above the true deficit), E the shaved P (below the true
excess), and psi is lowered by 1e-9 relative: a_j moves up only as far as the true balance
allows. Cells without Q-mass (an infinite loss) keep plain rounding.
"""

from __future__ import annotations

import numpy as np

#: Passes refining the shares of the cells (any share is valid; tightness only).
SHARE_PASSES = 2
#: Outcomes put into cells at once (issue 32: pieces whose arrays stay in the cache).
CHUNK = 1 << 15
#: Relative margin on the balance (psi is lowered by it).
BALANCE_MARGIN = 1e-9


def _lowered(values: np.ndarray) -> np.ndarray:
    return values - (1e-13 * np.abs(values) + 1e-14)


def balanced_floor(mass: np.ndarray, other: np.ndarray, ell: np.ndarray, interval: float,
                   eta: float) -> tuple[int, np.ndarray]:
    """(first grid index, P-masses on the grid from there) of the post-processed pair of the
    module docstring. ``mass``: the outcomes' P-masses (already shaved: below the true ones
    by the relative error ``eta`` at least); ``other``: their Q-masses as computed (within
    relative ``eta`` of the true ones); ``ell``: their losses ln(P / Q)."""
    cell = np.empty(ell.size, dtype=np.int64)
    for first in range(0, ell.size, CHUNK):          # in pieces that stay in the cache
        part = slice(first, first + CHUNK)
        cell[part] = np.floor(_lowered(ell[part]) / interval)
    low = int(cell.min())
    size = int(cell.max()) - low + 1
    cell -= low
    P = np.zeros(size)
    Q = np.zeros(size)
    for first in range(0, ell.size, CHUNK):
        part = slice(first, first + CHUNK)
        P += np.bincount(cell[part], weights=mass[part], minlength=size)
        Q += np.bincount(cell[part], weights=other[part] * (1.0 + 2.0 * eta), minlength=size)
    live = (P > 0) & (Q > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        loss = _lowered(np.log(np.where(live, P, 1.0) / np.where(live, Q, 1.0)))
    probs = P.copy()
    idx = np.nonzero(live)[0]                      # cells with an outcome, in loss order
    if idx.size < 2:
        return low, probs
    j, k = idx[:-1], idx[1:]                       # each cell and the next one above it
    grid_k = (low + k) * interval                  # g_k: the target of a_j
    down = np.expm1(grid_k - loss[j])              # deficit of a_j per unit of P-mass
    up = -np.expm1(-(loss[k] - grid_k))            # excess of b_k per unit of P-mass
    pair = (down > 0) & (up > 0)
    # the share s_j of cell j that is a_j: where b_k would balance all of a_j with b_k whole
    # (any share is a post-processing; this one uses both halves fully when the cells are
    # alike, and gives most of a cell to b when its neighbour below is far)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(pair, P[k] * up / np.where(pair, P[j] * down, 1.0), 0.0)
    share = np.zeros(size)
    share[j] = ratio / (1.0 + ratio)
    for _ in range(SHARE_PASSES):     # towards s_j = (1 - s_k) ratio_j: both parts used fully
        share[j] = np.clip((1.0 - share[k]) * ratio, 0.0, 1.0)
    a_mass = share[j] * P[j]
    b_mass = (1.0 - share[k]) * P[k]
    deficit = a_mass * (1.0 + 3.0 * eta) * down
    excess = b_mass * up
    with np.errstate(divide="ignore", invalid="ignore"):
        psi = np.where(pair & (deficit > 0), np.clip(
            excess * (1.0 - BALANCE_MARGIN) / np.where(deficit > 0, deficit, 1.0), 0.0, 1.0),
            0.0)
    moved = a_mass * psi
    probs[j] -= moved
    probs[k] += moved
    return low, np.clip(probs, 0.0, None)
