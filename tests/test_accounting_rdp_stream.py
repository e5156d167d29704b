"""Renyi moments of the k-RR blanket pair from a stream of aggregates (issue 32, rdp-blanket
over fewer than 30 rounds at small n: the whole aggregate set of the wide windows was 32 million
outcomes, 6 GB, at n = 1000).

enumeration.aggregate_stream must give exactly the outcomes of enumeration.aggregates, and
rdp._log_moments must give the same moments from the stream, batch by batch, as from the
whole arrays."""

from __future__ import annotations

import numpy as np
import pytest

from shufflesim.protocols.accounting import enumeration, pairs, rdp
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


def test_few_rounds_at_small_n_stream_the_pair_itself():
    model = _blanket(3, 1.0)
    agg = rdp._dominating_aggregates(model, 300, 0.002, rounds=1)
    assert isinstance(agg, enumeration.AggregateStream)
    wide = rdp._dominating_aggregates(model, 300, 0.002, tail=rdp.RDP_TAIL, rounds=1)
    assert isinstance(wide, enumeration.AggregateStream)
