"""methods.BLOCKS_WORTH (issue 32): the conditioning method keeps its single style when that
bracket is within 2.5 times the requested width, instead of block refinements that gain at
most that factor (10-RR, eps0 = 1, n = 5e4: four 8-block refinements were 0.23 of 0.26 s CPU)."""

from engine_probes import count_block_refinements

import shufflesim.protocols.bounds.engine.core as core
import shufflesim.protocols.bounds.engine.methods as methods
from shufflesim.protocols.bounds import catalogue
from shufflesim.protocols.randomizers import make_randomizer

#: 10-RR, eps0 = 1, n = 5e4, delta = 1e-6 by the exact band sum with its tables allowed up to
#: 8e6 cells (t32e, session 12): 0.00970041018 with a stated error of 6.6e-12
EXACT_BAND_5E4 = 0.00970041018



def test_no_block_refinement_and_the_upper_bound_stays_above_the_exact_value(monkeypatch):
    calls = count_block_refinements(monkeypatch)
    r = make_randomizer("krr", epsilon0=1.0, domain_size=10)
    upper = catalogue.evaluate("optimal-blanket", r, 50_000, 1e-6).result
    assert calls and max(calls) == 0          # the single style only (before: four 8-block)
    # sound: at or above the exact band's value (minus its stated error and rounding of the
    # printed digits), and its own bracket holds that value
    assert upper.epsilon >= EXACT_BAND_5E4 - 1e-11
    assert upper.epsilon - upper.epsilon_error <= EXACT_BAND_5E4 + 1e-11
    lower = catalogue.evaluate("exact-lower", r, 50_000, 1e-6).result
    assert lower.epsilon <= EXACT_BAND_5E4 + 1e-11 <= upper.epsilon + 2e-11


def test_a_wide_single_style_is_still_refined(monkeypatch):
    """Where the single style is wider than BLOCKS_WORTH times the request, the refinements
    still run (the rule does not switch them off; the polish is asked for even where it
    needs them: core.POLISH_COSTLY_ABOVE = 0)."""
    monkeypatch.setattr(methods, "BLOCKS_WORTH", 1.0)
    monkeypatch.setattr(core, "POLISH_COSTLY_ABOVE", 0.0)
    calls = count_block_refinements(monkeypatch)
    ffts = []
    original_fft = core.engine_fft.fft_bounds

    def counting_fft(*args, **kwargs):
        ffts.append(1)
        return original_fft(*args, **kwargs)

    monkeypatch.setattr(core.engine_fft, "fft_bounds", counting_fft)
    # oue d = 4, eps0 = 4, n = 1e5 (at n = 1e4 the exact mixture, engine/zero_mixture.py, now
    # applies; 10-RR at n = 5e4, the former case here, needs no refinement at all: its pool has
    # no remainder); after the exact-pool style the FFT takes the blocks' place where it is
    # expected to do better
    r = make_randomizer("oue", epsilon0=4.0, domain_size=4)
    catalogue.evaluate("optimal-blanket", r, 100_000, 1e-6)
    assert max(calls) > 0 or ffts
