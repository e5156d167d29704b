"""Conformance of the multi-message randomizers (issue 15 item 1; protocols/randomizers/
multi_message): declared distributions (one message, one ordered report, one user's multiset)
against samples (chi-square, fixed seeds), the aggregate path against the reports path and the
exact moments, the 001 Table 3 rows against brute force over the declared distributions, the
parameter derivations of 001 Sec. 8.2, and one-line errors for bad parameters."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from shufflesim.protocols.errors import ParameterError
from shufflesim.protocols.randomizers import make_randomizer
from shufflesim.protocols.randomizers.multi_message.balls_into_bins import (
    balls_into_bins_blanket_total,
)
from shufflesim.protocols.randomizers.multi_message.base import (
    MultiMessageRandomizer,
    message_histogram,
)
from shufflesim.protocols.randomizers.multi_message.cheu import cheu_flip_probability

#: Small configurations of every multi-message randomizer (alphabets small enough to enumerate).
CONFIGS = [
    ("balcer", dict(epsilon0=1.0, blanket_messages=3, coin_probability=0.3)),
    ("balcer", dict(epsilon0=1.0, blanket_messages=2, coin="uniform")),
    ("cheu", dict(epsilon0=1.0, domain_size=3, flip_probability=0.2, blanket_messages=2)),
    ("balls_into_bins", dict(epsilon0=1.0, bins=7, special_bins=2, blanket_messages=2)),
    ("balls_into_bins", dict(epsilon0=1.0, bins=4, special_bins=1, blanket_messages=1)),
    ("pure_dump", dict(epsilon0=1.0, domain_size=4, blanket_messages=2)),
    ("mix_dump", dict(epsilon0=1.0, domain_size=4, flip_probability=0.3, blanket_messages=2)),
]
IDS = [f"{name}-{i}" for i, (name, _) in enumerate(CONFIGS)]
NAMES = ("balcer", "cheu", "balls_into_bins", "pure_dump", "mix_dump")
#: Chi-square fits reject below this p-value (fixed seeds: a failure is reproducible).
ALPHA = 1e-4


@pytest.fixture(params=CONFIGS, ids=IDS)
def randomizer(request) -> MultiMessageRandomizer:
    name, params = request.param
    return make_randomizer(name, **params)


def chi_square_p(observed: np.ndarray, pmf: np.ndarray) -> float:
    """p-value of a chi-square fit of counts to a pmf; cells with expected count < 5 pooled.
    Observations in a zero-probability cell give p = 0."""
    observed = np.asarray(observed, dtype=float)
    expected = pmf * observed.sum()
    if np.any(observed[pmf == 0] > 0):
        return 0.0
    keep = expected >= 5
    obs = np.append(observed[keep], observed[~keep].sum())
    exp = np.append(expected[keep], expected[~keep].sum())
    if exp[-1] < 5:  # pool the small remainder into the smallest kept cell
        j = int(np.argmin(exp[:-1]))
        obs[j] += obs[-1]
        exp[j] += exp[-1]
        obs, exp = obs[:-1], exp[:-1]
    if obs.size < 2:
        return 1.0
    return float(stats.chisquare(obs, exp).pvalue)


def test_registered_and_contract():
    from shufflesim.protocols.randomizers import randomizer_names
    assert set(NAMES) <= set(randomizer_names())
    for name, params in CONFIGS:
        r = make_randomizer(name, **params)
        assert isinstance(r, MultiMessageRandomizer)
        assert r.messages_per_client == 1 + r.blanket_messages_per_client >= 2
        assert r.output_shape == (r.messages_per_client,) + tuple(r.message_shape)
        assert r.decomposition.name == "multi-message"
        assert r.estimand in ("frequency", "sum")


def test_randomize_shape_dtype_and_reproducible(randomizer):
    values = np.random.default_rng(1).integers(0, randomizer.input_size, size=(3, 11))
    a = randomizer.randomize(values, np.random.default_rng(5))
    b = randomizer.randomize(values, np.random.default_rng(5))
    assert a.shape == values.shape + randomizer.output_shape
    np.testing.assert_array_equal(a, b)
    assert randomizer.aggregate(a).shape == (3, randomizer.aggregate_size)
    # every message lies in the alphabet
    index = randomizer.message_index(a)
    assert index.min() >= 0 and index.max() < randomizer.message_alphabet_size


def test_refuses_personalized_budgets(randomizer):
    with pytest.raises(ParameterError):
        randomizer.randomize(np.zeros(3, dtype=int), np.random.default_rng(0),
                             epsilon=np.ones(3))


def test_declared_distributions_normalised(randomizer):
    x = np.arange(randomizer.input_size)
    pmf = randomizer.message_distribution(x)
    np.testing.assert_allclose(pmf.sum(axis=-1), 1.0, rtol=1e-12)
    np.testing.assert_allclose(randomizer.blanket_distribution().sum(), 1.0, rtol=1e-12)
    # ordered reports: the index round-trips and log_prob sums to one over all K^m reports
    size = randomizer.output_size
    assert size <= 1 << 16
    outputs = randomizer.outputs_from_index(np.arange(size))
    np.testing.assert_array_equal(randomizer.output_index(outputs), np.arange(size))
    total = np.exp(randomizer.log_prob(x[:, None], outputs[None])).sum(axis=-1)
    np.testing.assert_allclose(total, 1.0, rtol=1e-10)


def test_message_groups_consistent(randomizer):
    anchors = (0, 1)
    groups = randomizer.message_groups(anchors)
    np.testing.assert_allclose(groups.mass.sum(axis=1), 1.0, rtol=1e-10)
    np.testing.assert_allclose(groups.blanket.sum(), 1.0, rtol=1e-10)
    assert groups.count.sum() == pytest.approx(randomizer.message_alphabet_size)
    # the grouped likelihood ratios are the enumerated ones: compare the laws of
    # (P_0(y), P_1(y), blanket(y)) per message under the blanket, grouped vs enumerated
    enumerated = MultiMessageRandomizer.message_groups(randomizer, anchors)

    def law(g):
        per = np.vstack([g.mass / g.count, g.blanket[None] / g.count]).T
        keys = np.round(np.log(np.where(per > 0, per, 1e-300)), 9)
        table: dict[tuple, float] = {}
        for key, w in zip(map(tuple, keys), g.blanket, strict=True):
            table[key] = table.get(key, 0.0) + w
        return table

    a, b = law(groups), law(enumerated)
    assert a.keys() == b.keys()
    for key in a:
        assert a[key] == pytest.approx(b[key], rel=1e-9)


def test_input_and_blanket_messages_fit(randomizer):
    rng = np.random.default_rng(20240515)
    draws = 20_000
    for x in range(randomizer.input_size):
        reports = randomizer.randomize(np.full(draws, x), rng)
        first = randomizer.message_index(reports[:, 0])
        observed = np.bincount(first, minlength=randomizer.message_alphabet_size)
        assert chi_square_p(observed, randomizer.message_distribution(x)) > ALPHA, x
        blanket = randomizer.message_index(reports[:, 1:]).ravel()
        observed = np.bincount(blanket, minlength=randomizer.message_alphabet_size)
        assert chi_square_p(observed, randomizer.blanket_distribution()) > ALPHA, x


def _multiset_counts(randomizer, reports):
    """Per-user histogram over the message index: (users, K)."""
    return message_histogram(randomizer.message_index(reports), randomizer.message_alphabet_size)


def test_multiset_distribution_fit(randomizer):
    """One user's message multiset: the declared multiset_log_prob over every composition of
    m into K cells sums to one and fits samples."""
    k, m = randomizer.message_alphabet_size, randomizer.messages_per_client
    compositions = np.array([c for c in itertools.product(range(m + 1), repeat=k)
                             if sum(c) == m])
    rng = np.random.default_rng(99)
    for x in range(min(randomizer.input_size, 3)):
        log_p = randomizer.multiset_log_prob(x, compositions)
        np.testing.assert_allclose(np.exp(log_p).sum(), 1.0, rtol=1e-10)
        counts = _multiset_counts(randomizer, randomizer.randomize(np.full(20_000, x), rng))
        key = {tuple(c): i for i, c in enumerate(compositions)}
        observed = np.bincount([key[tuple(c)] for c in counts], minlength=len(compositions))
        assert chi_square_p(observed, np.exp(log_p)) > ALPHA, x


def test_multiset_log_prob_refuses_wrong_totals(randomizer):
    k, m = randomizer.message_alphabet_size, randomizer.messages_per_client
    bad = np.zeros(k)
    bad[0] = m + 1
    assert randomizer.multiset_log_prob(0, bad) == -np.inf


def test_variation_ratio_row_by_brute_force(randomizer):
    """001 Table 3's (p, beta, q) against the declared distributions: p = max P_x(y)/P_x'(y),
    beta = max TV(P_x, P_x'), q = max P_x(y)/blanket(y)."""
    row = randomizer.variation_ratio_parameters()
    pmf = randomizer.message_distribution(np.arange(randomizer.input_size))
    blanket = randomizer.blanket_distribution()
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = pmf[:, None, :] / pmf[None, :, :]
    ratios = np.where(pmf[:, None, :] > 0, ratios, 0.0)
    p = float(np.nanmax(ratios))
    tv = 0.5 * np.abs(pmf[:, None, :] - pmf[None, :, :]).sum(axis=-1).max()
    q = float((pmf / blanket).max())
    assert row.p == pytest.approx(p, rel=1e-12) if math.isfinite(p) else math.isinf(row.p)
    assert row.beta == pytest.approx(tv, rel=1e-12, abs=1e-15)
    assert row.q == pytest.approx(q, rel=1e-12)
    assert randomizer.local_epsilon == (pytest.approx(math.log(p)) if math.isfinite(p)
                                        else math.inf)


def _expected_moments(randomizer, counts):
    """Exact mean and variance of every aggregate coordinate: each message adds an indicator
    per coordinate (histograms: the message's bin; cheu: its bits)."""
    alphabet = randomizer.messages_from_index(np.arange(randomizer.message_alphabet_size))
    per_message = randomizer.aggregate_messages(alphabet[:, None])  # (K, A)
    pmf = randomizer.message_distribution(np.arange(randomizer.input_size))  # (k, K)
    p_in = pmf @ per_message  # (k, A): P[coordinate hit | x]
    p_b = randomizer.blanket_distribution() @ per_message
    n = counts.sum()
    b = randomizer.blanket_messages_per_client
    mean = counts @ p_in + n * b * p_b
    var = counts @ (p_in * (1 - p_in)) + n * b * p_b * (1 - p_b)
    return mean, var


def test_aggregate_path_matches_reports_path(randomizer):
    """Both paths' aggregates have the exact mean and variance (bands from the sample size),
    and agree coordinate by coordinate in distribution (two-sample KS, fixed seeds)."""
    k = randomizer.input_size
    counts = np.arange(1, k + 1) * 7
    reps = 4000
    rng = np.random.default_rng(7)
    sampled = randomizer.sample_aggregate(np.broadcast_to(counts, (reps, k)), rng)
    values = np.repeat(np.arange(k), counts)
    reports = randomizer.aggregate(randomizer.randomize(np.broadcast_to(values, (reps,
                                                                                 values.size)),
                                                        rng))
    assert sampled.shape == reports.shape == (reps, randomizer.aggregate_size)
    # totals: every path emits n m messages (histogram protocols)
    mean, var = _expected_moments(randomizer, counts)
    for label, agg in (("aggregate", sampled), ("reports", reports)):
        se = np.sqrt(var / reps)
        assert np.all(np.abs(agg.mean(axis=0) - mean) <= 5 * se + 1e-12), label
        sample_var = agg.var(axis=0, ddof=1)
        band = 6 * np.sqrt(2 / (reps - 1)) * var + 1e-12
        assert np.all(np.abs(sample_var - var) <= band), label
    for j in range(randomizer.aggregate_size):
        if var[j] > 0:
            assert stats.ks_2samp(sampled[:, j], reports[:, j]).pvalue > ALPHA, j


def test_aggregate_messages_is_pooled_aggregate(randomizer):
    """The pipeline's aggregate of a flat message array equals the batch path's aggregate."""
    values = np.random.default_rng(2).integers(0, randomizer.input_size, size=17)
    reports = randomizer.randomize(values, np.random.default_rng(3))
    flat = reports.reshape((-1,) + tuple(randomizer.message_shape))
    np.testing.assert_array_equal(randomizer.aggregate_messages(flat),
                                  randomizer.aggregate(reports))


# ------------------------------------------------------------------------------------------
# Parameter derivations (001 Sec. 8.2) and their documented formulas
# ------------------------------------------------------------------------------------------
def test_cheu_flip_probability_from_target():
    eps, delta, users = 1.0, 1e-6, 10_000
    f = cheu_flip_probability(eps, delta, users)
    right = 33 / 5 * ((math.exp(eps) + 1) / (math.exp(eps) - 1)) ** 2 * math.log(4 / delta)
    assert 0 < f < 0.5
    assert users * f * (1 - f) == pytest.approx(right, rel=1e-9)
    r = make_randomizer("cheu", epsilon0=eps, domain_size=8, delta=delta, design_users=users)
    assert r.flip == f
    # a larger population needs less noise; too few users have no root
    assert cheu_flip_probability(eps, delta, 10 * users) < f
    with pytest.raises(ParameterError, match="too few users"):
        make_randomizer("cheu", epsilon0=0.05, domain_size=8, delta=delta, design_users=users)


def test_balls_into_bins_blanket_from_target():
    eps, delta, d, s, users = 0.5, 1e-6, 64, 4, 1000
    total = balls_into_bins_blanket_total(eps, delta, d, s)
    assert total == pytest.approx(32 * math.log(2 / delta) * d / (eps ** 2 * s))
    r = make_randomizer("balls_into_bins", epsilon0=eps, bins=d, special_bins=s,
                        delta=delta, design_users=users)
    b = r.blanket_messages_per_client
    assert b * users >= total > (b - 1) * users
    assert r.input_size == d // s


BAD = [
    ("balcer", dict(epsilon0=1.0, blanket_messages=0, coin_probability=0.3), "blanket_messages"),
    ("balcer", dict(epsilon0=1.0, blanket_messages=2), "coin_probability"),
    ("balcer", dict(epsilon0=1.0, blanket_messages=2, coin_probability=1.0), "coin_probability"),
    ("balcer", dict(epsilon0=1.0, blanket_messages=2, coin="fair"), "coin"),
    ("balcer", dict(epsilon0=1.0, blanket_messages=2, coin="uniform", coin_probability=0.3),
     "coin_probability"),
    ("cheu", dict(epsilon0=1.0, domain_size=4, flip_probability=0.5), "flip_probability"),
    ("cheu", dict(epsilon0=1.0, domain_size=4), "flip_probability"),
    ("cheu", dict(epsilon0=1.0, domain_size=1, flip_probability=0.2), "domain_size"),
    ("balls_into_bins", dict(epsilon0=1.0, bins=4, special_bins=3, blanket_messages=1),
     "special_bins"),
    ("balls_into_bins", dict(epsilon0=1.0, bins=8, special_bins=2, domain_size=5,
                             blanket_messages=1), "domain_size"),
    ("balls_into_bins", dict(epsilon0=1.0, bins=8), "blanket_messages"),
    ("pure_dump", dict(epsilon0=1.0, domain_size=4, blanket_messages=-1), "blanket_messages"),
    ("mix_dump", dict(epsilon0=1.0, domain_size=4, flip_probability=0.75, blanket_messages=1),
     "flip_probability"),
    ("mix_dump", dict(epsilon0=0.0, domain_size=4, flip_probability=0.3, blanket_messages=1),
     "epsilon0"),
]


@pytest.mark.parametrize(("name", "params", "field"), BAD,
                         ids=[f"{n}-{f}-{i}" for i, (n, _, f) in enumerate(BAD)])
def test_bad_parameters_are_one_line_errors(name, params, field):
    with pytest.raises(ParameterError) as info:
        make_randomizer(name, **params)
    assert field in str(info.value) and "\n" not in str(info.value)


# ------------------------------------------------------------------------------------------
# Negative controls: the checks above reject a wrong sampler
# ------------------------------------------------------------------------------------------
def test_negative_control_fit_rejects_wrong_input_message():
    """A mixDUMP that flips with probability 0.8 f while declaring f is rejected."""
    from shufflesim.protocols.randomizers.multi_message.dump import MixDump

    class Leaky(MixDump):
        def sample_input_messages(self, values, rng):
            honest = MixDump(self.epsilon0, self.domain_size, 0.8 * self.flip_probability,
                             self.blanket_messages)
            return honest.sample_input_messages(values, rng)

    leaky = Leaky(1.0, 4, 0.3, 2)
    reports = leaky.randomize(np.zeros(20_000, dtype=int), np.random.default_rng(1))
    observed = np.bincount(reports[:, 0], minlength=4)
    assert chi_square_p(observed, leaky.message_distribution(0)) < ALPHA


def test_negative_control_moments_reject_wrong_aggregate_sampler():
    """A cheu sampler that forgets the blanket messages' flips is rejected by the moments."""
    r = make_randomizer("cheu", epsilon0=1.0, domain_size=3, flip_probability=0.2,
                        blanket_messages=2)
    counts = np.array([7, 14, 21])
    rng = np.random.default_rng(3)
    c = np.broadcast_to(counts, (4000, 3))
    wrong = rng.binomial(c, 0.8) + rng.binomial(counts.sum() - c, 0.2)
    mean, var = _expected_moments(r, counts)
    assert np.any(np.abs(wrong.mean(axis=0) - mean) > 5 * np.sqrt(var / 4000))
