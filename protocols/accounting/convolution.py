"""Composition of discretised privacy loss distributions by one FFT, and their (eps, delta).

Input: per kind of round, one direction's discretised PLD (pld.RoundPLD: P-masses c_k at losses
k * interval, mass m at +inf) and how many times it repeats. Output: :class:`Composed`, the law
of the sum of the rounds' losses on the same grid, and :func:`epsilon_for_delta`, the smallest
eps whose hockey-stick divergence is at most a given delta, on the conservative side of the
PLDs' own side ("upper": pessimistic PLDs, eps rounded up; "lower": optimistic, rounded down).

Why not ``dp_accounting``: importing it imports scipy.signal and scipy.stats (about 1.2 s of
CPU, more than a whole composition; issue 32), its self-composition picks its FFT length from
a coarse grid of Chernoff orders, and several kinds of rounds are composed pairwise. Here all
rounds are composed at once: the composed measure mu = *_i c_i^{*T_i} (total mass
prod (1 - m_i)^T_i) is

    FFT^-1[ prod_i FFT(c_i)^T_i ]   on a circle of N points covering [lo, hi],

where [lo, hi] holds all of mu but at most ``truncation`` on each side by the Chernoff bound
mu(X >= x) <= e^{-lam x} prod_i M_i(lam)^T_i (lam > 0; likewise below with lam < 0), M_i the
moment generating function of c_i, minimised over a grid of lam (each lam is a valid bound).
The circle puts the mass outside [lo, hi] (at most 2 truncation) somewhere inside it:

* upper side: every entry is at least the true mass there, so the hockey-stick sum over the
  range is at least the true one over the range; the mass above hi (<= truncation) is charged
  as if at +inf (the composed delta is raised by it);
* lower side: the sum over the range exceeds the true one by at most the aliased mass, which is
  subtracted (mass below lo only lowers delta when dropped).

The composed mass at +inf is 1 - prod_i (1 - m_i)^T_i (a round's +inf loss makes the sum
+inf). Floating point: the FFT's noise is charged as FFT_SLACK per circle entry (the allowance
the project used with dp_accounting, whose self-composition is the same computation), the
suffix sums of the hockey-stick curve as 4 (N + 2) ulp times their value, both on the
conservative side. The curve is made monotone on the conservative side (a running maximum from
the right for upper bounds, a running minimum from the left for lower ones) and the eps inside
a grid cell is solved in closed form, delta(eps) = I + A - e^{eps - L_j} G on (L_j, L_{j+1}].
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from shufflesim.protocols.bounds.engine.spectrum_power import integer_power

#: Mass of the composed law allowed outside the FFT range on each side (Chernoff bound).
TAIL_TRUNCATION = 1e-15
#: Floating-point allowance of the FFT per entry of the circle.
FFT_SLACK = 1e-14
#: Largest circle accepted (entries).
MAX_CIRCLE = 1 << 26

_ULP = float(np.finfo(float).eps)


@dataclass(frozen=True)
class Piece:
    """One kind of round: P-masses ``probs`` at grid indices lower_index, lower_index + 1, ..,
    mass ``infinity`` at +inf, repeated ``repeat`` times."""

    lower_index: int
    probs: np.ndarray
    infinity: float
    repeat: int


@dataclass(frozen=True)
class Composed:
    """The composed law: ``probs[t]`` at loss (lower_index + t) * interval (clipped at 0, with
    the aliasing described in the module docstring), ``infinity`` at +inf; ``above``: bound on
    the mass above the range, ``aliased``: bound on the mass folded into it; ``slack``: the
    floating-point allowance; ``circle``: the FFT length."""

    side: str
    interval: float
    lower_index: int
    probs: np.ndarray
    infinity: float
    above: float
    aliased: float
    slack: float
    circle: int


def _fast_length(n: int) -> int:
    """The smallest 2^a 3^b 5^c >= n (pocketfft is fastest on such lengths)."""
    best = 1 << max(0, (n - 1).bit_length())
    p5 = 1
    while p5 < 2 * n:
        p35 = p5
        while p35 < 2 * n:
            value = p35
            while value < n:
                value *= 2
            best = min(best, value)
            p35 *= 3
        p5 *= 5
    return best


def _log_mgf(piece: Piece, lam: np.ndarray) -> np.ndarray:
    """log sum_j c_j e^{lam j} (offsets j from the piece's lower index), for every lam."""
    p = np.asarray(piece.probs, dtype=float)
    nz = np.nonzero(p > 0)[0]
    if nz.size == 0:
        return np.full(lam.size, -np.inf)
    return _log_sum_exp_rows(lam, nz.astype(float), np.log(p[nz]))


def _log_sum_exp_rows(lam: np.ndarray, offsets: np.ndarray, log_p: np.ndarray) -> np.ndarray:
    """log sum_j e^{lam offsets_j + log_p_j} for every lam (rows of bounded size)."""
    out = np.empty(lam.size)
    rows = max(1, (1 << 20) // max(offsets.size, 1))
    for first in range(0, lam.size, rows):
        expo = lam[first:first + rows, None] * offsets[None, :] + log_p[None, :]
        top = expo.max(axis=1)
        out[first:first + rows] = top + np.log(np.exp(expo - top[:, None]).sum(axis=1))
    return out


#: Blocks of a piece in the coarse Chernoff bound that steers the choice of orders in _range.
_COARSE_BLOCKS = 4096


def _log_mgf_coarse(piece: Piece, lam: np.ndarray) -> np.ndarray:
    """An upper bound on :func:`_log_mgf` for lam all of one sign, from at most _COARSE_BLOCKS
    blocks of offsets: each block's mass put at its last offset (lam > 0) or its first
    (lam < 0), where e^{lam j} is largest. Only steers the search; the range uses exact
    values."""
    p = np.asarray(piece.probs, dtype=float)
    size = p.size
    width = max(1, -(-size // _COARSE_BLOCKS))
    if width == 1:
        return _log_mgf(piece, lam)
    starts = np.arange(0, size, width)
    mass = np.add.reduceat(np.clip(p, 0.0, None), starts)
    ends = np.minimum(starts + width - 1, size - 1)
    at = (ends if float(lam[0]) > 0 else starts).astype(float)
    keep = mass > 0
    if not keep.any():
        return np.full(lam.size, -np.inf)
    return _log_sum_exp_rows(lam, at[keep], np.log(mass[keep]))


def _range(pieces: Sequence[Piece], truncation: float) -> tuple[int, int]:
    """Offsets [lo, hi] of the sum (from sum_i T_i lower_index_i) holding all of the composed
    measure but at most ``truncation`` on each side (Chernoff, module docstring). The order lam
    is chosen on a grid with the coarse upper bound of the mgf (:func:`_log_mgf_coarse`), and
    the bound is then evaluated exactly at the chosen order and its neighbours (every lam
    gives a valid bound; the smallest is used)."""
    full = sum(p.repeat * (p.probs.size - 1) for p in pieces)
    mean, var = 0.0, 0.0
    for p in pieces:
        c = np.asarray(p.probs, dtype=float)
        total = float(c.sum())
        if total <= 0:
            continue
        j = np.arange(c.size)
        m1 = float(np.dot(j, c)) / total
        var += p.repeat * max(float(np.dot((j - m1) ** 2, c)) / total, 0.25)
        mean += p.repeat * m1
    sd = math.sqrt(max(var, 1.0))
    z = np.geomspace(1e-3, 60.0, 48) / sd
    lo, hi = 0, full
    log_tau = math.log(truncation)
    for sign in (1.0, -1.0):
        lam = sign * z
        with np.errstate(invalid="ignore", over="ignore"):
            coarse = sum(p.repeat * _log_mgf_coarse(p, lam) for p in pieces)
            rough = (coarse - log_tau) / lam
        rough = np.where(np.isfinite(rough), rough, np.inf if sign > 0 else -np.inf)
        best = int(np.argmin(rough) if sign > 0 else np.argmax(rough))
        lam = lam[max(0, best - 2):best + 3]
        lam = np.unique(np.concatenate([lam, lam[:1] * 0.97, lam[-1:] * 1.03]))
        total = sum(p.repeat * _log_mgf(p, lam) for p in pieces)
        with np.errstate(invalid="ignore", over="ignore"):
            bound = (total - log_tau) / lam
        bound = bound[np.isfinite(bound)]
        if bound.size == 0:
            continue
        if sign > 0:     # mu(X >= x) <= tau for x >= bound: hi = ceil(bound) (+1 for rounding)
            hi = min(hi, int(math.ceil(float(bound.min()) * (1 + 1e-9) + 1e-6)) + 1)
        else:            # mu(X <= x) <= tau for x <= bound
            lo = max(lo, int(math.floor(float(bound.max()) * (1 - 1e-9) - 1e-6)) - 1)
    lo = max(0, min(lo, int(mean)))
    hi = min(full, max(hi, int(math.ceil(mean)), lo))
    return lo, hi


def compose(pieces: Sequence[Piece], interval: float, side: str, *,
            truncation: float = TAIL_TRUNCATION) -> Composed:
    """The composition of ``pieces`` (module docstring) on ``side`` "upper" or "lower"."""
    if side not in ("upper", "lower"):
        raise ValueError(f"side must be 'upper' or 'lower', not {side!r}")
    pieces = [p for p in pieces if p.repeat > 0]
    base = sum(p.repeat * p.lower_index for p in pieces)
    if len(pieces) == 1 and pieces[0].repeat == 1:     # one round: nothing to compose
        p = pieces[0]
        return Composed(side, float(interval), int(p.lower_index),
                        np.clip(np.asarray(p.probs, dtype=float), 0.0, None),
                        float(p.infinity), 0.0, 0.0, 0.0, int(p.probs.size))
    lo, hi = _range(pieces, truncation)
    size = hi - lo + 1
    if size > MAX_CIRCLE:
        raise ValueError(f"composed grid of {size} points is too large; use a larger interval")
    circle = _fast_length(size)
    spectrum = None
    for p in pieces:
        c = np.asarray(p.probs, dtype=float)
        if c.size > circle:     # fold onto the circle (circular convolution of the folds)
            c = np.bincount(np.arange(c.size) % circle, weights=c, minlength=circle)
        f = integer_power(np.fft.rfft(c, circle), int(p.repeat), overwrite=True)
        spectrum = f if spectrum is None else spectrum * f
    values = np.fft.irfft(spectrum, circle)
    out = np.take(values, (lo + np.arange(size)) % circle)
    out = np.clip(out, 0.0, None)
    log_keep = sum(p.repeat * math.log1p(-min(p.infinity, 1.0)) if p.infinity < 1 else -math.inf
                   for p in pieces)
    infinity = 1.0
    if log_keep > -math.inf:
        infinity = min(1.0, max(0.0, -math.expm1(log_keep)) * (1 + 1e-12))
    above = truncation if hi < sum(p.repeat * (p.probs.size - 1) for p in pieces) else 0.0
    below = truncation if lo > 0 else 0.0
    slack = FFT_SLACK * circle
    return Composed(side, float(interval), base + lo, out, float(infinity), above,
                    above + below, slack, circle)


def _tail_sums(c: np.ndarray, interval: float) -> tuple[np.ndarray, np.ndarray]:
    """Entry i (i = 0 .. N, standing for eps = L_{i-1}): A_i = sum_{k >= i} c_k and
    G_i = sum_{k >= i} c_k e^{(i - 1 - k) interval}. G through H_i = e^{interval} G_i, which
    satisfies H_i = c_i + e^{-interval} H_{i+1}, summed in blocks of B entries (B interval <= 30,
    so no exponent overflows): H_i = e^{(i - s) interval} sum_{i <= k < e} c_k
    e^{-(k - s) interval} + e^{(i - e) interval} H_e on a block [s, e). All terms are >= 0."""
    n = c.size
    A = np.zeros(n + 1)
    A[:n] = np.cumsum(c[::-1])[::-1]
    H = np.zeros(n + 1)
    block = max(1, int(30.0 / interval))
    for s in range(((n - 1) // block) * block if n else -1, -1, -block):
        e = min(s + block, n)
        k = np.arange(s, e)
        w = c[s:e] * np.exp(-(k - s) * interval)
        suffix = np.cumsum(w[::-1])[::-1]
        H[s:e] = np.exp((k - s) * interval) * suffix + np.exp((k - e) * interval) * H[e]
    return A, H * math.exp(-interval)


def hockey_curve(composed: Composed, start: int = 0) -> tuple[np.ndarray, np.ndarray,
                                                              np.ndarray]:
    """(A, G, delta) for j = start - 1 .. N - 1 with delta_j the conservative bound on the
    composed hockey-stick divergence at eps = L_j (L_{-1} = L_0 - interval), monotone (module
    docstring). A and G as in :func:`_tail_sums` (they depend only on the entries from j on).
    With ``start`` > 0 the lower side's running minimum starts at entry ``start``: each entry
    is still at most the true divergence there (each raw entry minus the allowance is), only
    not made monotone across the entries left out."""
    A, G = _tail_sums(composed.probs[start:], composed.interval)
    # the total mass (A_0 of the whole grid; a sum in another order, raised, when start > 0)
    total = float(A[0]) if start == 0 else float(np.sum(composed.probs)) * (1 + 1e-9)
    err = 4.0 * (composed.probs.size + 2) * _ULP * total + composed.slack
    raw = np.maximum(A - G, 0.0)
    if composed.side == "upper":
        delta = composed.infinity + composed.above + raw + err
        delta = np.maximum.accumulate(delta[::-1])[::-1]
    else:
        delta = composed.infinity + raw - composed.aliased - err
        delta = np.minimum.accumulate(delta)
    return A, G, delta


#: Loss distances tried by :func:`_curve_start` (in units of the grid interval: at least 1).
_START_DISTANCES = np.geomspace(1e-4, 1.0, 13)


def _curve_start(composed: Composed, delta: float) -> int:
    """An entry j0 below which the crossing of ``delta`` is not expected, so that the curve
    is computed from j0 on only (issue 32: at T = 1000 the lower side's grid has 1.7 million
    entries, and the crossing lies in the upper tail). From the tail masses A alone: the raw
    hockey-stick value at j is at least (1 - e^{-(m + 1) interval}) A_{j + m} for every m >= 0,
    so the largest j where this exceeds twice delta (plus the side's allowances) for some m
    in :data:`_START_DISTANCES` is a guess; :func:`epsilon_for_delta` checks it on the curve
    and falls back to the whole grid when it is wrong. 0: the whole grid."""
    c = composed.probs
    if c.size < (1 << 16):
        return 0
    tails = np.cumsum(c[::-1])                     # tails[r] = A_{N - 1 - r}
    need = 2.0 * (float(delta) + composed.aliased + composed.slack)
    best = 0
    for distance in _START_DISTANCES:
        m = max(0, int(distance / composed.interval))
        factor = -math.expm1(-(m + 1) * composed.interval)
        # last j with A_{j + m} factor > need: A_j > need / factor holds for j <= j*
        above = int(np.searchsorted(tails, need / factor, side="right"))   # entries r < above
        j_star = c.size - 1 - above                 # A_{j*} > need / factor (if >= 0)
        best = max(best, j_star - m)
    return max(0, best - 1)


def epsilon_for_delta(composed: Composed, delta: float) -> float:
    """The smallest eps >= 0 with the conservative composed delta(eps) <= ``delta``
    (module docstring); +inf when none (the mass at +inf alone exceeds it). The curve is
    computed from the entry :func:`_curve_start` on when its first entry there exceeds
    ``delta`` (the crossing then lies above it, and the answer is the one of the whole
    curve on the upper side; on the lower side a valid lower bound, equal up to rounding),
    else on the whole grid."""
    start = _curve_start(composed, delta)
    A, G, curve = hockey_curve(composed, start)
    if start and not curve[0] > delta:
        start = 0
        A, G, curve = hockey_curve(composed)
    const = curve - (A - G)          # I + above + err (upper) or I - aliased - err (lower)
    # curve is non-increasing: first i with curve[i] <= delta
    rev = curve[::-1]
    count = int(np.searchsorted(rev, delta, side="right"))
    if count == 0:
        return math.inf
    i = curve.size - count           # entry i <-> eps = L_{start + i - 1}
    loss = (composed.lower_index + start + i - 1) * composed.interval
    if i == 0:
        # below L_{-1}: delta(eps) = const + A_{-1} - e^{eps - L_{-1}} G_{-1}, eps < L_{-1}
        eps = loss
        if G[0] > 0:
            arg = (const[0] + A[0] - delta) / G[0]
            eps = loss + math.log(arg) if arg > 0 else -math.inf
        eps = min(eps, loss)
    else:
        # on (L_{i-2}, L_{i-1}]: delta(eps) = const + A_{i-2} - e^{eps - L_{i-2}} G_{i-2}
        prev = loss - composed.interval
        arg = (const[i - 1] + A[i - 1] - delta) / G[i - 1] if G[i - 1] > 0 else math.inf
        eps = prev + math.log(arg) if 0 < arg < math.inf else loss
        eps = min(max(eps, prev), loss)
    if composed.side == "upper":
        eps = eps * (1 + 1e-12) + 1e-15 if eps >= 0 else eps
    else:
        eps = eps * (1 - 1e-12) - 1e-15 if eps >= 0 else eps
    return float(max(eps, 0.0))
