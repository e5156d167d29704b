"""Session 11 (issue 32) engine changes: the lower-side search certifies its upper end, the
upper-side start from below is probed, and the FFT's flushed spectrum entries are charged."""

from __future__ import annotations

import math

import numpy as np
from scipy import fft

from shufflesim.protocols.bounds.atoms import RatioAtoms
from shufflesim.protocols.bounds.engine import fft as engine_fft
from shufflesim.protocols.bounds.engine.common import Estimate
from shufflesim.protocols.bounds.engine import core as engine_core
from shufflesim.protocols.bounds.engine.core import epsilon_bound
from shufflesim.protocols.bounds.engine.eps_search import epsilon_of_delta


def _blurred(root: float, slope: float, blur: float, delta: float):
    """delta(eps) = delta e^{-slope (eps - root)}, known only within a relative ``blur``
    (upper = (1 + blur) x lower), as an engine's narrow bracket."""
    def fn(eps):
        low = delta * math.exp(-slope * (eps - root))
        return Estimate(low, low, low * (1 + blur), "test")
    return fn


def test_lower_search_certifies_its_upper_end():
    """With a guess at the crossing of the lower estimates, every point the search takes can
    have an upper estimate above delta (10-RR at n = 1e9 reported epsilon_error = inf): the
    last point certifies the other side, so the bracket is finite and holds the root."""
    root, slope, blur, delta = 2.9e-5, 1e5, 1.7e-8, 1e-6
    fn = _blurred(root, slope, blur, delta)
    res = epsilon_of_delta(fn, delta, "lower", eps_max=1.0, rtol=1e-7, guess=root * (1 + 1e-9),
                           guess_slope=1e6, xtol=1e-15, resolution_stop=0.5)
    assert math.isfinite(res.error)
    assert res.lower <= root <= res.upper
    assert fn(res.upper).upper <= delta < fn(res.lower).lower
    assert res.error <= 1e-6 * root
    assert res.upper_probed


def test_probed_upper_end_is_not_polished():
    """A lower-side result whose upper end only the last probe certified keeps its lower end:
    the polish (30x finer FFT estimates) is skipped there (oue d = 4, n = 1e6: 6 evaluations,
    10.9 -> 25.9 s). The stated error stays finite; the bracket still holds the root."""
    root, slope, blur, delta = 2.9e-3, 4e3, 6e-3, 1e-6
    fn = _blurred(root, slope, blur, delta)
    res = epsilon_of_delta(fn, delta, "lower", eps_max=1.0, rtol=1e-7, guess=root * (1 + 1e-4),
                           guess_slope=slope, xtol=1e-15, resolution_stop=0.5)
    assert res.upper_probed and math.isfinite(res.error)
    assert res.lower <= root <= res.upper
    atoms = _cyclic_atoms(1.0)[0]
    polished = engine_core._polish(res, atoms, 1000, delta, "lower", 1.0, 1e-7, 5e-3, "auto",
                                   None)
    assert polished is res


def _cyclic_atoms(eps0: float, k: int = 7) -> list[RatioAtoms]:
    dist = np.array([[min((x - y) % k, (y - x) % k) for y in range(k)] for x in range(k)])
    r = np.exp(-eps0 / 3 * dist)
    r /= r.sum(axis=1, keepdims=True)
    at = RatioAtoms(r[0] / r[2], r[1] / r[2], r[2])
    return [at, RatioAtoms(at.b, at.a, at.weight)]


def test_upper_start_from_below_is_probed():
    """A direction whose crossing lies below the start is settled by one probe: its bracket is
    [0, start] (valid: the caller keeps the maxima of the ends). One whose crossing lies above
    is searched as without a start (same certified value within the errors)."""
    n, delta = 2000, 1e-6
    strong = epsilon_bound(_cyclic_atoms(1.0)[:1], n, delta, "upper")
    weak = _cyclic_atoms(0.5)[:1]
    probed = epsilon_bound(weak, n, delta, "upper", bracket=(strong.value, math.inf))
    assert probed.upper == strong.value and probed.lower == 0.0
    assert epsilon_bound(weak, n, delta, "upper").value <= strong.value
    free = epsilon_bound(_cyclic_atoms(1.5)[:1], n, delta, "upper")
    started = epsilon_bound(_cyclic_atoms(1.5)[:1], n, delta, "upper",
                            bracket=(strong.value, math.inf))
    assert started.lower <= free.upper and free.lower <= started.upper
    assert started.value > strong.value


def test_flushed_spectrum_is_charged():
    """_flush_tiny zeroes the tiny entries (subnormal ones included) and returns a bound on the
    l2 change of the inverse FFT."""
    rng = np.random.default_rng(3)
    length = 4096
    spectrum = fft.rfft(rng.random(length)) * 1e-3
    tiny = rng.random(spectrum.size) < 0.3
    spectrum[tiny] = (rng.random(tiny.sum()) + 1j * rng.random(tiny.sum())) * 1e-310
    spectrum[5] = 1e-205 - 1e-205j
    before = fft.irfft(spectrum, length)
    flushed = spectrum.copy()
    bound = engine_fft._flush_tiny(flushed, length)
    assert np.all(flushed[tiny] == 0) and flushed[5] == 0
    assert np.array_equal(flushed[~tiny & (np.arange(spectrum.size) != 5)],
                          spectrum[~tiny & (np.arange(spectrum.size) != 5)])
    change = float(np.sqrt(np.sum((fft.irfft(flushed, length) - before) ** 2)))
    assert 0 < bound and change <= bound
