"""Where to put the thinned lower curve's thresholds, found on a subsample of its slices
(issue 32: cheu's multi-message-exact-lower in interactive time).

thinned_curve.largest_certified places its thresholds by trial: a set of offsets at the cheap
models' eps, re-centred twice on the moving root and refined at the peak (13 region passes at
cheu d = 16, n = 1e4, each over every (slice, a) cell). Here the same search runs first on a
*scout*: every ``stride``-th slice M, its weights multiplied by ``stride``. The slices'
contributions vary smoothly in M (a binomial law of M: at cheu d = 16, n = 1e4 about 57
slices per standard deviation, the tables spanning about 16 of them), so the scout's sum is a Riemann sum of the full one
and its root lies within ~1e-7 relative of the full curve's. The full curve then evaluates only
the thresholds that matter at the scout's root (those best for a share of the estimate above
thinned_curve.SHARE_KEPT, and the best single one): 2-3 region passes instead of 13.

Soundness does not depend on the scout. The eps returned is certified by the *full* curve
(thinned_curve.LowerCurve: every set of regions gives a lower estimate of the model's
divergence, 001 Thm 5.1 style), whatever thresholds the scout proposed; a poor proposal can only
make it smaller. Where the full curve does not certify the starting point with the proposed
thresholds, :func:`largest_certified` returns None and the caller takes the unscouted path.
"""

from __future__ import annotations

import numpy as np

from shufflesim.protocols.bounds.multi_message import thinned_curve
from shufflesim.protocols.bounds.multi_message.thinned_curve import OFFSETS, LowerCurve

#: the scout keeps about this many slices (cheu d = 16, n = 1e4: 909 slices, stride 9); below
#: 2 * SCOUT_ROWS slices there is no scout (it would cost about as much as the full search)
SCOUT_ROWS = 100
#: the full curve evaluates the scout's thresholds that are the best of slices holding more than
#: this share of the scout's estimate at its root (and the best single threshold)
KEEP_SHARE = 1e-3


def _subsample(ready: dict, stride: int) -> dict:
    """Every ``stride``-th slice of a thinned_curve.prepared table (from the middle of the
    first stride), its weights times ``stride``; the flat l_b and the top sums are shared (the
    positions ``end`` and ``cut0`` of a slice address them whatever other slices are kept)."""
    start = stride // 2
    out = dict(ready)
    out["w"] = tuple(w[start::stride] * stride for w in ready["w"])
    out["cut0"] = ready["cut0"][start::stride]
    out["end"] = ready["end"][start::stride]
    return out


class Scout:
    """A subsampled copy of a LowerCurve (no region computed yet), or none where the curve has
    too few slices for a subsample to be cheaper."""

    def __init__(self, curve: LowerCurve) -> None:
        self.curve = curve
        rows = min((t["w"][0].shape[0] for t in curve.tables), default=0)
        self.stride = rows // SCOUT_ROWS
        self.scout = (LowerCurve([], ready=[_subsample(t, self.stride) for t in curve.tables])
                      if self.stride >= 2 else None)

    def beats(self, delta: float, low: float) -> bool:
        """Whether the scout, at the thresholds low + OFFSETS, puts the curve above delta at
        low (an estimate: only the full curve certifies)."""
        if self.scout is None:
            return False
        self.scout.add(low + c for c in OFFSETS)
        return self.scout(low) > delta

    def largest_certified(self, delta: float, low: float, high: float) -> float | None:
        """thinned_curve.largest_certified on the scout, then on the full curve only at the
        thresholds that matter at the scout's root, re-centred on the full curve's root
        (thinned_curve's follow step, which adds nothing when the roots agree to
        CENTRE_RTOL). None when the full curve does not certify ``low`` with them."""
        scout = self.scout
        centre = thinned_curve.largest_certified(scout, delta, low, high)
        shares = scout.best_shares(centre)
        keep = {scout.thresholds[int(np.argmax(scout.single_values(centre)))]}
        keep.update(t for t, share in zip(scout.thresholds, shares, strict=True)
                    if share > KEEP_SHARE * shares.sum())
        curve = self.curve
        curve.add(sorted(keep))
        if not curve(low) > delta:
            return None
        root = thinned_curve.find_root(curve, delta, low, high)
        return thinned_curve.follow(curve, delta, centre, root, high)
