"""An upper bound on a continuous scalar claim's shuffled eps at one neighbouring pair, valid for
*every* statistic of the raw reports (issue 29: the threshold of the learned attack and of
the profile test at delta*, where the binned claim's exact value - a lower bound - is not).

**The pair.** X0 = (x0, x1, ..., x1) against X1 = (x1, x1, ..., x1): user 1 changes its input,
the others hold x1. With f_x the claim's report density and a(y) = f_x0(y) / f_x1(y), the
shuffled output's hockey-stick divergence is exactly

    delta(eps) = (1/n) E[(G_1 + ... + G_n)_+],  G_i = a(Y_i) - e^eps,  Y_i ~ f_x1 i.i.d.

(Su, Cheng and Wang, "Decomposition-Based Optimal Bounds for Privacy Amplification via
Shuffling", Thm 14, with the reference R(x2) = R(x1), i.e. b = 1), and the same with the
roles of a and 1 exchanged for the direction X1 against X0.

**Rounding up.** E[(sum G_i)_+] increases with each G_i, so replacing a(y) by a larger value on
every cell of a partition of the line (its supremum over the cell) gives an upper bound for
X0 vs X1, and by a smaller value (its infimum) one for X1 vs X0 (the engine's
``Rounding.UP`` atoms; protocols.bounds.atoms). For a claim whose log ratio L(y) = log a(y) is
monotone in y (MONOTONE: location families with a log-concave density - Gaussian, Laplace -
have a monotone likelihood ratio) the supremum and infimum over a cell are at its ends. The
cells have a width of at most about ``step`` in L (a dense grid merged by L).

**The unbounded tail.** Where L grows without bound (the Gaussian), the supremum over the outer
cell is infinite: that cell's f_x0-mass tau (at most TAIL_SHARE x delta, cut at quantiles) is
removed from world 0 (a = 0 there) and added to delta: P0(S) <= P0'(S) + tau for the
sub-measure P0' without it, so delta_true(eps) <= delta'(eps) + tau and eps(delta) <=
eps'(delta - tau) (the engine's upper side, both directions, maximum).
"""

from __future__ import annotations

import math

import numpy as np

from shufflesim.protocols.bounds.atoms import RatioAtoms, Rounding
from shufflesim.protocols.bounds.engine.core import delta_of_epsilon
from shufflesim.protocols.bounds.numerical.optimal import epsilon_from_atoms
from shufflesim.protocols.bounds.result import BoundKind
from shufflesim.protocols.errors import require

#: Claims whose log likelihood ratio between two inputs is monotone in the report.
MONOTONE = ("gaussian", "laplace", "laplace_binary")
#: Default largest width of a cell in log ratio.
STEP = 0.02
#: The dropped tail's mass, as a share of delta.
TAIL_SHARE = 1e-4
#: Slack on the log ratio at a cell's end (floating-point error of log_prob).
SLACK = 1e-9
#: Points of the dense grid merged into cells.
GRID = 40_001


def applies(declared) -> bool:
    """A continuous scalar claim with a monotone likelihood ratio, log_prob and cdf."""
    return (declared is not None and getattr(declared, "name", "") in MONOTONE
            and tuple(getattr(declared, "output_shape", (0,))) == ()
            and hasattr(declared, "log_prob") and hasattr(declared, "cdf"))


def _quantile(declared, x: float, q: float, lo: float, hi: float) -> float:
    """A point t with cdf(x, t) <= q (lower side of a bisection; lo must satisfy it)."""
    def cdf(t):
        return float(np.asarray(declared.cdf(np.asarray([x]), np.asarray([t]))).reshape(-1)[0])

    while cdf(lo) > q:
        lo = lo - 2.0 * (hi - lo)
    while cdf(hi) <= q:
        hi = hi + 2.0 * (hi - lo)
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if cdf(mid) > q:
            hi = mid
        else:
            lo = mid
    return lo


def pair_atoms(declared, x0: float, x1: float, delta: float,
               step: float = STEP) -> tuple[RatioAtoms, RatioAtoms, float]:
    """(atoms of X0 vs X1, atoms of X1 vs X0, tau) (module docstring)."""
    require(applies(declared), "claim", getattr(declared, "name", declared),
            f"the pair's upper bound needs a scalar claim with a monotone ratio ({MONOTONE})")
    require(x0 != x1, "x1", x1, "must differ from x0")
    require(step > 0 and math.isfinite(step), "step", step, "must be a positive number")
    tail = TAIL_SHARE * delta
    span = max(abs(x0), abs(x1), 1.0)
    y_lo = min(_quantile(declared, x, tail, -span, span) for x in (x0, x1))
    y_hi = -min(-_quantile(declared, x, 1.0 - tail, -span, span) for x in (x0, x1))
    y_hi = max(y_hi, y_lo + 1e-12)
    y_hi = _upper_quantile(declared, (x0, x1), 1.0 - tail, y_hi)
    grid = np.linspace(y_lo, y_hi, GRID)
    lr = (np.asarray(declared.log_prob(x0, grid), dtype=float)
          - np.asarray(declared.log_prob(x1, grid), dtype=float))
    require(bool(np.isfinite(lr).all()), "claim", declared.name, "log ratio not finite")
    if lr[0] < lr[-1]:  # make L nonincreasing along the grid by reading it backwards
        grid, lr = grid[::-1], lr[::-1]
    require(bool((np.diff(lr) <= 1e-9 * (1 + np.abs(lr[1:]))).all()), "claim",
            declared.name, "log ratio is not monotone in the report")
    # cells: runs of equal floor((L_max - L) / step), each from its first grid point to the
    # next cell's first point (the last cell ends at the grid's end)
    key = np.floor(np.round(np.maximum(lr[0] - lr, 0.0), 9) / step).astype(np.int64)
    starts = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
    ends = np.r_[starts[1:], grid.size - 1]
    cdf1 = np.asarray(declared.cdf(np.full(grid.size, float(x1)), grid), dtype=float)
    cdf0 = np.asarray(declared.cdf(np.full(grid.size, float(x0)), grid), dtype=float)
    forward = grid[-1] > grid[0]  # grid increasing in y
    mass1 = np.abs(cdf1[ends] - cdf1[starts])
    l_top, l_bottom = lr[starts], lr[ends]  # sup and inf of L on each cell
    # the tails: beyond grid[0] L >= lr[0] (unbounded above), beyond grid[-1] L <= lr[-1]
    tail1_high_l = cdf1[0] if forward else 1.0 - cdf1[0]  # f_x1 mass where L >= lr[0]
    tail1_low_l = 1.0 - cdf1[-1] if forward else cdf1[-1]  # where L <= lr[-1]
    tau = float(cdf0[0] if forward else 1.0 - cdf0[0])  # f_x0 mass where L >= lr[0]
    w = np.r_[mass1, tail1_high_l, tail1_low_l]
    # a slack of SLACK in L covers the floating-point error of log_prob
    a_up = np.r_[np.exp(l_top + SLACK), 0.0, math.exp(lr[-1] + SLACK)]  # dropped tail: a = 0
    a_dn = np.r_[np.exp(l_bottom - SLACK), math.exp(lr[0] - SLACK), 0.0]
    w = np.clip(w, 0.0, None)
    w = w / max(1.0, float(w.sum()))
    ones = np.ones_like(w)
    return (RatioAtoms(a_up, ones, w, Rounding.UP), RatioAtoms(ones, a_dn, w, Rounding.UP),
            max(tau, 0.0))


def _upper_quantile(declared, xs, q: float, start: float) -> float:
    """A point t with cdf(x, t) >= q for every x in xs."""
    t = start
    step = 1.0
    while min(float(np.asarray(declared.cdf(np.asarray([x]), np.asarray([t]))).reshape(-1)[0])
              for x in xs) < q:
        t += step
        step *= 2.0
    return t


def continuous_pair_epsilon(declared, x0: float, x1: float, n: int, delta: float,
                            step: float = STEP) -> float:
    """An upper bound on eps(delta) of the claimed mechanism's shuffled output at the pair
    (x0 vs x1, the others at x1), both directions (module docstring); inf when delta does not
    exceed the dropped tail."""
    fwd, back, tau = pair_atoms(declared, float(x0), float(x1), float(delta), step)
    if not delta - tau > 0:
        return math.inf
    out = [float(epsilon_from_atoms([atoms], int(n), float(delta - tau), kind=BoundKind.UPPER,
                                    method="continuous-pair").epsilon) for atoms in (fwd, back)]
    return max(out)


def pair_delta(atoms: RatioAtoms, tau: float, n: int, epsilon: float, *,
               rtol: float = 1e-3) -> float:
    """An upper bound on delta(eps) of one direction of the pair: the engine's upper side for
    ``atoms`` (one of :func:`pair_atoms`' two sets) plus ``tau`` (that of X0 vs X1; 0 for
    X1 vs X0, whose atoms drop nothing)."""
    est = delta_of_epsilon([(atoms, int(n))], int(n), float(epsilon), "upper", rtol=rtol)
    return min(1.0, float(est.upper) + float(tau))
