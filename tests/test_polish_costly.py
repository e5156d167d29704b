"""Speed rules of the engine (issue 32). core.POLISH_COSTLY_ABOVE: on the upper side, a coarse
eps bracket narrower than that (relative) is not polished where the polish's finer estimates
would need the conditioning method's block refinements (1-5 s CPU against ~0.03 s); the result
then states the coarse bracket as its error, which holds the polished value. Also
methods.SINGLE_EXACT and methods.exact_sum."""

import numpy as np
import pytest
from engine_probes import count_block_refinements

import shufflesim.protocols.bounds.engine.core as core
import shufflesim.protocols.bounds.engine.methods as methods
from shufflesim.protocols.bounds import catalogue
from shufflesim.protocols.bounds.engine.common import categories
from shufflesim.protocols.bounds.engine.conditioning import conditioning_bounds
from shufflesim.protocols.bounds.numerical.decompositions import blanket_atoms
from shufflesim.protocols.randomizers import make_randomizer

#: 3-RR, eps0 = 1, n = 3e4, delta = 1e-6, optimal-blanket with the polish (fbce347): value and
#: stated error; the true crossing lies in [value - error, value]
POLISHED = 0.020996993577863266
POLISHED_ERROR = 2.99e-8



def test_no_costly_polish_and_the_bracket_holds_the_polished_value(monkeypatch):
    calls = count_block_refinements(monkeypatch)
    r = make_randomizer("krr", epsilon0=1.0, domain_size=3)
    result = catalogue.evaluate("optimal-blanket", r, 30_000, 1e-6).result
    assert calls and max(calls) == 0                 # before: 8- and 32-block refinements
    value, error = result.epsilon, result.epsilon_error
    assert value >= POLISHED - POLISHED_ERROR        # still above the true crossing's bracket
    assert value - error <= POLISHED                 # the stated error covers the loosening
    assert value <= POLISHED * (1 + core.POLISH_COSTLY_ABOVE)
    assert error <= core.POLISH_COSTLY_ABOVE * value


def test_the_polish_runs_where_asked_for(monkeypatch):
    """With an explicit rtol, or POLISH_COSTLY_ABOVE = 0, the polish goes on to the block
    refinements or the FFT as before (stopped at the first one here: each costs ~0.1-0.5 s)."""

    class Refined(Exception):
        pass

    original = methods.conditioning_bounds

    def stop_at_blocks(cat, values, probs, value_err, n_blocks):
        if n_blocks > 0:
            raise Refined
        return original(cat, values, probs, value_err, n_blocks)

    def stop_at_fft(*args, **kwargs):
        raise Refined

    monkeypatch.setattr(methods, "conditioning_bounds", stop_at_blocks)
    # (where the FFT is expected to do better, it replaces the blocks: methods._conditioning)
    monkeypatch.setattr(core.engine_fft, "fft_bounds", stop_at_fft)
    # oue d = 4, eps0 = 4, n = 1e5: the exact-pool single style (engine/pool_law.py) is
    # within BLOCKS_WORTH of the coarse request but not of the polish's (at n = 1e4 the exact
    # mixture, engine/zero_mixture.py, now sums it without blocks)
    atoms = blanket_atoms(make_randomizer("oue", epsilon0=4.0, domain_size=4), 0, 1)
    core.epsilon_bound([atoms, atoms.swapped()], 100_000, 1e-6)       # no refinement
    with pytest.raises(Refined):
        core.epsilon_bound([atoms, atoms.swapped()], 100_000, 1e-6, rtol=1e-7)
    monkeypatch.setattr(core, "POLISH_COSTLY_ABOVE", 0.0)
    with pytest.raises(Refined):
        core.epsilon_bound([atoms, atoms.swapped()], 100_000, 1e-6)


def test_krr_needs_no_refinement_even_when_asked(monkeypatch):
    """3-RR, eps0 = 1, n = 3e4 (the former case of the test above): with the exact law of the
    main pool count the single style is narrow there (a pool of two categories, no remainder),
    so even rtol = 1e-7 runs no block refinement, and the bracket holds the polished value of
    fbce347."""
    calls = count_block_refinements(monkeypatch)
    atoms = blanket_atoms(make_randomizer("krr", epsilon0=1.0, domain_size=3), 0, 1)
    result = core.epsilon_bound([atoms, atoms.swapped()], 30_000, 1e-6, rtol=1e-7)
    assert calls and max(calls) == 0
    assert result.value >= POLISHED - POLISHED_ERROR
    assert result.value - result.error <= POLISHED
    assert result.error <= 1e-5 * result.value       # 3.9e-6 (the polish's estimates)


def test_one_category_pool_keeps_the_single_style_without_tables(monkeypatch):
    """methods.SINGLE_EXACT (issue 32): 2-RR's blanket (the pool is one category, no pool
    variable) at n = 71969 keeps the single style's ~1e-7 bracket instead of building the
    band's tables (0.1-0.2 s); the value stays within 1e-8 (relative) of the band's."""
    from shufflesim.protocols.bounds.engine import exact_band
    built = []
    original = exact_band.band_plan
    monkeypatch.setattr(exact_band, "band_plan", lambda *a: built.append(a) or original(*a))
    r = make_randomizer("krr", epsilon0=0.1, domain_size=2)
    fast = catalogue.evaluate("optimal-blanket", r, 71969, 1e-8).result
    assert not built
    monkeypatch.setattr(methods, "SINGLE_EXACT", 0.0)
    band = catalogue.evaluate("optimal-blanket", r, 71969, 1e-8).result
    assert built
    assert band.epsilon <= fast.epsilon <= band.epsilon * (1 + 1e-8)
    assert fast.epsilon - fast.epsilon_error <= band.epsilon


def test_no_fft_after_the_exact_band_sum(monkeypatch):
    """methods.exact_sum (issue 32): near eps0 the band sum's bracket is wide from rounding
    alone (50-RR, eps0 = 8, n = 720: 4.3e-4 at eps = 8 - 1.3e-7 since exact_band's slope
    counts only the values within 3 ve of 0; 4 % before); the FFT gave the same bracket in
    ~1 s. The automatic method keeps the band's bracket, which is the forced conditioning
    method's, also where that bracket is wider than asked for and undecided."""
    from shufflesim.protocols.bounds.engine.core import hockey_stick
    atoms = blanket_atoms(make_randomizer("krr", epsilon0=8.0, domain_size=50), 0, 1)
    eps, threshold, rtol = 7.999999874, 7.238e-10, 1e-5
    auto = hockey_stick([(atoms, 720)], eps, rtol=rtol, threshold=threshold)
    forced = hockey_stick([(atoms, 720)], eps, rtol=rtol, threshold=threshold,
                          method="conditioning")
    assert auto.method == "conditioning"
    assert (auto.lower, auto.upper) == (forced.lower, forced.upper)
    assert auto.lower <= threshold < auto.upper        # undecided
    assert auto.upper - auto.lower > 10 * rtol * auto.upper
    monkeypatch.setattr(core, "exact_sum", lambda cats: False)    # the former rule: the FFT
    assert hockey_stick([(atoms, 720)], eps, rtol=rtol, threshold=threshold).method \
        == "conditioning+fft"


def test_olh_keeps_its_coarse_bracket_which_holds_the_polished_value(monkeypatch):
    """olh d = 4, eps0 = 1, n = 1e4, delta = 1e-6: the polish took 1.3 s of block refinements
    for its last 1.3e-4 (fbce347: 0.02933616138, stated error 6.2e-7)."""
    calls = count_block_refinements(monkeypatch)
    r = make_randomizer("olh", epsilon0=1.0, domain_size=4)
    result = catalogue.evaluate("optimal-blanket", r, 10_000, 1e-6).result
    assert max(calls) == 0
    polished, polished_error = 0.02933616138, 6.2e-7
    assert result.epsilon >= polished - polished_error
    assert result.epsilon - result.epsilon_error <= polished + 1e-11
    assert result.epsilon_error <= core.POLISH_COSTLY_ABOVE * result.epsilon


@pytest.mark.parametrize("name, kwargs, eps0, n, polished, polished_error", [
    # 3413ab2 (POLISH_COSTLY_ABOVE = 1e-3): coarse brackets 1.26e-3 and 1.0e-3 wide, then
    # 8-128 blocks and the FFT, 5.1 s and 2.8 s CPU
    ("hr", {"domain_size": 16}, 1.0, 10_000, 0.02974029590586096, 6.58e-7),
    ("rappor", {"domain_size": 16}, 4.0, 100_000, 0.10412476563541753, 1.66e-6),
])
def test_two_level_coarse_brackets_just_above_1e3_are_kept(monkeypatch, name, kwargs, eps0, n,
                                                             polished, polished_error):
    """Session 14: the two-level randomizers' coarse brackets at n = 5e3-1e6 are 1.0-1.3e-3
    wide (the single style's ~1e-2 in delta); POLISH_COSTLY_ABOVE = 2e-3 keeps them. No block
    refinement runs, and the stated error covers the polished value."""
    calls = count_block_refinements(monkeypatch)
    r = make_randomizer(name, epsilon0=eps0, **kwargs)
    result = catalogue.evaluate("optimal-blanket", r, n, 1e-6).result
    assert calls and max(calls) == 0                 # before: 8- to 128-block refinements
    assert result.epsilon >= polished - polished_error
    assert result.epsilon - result.epsilon_error <= polished
    assert result.epsilon_error <= core.POLISH_COSTLY_ABOVE * result.epsilon
    assert result.epsilon_error > 1e-3 * result.epsilon   # the range that 1e-3 polished


def test_a_block_refined_end_counts_as_costly():
    """methods.needs_blocks (session 14): an end whose width lies in (rtol, 2.5 rtol] may come
    from a block refinement (or the exact-pool style), after which only rtol stops the
    refinements; the plain single style decides. blh d = 4, eps0 = 4, n = 19307 (at n = 1e4
    the exact mixture, engine/zero_mixture.py, now applies): the exact-pool single style is
    ~5e-3 wide; a width it reaches still counts as costly (its evaluations cost ~2x, in up to
    8 chunks of rows)."""
    atoms = blanket_atoms(make_randomizer("blh", epsilon0=4.0, domain_size=4), 0, 1)
    cat = categories(atoms, 19_307, 0.1978)
    assert methods._select([cat]) == "conditioning" and not methods.exact_sum([cat])
    assert methods.needs_blocks(cat, 2e-4, 1e-4)
    lo, hi = methods.exact_pool_bounds(cat, np.zeros(1), np.ones(1), np.zeros(1))
    width = (hi - lo) / hi
    assert width < 5e-2
    assert methods.needs_blocks(cat, width, width / 2.0)


def test_olh_at_eps0_4_needs_no_block_refinement(monkeypatch):
    """olh d = 4, eps0 = 4, n = 138950, delta = 1e-6 (session 14's case of the test above):
    the coarse search's estimates were 8-block refinements (the single style 0.36 wide), and
    the polish had gone on to 32 and 128 blocks (1.2 s). With the exact law of the main pool
    count no block refinement runs, and the bracket overlaps the polished one (3413ab2:
    0.06810854209032088, stated error 1.69e-6)."""
    calls = count_block_refinements(monkeypatch)
    r = make_randomizer("olh", epsilon0=4.0, domain_size=4)
    result = catalogue.evaluate("optimal-blanket", r, 138_950, 1e-6).result
    assert calls and max(calls) == 0
    polished, polished_error = 0.06810854209032088, 1.69e-6
    assert result.epsilon >= polished - polished_error
    assert result.epsilon - result.epsilon_error <= polished
    assert result.epsilon_error <= 2e-4 * result.epsilon      # 1.0e-4 (7e-5 polished)


def test_an_end_narrow_from_the_single_style_is_still_polished():
    """needs_blocks' single-style check: a width in (rtol, 2.5 rtol] that the single style
    itself gives means no block refinement (10-RR, eps0 = 1, n = 6e4: the polish's estimates
    ask 1.7e-4 and the single style gives ~2.2e-4, methods.BLOCKS_WORTH)."""
    atoms = blanket_atoms(make_randomizer("krr", epsilon0=1.0, domain_size=10), 0, 1)
    cat = categories(atoms, 60_000, 0.03)
    lo, hi = conditioning_bounds(cat, np.zeros(1), np.ones(1), np.zeros(1), 0)
    width = (hi - lo) / hi
    rtol = width / 2.0                               # inside (rtol, BLOCKS_WORTH rtol]
    assert methods._select([cat]) == "conditioning" and not methods.exact_sum([cat])
    assert not methods.needs_blocks(cat, width, rtol)
    assert methods.needs_blocks(cat, width, width / 3.0)     # beyond BLOCKS_WORTH rtol
