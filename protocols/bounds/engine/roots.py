"""A bracketed root finder for the eps search's starting guess (engine.core.gaussian_guess:
the crossing of delta for the normal approximation, 000 Sec. 6's search start), so that a bound
on the engine's exact paths never imports scipy.optimize (issue 32: that import cost a fresh
process ~0.2 s CPU on its first bound). Only a guess depends on it: every value the engine
returns is certified by its own evaluations."""

from __future__ import annotations

import math


def falling_root(fn, lo: float, hi: float, xtol: float = 1e-12,
                  rtol: float = 1e-10) -> float | None:
    """A root of a function positive at lo and negative at hi, by false position with the
    Illinois halving and a bisection every third step without halving the bracket (to the
    tolerances brentq was given here; without scipy.optimize, whose import cost a fresh
    process ~0.2 s CPU on the first bound: issue 32). None if it fails to converge."""
    f_lo, f_hi = fn(lo), fn(hi)
    side = 0
    for step in range(200):
        width = hi - lo
        if width <= xtol + rtol * abs(hi):
            return lo if abs(f_lo) < abs(f_hi) else hi
        x = hi - f_hi * width / (f_hi - f_lo) if step % 3 != 2 else lo + 0.5 * width
        if not lo < x < hi:
            x = lo + 0.5 * width
        fx = fn(x)
        if not math.isfinite(fx):
            return None
        if fx == 0:
            return x
        if fx > 0:
            lo, f_lo = x, fx
            if side == 1:
                f_hi *= 0.5
            side = 1
        else:
            hi, f_hi = x, fx
            if side == -1:
                f_lo *= 0.5
            side = -1
    return None
