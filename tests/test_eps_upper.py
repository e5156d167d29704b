"""The eps search's upper side with trusted estimates (issue 32, session 16):
protocols/bounds/engine/eps_upper.py, wired in as ``epsilon_of_delta(..., trust_width=...)``
(engine/eps_search.py) by core.epsilon_bound. Synthetic delta(eps) with known crossings (every
certificate checked against the true function), the hooks one by one, and two engine points
whose searches the old code made long (brr eps0 = 2, n = 268270, delta = 1e-12: 9
evaluations; 50-RR eps0 = 8, n = 2683, delta = 1e-4: 33)."""

from __future__ import annotations

import math

import pytest

from shufflesim.protocols.bounds.engine import core, eps_upper
from shufflesim.protocols.bounds.engine.common import Estimate
from shufflesim.protocols.bounds.engine.eps_search import epsilon_of_delta
from shufflesim.protocols.bounds.engine.eps_start import local_start

DELTA = 1e-12
SCALE = 0.0139          # delta(eps) = exp(-(eps / SCALE)^2 / 2): a Gaussian tail
RTOL = 1e-7


def true_delta(eps: float) -> float:
    return math.exp(-0.5 * (eps / SCALE) ** 2)


def crossing_of(factor: float) -> float:
    """Where factor * true_delta crosses DELTA."""
    return SCALE * math.sqrt(2 * math.log(factor / DELTA))


CROSSING = crossing_of(1.0)
SLOPE = CROSSING / SCALE ** 2               # -d ln delta / d eps at the crossing


class Bracketed:
    """Estimates lower = true (1 - below), upper = true (1 + above); records its points."""

    def __init__(self, below: float, above: float):
        self.below, self.above = below, above
        self.points: list[float] = []

    def __call__(self, eps: float) -> Estimate:
        self.points.append(eps)
        t = true_delta(eps)
        return Estimate(t * (1 + self.above), t * (1 - self.below), t * (1 + self.above), "x")


def search(fn, trust, side="upper", **kw):
    """As core.epsilon_bound starts it: from a guess 5e-4 off the crossing and a slope hint."""
    return epsilon_of_delta(fn, DELTA, side, eps_max=1.0, rtol=RTOL, xtol=1e-15,
                            guess=CROSSING * (1 + 5e-4), guess_slope=0.9 * SLOPE,
                            resolution_stop=0.5, trust_width=trust, **kw)


def check_certified(fn, found):
    """The returned end's upper estimate is <= DELTA, the stated bracket holds the truth."""
    assert fn(found.value).upper <= DELTA
    assert found.lower <= CROSSING <= found.upper and found.value == found.upper


def test_tight_estimates_home_in_on_the_upper_crossing():
    """Estimates 1.5e-7 wide (the conditioning method's single style at brr, n = 268270) and a
    point certified just above delta (lower estimate 2e-8 above it, as the brr search's third
    point): with trust the steps follow the upper estimate and stop at its crossing; without,
    that point steps by its lower estimate and the search crawls in EDGE steps towards the
    upper estimate's crossing, 1.5e-7 / slope away."""
    near = crossing_of((1 - 5e-8) / (1 + 2e-8))          # lower estimate = delta (1 + 2e-8)
    start = (near, CROSSING * (1 + 1e-4))
    trusted, plain = Bracketed(5e-8, 1e-7), Bracketed(5e-8, 1e-7)
    a, b = search(trusted, 5e-3, bracket=start), search(plain, None, bracket=start)
    for fn, found in ((trusted, a), (plain, b)):
        check_certified(fn, found)
    tol = RTOL * CROSSING
    upper_crossing = crossing_of(1 + 1e-7)
    assert 0 <= a.value - upper_crossing <= (eps_upper.STOP + eps_upper.AIM) * tol
    assert a.error <= tol
    assert a.evaluations <= 4 < b.evaluations


def test_wide_estimates_certify_the_other_side_from_the_upper_end():
    """Estimates 1e-4 wide (3-RR's single style at n = 1e6): the loop ends once the upper end
    sits at the upper estimate's crossing, and one point left of the lower estimate's crossing
    states the error: about 1.5 times the eps-width the estimates blur."""
    fn = Bracketed(5e-5, 5e-5)
    found = search(fn, 5e-3)
    check_certified(fn, found)
    blur = math.log((1 + 5e-5) / (1 - 5e-5)) / SLOPE
    assert found.error <= 1.6 * blur + 0.01 * RTOL * CROSSING
    assert found.evaluations <= 5


def test_the_lower_side_ignores_trust():
    """trust_width is an upper-side option: a lower-side search is the same with it."""
    with_trust, without = Bracketed(5e-8, 1e-7), Bracketed(5e-8, 1e-7)
    a = search(with_trust, 5e-3, side="lower")
    b = search(without, None, side="lower")
    assert (a.value, a.lower, a.upper, a.evaluations) == (b.value, b.lower, b.upper,
                                                          b.evaluations)
    assert with_trust.points == without.points


def test_only_a_tight_certified_point_steps_by_its_upper_estimate():
    tight = Estimate(1.012e-12, 1.01e-12, 1.012e-12, "x")
    wide = Estimate(1.5e-12, 1.01e-12, 1.5e-12, "x")
    undecided = Estimate(1.02e-12, 0.99e-12, 1.02e-12, "x")
    assert eps_upper.trusted(tight, DELTA, 5e-3) and eps_upper.trusted(tight, DELTA, 0.01)
    assert not eps_upper.trusted(wide, DELTA, 5e-3)
    assert not eps_upper.trusted(undecided, DELTA, 5e-3)      # not certified above
    assert not eps_upper.trusted(tight, DELTA, None)


def test_at_crossing_and_aimed_steps():
    tol = 1e-9
    assert eps_upper.aimed(1.0, tol) == 1.0 + eps_upper.AIM * tol
    assert eps_upper.at_crossing(1.0 - 0.5 * eps_upper.STOP * tol, 1.0, tol)
    assert eps_upper.at_crossing(1.0 + 0.5 * eps_upper.STOP * tol, 1.0, tol)
    assert not eps_upper.at_crossing(1.0 - 2 * eps_upper.STOP * tol, 1.0, tol)
    assert not eps_upper.at_crossing(1.0 + 2 * eps_upper.STOP * tol, 1.0, tol)
    assert not eps_upper.at_crossing(None, 1.0, tol)
    # the unit: the tolerance, or BLUR_SHARE of the estimates' eps-blur where that is larger
    assert eps_upper.precision(tol, 1e-9) == tol
    assert eps_upper.precision(tol, 1e-5) == eps_upper.BLUR_SHARE * 1e-5


def test_stalled_only_where_the_upper_end_creeps():
    """Held steps that move the upper end without halving its log-distance stall; the lower
    end's (delta falling linearly to 0 at eps_max) and steps that halve it do not."""
    creeping = [(False, 1, 36.8), (True, 1, 36.1), (True, 1, 35.7)]
    assert eps_upper.stalled(creeping)
    assert not eps_upper.stalled(creeping[:2])
    assert not eps_upper.stalled([(False, -1, 16.1), (True, -1, 15.4), (True, -1, 14.7)])
    assert not eps_upper.stalled([(False, 1, 36.8), (True, 1, 20.0), (True, 1, 9.0)])
    assert not eps_upper.stalled([(False, 1, 36.8), (False, 1, 36.1), (True, 1, 35.7)])


def test_the_start_keeps_its_hint_where_a_secant_is_inside_the_noise():
    """Two points below the crossing whose upper estimates differ by less than their widths
    (blh d = 4, eps0 = 4, n = 37276: a first estimate 9 % wide; 8.5 % here) and a hint that
    is too steep (the first step falls short): the secant through them steps far past the
    crossing; with ``steady`` the start keeps stepping by its hint and brackets the crossing
    next to it."""
    def fn(eps):
        t = true_delta(eps)
        wide = eps > CROSSING * (1 + 4e-3)
        return Estimate(t * (1.075 if wide else 1.0005), t * (0.99 if wide else 0.9995),
                        t * (1.075 if wide else 1.0005), "x")

    def run(steady):
        seen = {}

        def evaluate(eps):
            seen[eps] = fn(eps)
            return seen[eps].upper if seen[eps].lower <= DELTA else seen[eps].lower

        def side(e):
            est = seen[e]
            return est.upper if est.lower <= DELTA else est.lower

        found = local_start(evaluate, side, seen, DELTA, CROSSING * (1 + 5e-3), 3 * SLOPE,
                            1.0, 1e-15, RTOL, 0.005,
                            (lambda e1, e2: eps_upper.resolved(seen, side, e1, e2))
                            if steady else None)
        return found, seen

    (a, b), _ = run(True)
    assert CROSSING * (1 - 1e-3) < a < CROSSING < b
    (a, b), _ = run(False)
    assert a < CROSSING * (1 - 3e-3)


def test_other_side_point_only_where_it_narrows():
    """No point where the bracket is already within the tolerance or the point would not
    narrow it twofold; a point left of the lower estimate's crossing otherwise."""
    est = Estimate(0.99e-12, 0.98e-12, 0.99e-12, "x")
    asked = []

    def evaluate(x):
        asked.append(x)
        seen[x] = Estimate(1.1e-12, 1.05e-12, 1.1e-12, "x")
        return seen[x].lower

    seen = {1.0: est}
    eps_upper.certify_other_side(evaluate, seen, DELTA, 1.0, 1.0 - 5e-10, 1.0, 100.0, 1e-9, 5)
    assert asked == []                       # bracket 5e-10 <= tol
    eps_upper.certify_other_side(evaluate, seen, DELTA, 1.0, 1.0 - 1e-3, 1.0, 100.0, 1e-9, 5)
    step = 1.5 * math.log(1 / 0.98) / 100.0 + eps_upper.OTHER_EDGE * 1e-9
    assert asked == [1.0 - step] and seen[asked[0]].lower > DELTA


def _counted(monkeypatch):
    calls = []
    real = core.delta_of_epsilon

    def counting(*args, **kwargs):
        calls.append(args[2])
        return real(*args, **kwargs)

    monkeypatch.setattr(core, "delta_of_epsilon", counting)
    return calls


@pytest.mark.parametrize("name, kwargs, n, delta, old, old_error, most", [
    # brr: the crawl between the two crossings (9 evaluations before)
    ("brr", {}, 268270, 1e-12, 0.036101905764671635, 1.53e-10, 6),
    # 50-RR eps0 = 8 (no guess): 21 steps of 1 % of the bracket from eps_max (33 before)
    ("krr", {"domain_size": 50}, 2683, 1e-4, 5.926901895268565, 1.35e-6, 18),
    # hr d = 16, eps0 = 4 (the exact-pool style, 3.8e-3 wide): aims of a tolerance missed
    # the jittering upper estimate (10 before)
    ("hr", {"domain_size": 16}, 10000, 1e-6, 0.28409703144331244, 1.06e-4, 7),
])
def test_engine_points_that_searched_long(monkeypatch, name, kwargs, n, delta, old, old_error,
                                          most):
    """optimal-blanket at two sweep points: fewer evaluations, and a bracket that overlaps the
    former one (values moved only within the search's tolerance)."""
    from shufflesim.protocols.bounds.numerical.optimal import optimal_blanket_epsilon
    from shufflesim.protocols.randomizers import make_randomizer
    eps0 = {"brr": 2.0, "krr": 8.0, "hr": 4.0}[name]
    calls = _counted(monkeypatch)
    res = optimal_blanket_epsilon(make_randomizer(name, epsilon0=eps0, **kwargs), n, delta)
    assert len(calls) <= most
    assert res.epsilon - res.epsilon_error <= old and old - old_error <= res.epsilon
    assert abs(res.epsilon - old) <= 1e-7 * old
