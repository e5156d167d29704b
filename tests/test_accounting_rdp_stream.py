"""Renyi moments of the k-RR blanket pair from a stream of aggregates (issue 32, rdp-blanket
over fewer than 30 rounds at small n: the whole aggregate set of the wide windows was 32 million
outcomes, 6 GB, at n = 1000).

enumeration.aggregate_stream must give exactly the outcomes of enumeration.aggregates, and
rdp._log_moments must give the same moments from the stream, batch by batch, as from the
whole arrays."""

from __future__ import annotations

import numpy as np
import pytest

from shufflesim.protocols.accounting import enumeration, m_bins, pairs, rdp
from shufflesim.protocols.randomizers import make_randomizer


def _blanket(k: int, eps0: float):
    return pairs.blanket_model(make_randomizer("krr", epsilon0=eps0, domain_size=k))


@pytest.mark.parametrize(("k", "eps0", "n", "tail"), [(3, 1.0, 300, 1e-15), (10, 0.5, 200, 1e-40),
                                                      (3, 4.0, 150, 1e-60)])
def test_stream_holds_exactly_the_aggregates(k, eps0, n, tail):
    model = _blanket(k, eps0)
    whole = enumeration.aggregates(model, n, tail=tail, weak_rtol=0.002)
    stream = enumeration.aggregate_stream(model, n, tail=tail, weak_rtol=0.002)
    parts = list(stream.parts)
    assert len(parts) > 1
    for i, name in enumerate(("p0", "p1", "ell", "lo", "hi")):
        np.testing.assert_array_equal(np.concatenate([p[i] for p in parts]),
                                      getattr(whole, name))
    assert (stream.outside0, stream.outside1, stream.outcomes, stream.outside_mass) == \
        (whole.outside0, whole.outside1, whole.outcomes, whole.outside_mass)


def test_stream_of_a_pair_that_is_not_symmetric_is_its_aggregates():
    model = pairs.exact_models(make_randomizer("krr", epsilon0=1.0, domain_size=3))
    model = next(m for m in model if not enumeration.is_symmetric(m))
    whole = enumeration.aggregates(model, 60)
    stream = enumeration.aggregate_stream(model, 60)
    (part,) = list(stream.parts)
    np.testing.assert_array_equal(part[2], whole.ell)
    assert stream.outside0 == whole.outside0


@pytest.mark.parametrize("chunk", [1 << 10, 1 << 14])
def test_moments_from_the_stream_batch_by_batch_are_the_whole_sums(monkeypatch, chunk):
    model = _blanket(3, 1.0)
    n = 300
    whole = enumeration.aggregates(model, n, tail=1e-30, weak_rtol=0.002)
    expected = rdp._log_moments(whole, model, n, rdp.ORDERS)
    monkeypatch.setattr(rdp, "STREAM_CHUNK", chunk)
    batches = list(rdp._batches(enumeration.aggregate_stream(model, n, tail=1e-30)))
    assert len(batches) > 1
    assert sum(b[0].size for b in batches) == whole.p0.size
    got = rdp._log_moments(enumeration.aggregate_stream(model, n, tail=1e-30), model, n,
                           rdp.ORDERS)
    assert len(got) == len(expected)
    for a, b in zip(got, expected, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def test_few_rounds_at_small_n_stream_the_pair_itself(monkeypatch):
    """Over few rounds at small n the k-RR blanket pair itself, streamed: by (D, bin of m)
    (m_bins.py) up to rdp.M_BINS_UP_TO entries, from its (S, D, h3-bin) enumeration above."""
    model = _blanket(3, 1.0)
    for tail in (enumeration.DEFAULT_TAIL, rdp.RDP_TAIL):
        agg = rdp._dominating_aggregates(model, 300, 0.002, tail=tail, rounds=1)
        assert isinstance(agg, enumeration.AggregateStream)
        whole = m_bins.m_bin_aggregates(model, 300, tail=tail, weak_rtol=0.002)
        assert sum(part[0].size for part in agg.parts) == whole.p0.size
    monkeypatch.setattr(rdp, "M_BINS_UP_TO", 0)
    agg = rdp._dominating_aggregates(model, 300, 0.002, rounds=1)
    assert isinstance(agg, enumeration.AggregateStream)
    wide = rdp._dominating_aggregates(model, 300, 0.002, tail=rdp.RDP_TAIL, rounds=1)
    assert isinstance(wide, enumeration.AggregateStream)


def test_pld_and_renyi_moments_share_one_split(monkeypatch):
    """The round's PLD and its Renyi moments split the same aggregates once (pld.upper_split,
    memoised on the cached aggregates); the moments equal those of the split of the masses
    raised by their allowance, as before the sharing."""
    from shufflesim.protocols.accounting import blocks, pld

    model, n = pairs.clone_model(1.5), 3000
    interval = max(model.loss_scale(n) / 200.0, model.loss_max * 2e-7)
    assert interval == pld.grid_interval([(model, n)], "upper", 1)
    agg = blocks.block_aggregates(model, n, "upper", tail=1e-15)
    calls = []
    real = pld._split_to_grid
    monkeypatch.setattr(pld, "_split_to_grid", lambda *a: calls.append(1) or real(*a))
    low, values = pld.upper_split(agg, interval, 0)
    split = len(calls)                      # one call per piece of pld.SPLIT_CHUNK outcomes
    assert split == -(-agg.p0.size // pld.SPLIT_CHUNK) and (interval, 0) in agg.grids
    got = rdp._log_moments(agg, model, n, rdp.ORDERS)     # the memo: no second split
    assert len(calls) == split
    eta = pld.mass_relative_error(n)
    acc = pld._Accumulator()
    real(acc, pld._widen(agg.ell, True), agg.p0 * (1 + eta), interval)
    keep = acc.values > 0
    losses = (np.arange(acc.values.size) + acc.low) * interval
    expected = rdp._log_sums(np.log(acc.values[keep]), losses[keep], rdp.ORDERS)
    np.testing.assert_allclose(got[0], expected, rtol=1e-13, atol=1e-13)
    # the PLD's masses are the split scaled by 1 - eta (and its top carries the shaved mass)
    (p,) = pld.round_plds(model, n, interval, "upper", both=False)
    with_low = np.zeros(values.size)
    with_low[p.lower_index - low:p.lower_index - low + p.probs.size] = p.probs
    head = slice(0, p.lower_index - low + p.probs.size - 1)
    np.testing.assert_allclose(with_low[head], values[head] * (1 - eta), rtol=1e-15, atol=0)
    assert not values.flags.writeable


@pytest.mark.parametrize(("k", "eps0", "n", "rounds"), [(10, 1.0, 20_000, 100), (3, 4.0, 2000, 10)])
def test_basic_started_from_advanced_profile_is_certified_and_within_rtol(monkeypatch, k, eps0,
                                                                         n, rounds):
    """basic after advanced starts its per-round eps search at the round's profile (the PLD
    that advanced built): fewer engine questions, and the same engine-certified lattice point
    as without the start (baselines.round_epsilon)."""
    from shufflesim.protocols.accounting import baselines, compose
    from shufflesim.protocols.bounds.numerical.optimal import optimal_blanket_delta

    r = make_randomizer("krr", epsilon0=eps0, domain_size=k)
    compose.clear_caches()
    asked = []
    real = baselines.optimal_blanket_delta
    monkeypatch.setattr(baselines, "optimal_blanket_delta",
                        lambda *a, **kw: asked.append(a[2]) or real(*a, **kw))
    cold = compose.compose_rounds([compose.Round(r, n, rounds)], 1e-6, "basic").epsilon
    cold_questions = len(asked)
    assert baselines._profile_start(r, n, 1e-6 / rounds, rounds) is None
    compose.compose_rounds([compose.Round(r, n, rounds)], 1e-6, "advanced")
    start = baselines._profile_start(r, n, 1e-6 / rounds, rounds)
    assert start is not None
    asked.clear()
    warm = compose.compose_rounds([compose.Round(r, n, rounds)], 1e-6, "basic").epsilon
    assert len(asked) < cold_questions
    assert warm == cold      # the same lattice point, whichever method ran first
    # the profile's slope predicts the crossing: no more questions than without it
    with_slope = len(asked)
    asked.clear()
    assert baselines.round_epsilon(r, n, 1e-6 / rounds, start[:2]) == pytest.approx(
        warm / rounds, rel=1e-14)
    assert with_slope <= len(asked)
    eps_t = warm / rounds
    assert real(r, n, eps_t, threshold=1e-6 / rounds).delta <= 1e-6 / rounds
    assert optimal_blanket_delta(r, n, eps_t * (1 - 2e-4)).delta > 1e-6 / rounds
    compose.clear_caches()
    assert baselines._profile_start(r, n, 1e-6 / rounds, rounds) is None


def _plain_split(out, loss, mass, interval, first):
    """Adds the connect-the-dots split by its plain formulas (pld._split_to_grid's docstring)
    to ``out`` (grid index ``first`` at 0), lower points first, as the accumulator does."""
    base = np.floor(loss / interval)
    frac = np.clip(np.expm1(-(loss - base * interval)) / np.expm1(-interval) * (1 + 1e-12),
                   0.0, 1.0)
    index = base.astype(np.int64) - first
    out += np.bincount(index, weights=mass * (1.0 - frac), minlength=out.size)
    out += np.bincount(index + 1, weights=mass * frac, minlength=out.size)


def test_in_place_split_is_the_plain_formulas_bit_for_bit():
    from shufflesim.protocols.accounting import pld

    rng = np.random.default_rng(7)
    size, interval = 50_000, 3e-4
    ell = rng.normal(scale=0.05, size=size)
    lo = ell - rng.random(size) * 0.004
    hi = ell + rng.random(size) * 0.004
    hi[::5] = lo[::5]                       # aggregates of one loss (width 0)
    mass = rng.random(size)
    kept = [a.copy() for a in (ell, lo, hi, mass)]
    acc = pld._Accumulator()
    pld._upper_direction(acc, mass, ell, lo, hi, interval)
    for a, b in zip((ell, lo, hi, mass), kept, strict=True):
        np.testing.assert_array_equal(a, b)        # the inputs are not written
    # the plain formulas: widen, clip, share, then each end split onto the grid
    low = 1e-13 * np.abs(lo) + 1e-14
    high = 1e-13 * np.abs(hi) + 1e-14
    lo_w, hi_w = lo - low, hi + high
    ell_c = np.clip(ell, lo_w, hi_w)
    width = hi_w - lo_w
    with np.errstate(divide="ignore", invalid="ignore"):
        share = np.where(width > 0, np.expm1(lo_w - ell_c)
                         / np.expm1(-np.where(width > 0, width, 1)), 1.0)
    share = np.clip(share * (1 + 1e-12), 0.0, 1.0)
    first = int(np.floor(lo_w / interval).min())
    expected = np.zeros(int(np.floor(hi_w / interval).max()) - first + 2)
    _plain_split(expected, hi_w, mass * share, interval, first)      # the upper ends first
    _plain_split(expected, lo_w, mass * (1.0 - share), interval, first)
    assert acc.low == first
    np.testing.assert_array_equal(acc.values, expected)


def test_optimal_blanket_after_advanced_composes_the_same_cached_pld(monkeypatch):
    """advanced's profile and optimal-blanket's composition ask pld.cached_round_plds with the
    same arguments, so the round's PLD is built once per command."""
    from shufflesim.protocols.accounting import compose, pld

    r = make_randomizer("krr", epsilon0=1.0, domain_size=10)
    compose.clear_caches()
    built = []
    real = pld.round_plds
    monkeypatch.setattr(pld, "round_plds", lambda *a, **kw: built.append(a[0].label)
                        or real(*a, **kw))
    compose.compose_rounds([compose.Round(r, 20_000, 30)], 1e-6, "advanced")
    assert len(built) == 1
    for method in ("optimal-blanket", "basic", "rdp-blanket"):
        compose.compose_rounds([compose.Round(r, 20_000, 30)], 1e-6, method)
    assert len(built) == 1
    compose.clear_caches()


@pytest.mark.parametrize("shape", [(3311, 79, 11), (1067, 245, 14), (40, 3, 5)])
def test_small_product_is_the_matrix_product(shape):
    """enumeration.small_product: the product in row blocks below OpenBLAS's one-thread
    threshold, equal to a @ b up to rounding (every block of rows once, in order)."""
    m, k, n = shape
    rng = np.random.default_rng(3)
    a, b = rng.random((m, k)), rng.random((k, n))
    got = enumeration.small_product(a, b)
    assert got.shape == (m, n)
    np.testing.assert_allclose(got, a @ b, rtol=1e-13, atol=0)
