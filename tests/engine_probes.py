"""Probes of the engine shared by tests: how often the conditioning method refines into
blocks (tests/test_blocks_worth.py, tests/test_polish_costly.py), and the check that an exact
sum's bracket meets the enumeration's (tests/test_exact_band.py, tests/test_zero_mixture.py)."""

from collections.abc import Callable, Iterable

import numpy as np

import shufflesim.protocols.bounds.engine.methods as methods
from shufflesim.protocols.bounds.engine.conditioning import conditioning_bounds
from shufflesim.protocols.bounds.engine.enumerate import enumeration_bounds


def count_block_refinements(monkeypatch) -> list[int]:
    """The n_blocks of every conditioning evaluation, appended as they happen."""
    calls = []
    original = methods.conditioning_bounds

    def counting(cat, values, probs, value_err, n_blocks):
        calls.append(n_blocks)
        return original(cat, values, probs, value_err, n_blocks)

    monkeypatch.setattr(methods, "conditioning_bounds", counting)
    return calls


def intersect(lo, hi, ref_lo, ref_hi, label) -> None:
    """Two guaranteed brackets of one value overlap (up to rounding far below their errors)."""
    assert lo <= ref_hi * (1 + 1e-12) + 1e-300, label
    assert ref_lo <= hi * (1 + 1e-12) + 1e-300, label


def check_against_enumeration(cases: Iterable, bounds: Callable) -> int:
    """``bounds(cat)`` against the exhaustive enumeration for every (label, cat) of ``cases``:
    the brackets overlap, and ``bounds`` is tight (relative 1e-6, or below the absolute floor
    of the value arithmetic). Returns the number of cases checked."""
    checked = 0
    for label, cat in cases:
        lo, hi = bounds(cat)
        ref_lo, ref_hi = enumeration_bounds([cat])
        intersect(lo, hi, ref_lo, ref_hi, label)
        scale = float(np.abs(cat.c).max()) * cat.count
        assert hi - lo <= 1e-6 * hi + 1e-13 * scale, (label, lo, hi)
        checked += 1
    return checked


def check_against_conditioning(cases: Iterable, bounds: Callable, n_blocks: int) -> int:
    """``bounds(cat)`` against the conditioning method with ``n_blocks`` blocks for every
    (label, cat) of ``cases``: the brackets overlap, and ``bounds`` is at least 1000x narrower
    (or within 1e-7 relative). Returns the number of cases checked."""
    checked = 0
    for label, cat in cases:
        lo, hi = bounds(cat)
        ref_lo, ref_hi = conditioning_bounds(cat, np.zeros(1), np.ones(1), np.zeros(1), n_blocks)
        intersect(lo, hi, ref_lo, ref_hi, label)
        assert hi - lo <= max(1e-3 * (ref_hi - ref_lo), 1e-7 * hi) + 1e-13 * cat.count, label
        checked += 1
    return checked
