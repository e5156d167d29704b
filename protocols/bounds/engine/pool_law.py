"""The conditioning method's kink terms with the exact law of the main pool count (issue 32:
optimal-blanket of the two-level randomizers at eps0 = 4, n = 5e3-1.4e5, in interactive time).

Setting (engine/conditioning.py, step 2; 000 Thm 12-14). For one row (t, m = n - t) the pool
sum's deviation is Y_m = Z_m + R~ with Z_m = alpha (X - m q), X ~ Bin(m, q), and R~ centred
given X (m - X i.i.d. centred terms of variance v_R, |term| <= M_R). The kink sum needs
E(s Y_m - a)_+ for s = +-1 and distances a >= 0; the single style bounds each by
min(phi(Var, a), Chernoff) on the whole of Y (phi is 1.25x the Gaussian value at a = 0), which
left a bracket of 2-5e-2 (hr d = 16, eps0 = 4) and up to 0.98 (oue d = 4, n = 1e4, where the
pool's variance is 1/3 of V's) and sent the coarse eps search to block refinements.

Here, per side s, with W = s Z on its lattice w_0 < w_1 < ... (spacing h = |alpha|, masses p_i
over a window of X that leaves at most TAIL outside):

* lower: E(s Y - a)_+ >= E(W - a)_+ =: L(a) (Jensen over R~ given X). L is convex and linear
  between lattice points; on [w_j, w_{j+1}] L(a) = L(w_{j+1}) + (w_{j+1} - a) S_j with
  S_j = sum_{i > j} p_i and L(w_j) = L(w_{j+1}) + h S_j (sums of positive terms, from the far
  end); the line of any cell is a tangent of L, so a cell misplaced by rounding still gives a
  lower bound.
* upper: given X, E(c + R~)_+ = c_+ + E(-+R~ - |c|)_+ <= c_+ + r(|c|), r(s) = min(phi(N v_R, s),
  Bennett's Chernoff bound) with N >= m - X (both grow with N). For a in [w_j, w_{j+1}) the
  distances |w_i - a| are at least (j - i) h (i <= j) and (i - j - 1) h (i > j), so
  E r(|W - a|) <= T_j = sum_{l >= 0} (p_{j-l} + p_{j+1+l}) r(l h) (two discrete convolutions;
  the terms past l = LAGS are at most r((LAGS + 1) h) each side). The cells next to j are
  included (max over j - 1, j, j + 1: rounding of the cell index), and the line of cell j is
  exact on it and at most DELTA past it (slope changes by at most one).
* rows: Y_m grows in the convex order with m (a sum of i.i.d. centred terms), so the lower side
  uses the table of the rows' smallest m and the upper side that of the largest.
* outside the window: E[|W|; out] + r(0) P[out] <= |alpha| sd(X) sqrt(P[out]) + r(0) P[out]
  (Cauchy-Schwarz) is added to the upper side.

The masses are Boost's binomial pmfs (relative error REL_SPECIAL), taken on the side that
keeps each bound; the sums' rounding is covered by a relative margin of 1e-10.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from shufflesim.protocols.bounds.engine.common import (
    REL_SPECIAL,
    U,
    chernoff_lambda,
    excess_bound,
)
from shufflesim.protocols.bounds.engine.pool_window import (  # noqa: F401  (re-exported)
    MAX_WINDOW,
    TAIL,
    _bernstein,
    _window,
    applies,
)
from shufflesim.protocols.distributions import binom

#: lattice lags of the remainder's kernel r(l h), enough for LAG_SD sd of the remainder (cells
#: are grouped beyond LAGS); the rest is bounded by r((lags + 1) h)
LAGS = 256
LAG_SD = 12.0
#: sub-cells of a lattice cell for the remainder's spread where the kernel has at most SUB_LAGS
#: lags (a remainder not much wider than the lattice step: blh d = 4, eps0 = 4, n = 1e4)
SUB = 4
SUB_LAGS = 64
MARGIN = 1e-10


@dataclass(frozen=True)
class SideTable:
    """E(W - a)_+ for W = s alpha (X - m q) on the lattice w0 + i h, i = 0 .. K - 1; the
    remainder's spread per group of ``group`` lattice cells."""

    w0: float
    h: float
    lat: np.ndarray       # L(w_i), i = 0 .. K - 1
    above: np.ndarray     # S_j = P[W > w_j] for j = -1 .. K - 1 (index j + 1)
    spread: np.ndarray | None = None   # T per group J = -1 .. (index J + 1; upper only)
    group: int = 1
    extra: float = 0.0    # additive: outside the window (upper only)
    remainder: object = None    # s -> r(s) (upper only)
    sub: int = 1          # sub-cells per cell of ``spread`` (group = 1)

    def _cell(self, a):
        j = np.floor((a - self.w0) / self.h)
        return np.clip(j, -1, self.lat.size - 1).astype(np.int64)

    def _line(self, a, j):
        """The line of cell j at a: L(w_{j+1}) + (w_{j+1} - a) S_j (0 in the last cell)."""
        k = self.lat.size
        nxt = np.minimum(j + 1, k - 1)
        val = self.lat[nxt] + (self.w0 + nxt * self.h - a) * self.above[j + 1]
        return np.where(j >= k - 1, 0.0, val)

    def _rounding(self, a):
        return 8 * U * (np.abs(a) + abs(self.w0) + self.h * self.lat.size)

    def lower(self, a):
        """A lower bound of E(s Y - a)_+ (a >= 0, any shape)."""
        line = self._line(a, self._cell(a)) - self._rounding(a)
        return np.maximum(line, 0.0) * (1 - MARGIN)

    def upper(self, a):
        """An upper bound of E(s Y - a)_+ (a >= 0, any shape)."""
        j = self._cell(a)
        if self.sub > 1:
            theta = (a - self.w0) / self.h - j
            g = np.clip(np.floor(theta * self.sub), 0, self.sub - 1).astype(np.int64)
            spread = self.spread[(j + 1) * self.sub + np.where(j < 0, self.sub - 1, g)]
        else:
            spread = self.spread[np.floor_divide(j, self.group) + 1]
        past = a > self.w0 + self.lat.size * self.h
        if np.any(past):
            # past the window's last point w_{K-1}: every distance is >= a - w_{K-1}
            spread = np.array(spread, dtype=float, copy=True)
            gap = a[past] - (self.w0 + (self.lat.size - 1) * self.h) - self._rounding(a[past])
            spread[past] = np.minimum(spread[past], self.remainder(np.maximum(gap, 0.0)))
        val = np.maximum(self._line(a, j), 0.0) + self._rounding(a) + spread + self.extra
        return val * (1 + MARGIN)


@dataclass(frozen=True)
class PoolLaw:
    """Lower and upper tables of both sides (s = +1: kinks above the mean) per chunk of rows:
    chunk c serves the rows with m <= m_hi[c] (and above the previous chunk's)."""

    m_hi: np.ndarray
    tables: tuple          # per chunk: (lower_up, lower_down, upper_up, upper_down)

    def rows(self, m):
        """The tables bound to rows with pool sizes ``m`` (a column, one entry per row, in the
        order of the T plan: m descending)."""
        chunk = np.searchsorted(self.m_hi, np.ravel(m))
        cuts = np.flatnonzero(np.diff(chunk)) + 1
        starts = np.concatenate(([0], cuts))
        ends = np.concatenate((cuts, [chunk.size]))
        return _RowLaw(self, tuple((int(chunk[i]), int(i), int(j))
                                   for i, j in zip(starts, ends, strict=True)))


@dataclass(frozen=True)
class _RowLaw:
    law: PoolLaw
    runs: tuple            # (chunk, first row, last row + 1) of consecutive rows

    def _apply(self, a, up, which):
        """Queries ``a`` of shape (..., rows, shifts); a = inf gives 0."""
        out = np.full(a.shape, 0.0 if which == 0 else np.inf)     # rows of no chunk
        for chunk, r0, r1 in self.runs:
            if chunk >= len(self.law.tables):
                continue
            tables = self.law.tables[chunk]
            f_up, f_dn = ((tables[0].lower, tables[1].lower) if which == 0
                          else (tables[2].upper, tables[3].upper))
            part = a[..., r0:r1, :]
            finite = np.isfinite(part)
            safe = np.where(finite, part, 0.0)
            val = np.where(up[..., r0:r1, :], f_up(safe), f_dn(safe))
            out[..., r0:r1, :] = np.where(finite, val, 0.0)
        return out

    def lower(self, a, up):
        """Lower bounds of E(+-Y - a)_+ (+ where ``up``; a = inf gives 0)."""
        return self._apply(a, up, 0)

    def upper(self, a, up):
        """Upper bounds of E(+-Y - a)_+ (+ where ``up``)."""
        return self._apply(a, up, 2)


def _remainder(n_r: float, v_r: float, m_r: float, s):
    """r(s) >= E(+-R~ - s)_+ for a sum R~ of at most n_r centred terms of variance v_r,
    |term| <= m_r (phi and Bennett's Chernoff bound; engine/conditioning.py's pieces)."""
    var = n_r * v_r
    if not var > 0:
        return np.zeros_like(s)
    lam = chernoff_lambda(var, s)
    with np.errstate(over="ignore", invalid="ignore"):
        y = lam * m_r
        psi = var * (np.expm1(y) - y) / (m_r * m_r) if m_r > 0 else var * lam * lam / 2
        log_b = psi - lam * s - np.log(lam * np.e)
        chern = np.exp(np.minimum(np.nan_to_num(log_b, nan=np.inf), 700.0))
    return np.minimum(excess_bound(var, s), chern) * (1 + 64 * U)


@functools.lru_cache(maxsize=64)
def _lattice(m: int, q: float, rel: float, ascending: bool):
    """Per order of x (W's order: x ascending when s alpha > 0): the masses (times ``rel``),
    S_j (j = -1 .. K - 1) and L(w_j) / h, from the far end; the window's first x and the
    outside bound of :func:`_window`. eps-independent: cached per (m, q)."""
    lo, hi, out = _window(m, q)
    p = binom.pmf(np.arange(lo, hi + 1, dtype=float), m, q) * rel
    if not ascending:
        p = p[::-1]
    above = np.concatenate((np.cumsum(p[::-1])[::-1], [0.0]))     # S_j, j = -1 .. K - 1
    # L(w_j) = L(w_{j+1}) + h S_j, L(w_{K-1}) = 0
    lat = np.concatenate((np.cumsum(above[-2:0:-1])[::-1], [0.0]))
    return p, above, lat, lo, hi, out


def _kernels(h: float, sd_r: float, remainder):
    """The remainder's kernels r((l + s / sub) h), s = 0 .. sub - 1, or r(l g h) for groups of
    g cells where they would be longer than LAGS; with r((lags + 1) step), the bound of the
    terms beyond. eps-dependent; shared by the chunks and both sides."""
    lags = min(LAGS, math.ceil(LAG_SD * sd_r / h) + 1)
    group = 1
    if lags == LAGS:
        group = max(1, math.ceil(LAG_SD * sd_r / (h * LAGS)))
    step = group * h
    sub = SUB if group == 1 and lags <= SUB_LAGS else 1
    base = np.arange(lags + 1, dtype=float)
    kernels = [remainder((base + s / sub) * step) for s in range(sub)]
    rest = float(remainder(np.array([(lags + 1) * step]))[0])
    return kernels, rest, group, sub


def _spread(p, kernels, rest: float, group: int, sub: int):
    """T per group of cells (index J + 1, J = -1 ..; per sub-cell: index (j + 1) sub + g) for
    the masses p on the lattice. Groups of g cells (H = g h): a point of group I and a of
    group J are at least (|I - J| - 1)_+ H apart. Single cells: (j - i + theta) h for i <= j
    and (i - j - theta) h for i > j, theta in [g, g + 1) / sub the position of a in its cell
    (the module docstring, with theta = 0 and 1)."""
    lags = kernels[0].size - 1
    if group == 1:
        k = p.size
        causal, anti = [], []
        for kern in kernels:
            causal.append(np.concatenate(([0.0], np.convolve(p, kern)[:k])))
            anti.append(np.concatenate((np.convolve(p[::-1], kern)[:k][::-1], [0.0])))
        cell = np.stack([causal[g] + anti[sub - 1 - g] for g in range(sub)], axis=1).ravel()
    else:
        kernel = kernels[0]
        pad = (-p.size) % group
        grouped = np.concatenate((p, np.zeros(pad))).reshape(-1, group).sum(axis=1)
        sym = np.concatenate((kernel[::-1], [kernel[0]], kernel))   # r((|d| - 1)_+ H)
        full = np.convolve(grouped, sym)
        cell = full[lags:lags + grouped.size + 1]           # J = -1 .. K_g - 1
    cell = cell * (1 + MARGIN) + 2.01 * rest
    spread = cell.copy()
    spread[1:] = np.maximum(spread[1:], cell[:-1])       # the neighbours: the cell index's
    spread[:-1] = np.maximum(spread[:-1], cell[1:])      # rounding
    return spread


def _sides(m: int, q: float, alpha: float, rel: float, remainder=None, kernels=None):
    h = abs(alpha)
    sides = []
    for sign in (1.0, -1.0):
        ascending = sign * alpha > 0
        p, above, lat, lo, hi, out = _lattice(m, q, rel, ascending)
        x0 = lo if ascending else hi
        w0 = sign * alpha * (x0 - m * q)
        if remainder is None:
            sides.append(SideTable(w0, h, lat * h, above))
            continue
        kerns, rest, group, sub = kernels
        spread = _spread(p, kerns, rest, group, sub)
        r0 = float(kerns[0][0])
        extra = (h * out + r0 * TAIL) * (1 + MARGIN)
        sides.append(SideTable(w0, h, lat * h, above, spread, group, extra, remainder, sub))
    return sides


def pool_law(m_rows, q: float, alpha: float, v_r: float, bound_r: float,
             chunks: int = 1) -> PoolLaw | None:
    """The tables for rows with the pool sizes ``m_rows`` (sorted, ascending) in up to
    ``chunks`` chunks of consecutive rows (each with its own smallest and largest m: the
    convex order's loss shrinks with the chunk's range), or None where they do not apply. The
    remainder's bound uses the largest m of all rows (it grows with the count)."""
    m_rows = np.asarray(m_rows)
    if not (m_rows.size and m_rows[0] >= 1 and applies(int(m_rows[-1]), q, alpha)):
        return None
    m_top = int(m_rows[-1])

    def remainder(s):
        return _remainder(m_top, v_r, bound_r, s)

    kernels = _kernels(abs(alpha), math.sqrt(max(m_top * v_r, 0.0)), remainder)
    his, tables = [], []
    for part in np.array_split(m_rows, min(chunks, m_rows.size)):
        lower = _sides(int(part[0]), q, alpha, 1 - REL_SPECIAL)
        upper = _sides(int(part[-1]), q, alpha, 1 + REL_SPECIAL, remainder, kernels)
        his.append(int(part[-1]))
        tables.append((*lower, *upper))
    return PoolLaw(np.array(his), tuple(tables))
