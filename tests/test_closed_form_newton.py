"""Bracketed Newton inversion of the 004 closed forms (issue 32: no generic bisection)."""

from __future__ import annotations

import math

import pytest

from shufflesim.protocols.bounds.closed_form import blanket as bc
from shufflesim.protocols.bounds.closed_form import blanket_randomizer as bcr
from shufflesim.protocols.bounds.closed_form import concentration_log as cl
from shufflesim.protocols.bounds.closed_form import newton
from shufflesim.protocols.bounds.numerical.clones import smallest_epsilon
from shufflesim.protocols.randomizers import make_randomizer

CASES = [(e0, n, d) for e0 in (0.05, 0.5, 1.0, 4.0, 12.0) for n in (50, 10**4, 10**7, 10**11)
         for d in (1e-3, 1e-9)]


@pytest.mark.parametrize("generic,delta_fn", [
    (bc.blanket_hoeffding_generic, bc.blanket_hoeffding_generic_delta),
    (bc.blanket_bennett_generic, bc.blanket_bennett_generic_delta),
])
def test_generic_inversion_is_verified_and_matches_bisection(generic, delta_fn):
    for e0, n, d in CASES:
        res = generic(e0, n, d)
        eps, err = res.epsilon, res.epsilon_error
        assert 0 <= err <= 1e-9
        # the returned end is admissible, the other end is not (the root rounded outward)
        assert eps >= e0 or delta_fn(eps, e0, n) <= d
        if err > 0:
            assert delta_fn(eps - err, e0, n) > d
        # the former false-position search finds the same root to its tolerance
        ref, ref_err = smallest_epsilon(lambda e, e0=e0, n=n: delta_fn(e, e0, n), d, e0, 1e-9)
        assert eps - err <= ref + 1e-15 and ref - ref_err <= eps + 1e-15


def test_few_evaluations():
    """Newton, not bisection: the k-RR Hoeffding bound of the benchmark row needs about 7
    evaluations of delta (the former search took about 23)."""
    counts = []

    def counted(eps):
        counts.append(eps)
        return cl.hoeffding_log(10**5, *bc.krr_parv_scalar(eps, 0.3, 10))

    eps, err = newton.smallest_epsilon_newton(counted, 1e-6, 0.3, 1e-9, start=0.15)
    assert err <= 1e-9
    assert len(counts) <= 12


def test_slopes_match_finite_differences():
    """The derivatives fed to Newton are those of the delta functions (only speed depends on
    them, but a wrong one would show as many evaluations)."""
    for eps in (0.05, 0.4, 0.9):
        for form in (cl.hoeffding_log, cl.bennett_log):
            for params in (bc.generic_parv_scalar, lambda e, e0: bc.krr_parv_scalar(e, e0, 7)):
                def f(e, form=form, params=params):
                    return form(3000, *params(e, 1.0))
                value, slope = f(eps)
                h = 1e-6
                fd = (f(eps + h)[0] - f(eps - h)[0]) / (2 * h)
                assert value < 0
                assert slope == pytest.approx(fd, rel=1e-4)


def test_atoms_path_and_no_amplification():
    r = make_randomizer("oue", epsilon0=1.0, domain_size=4)
    res = bcr.blanket_hoeffding(r, 10**5, 1e-6)
    assert bcr.blanket_hoeffding_randomizer_delta(res.epsilon, r, 10**5) <= 1e-6
    assert bcr.blanket_hoeffding_randomizer_delta(res.epsilon - res.epsilon_error, r,
                                                  10**5) > 1e-6
    # n = 10: no amplification shown, eps = eps0 (found with a point just below eps0)
    tiny = bc.blanket_hoeffding_generic(0.5, 10, 1e-6)
    assert tiny.epsilon == 0.5 and 0 < tiny.epsilon_error <= 1e-9
    assert math.isfinite(tiny.epsilon)
