"""Blanket and exact-pair decompositions (000 Sec. 4, Thm 7, 13, 14; Tables 1-3; App. A-B).

Oracles: the per-output decomposition computed directly from the full ``output_pmf`` (brute
force), the closed forms of 000 Table 2 / Table 3 / Table 1 / App. B, numerical integration of
the densities, and 000 Property 2.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import integrate

from shufflesim.protocols.bounds.atoms import RatioAtoms, Rounding
from shufflesim.protocols.bounds.numerical.atom_sets import (
    DecompositionError,
    atoms_from_masses,
    check_decomposition,
    merge_atoms,
)
from shufflesim.protocols.bounds.numerical.decompositions import (
    blanket_atoms,
    blanket_gamma,
    exact_pair_atoms,
    laplace_pair_grid,
    neighbour_candidates,
    supported_randomizers,
)
from shufflesim.protocols.errors import ParameterError
from shufflesim.protocols.randomizers import (
    Categorical,
    make_randomizer,
    randomizer_class,
    randomizer_names,
    randomizer_parameters,
)
from shufflesim.protocols.randomizers.registry import example_randomizer


def decomposed(name: str) -> bool:
    """Whether the registered randomizer ``name`` declares a pure-LDP decomposition: not an
    (eps0, delta0)-LDP one (a delta0 parameter, e.g. gaussian: the bounds refuse them,
    BoundSpec.accepts_delta0), not multi-message (their own bounds,
    protocols/bounds/multi_message), not a metric one declaring none (planar_laplace,
    witch_hat: tests/test_metric_dp.py)."""
    cls = randomizer_class(name)
    return ("delta0" not in randomizer_parameters(name)
            and not getattr(cls, "multi_message", False)
            and not (getattr(cls, "metric_privacy", False) and cls.decomposition is None))


#: Every registered randomizer with a decomposition, and those over categories.
DECOMPOSED = [n for n in randomizer_names() if decomposed(n)]
CATEGORICAL = [n for n in DECOMPOSED if randomizer_class(n).output_kind == "discrete"
               and isinstance(example_randomizer(n).input_domain, Categorical)]


def small(name: str):
    """The randomizer built from its declared example parameters."""
    return example_randomizer(name)


def same_atoms(x: RatioAtoms, y: RatioAtoms, rtol: float = 1e-12) -> bool:
    """Equal as distributions of (a, b) (after merging both)."""
    x, y = merge_atoms(x), merge_atoms(y)
    if x.a.size != y.a.size:
        return False
    ox = np.lexsort((np.round(x.b, 9), np.round(x.a, 9)))
    oy = np.lexsort((np.round(y.b, 9), np.round(y.a, 9)))
    return all(np.allclose(u[ox], v[oy], rtol=rtol, atol=1e-15)
               for u, v in ((x.a, y.a), (x.b, y.b), (x.weight, y.weight)))


def brute_force_blanket(r, x0, x1) -> RatioAtoms:
    """One atom per output from the full output_pmf (000 Sec. 4.2, primary decomposition)."""
    pmf = r.output_pmf()
    return atoms_from_masses(pmf[x0], pmf[x1], pmf.min(axis=0))


def brute_force_exact(r, x0, x1, x2) -> RatioAtoms:
    pmf = r.output_pmf()
    return atoms_from_masses(pmf[x0], pmf[x1], pmf[x2])


def pqr(atoms: RatioAtoms, epsilon0: float) -> dict:
    """Weights of the (e^eps0, 1), (e^eps0, e^eps0), (1, 1) atoms, 000 App. A notation (p, q, r);
    also checks that (1, e^eps0) has weight p and that there is no other atom."""
    levels = {}
    for a, b, w in zip(atoms.a, atoms.b, atoms.weight, strict=True):
        key = (round(float(np.log(a) / epsilon0), 9), round(float(np.log(b) / epsilon0), 9))
        levels[key] = levels.get(key, 0.0) + float(w)
    assert set(levels) <= {(1.0, 0.0), (0.0, 1.0), (1.0, 1.0), (0.0, 0.0)}, levels
    assert levels.get((1.0, 0.0), 0.0) == pytest.approx(levels.get((0.0, 1.0), 0.0), rel=1e-12)
    return {"p": levels.get((1.0, 0.0), 0.0), "q": levels.get((1.0, 1.0), 0.0),
            "r": levels.get((0.0, 0.0), 0.0)}


# -- coverage and Property 2 --------------------------------------------------------------------
def test_every_registered_randomizer_is_decomposed():
    names = DECOMPOSED
    assert set(names) <= set(supported_randomizers()), "randomizer without a decomposition"
    for name in names:
        r = small(name)
        cand = neighbour_candidates(r)
        assert cand.pairs and cand.triples
        for x0, x1 in cand.pairs[:2]:
            for pair in ((x0, x1), (x1, x0)):
                atoms = blanket_atoms(r, *pair)  # validated against Property 2 inside
                assert 0 < atoms.weight.sum() <= 1 + 1e-12
        for triple in cand.triples:
            exact_pair_atoms(r, *triple)
            exact_pair_atoms(r, triple[1], triple[0], triple[2])


@pytest.mark.parametrize("name", DECOMPOSED)
def test_property_2_mean_and_support(name):
    """E[G_eps] = 1 - e^eps (exact groups) and 1 - e^(eps+eps0) <= G <= e^eps0 - e^eps."""
    r = small(name)
    x0, x1 = neighbour_candidates(r).pairs[0]
    atoms = blanket_atoms(r, x0, x1)
    e0 = r.epsilon0
    for eps in (0.0, 0.3, 1.7):
        g = atoms.values(eps)
        assert g.max() <= np.exp(e0) - np.exp(eps) + 1e-9
        assert g.min() >= 1 - np.exp(e0 + eps) - 1e-9
        mean = float(np.dot(atoms.weight, g))
        if atoms.rounding is Rounding.EXACT:
            assert mean == pytest.approx(1 - np.exp(eps), abs=1e-12)
        else:  # rounded up: the mean is above, by the discretization only
            assert 1 - np.exp(eps) - 1e-12 <= mean <= 1 - np.exp(eps) + 1e-3


def test_check_decomposition_rejects_invalid_sets():
    good = RatioAtoms(np.array([2.0, 1.0]), np.array([1.0, 2.0]), np.array([1.0, 1.0]) / 3)
    check_decomposition(good, np.log(2.0), "blanket")
    with pytest.raises(DecompositionError, match="sum w a"):
        check_decomposition(RatioAtoms(np.array([2.0]), np.array([1.0]), np.array([1.0]) / 3),
                            np.log(2.0), "blanket")
    with pytest.raises(DecompositionError, match="outside"):
        check_decomposition(good, np.log(1.5), "blanket")
    with pytest.raises(DecompositionError, match="weights sum"):
        check_decomposition(RatioAtoms(np.ones(2), np.ones(2), np.array([0.5, 0.4])), 1.0,
                            "exact")
    up = RatioAtoms(good.a * 0.99, good.b, good.weight, Rounding.UP)
    with pytest.raises(DecompositionError, match="rounded up"):
        check_decomposition(up, np.log(2.0), "blanket")


def test_merge_and_absolute_continuity():
    atoms = RatioAtoms(np.array([2.0, 2.0 * (1 + 1e-15), 1.0, 3.0]),
                       np.array([1.0, 1.0, 1.0, 1.0]), np.array([0.1, 0.2, 0.3, 0.0]))
    merged = merge_atoms(atoms)
    assert merged.a.size == 2 and merged.weight.sum() == pytest.approx(0.6)
    assert np.dot(merged.weight, merged.a) == pytest.approx(np.dot(atoms.weight, atoms.a))
    up = merge_atoms(RatioAtoms(atoms.a, atoms.b, atoms.weight, Rounding.UP))
    assert up.a.max() == atoms.a[1]
    with pytest.raises(DecompositionError, match="absolutely continuous"):
        atoms_from_masses(np.array([0.5, 0.5]), np.array([1.0, 0.0]), np.array([1.0, 0.0]))


def test_bad_requests_are_parameter_errors():
    r = small("krr")
    with pytest.raises(ParameterError, match="input"):
        blanket_atoms(r, 0, 7)
    with pytest.raises(ParameterError, match="rounding"):
        blanket_atoms(r, 0, 1, rounding=Rounding.UP)
    with pytest.raises(ParameterError, match="input"):
        blanket_atoms(small("duchi"), -1.0, 1.5)

    class Unknown:
        name = "no-such-randomizer"
        epsilon0 = 1.0

    with pytest.raises(ParameterError, match="randomizer.name"):
        neighbour_candidates(Unknown())
    with pytest.raises(ParameterError, match="pair_grid"):
        laplace_pair_grid(1)


# -- brute force from the full output distribution ---------------------------------------------
@pytest.mark.parametrize("name", CATEGORICAL)
def test_groups_match_brute_force_per_output(name):
    """output_groups-based atoms = per-output atoms from output_pmf, for every ordered pair and
    every triple (also checks input symmetry: every pair gives the same blanket atoms)."""
    r = small(name)
    d = r.input_domain.size
    reference = blanket_atoms(r, 0, 1)
    for x0, x1 in itertools.permutations(range(d), 2):
        atoms = blanket_atoms(r, x0, x1)
        assert same_atoms(atoms, brute_force_blanket(r, x0, x1))
        assert same_atoms(atoms, reference), f"{name} not input-symmetric at {(x0, x1)}"
    same = blanket_atoms(r, 0, 0)
    for x in range(d):  # the "same pair" atoms do not depend on x either
        assert same_atoms(blanket_atoms(r, x, x), same)
        assert same_atoms(blanket_atoms(r, x, x), brute_force_blanket(r, x, x))
    for triple in itertools.product(range(d), repeat=3):
        if triple[0] != triple[1]:
            assert same_atoms(exact_pair_atoms(r, *triple), brute_force_exact(r, *triple))


@pytest.mark.parametrize("name", ["duchi", "summation"])
def test_discrete_numeric_blanket_is_min_over_all_inputs(name):
    """The blanket from the extreme inputs equals the one from a fine grid of inputs, and interior
    inputs give valid decompositions with the same blanket."""
    r = small(name)
    lo, hi = r.input_domain.low, r.input_domain.high
    grid = np.linspace(lo, hi, 241)
    pmf = r.output_pmf(grid)
    x0, x1 = neighbour_candidates(r).pairs[0]
    fine = atoms_from_masses(r.output_pmf(np.array([x0]))[0], r.output_pmf(np.array([x1]))[0],
                             pmf.min(axis=0))
    assert same_atoms(blanket_atoms(r, x0, x1), fine)
    mid = lo + 0.37 * (hi - lo)
    blanket_atoms(r, mid, hi)
    exact_pair_atoms(r, mid, lo, lo + 0.81 * (hi - lo))


# -- 000 Table 2 (finite D), Table 3 (asymptotic), Table 1 (GPARV) -----------------------------
def table2(name: str, e0: float, size: int) -> dict:
    """000 Table 2 (p, q, r); ``size`` is k (k-RR), D (BLH, RAPPOR, OUE). HR is separate."""
    e, s = np.exp(e0), np.exp(e0 / 2)
    if name == "krr":
        return {"p": 1 / (e + size - 1), "q": 0.0, "r": (size - 2) / (e + size - 1)}
    if name == "blh":
        return {"p": 1 / (2 * (e + 1)), "q": 1 / (2 * (e + 1)) - 1 / (2 ** (size - 1) * (e + 1)),
                "r": 1 / (2 * (e + 1)) + e / (2 ** (size - 1) * (e + 1))}
    if name == "rappor":
        return {"p": 1 / (s + 1) ** 2, "q": 1 / (s * (s + 1) ** 2) - 1 / (s * (s + 1) ** size),
                "r": s / (s + 1) ** 2 + s / (s + 1) ** size}
    if name == "oue":
        return {"p": 1 / (2 * (e + 1)),
                "q": 1 / (2 * e * (e + 1)) - 1 / (2 * e * (1 + e) ** (size - 1)),
                "r": e / (2 * (e + 1)) + 1 / (2 * (e + 1) ** (size - 1))}
    raise KeyError(name)


def hr_corrected(e0: float, size: int) -> dict:
    """HR for Hadamard size D (derived here; 000 Table 2's row does not sum to one):
    p = 1/(2(e+1)); q = 1/(2(e+1)) - 2/(D(e+1)) (columns with both rows +1, minus column 0);
    r = 1/(2(e+1)) + 2e/(D(e+1)) (both rows -1, plus column 0, whose blanket mass is the high
    level 2e/(D(e+1)) and whose ratios are (1, 1))."""
    e = np.exp(e0)
    return {"p": 1 / (2 * (e + 1)), "q": 1 / (2 * (e + 1)) - 2 / (size * (e + 1)),
            "r": 1 / (2 * (e + 1)) + 2 * e / (size * (e + 1))}


def hr_paper(e0: float, size: int) -> dict:
    e = np.exp(e0)
    return {"p": 1 / (2 * (e + 1)), "q": 1 / (2 * (e + 1)),
            "r": 1 / (2 * (e + 1)) + 2 * (e - 1) / (size * (e + 1))}


def row_sum(v: dict, e0: float) -> float:
    """R(x0) mass of the 5-component decomposition: e p + p + e q + r (000 App. A)."""
    e = np.exp(e0)
    return e * v["p"] + v["p"] + e * v["q"] + v["r"]


@pytest.mark.parametrize("e0", [0.1, 1.3, 4.0])
@pytest.mark.parametrize("name,sizes", [("krr", (3, 10)), ("blh", (3, 6)),
                                        ("rappor", (3, 6)), ("oue", (3, 6))])
def test_table2_closed_forms(name, sizes, e0):
    for size in sizes:
        r = make_randomizer(name, epsilon0=e0, domain_size=size)
        got = pqr(blanket_atoms(r, 0, 1), e0)
        want = table2(name, e0, size)
        for key in "pqr":
            assert got[key] == pytest.approx(want[key], rel=1e-12, abs=1e-15), (name, size, key)
        assert row_sum(want, e0) == pytest.approx(1.0, rel=1e-12)
        if size <= 6:  # and brute force from the full pmf agrees
            assert same_atoms(blanket_atoms(r, 0, 1), brute_force_blanket(r, 0, 1))


@pytest.mark.parametrize("e0", [0.1, 1.3, 4.0])
def test_table2_hadamard_row_corrected(e0):
    for d in (3, 4, 7, 8, 12):
        r = make_randomizer("hr", epsilon0=e0, domain_size=d)
        size = r.hadamard_size
        got = pqr(blanket_atoms(r, 0, 1), e0)
        want = hr_corrected(e0, size)
        for key in "pqr":
            assert got[key] == pytest.approx(want[key], rel=1e-12, abs=1e-15), (d, key)
        assert row_sum(want, e0) == pytest.approx(1.0, rel=1e-12)
        # 000's printed row allocates the same q + r differently and does not sum to one.
        paper = hr_paper(e0, size)
        assert paper["q"] + paper["r"] == pytest.approx(want["q"] + want["r"], rel=1e-12)
        assert abs(row_sum(paper, e0) - 1.0) > 1e-3 / size
        assert same_atoms(blanket_atoms(r, 0, 1), brute_force_blanket(r, 0, 1))


@pytest.mark.parametrize("e0", [0.5, 2.0])
def test_table3_asymptotics(e0):
    """As D grows the decompositions converge to 000 Table 3 at rate O(2^-D) or faster."""
    e, s = np.exp(e0), np.exp(e0 / 2)
    table3 = {
        "blh": {"p": 1 / (2 * (e + 1)), "q": 1 / (2 * (e + 1)), "r": 1 / (2 * (e + 1))},
        "rappor": {"p": 1 / (s + 1) ** 2, "q": 1 / (s * (s + 1) ** 2), "r": s / (s + 1) ** 2},
        "oue": {"p": 1 / (2 * (e + 1)), "q": 1 / (2 * e * (e + 1)), "r": e / (2 * (e + 1))},
        "hr": {"p": 1 / (2 * (e + 1)), "q": 1 / (2 * (e + 1)), "r": 1 / (2 * (e + 1))},
    }
    for name, want in table3.items():
        size = 1000 if name == "hr" else 40
        r = make_randomizer(name, epsilon0=e0, domain_size=size)
        got = pqr(blanket_atoms(r, 0, 1), e0)
        for key in "pqr":
            tol = 4 * e / 1024 if name == "hr" else 4 * e * 2.0 ** -39
            assert got[key] == pytest.approx(want[key], abs=tol), (name, key)


def test_table1_gparv_of_krr_and_asymptotic_rappor():
    """000 Table 1: values 1 - e^(eps0+eps), e^eps0 - e^(eps0+eps), 1 - e^eps, 0, e^eps0 - e^eps."""
    e0, eps, k = 1.1, 0.3, 10
    e, f = np.exp(e0), np.exp(eps)
    atoms = blanket_atoms(make_randomizer("krr", epsilon0=e0, domain_size=k), 0, 1)
    law = dict(zip(np.round(atoms.values(eps), 12), atoms.weight, strict=True))
    law[0.0] = atoms.zero_weight
    want = {1 - e * f: 1 / (e + k - 1), 1 - f: (k - 2) / (e + k - 1),
            0.0: (e - 1) / (e + k - 1), e - f: 1 / (e + k - 1)}
    assert set(law) == set(np.round(list(want), 12))
    for value, prob in want.items():
        assert law[round(value, 12)] == pytest.approx(prob, rel=1e-12)
    s = np.exp(e0 / 2)
    atoms = blanket_atoms(make_randomizer("rappor", epsilon0=e0, domain_size=45), 0, 1)
    values = atoms.values(eps)
    want = {1 - e * f: 1 / (s + 1) ** 2, e - e * f: 1 / (s * (s + 1) ** 2),
            1 - f: s / (s + 1) ** 2, e - f: 1 / (s + 1) ** 2}
    for value, prob in want.items():
        got = atoms.weight[np.isclose(values, value, rtol=0, atol=1e-12)].sum()
        assert got == pytest.approx(prob, abs=1e-12)
    assert atoms.zero_weight == pytest.approx(1 - np.exp(-e0 / 2), abs=1e-12)


# -- continuous outputs -------------------------------------------------------------------------
@pytest.mark.parametrize("x0,x1", [(-1.0, 1.0), (0.3, -0.2), (0.5, 0.5), (1.0, 0.9)])
def test_piecewise_groups_against_numerical_integration(x0, x1):
    """Exact piecewise groups: masses of {a = e^eps0, b = 1} etc. by quad over the density."""
    r = small("piecewise")
    e0, c = r.epsilon0, r.output_bound

    def density(x, y):
        return float(np.exp(r.log_prob(np.array(x), np.array(y))))

    def blanket(y):
        return min(density(-1.0, y), density(1.0, y))

    atoms = blanket_atoms(r, x0, x1)
    points = sorted({-c, -1.0, 1.0, c} | {float(v) for x in (x0, x1) for v in r._interval(x, c)})
    for ia, ib in itertools.product((0, 1), repeat=2):
        def in_group(y, ia=ia, ib=ib):
            ra = np.log(density(x0, y) / blanket(y)) / e0
            rb = np.log(density(x1, y) / blanket(y)) / e0
            return float(round(ra) == ia and round(rb) == ib) * blanket(y)
        pieces = [integrate.quad(in_group, u, v, limit=200)[0]
                  for u, v in zip(points[:-1], points[1:], strict=True) if v > u]
        mass = sum(pieces)
        sel = np.isclose(atoms.a, np.exp(ia * e0)) & np.isclose(atoms.b, np.exp(ib * e0))
        assert atoms.weight[sel].sum() == pytest.approx(mass, abs=1e-9)
    # blanket mass gamma = 2 C lo = e^{-eps0/2}
    assert atoms.weight.sum() == pytest.approx(np.exp(-e0 / 2), rel=1e-12)


@pytest.mark.parametrize("e0", [0.1, 1.0, 2.0, 3.0, 4.0, 5.0, 8.0])
def test_piecewise_atoms_at_every_candidate_and_budget(e0):
    """Every candidate pair and triple decomposes at every budget (at eps0 = 4 the ends
    l(-1) and r(1) rounded an ulp inside [-C, C], and a one-ulp cell failed the constancy
    check), and the masses integrate the densities: E[a] = E[b] = 1 on exact triples, the
    blanket's total mass is 2 C lo = e^{-eps0/2}."""
    r = make_randomizer("piecewise", epsilon0=e0)
    cands = neighbour_candidates(r)
    for x0, x1, x2 in cands.triples + ((-1.0, 1.0, 1.0 / 3.0), (1.0 / 3.0, -1.0 / 3.0, 1.0)):
        atoms = exact_pair_atoms(r, x0, x1, x2)
        assert atoms.weight.sum() + atoms.zero_weight == pytest.approx(1.0, abs=1e-12)
        assert np.dot(atoms.weight, atoms.a) == pytest.approx(1.0, abs=1e-12)
        assert np.dot(atoms.weight, atoms.b) == pytest.approx(1.0, abs=1e-12)
    for x0, x1 in cands.pairs + ((1.0 / 3.0, -1.0 / 3.0),):
        atoms = blanket_atoms(r, x0, x1)
        assert atoms.weight.sum() == pytest.approx(np.exp(-e0 / 2), rel=1e-12)


def test_piecewise_overlap_orders_the_gparv():
    """Smaller overlap = mean-preserving spread: E[(G - t)_+] is larger for every t."""
    r = small("piecewise")
    wide, narrow = blanket_atoms(r, -1.0, 1.0), blanket_atoms(r, -0.2, 0.3)

    def stop_loss(atoms, eps, t):
        g = np.append(atoms.values(eps), 0.0)
        w = np.append(atoms.weight, atoms.zero_weight)
        return float(np.dot(w, np.maximum(g - t, 0.0)))

    for eps in (0.0, 0.4):
        for t in np.linspace(-5, 3, 41):
            assert stop_loss(wide, eps, t) >= stop_loss(narrow, eps, t) - 1e-14
        assert stop_loss(wide, eps, 0.0) > stop_loss(narrow, eps, 0.0) + 1e-3


def laplace_cdf_L(t, e0, eps):
    """000 App. B: CDF of the PARV L^{0,1}_eps (L = gamma G on the blanket part)."""
    g = np.exp(-e0 / 2)
    if t < g * (1 - np.exp(e0 + eps)):
        return 0.0
    if t < g * (1 - np.exp(eps)):
        return 0.5 * np.sqrt(np.exp(eps) / (1 - np.exp(e0 / 2) * t))
    if t < g * (np.exp(e0) - np.exp(eps)):
        return 1 - 0.5 / np.sqrt(np.exp(e0 / 2) * t + np.exp(eps))
    return 1.0


@pytest.mark.parametrize("e0,eps", [(1.0, 0.1), (0.3, 0.05), (3.0, 1.0)])
def test_laplace_binary_brackets_appendix_b_cdf(e0, eps):
    """UP atoms dominate the App. B law (CDF below), DOWN atoms are dominated (CDF above), and the
    two agree to the discretization."""
    r = make_randomizer("laplace_binary", epsilon0=e0)
    gamma = np.exp(-e0 / 2)
    up, down = blanket_atoms(r, 0, 1), blanket_atoms(r, 0, 1, rounding=Rounding.DOWN)
    assert up.weight.sum() == pytest.approx(gamma, rel=1e-13)
    assert blanket_gamma(r) == pytest.approx(gamma, rel=1e-13)
    lo, hi = gamma * (1 - np.exp(e0 + eps)), gamma * (np.exp(e0) - np.exp(eps))
    for t in np.linspace(lo, hi, 57)[1:-1]:
        true = laplace_cdf_L(t, e0, eps)
        cdf_up = up.weight[gamma * up.values(eps) <= t].sum() / gamma
        cdf_down = down.weight[gamma * down.values(eps) <= t].sum() / gamma
        assert cdf_up <= true + 1e-12 <= cdf_down + 2e-12
        assert cdf_down - cdf_up < 5e-3


def test_laplace_discretization_converges_and_is_ordered():
    r = small("laplace")
    mean_gap = []
    for cells in (64, 256, 1024):
        up = blanket_atoms(r, 0.2, 0.9, cells=cells)
        down = blanket_atoms(r, 0.2, 0.9, cells=cells, rounding=Rounding.DOWN)
        assert np.allclose(up.weight.sum(), down.weight.sum(), rtol=1e-13)
        mean_gap.append(np.dot(up.weight, up.a) - np.dot(down.weight, down.a))
    assert mean_gap[0] > mean_gap[1] > mean_gap[2] > 0
    assert mean_gap[1] / mean_gap[2] == pytest.approx(4.0, rel=0.1)  # first order in the width
    # Reversed direction is built afresh, not swapped (swapping would round the wrong way).
    fwd, bwd = blanket_atoms(r, 0.2, 0.9), blanket_atoms(r, 0.9, 0.2)
    assert np.dot(bwd.weight, bwd.a) >= 1 and np.dot(bwd.weight, bwd.b) <= 1
    assert not same_atoms(bwd, fwd.swapped(), rtol=1e-9)


def test_laplace_blanket_is_min_over_all_inputs():
    """inf over x in [0, 1] of the density equals min(R(0), R(1)) (the farthest endpoint)."""
    r = small("laplace")
    y = np.linspace(-3, 4, 701)
    xs = np.linspace(0, 1, 101)
    full = r.log_prob(xs[:, None], y[None, :]).min(axis=0)
    ends = np.minimum(r.log_prob(0.0, y), r.log_prob(1.0, y))
    assert np.allclose(full, ends, atol=1e-12)


def test_laplace_exact_pair_rounding_brackets():
    r = small("laplace")
    down = exact_pair_atoms(r, 0.0, 1.0, 0.4)
    up = exact_pair_atoms(r, 0.0, 1.0, 0.4, rounding=Rounding.UP)
    assert down.rounding is Rounding.DOWN and up.rounding is Rounding.UP
    assert down.weight.sum() == pytest.approx(1.0, rel=1e-13)
    assert np.dot(down.weight, down.a) <= 1 <= np.dot(up.weight, up.a)


def test_laplace_pair_grid_orbits():
    pairs = laplace_pair_grid(6)
    assert pairs[0] == (0.0, 1.0)
    canon = {frozenset({round(u, 9), round(v, 9)}) for u, v in pairs}
    mirrored = {frozenset({round(1 - v, 9), round(1 - u, 9)}) for u, v in pairs}
    all_pairs = {frozenset({round(u, 9), round(v, 9)})
                 for u, v in itertools.combinations(np.linspace(0, 1, 6), 2)}
    assert canon | mirrored == all_pairs and len(pairs) == 9


def test_laplace_mirror_configurations_have_bitwise_equal_atoms():
    """Reflection y -> 1 - y maps Laplace's (x0, x1, x2) to (1 - x0, 1 - x1, 1 - x2); on the
    dyadic grid the cell weights L e^{max f} exprel(-|df|) are symmetric in the two cell ends,
    so the mirror images have equal atom multisets and the engine computes them once (the
    weight L e^{f(u)} exprel(f(v) - f(u)) differed in the last bits)."""
    from shufflesim.protocols.bounds.atoms import Rounding
    from shufflesim.protocols.bounds.engine.core import atoms_key
    from shufflesim.protocols.bounds.numerical.decompositions import blanket_atoms, exact_pair_atoms
    from shufflesim.protocols.randomizers import make_randomizer
    r = make_randomizer("laplace", epsilon0=4.0)
    for x2 in (0.0, 0.25, 0.5):
        for rounding in (Rounding.UP, Rounding.DOWN):
            forward = exact_pair_atoms(r, 0.0, 1.0, x2, rounding=rounding)
            mirror = exact_pair_atoms(r, 1.0, 0.0, 1.0 - x2, rounding=rounding)
            assert atoms_key(forward) == atoms_key(mirror)
    assert atoms_key(blanket_atoms(r, 0.0, 1.0)) == atoms_key(blanket_atoms(r, 1.0, 0.0))
