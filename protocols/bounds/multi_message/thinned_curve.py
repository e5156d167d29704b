"""The thinned product model's lower estimate as a function of eps from one set of regions
(issue 32: cheu's multi-message-exact-lower in interactive time).

kernels.thinned_product_lower evaluates, at one eps, the regions {l_a(a) + l_b(b) > eps + c}
of every slice M for a few offsets c and keeps each slice's best: any region R gives a lower
estimate sum_R (P0 - e^eps P1) of the slice's part of the divergence, *at every eps* (001 Thm
5.1 style: the hockey-stick divergence is the largest such sum). So the masses P0(R), P1(R) of
a set of regions, computed once, give the lower estimate

    L(eps) = sum_M max(0, max_R [P0(R) - e^eps P1(R)]) - slack(eps),

at every eps at the cost of a few products, with the same slack as thinned_product_lower
(RELATIVE_SLACK (1 + e^eps) for the rounding of the sums, e^eps times the tables' outside mass).
L is non-increasing in eps, and it only grows when regions are added. The search for the
largest eps with L(eps) > delta (:func:`largest_certified`) then needs dense work only for the
regions: thresholds at eps + offsets around the current root, re-centred until the root moves
less than the tolerance (two or three sets of 6 thresholds instead of ~6 evaluations of 6).
"""

from __future__ import annotations

import math

import numpy as np

from shufflesim.protocols.bounds.multi_message.kernels import (
    LOG_CLIP,
    RELATIVE_SLACK,
    THRESHOLD_OFFSETS,
)

#: the offsets of each set of thresholds (kernels.THRESHOLD_OFFSETS up to 0.1: cheu d = 16 and
#: d = 8 take 0.005-0.05 in every slice but a few)
OFFSETS = THRESHOLD_OFFSETS[:6]
#: re-centring stops when the root moves by at most this (relative); the final root is then
#: found on the curve to ROOT_RTOL
CENTRE_RTOL = 1e-4
ROOT_RTOL = 1e-7
MAX_CENTRES = 3
#: (slice, a) cells of at most this mass (both components) are left out of every region
CELL_DROP = 1e-20
#: refinements of the best single threshold at the root, and their resolution
PEAK_STEPS = 4
PEAK_RESOLUTION = 2e-4
#: thresholds moved along with the root: those that are the best of slices holding more than
#: this share of the estimate
SHARE_KEPT = 1e-3


def prepared(tables: dict) -> dict:
    """The eps- and threshold-independent arrays of :func:`region_masses` for one table of
    kernels.thinned_tables: the component weights of every (slice, a) cell, each top-sum array
    flattened, and the cut of threshold 0 on the row-shifted flat l_b (a row's cuts stay within
    2 LOG_CLIP of its shift, so they never reach a neighbouring row: no clipping needed).

    The a cells are narrowed to each slice's own run of cells heavier than CELL_DROP (the grid
    is the union over slices: cheu d = 16, n = 1e4 keeps 689 of 882 columns). Leaving cells
    out of every region keeps each region's sum a valid lower estimate; it loses at most their
    mass (< 1e-16 there). Each kept cell appears once per row (issue 32, session 15)."""
    a0, a1, ga, la = tables["a"]
    rows, width = tables["shape"]
    c1, c2 = tables["c1"][:, None], tables["c2"][:, None]
    w0, w1, wg = c1 * a0, c1 * a1, c2 * ga
    cut0 = tables["shift"] - la
    heavy = (w0 + w1 + wg) > CELL_DROP
    if heavy.any():
        first = np.where(heavy.any(axis=1), np.argmax(heavy, axis=1), 0)
        last = np.where(heavy.any(axis=1),
                        heavy.shape[1] - 1 - np.argmax(heavy[:, ::-1], axis=1), 0)
        span = int(np.max(last - first)) + 1
        if span < heavy.shape[1]:
            wanted = first[:, None] + np.arange(span)[None, :]
            # a run ending at the last column is padded past it: the padding reads that column
            # again (clipped index), so it is masked by the unclipped column, else the cell
            # would be counted more than once (cheu d = 16, f = 0.15, n = 50: 49 rows did)
            keep = wanted <= last[:, None]
            cols = np.minimum(wanted, heavy.shape[1] - 1)
            at = cols + (np.arange(rows) * heavy.shape[1])[:, None]  # flat positions
            w0, w1, wg = (np.where(keep, x.take(at), 0.0) for x in (w0, w1, wg))
            cut0 = cut0.take(at)
    r = np.arange(rows)[:, None]
    return {
        "w": (w0, w1, wg),
        "tops": tuple(top.ravel() for top in tables["tops"]),
        "cut0": cut0,
        "flat": tables["flat"],
        "position": np.arange(tables["flat"].size, dtype=float),
        "end": (2 * r + 1) * width + r - 1,
        "outside": tables["outside"],
    }


def region_masses(ready: dict, thresholds) -> tuple[np.ndarray, np.ndarray]:
    """(P0, P1): arrays (slices, thresholds) of the masses of the regions
    {l_a + l_b > t} of every slice (the regions of kernels.thinned_product_lower, for a table
    :func:`prepared`). The count of l_b above each cut is read by np.interp on the sorted flat
    l_b (its binary search starts from the previous answer, and the cuts are sorted: 21 -> 9 ms
    for 8e5 cuts at cheu d = 16, n = 1e4; a cut within rounding of an l_b may be counted on
    either side, which only moves the region's boundary: every region is a valid lower
    estimate), the top sums by flat index and the sums over a by dot products (54 -> ~20 ms
    per threshold)."""
    w0, w1, wg = ready["w"]
    top0, top1, top_g = ready["tops"]
    rows = w0.shape[0]
    p0 = np.empty((rows, len(thresholds)))
    p1 = np.empty_like(p0)
    # buffers reused from threshold to threshold (the same operations, fewer fresh pages)
    cut, index = np.empty(w0.shape), np.empty(w0.shape, np.int64)
    for j, threshold in enumerate(thresholds):
        np.add(ready["cut0"], min(max(threshold, -LOG_CLIP), LOG_CLIP), out=cut)
        last = np.interp(cut.ravel(), ready["flat"], ready["position"], left=-1.0)
        np.copyto(index, last.reshape(cut.shape), casting="unsafe")   # truncated, as astype
        np.subtract(ready["end"], index, out=index)
        shared = np.einsum("ij,ij->i", wg, top_g.take(index))
        p0[:, j] = np.einsum("ij,ij->i", w0, top0.take(index)) + shared
        p1[:, j] = np.einsum("ij,ij->i", w1, top1.take(index)) + shared
    return p0, p1


class LowerCurve:
    """L(eps) of the module docstring for a list of thinned tables (the maximum over them: each
    is a lower estimate of its own direction or pair), over the thresholds added so far."""

    def __init__(self, tables: list, ready: list | None = None) -> None:
        """``ready``: tables already :func:`prepared` (used instead of ``tables``)."""
        self.tables = [prepared(t) for t in tables] if ready is None else list(ready)
        self.masses = [(np.zeros((t["w"][0].shape[0], 0)), np.zeros((t["w"][0].shape[0], 0)))
                       for t in self.tables]
        self.thresholds: list[float] = []

    def add(self, thresholds) -> None:
        new = [float(t) for t in thresholds if float(t) not in self.thresholds]
        if not new:
            return
        for i, tables in enumerate(self.tables):
            p0, p1 = region_masses(tables, new)
            old0, old1 = self.masses[i]
            self.masses[i] = (np.hstack([old0, p0]), np.hstack([old1, p1]))
        self.thresholds += new

    def values(self, epsilon: float) -> list[float]:
        """The lower estimate of each table at eps."""
        e = math.exp(epsilon)
        out = []
        for tables, (p0, p1) in zip(self.tables, self.masses, strict=True):
            per_slice = np.max(p0 - e * p1, axis=1, initial=0.0)
            out.append(float(per_slice.sum()) - RELATIVE_SLACK * (1.0 + e)
                       - e * tables["outside"])
        return out

    def single_values(self, epsilon: float) -> np.ndarray:
        """Per threshold: the estimate of its regions alone at eps (largest over tables)."""
        e = math.exp(epsilon)
        out = np.zeros(len(self.thresholds))
        for p0, p1 in self.masses:
            out = np.maximum(out, np.maximum(p0 - e * p1, 0.0).sum(axis=0))
        return out

    def best_shares(self, epsilon: float) -> np.ndarray:
        """Per threshold: the summed positive values of the slices whose best threshold it is
        (at eps, in the table with the largest estimate)."""
        e = math.exp(epsilon)
        best_total, shares = -1.0, np.zeros(len(self.thresholds))
        for p0, p1 in self.masses:
            gain = p0 - e * p1
            top = np.max(gain, axis=1, initial=0.0)
            if top.sum() > best_total and gain.shape[1]:
                best_total = top.sum()
                shares = np.bincount(np.argmax(gain, axis=1), weights=top,
                                     minlength=gain.shape[1])
        return shares

    def __call__(self, epsilon: float) -> float:
        return max(self.values(epsilon), default=0.0)

    def best_index(self, epsilon: float) -> int:
        """The table whose estimate at eps is the largest."""
        values = self.values(epsilon)
        return int(np.argmax(values)) if values else 0


def find_root(curve: LowerCurve, delta: float, low: float, high: float) -> float:
    """The largest point found with curve > delta in [low, high] (curve(low) > delta), by
    bisection on the cheap curve to ROOT_RTOL (the curve is non-increasing)."""
    if curve(high) > delta:
        return high
    while high - low > ROOT_RTOL * high:
        mid = 0.5 * (low + high)
        if curve(mid) > delta:
            low = mid
        else:
            high = mid
    return low


def _peak_step(curve: LowerCurve, epsilon: float) -> float | None:
    """A new threshold near the peak of the single-threshold estimate at eps (a threshold's
    value falls off within ~0.005 of its best one at cheu d = 16: offsets 0.01 / 0.015 / 0.02
    gave 0.37 / 1.06 / 0.80 e-6): the vertex of the parabola through ln(value) at the best
    threshold so far and its two neighbours, or the midpoint towards the better neighbour where
    a neighbour has no positive value, or a step outward where the best is the largest or
    smallest threshold (cheu f = 0.1, n = 300: its best offset lies beyond OFFSETS); None when
    the step is below PEAK_RESOLUTION."""
    values = curve.single_values(epsilon)
    t = np.array(curve.thresholds)
    order = np.argsort(t)
    t, values = t[order], values[order]
    j = int(np.argmax(values))
    if not values[j] > 0 or t.size < 2:
        return None
    if j in (0, t.size - 1):        # the best is an end: step outward, twice the last gap
        return t[j] + 2.0 * (t[j] - t[j - 1] if j else t[0] - t[1])
    (t0, t1, t2), (v0, v1, v2) = t[j - 1:j + 2], values[j - 1:j + 2]
    if v0 > 0 and v2 > 0:
        y0, y1, y2 = math.log(v0), math.log(v1), math.log(v2)
        den = (t1 - t0) * (y1 - y2) - (t1 - t2) * (y1 - y0)
        num = (t1 - t0) ** 2 * (y1 - y2) - (t1 - t2) ** 2 * (y1 - y0)
        new = t1 - 0.5 * num / den if den != 0 else t1
        new = min(max(new, 0.5 * (t0 + t1)), 0.5 * (t1 + t2))
    else:
        new = 0.5 * (t1 + (t0 if v0 >= v2 else t2))
    return None if abs(new - t1) <= PEAK_RESOLUTION else new


def follow(curve: LowerCurve, delta: float, centre: float, root: float, high: float) -> float:
    """Move the thresholds that are some slices' best at ``centre`` (beyond SHARE_KEPT of the
    estimate) and the best single one along with the root (a best threshold minus eps is
    nearly constant) until the root moves by at most CENTRE_RTOL; returns the root."""
    for _ in range(MAX_CENTRES):
        if abs(root - centre) <= CENTRE_RTOL * max(root, 1e-300):
            break
        shares = curve.best_shares(centre)
        keep = {curve.thresholds[int(np.argmax(curve.single_values(centre)))]}
        keep.update(t for t, share in zip(curve.thresholds, shares, strict=True)
                    if share > SHARE_KEPT * shares.sum())
        curve.add(sorted(t + (root - centre) for t in keep))
        centre, root = root, find_root(curve, delta, root, high)
    return root


def largest_certified(curve: LowerCurve, delta: float, low: float, high: float) -> float:
    """A point eps in [low, high] with curve(eps) > delta verified; ``low`` must already be
    certified by the caller's thresholds at low + OFFSETS (curve(low) > delta). The thresholds
    that matter there (and the larger offsets of kernels.THRESHOLD_OFFSETS where slices' best
    is the largest one) follow the root (:func:`follow`); the best single threshold at the
    root is then refined (:func:`_peak_step`) and followed again. Returns low if nothing
    better is certified."""
    if not curve(low) > delta:
        return low
    shares = curve.best_shares(low)
    top = low + OFFSETS[-1]
    if top in curve.thresholds and \
            shares[curve.thresholds.index(top)] > 0.01 * shares.sum():
        # slices whose best region is the largest offset: the larger ones too (cheu f = 0.1,
        # n = 300: the slices' best offsets spread over 0.05-0.5)
        curve.add(low + c for c in THRESHOLD_OFFSETS[len(OFFSETS):])
    root = follow(curve, delta, low, find_root(curve, delta, low, high), high)
    for _ in range(PEAK_STEPS):
        step = _peak_step(curve, root)
        if step is None:
            break
        curve.add([step])
    return follow(curve, delta, root, find_root(curve, delta, root, high), high)
