"""Tests specific to the categorical randomizers (frequency oracles).

Exact checks against enumeration (support probabilities, grouping), closed forms from 000
(blanket masses gamma, App. A and Table 2), structural checks (indices, Hadamard transform, hash
modes), validation, and batched shapes. Statistical checks use fixed seeds and 5-sigma bands.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats
from scipy.linalg import hadamard

from shufflesim.protocols.errors import ParameterError
from shufflesim.protocols.randomizers import Randomizer, make_randomizer
from shufflesim.protocols.randomizers.hadamard import HadamardResponse, walsh_hadamard
from shufflesim.protocols.randomizers.local_hash import (
    BinaryLocalHash,
    OptimizedLocalHash,
    splitmix_hash,
)
from shufflesim.protocols.randomizers.subset import SubsetSelection

ORACLES = {
    "brr": dict(epsilon0=0.6),
    "krr": dict(epsilon0=0.9, domain_size=6),
    "subset": dict(epsilon0=0.4, domain_size=7),
    "rappor": dict(epsilon0=1.7, domain_size=5),
    "oue": dict(epsilon0=0.8, domain_size=6),
    "blh": dict(epsilon0=1.3, domain_size=5),
    "olh": dict(epsilon0=2.1, domain_size=4),
    "hr": dict(epsilon0=0.7, domain_size=6),
}


def _oracle(name):
    return make_randomizer(name, **ORACLES[name])


def _support_matrix(r: Randomizer) -> np.ndarray:
    """M[j, v] = 1 if enumerated output j supports v (via ``aggregate`` of one report)."""
    outputs = r.outputs_from_index(np.arange(r.output_size))
    return r.aggregate(outputs[:, None, ...])


@pytest.mark.parametrize("name", sorted(ORACLES))
def test_support_probabilities_match_declared_distribution(name):
    """P[report of x supports v] computed exactly from output_pmf equals p* on the diagonal
    and q* off it."""
    r = _oracle(name)
    support = _support_matrix(r) @ np.eye(r.input_domain.size)
    prob = r.output_pmf() @ support
    p, q = r.support_probabilities()
    d = r.input_domain.size
    np.testing.assert_allclose(np.diag(prob), np.full(d, p), rtol=1e-12)
    np.testing.assert_allclose(prob[~np.eye(d, dtype=bool)], q, rtol=1e-12)


@pytest.mark.parametrize("name", sorted(ORACLES))
def test_pair_support_probabilities_match_declared_distribution(name):
    """P[report of x supports u and v] from enumeration: r_own if x in {u, v}, r_other otherwise
    (plus HR's excess for row(x) = row(u) xor row(v))."""
    r = _oracle(name)
    d = r.input_domain.size
    m = _support_matrix(r).astype(float)
    pmf = r.output_pmf()
    joint = np.einsum("xj,ju,jv->xuv", pmf, m, m)
    r_own, r_other = r.support_pair_probabilities()
    for x in range(d):  # small domain
        expected = np.full((d, d), r_other)
        expected[x, :] = expected[:, x] = r_own
        if hasattr(r, "support_pair_excess"):
            expected += r.support_pair_excess(np.eye(d)[x])
        off = ~np.eye(d, dtype=bool)
        np.testing.assert_allclose(joint[x][off], expected[off], rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("name", ["krr", "subset", "rappor", "oue", "blh", "olh", "hr"])
@pytest.mark.parametrize("anchors", [(0, 1, 2), (2, 0), (1,), (3, 1, 1), (0, 1, 2, 3)])
def test_output_groups_match_generic_grouping(name, anchors):
    """Closed-form groups equal the base-class enumeration after merging equal ratio triples."""
    r = _oracle(name)
    fast = r.output_groups(anchors)
    slow = Randomizer.output_groups(r, anchors)
    assert fast.anchors == slow.anchors == tuple(anchors)
    merged_fast, merged_slow = _merged(fast), _merged(slow)
    assert merged_fast.keys() == merged_slow.keys()
    for key, value in merged_fast.items():
        np.testing.assert_allclose(value, merged_slow[key], rtol=1e-12, atol=1e-300)
    np.testing.assert_allclose(fast.mass.sum(axis=1), 1.0, rtol=1e-12)


def _merged(groups) -> dict:
    """{ratio triple: (masses..., blanket mass)} with groups of equal ratios summed."""
    merged: dict = {}
    for g in range(groups.mass_min.size):
        key = tuple(np.round(groups.mass[:, g] / groups.mass_min[g], 9))
        total = merged.setdefault(key, np.zeros(groups.mass.shape[0] + 1))
        total += np.append(groups.mass[:, g], groups.mass_min[g])
    return merged


def _gamma_000(name: str, eps: float, d: int) -> float:
    """Blanket mass gamma = sum_y min_x R(x)(y) from 000 App. A (closed forms)."""
    e = math.exp(eps)
    if name == "blh":  # 000 App. A.1
        return 2 / (1 + e) + (e - 1) * 2.0 ** (1 - d) / (1 + e)
    if name == "rappor":  # 000 App. A.2, the sum over y done in closed form
        h = math.exp(eps / 2)
        return 1 / h + (h - 1 / h) * math.exp(-d * math.log1p(h))
    if name == "oue":  # 000 App. A.3
        return (1 + e) / (2 * e) + (1 - 1 / e) / 2 * math.exp(-(d - 1) * math.log1p(e))
    if name == "hr":  # 000 App. A.4, with D the Hadamard size
        size = 1 << d.bit_length()
        return 2 / (1 + e) + 2 * (e - 1) / ((1 + e) * size)
    raise KeyError(name)


@pytest.mark.parametrize("name", ["blh", "rappor", "oue", "hr"])
@pytest.mark.parametrize("eps,d", [(0.3, 5), (1.7, 12), (4.0, 300), (0.9, 2000)])
def test_blanket_mass_matches_000_appendix_a(name, eps, d):
    """sum of mass_min over groups equals 000's gamma (App. A.1-A.4), also for huge d where
    only the closed-form grouping is feasible."""
    r = make_randomizer(name, epsilon0=eps, domain_size=d)
    groups = r.output_groups((0, 1, 2))
    assert groups.mass_min.sum() == pytest.approx(_gamma_000(name, eps, d), rel=1e-12)
    np.testing.assert_allclose(groups.mass.sum(axis=1), 1.0, rtol=1e-12)
    assert (groups.mass_min > 0).all()  # no empty or underflowed group (ratios stay finite)


@pytest.mark.parametrize("d", [50, 5000])
def test_olh_seeded_groups_are_distributions(d):
    groups = OptimizedLocalHash(1.6, d).output_groups((4, 0, 9))
    np.testing.assert_allclose(groups.mass.sum(axis=1), 1.0, rtol=1e-12)
    assert (groups.mass_min > 0).all()
    g = 6
    e = math.exp(1.6)
    gamma = (g / (e + g - 1)) + (e - 1) / (e + g - 1) * g ** (1.0 - d)  # 000 App. A.1, g-ary
    assert groups.mass_min.sum() == pytest.approx(gamma, rel=1e-12)


@pytest.mark.parametrize("eps,d", [(1.3, 9), (0.4, 5), (2.5, 100)])
def test_hr_decomposition_coefficients_vs_000_table_2(eps, d):
    """Blanket masses of the ratio classes for the pair (x1^0, x1^1) = (0, 1).

    000 App. A.4 / Table 2: p = 1/(2(1+e)) for each of (e, 1) and (1, e) -- reproduced. For
    (e, e) Table 2 gives q = 1/(2(1+e)) and for (1, 1) r = 1/(2(1+e)) + 2(e-1)/((1+e)D); but
    column y = 0 has H = +1 on every row, so its minimum is the high level and its ratios are
    (1, 1), not (e, e). Exactly (checked also by enumeration in the grouping test):
    q = 1/(2(1+e)) - 2/(D(1+e)) and r = 1/(2(1+e)) + 2e/(D(1+e)). Table 2 moves the mass
    2/(D(1+e)) of one column from r to q; q + r (and gamma) agree."""
    r = HadamardResponse(eps, d)
    size = r.hadamard_size
    groups = r.output_groups((0, 1))
    e = math.exp(eps)
    ratio0 = groups.mass[0] / groups.mass_min
    ratio1 = groups.mass[1] / groups.mass_min

    def mass(a, b):
        return groups.mass_min[np.isclose(ratio0, a) & np.isclose(ratio1, b)].sum()

    half = 1 / (2 * (1 + e))
    assert mass(e, 1) == pytest.approx(half, rel=1e-12)
    assert mass(1, e) == pytest.approx(half, rel=1e-12)
    assert mass(e, e) == pytest.approx(half - 2 / (size * (1 + e)), rel=1e-12)
    assert mass(1, 1) == pytest.approx(half + 2 * e / (size * (1 + e)), rel=1e-12)
    table2_q_plus_r = 2 * half + 2 * (e - 1) / ((1 + e) * size)
    assert mass(e, e) + mass(1, 1) == pytest.approx(table2_q_plus_r, rel=1e-12)


def test_krr_and_subset_blanket_masses():
    eps, k = 0.8, 7
    groups = make_randomizer("krr", epsilon0=eps, domain_size=k).output_groups((0, 1, 2))
    assert groups.mass_min.sum() == pytest.approx(k / (math.exp(eps) + k - 1), rel=1e-12)
    s = SubsetSelection(eps, 30, 4)
    gamma = math.comb(30, 4) / (math.comb(29, 3) * math.exp(eps) + math.comb(29, 4))
    assert s.output_groups((5, 9)).mass_min.sum() == pytest.approx(gamma, rel=1e-12)
    # Large d: C(d, k) / Z = d / (k e^eps + d - k).
    big = SubsetSelection(eps, 3000, 700)
    groups = big.output_groups((5, 9, 11))
    expected = 3000 / (700 * math.exp(eps) + 2300)
    assert groups.mass_min.sum() == pytest.approx(expected, rel=1e-13)
    np.testing.assert_allclose(groups.mass.sum(axis=1), 1.0, rtol=1e-13)


# -- subset selection ----------------------------------------------------------------------

def test_subset_index_is_a_bijection():
    r = SubsetSelection(1.0, 10, 3)
    outputs = r.outputs_from_index(np.arange(r.output_size))
    assert outputs.shape == (120, 10)
    assert (outputs.sum(axis=1) == 3).all()
    assert len({tuple(row) for row in outputs}) == 120
    np.testing.assert_array_equal(r.output_index(outputs), np.arange(120))


def test_subset_defaults_and_validation():
    assert SubsetSelection(1.0, 20).subset_size == round(20 / (math.e + 1))
    assert SubsetSelection(8.0, 20).subset_size == 1
    assert SubsetSelection(0.01, 20).subset_size == 10
    with pytest.raises(ParameterError, match="subset_size"):
        SubsetSelection(1.0, 5, 5)
    with pytest.raises(ParameterError, match="subset_size"):
        SubsetSelection(1.0, 5, 0)
    with pytest.raises(ParameterError, match="domain_size"):
        SubsetSelection(1.0, 1)


def test_subset_large_domain_inclusion_rate():
    """d = 500, k = 60: P[x in S] and P[v in S] against p*, q* (5 sigma bands)."""
    r = SubsetSelection(1.2, 500, 60)
    n = 4000
    reports = r.randomize(np.full(n, 17), np.random.default_rng(11))
    assert (reports.sum(axis=1) == 60).all()
    p, q = r.support_probabilities()
    assert abs(reports[:, 17].mean() - p) < 5 * math.sqrt(p * (1 - p) / n)
    others = np.delete(reports, 17, axis=1).mean()
    assert abs(others - q) < 5 * math.sqrt(q * (1 - q) / (n * 499)) * math.sqrt(2)


# -- local hashing -------------------------------------------------------------------------

def test_local_hash_modes():
    assert BinaryLocalHash(1.0, 19).exact_hash          # 2^19 * 2 = 2^20 outputs
    assert not BinaryLocalHash(1.0, 20).exact_hash
    assert OptimizedLocalHash(1.0, 4).hash_range == round(math.e) + 1
    assert OptimizedLocalHash(3.0, 4).hash_range == 21
    assert not OptimizedLocalHash(3.0, 4).exact_hash    # 21^5 > 2^20
    with pytest.raises(ParameterError, match="hash_range"):
        OptimizedLocalHash(1.0, 4, hash_range=1)


def test_exact_hash_table_is_the_function_table():
    r = OptimizedLocalHash(1.0, 3, hash_range=3)
    ids = np.arange(27)
    table = r.hash_values(ids[:, None], np.arange(3))
    # every function [3] -> [3] appears exactly once
    assert len({tuple(row) for row in table}) == 27


def test_seeded_hash_is_uniform_and_pairwise_independent():
    """splitmix hash: (h(u), h(v)) over random seeds is uniform on [g]^2 (chi-square)."""
    g = 5
    seeds = np.random.default_rng(3).integers(0, 1 << 64, size=50_000, dtype=np.uint64)
    pair = splitmix_hash(seeds[:, None], np.array([[11, 12]]), g)
    cells = np.bincount(pair[:, 0] * g + pair[:, 1], minlength=g * g)
    assert stats.chisquare(cells).pvalue > 1e-3


def test_seeded_hash_is_splitmix64():
    """h_s(v) is the splitmix64 output for state s + (v + 1) * golden: with s = 0 and v = 0 the
    first splitmix64 output from seed 0, 0xE220A8397B1DCDAF (reproducible across versions)."""
    g = 1_000_003
    assert splitmix_hash(np.array([0], dtype=np.uint64), 0, g)[0] == 0xE220A8397B1DCDAF % g


def test_seeded_olh_support_counts():
    """d = 300 (seeded mode): mean support counts of the per-user path vs p*, q* and the
    exact variance (5 sigma), and agreement with the sufficient-statistic sampler's mean."""
    r = OptimizedLocalHash(1.4, 300)
    assert not r.exact_hash
    rng = np.random.default_rng(21)
    n = 20_000
    values = rng.integers(0, 300, n)
    values[:5000] = 7
    counts = np.bincount(values, minlength=300)
    support = r.aggregate(r.randomize(values, rng))
    p, q = r.support_probabilities()
    expected = counts * p + (n - counts) * q
    sd = np.sqrt(counts * p * (1 - p) + (n - counts) * q * (1 - q))
    z = (support - expected) / sd
    assert abs(z[7]) < 5
    assert abs(z.mean()) < 5 / math.sqrt(300)          # average of 300 nearly independent z
    assert np.std(z) == pytest.approx(1.0, abs=5 * math.sqrt(2 / 300))


def test_local_hash_log_prob_is_a_distribution_in_seeded_mode():
    """Seeded mode: for a fixed seed, the bucket probabilities sum to 2^-64."""
    r = OptimizedLocalHash(1.0, 100, hash_range=7)
    y = np.stack([np.full(7, 12345), np.arange(7)], axis=-1)
    total = np.exp(r.log_prob(3, y)).sum()
    assert total == pytest.approx(2.0**-64, rel=1e-12)


# -- Hadamard response ---------------------------------------------------------------------

def test_walsh_hadamard_matches_scipy():
    a = np.random.default_rng(0).integers(-5, 9, size=(3, 2, 32))
    np.testing.assert_array_equal(walsh_hadamard(a), a @ hadamard(32).T)


@pytest.mark.parametrize("d,size", [(2, 4), (3, 4), (4, 8), (7, 8), (8, 16), (100, 128)])
def test_hr_size_convention(d, size):
    assert HadamardResponse(1.0, d).hadamard_size == size


def test_hr_pmf_is_000_definition():
    """P[y | x] = exp(eps/2 H[x+1, y]) / Z with the scipy Hadamard matrix."""
    eps, d = 0.9, 6
    r = HadamardResponse(eps, d)
    h = hadamard(8)[1:d + 1]
    weights = np.exp(eps / 2 * h)
    np.testing.assert_allclose(r.output_pmf(), weights / weights.sum(axis=1, keepdims=True),
                               rtol=1e-12)


def test_hr_support_counts_by_brute_force():
    r = HadamardResponse(1.0, 11)
    outputs = np.random.default_rng(1).integers(0, 16, size=(4, 50))
    h = hadamard(16)[1:12]
    expected = (h[None, :, :] == 1)[:, :, outputs].transpose(0, 2, 3, 1).sum(axis=2)[0]
    np.testing.assert_array_equal(r.aggregate(outputs), expected)


# -- shared behaviour ----------------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(ORACLES))
def test_batched_shapes(name):
    r = _oracle(name)
    d = r.input_domain.size
    values = np.random.default_rng(2).integers(0, d, size=(2, 3, 40))
    reports = r.randomize(values, np.random.default_rng(3))
    assert reports.shape == (2, 3, 40) + r.output_shape
    support = r.aggregate(reports)
    assert support.shape == (2, 3, d)
    flat = r.aggregate(reports.reshape((6, 40) + r.output_shape))
    np.testing.assert_array_equal(support.reshape(6, d), flat)
    one = r.aggregate(reports[1, 2][None])[0]
    np.testing.assert_array_equal(support[1, 2], one)
    if r.has_aggregate_sampler:
        counts = np.stack([np.bincount(v, minlength=d) for v in values.reshape(6, 40)])
        sampled = r.sample_aggregate(counts.reshape(2, 3, d), np.random.default_rng(4))
        assert sampled.shape == (2, 3, d)


@pytest.mark.parametrize("name", sorted(ORACLES))
def test_invalid_values_and_parameters(name):
    r = _oracle(name)
    d = r.input_domain.size
    rng = np.random.default_rng(0)
    with pytest.raises(ParameterError, match="values"):
        r.randomize(np.array([0, d]), rng)
    with pytest.raises(ParameterError, match="values"):
        r.randomize(np.array([-1, 0]), rng)
    with pytest.raises(ParameterError, match="values"):
        r.randomize(np.array([0.5]), rng)
    with pytest.raises(ParameterError, match="epsilon0"):
        make_randomizer(name, **{**ORACLES[name], "epsilon0": -1.0})
    with pytest.raises(ParameterError, match="epsilon0"):
        make_randomizer(name, **{**ORACLES[name], "epsilon0": float("inf")})
    if "domain_size" in ORACLES[name]:
        with pytest.raises(ParameterError, match="domain_size"):
            make_randomizer(name, **{**ORACLES[name], "domain_size": 1})


def test_brr_equals_two_ary_krr():
    brr = make_randomizer("brr", epsilon0=1.3)
    krr = make_randomizer("krr", epsilon0=1.3, domain_size=2)
    np.testing.assert_allclose(brr.output_pmf(), krr.output_pmf(), rtol=1e-14)
    assert brr.support_probabilities() == pytest.approx(krr.support_probabilities(), rel=1e-14)


def test_krr_sampler_large_domain_memory_and_law():
    """k = 5000: no k x k matrix; totals preserved and kept counts ~ Binomial(c_x, p)."""
    r = make_randomizer("krr", epsilon0=2.0, domain_size=5000)
    counts = np.zeros(5000, dtype=np.int64)
    counts[:3] = [40_000, 10, 0]
    out = r.sample_aggregate(np.broadcast_to(counts, (4, 5000)), np.random.default_rng(9))
    assert (out.sum(axis=1) == counts.sum()).all()
    p, q = r.support_probabilities()
    mean0 = counts[0] * p + (counts.sum() - counts[0]) * q
    sd0 = math.sqrt(counts[0] * p * (1 - p) + (counts.sum() - counts[0]) * q * (1 - q))
    assert (np.abs(out[:, 0] - mean0) < 5 * sd0).all()
