"""Lower bounds for GPARVs with many likelihood-ratio levels at a cost that does not grow with
the number of levels (issue 32 item 3): merge the levels into a few bins, then the exact band
sum (engine/exact_band.py) of the merged variable.

Merging (the lower side). Let the atoms (a_j, b_j, w_j) of a GPARV G = a - e^eps b be cut into
bins J_1, ..., J_K and replaced by one atom per bin with weight W_k = sum_{j in J_k} w_j and
ratios (sum w_j a_j / W_k, sum w_j b_j / W_k). The merged variable is G' = E[G | bin], so G' is
below G in the convex order, and so is the sum of n independent copies (convex order is closed
under independent sums): E[(G'_1 + ... + G'_n)_+] <= E[(G_1 + ... + G_n)_+] at every eps, for any
choice of bins (for 000 Thm 14's atoms it is also the post-processing of every report by the
map output -> bin, 000 Sec. 4.4). The merged value is therefore a valid lower bound on delta(eps)
at every eps, hence on eps(delta), whatever the bins; the bins only decide how tight it is. At
most 4 bins keep the merged variable within the exact band method's reach (a pair and a
binomial pool), whose cost does not depend on the number of levels.

Bins: intervals of the log likelihood ratio ln(a/b) (the privacy loss between the pair's two
inputs): equal widths and equal weights are both tried, and the one with the larger delta at the
normal approximation's crossing is kept.

Stated error (the upper side of the bracket): the crossing of Chernoff's bound
E[S_+] <= min_lam E e^{lam S} / (lam e) for the *unmerged* atoms (engine/common.py:
chernoff_upper), an upper bound on the exact crossing; the search returns [merged lower,
Chernoff upper] as its bracket, so the reported error covers the loss of the merge.
"""

from __future__ import annotations

import math

import numpy as np

from shufflesim.protocols.bounds.atoms import RatioAtoms, Rounding
from shufflesim.protocols.bounds.engine import exact_band
from shufflesim.protocols.bounds.engine.common import categories, chernoff_upper

#: bins of the merged variable (a pair and a binomial pool of two: the exact band's shape)
BINS = 4
#: the exact band's table size above which it is not used (exact_band.MAX_CELLS) also bounds
#: where the merge applies; below this many users the former methods are cheap enough
MIN_USERS = 64
#: iterations of the Chernoff crossing's search (each a vectorized Chernoff bound)
CHERNOFF_STEPS = 40


def distinct_levels(atoms: RatioAtoms) -> int:
    """Number of distinct (a, b) atoms with positive weight."""
    keep = atoms.weight > 0
    return int(np.unique(np.stack([atoms.a[keep], atoms.b[keep]]), axis=1).shape[1])


def applies(atoms: RatioAtoms, n: int, epsilon: float) -> bool:
    """More levels than the exact band handles, and enough users for the former methods
    (conditioning with blocks, FFT) to be slow; the merged variable must be in the band's
    reach (checked at ``epsilon``)."""
    if n < MIN_USERS or atoms.rounding is Rounding.UP or distinct_levels(atoms) <= BINS:
        return False
    if exact_band.applicable(categories(atoms, n, epsilon)):
        return False
    return all(exact_band.applicable(categories(m, n, epsilon)) for m in candidates(atoms))


def merge(atoms: RatioAtoms, labels: np.ndarray) -> RatioAtoms:
    """One atom per label: weights summed, ratios weight-averaged (module docstring); rounded
    down (a lower bound at every eps)."""
    keep = atoms.weight > 0
    labels, w = labels[keep], atoms.weight[keep]
    size = int(labels.max()) + 1
    weight = np.bincount(labels, w, size)
    used = weight > 0
    a = np.bincount(labels, w * atoms.a[keep], size)[used] / weight[used]
    b = np.bincount(labels, w * atoms.b[keep], size)[used] / weight[used]
    return RatioAtoms(a, b, weight[used], Rounding.DOWN)


def candidates(atoms: RatioAtoms, bins: int = BINS) -> list[RatioAtoms]:
    """The merges tried: BINS intervals of ln(a/b) of equal width, and of equal weight."""
    keep = atoms.weight > 0
    with np.errstate(divide="ignore", invalid="ignore"):
        loss = np.log(atoms.a) - np.log(atoms.b)
    finite = keep & np.isfinite(loss)
    lo, hi = (float(loss[finite].min()), float(loss[finite].max())) if finite.any() else (0, 0)
    # infinite ratios (an output impossible under one input) join the outermost bins
    clipped = np.where(np.isfinite(loss), loss, np.where(loss > 0, hi, lo))
    width = np.floor((clipped - lo) / max(hi - lo, 1e-300) * bins)
    equal_width = np.clip(width, 0, bins - 1).astype(int)
    order = np.argsort(clipped, kind="stable")
    cum = np.cumsum(np.where(keep, atoms.weight, 0.0)[order])
    share = (cum - 0.5 * np.where(keep, atoms.weight, 0.0)[order]) / max(cum[-1], 1e-300)
    equal_weight = np.empty(atoms.weight.size, dtype=int)
    equal_weight[order] = np.clip(np.floor(share * bins), 0, bins - 1).astype(int)
    return [merge(atoms, equal_width), merge(atoms, equal_weight)]


def chernoff_crossing(atoms: RatioAtoms, n: int, delta: float, eps_max: float,
                      start: float) -> float:
    """An upper bound on eps(delta) of the unmerged atoms: the smallest eps found (to a
    relative 1e-4) with Chernoff's bound on delta(eps) <= delta; inf if none below eps_max.
    Chernoff's bound is non-increasing in eps (every value a - e^eps b is); the returned point
    is one where it was verified."""
    def fits(eps: float) -> bool:
        return chernoff_upper([categories(atoms, n, eps)]) <= delta * n

    hi = max(start, 1e-12)
    for _ in range(CHERNOFF_STEPS):          # grow: the crossing lies above the merged lower end
        if fits(hi):
            break
        if hi >= eps_max:
            return math.inf
        hi = min(hi * 1.25, eps_max)
    else:
        return math.inf
    lo = start if start < hi and not fits(start) else 0.0
    for _ in range(CHERNOFF_STEPS):          # shrink the bracket [lo, hi] on ln eps
        if hi - lo <= 1e-4 * hi:
            break
        mid = math.sqrt(lo * hi) if lo > 0 else 0.5 * hi
        if fits(mid):
            hi = mid
        else:
            lo = mid
    return hi
