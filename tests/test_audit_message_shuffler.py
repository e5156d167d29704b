"""A user's shuffler sees the messages (simulator/audit/message_shuffler.py, issue 29): the
permutation check (drops, duplicates, alterations) and the order tests (relative order,
position-content), with planted faults caught at the pipeline level with default flags."""

from __future__ import annotations

import numpy as np
import pytest

from shufflesim.simulator.audit.grading import failing
from shufflesim.simulator.audit.implementation import Claim
from shufflesim.simulator.audit import pipeline_level
from shufflesim.simulator.audit.message_shuffler import (
    MessageShuffler,
    block_difference,
    block_ids,
    content_order,
    content_order_rows,
    multiset_difference,
    relative_order,
    relative_order_rows,
)
from shufflesim.simulator.audit.run import audit_implementation
from shufflesim.simulator.usercode import UserCodeError


def krr(values, rng):
    values = np.asarray(values)
    keep = rng.random(values.shape) < np.exp(2.0) / (np.exp(2.0) + 3)
    return np.where(keep, values, (values + rng.integers(1, 4, size=values.shape)) % 4)


def uniform(messages, rng):
    return messages[rng.permutation(len(messages))]


def sort_by_value(messages, rng):
    return np.sort(messages, kind="stable")


def rotate(messages, rng, arrivals):
    assert set(arrivals) == {"time", "sent", "rank"}
    assert np.all(np.diff(arrivals["rank"]) == 1)  # the batch in arrival order
    return np.roll(messages, int(rng.integers(len(messages))))


def sort_by_arrival(messages, rng, arrivals):
    return messages[np.argsort(arrivals["time"], kind="stable")]


def drop_one(messages, rng):
    return uniform(messages, rng)[:-1]


def duplicate_one(messages, rng):
    return np.concatenate([uniform(messages, rng), messages[:1]])


def alter_one(messages, rng):
    out = uniform(messages, rng).copy()
    out[0] = (out[0] + 1) % 4
    return out


def half_shuffled(messages, rng):
    k = len(messages) // 2
    return np.concatenate([messages[:k], uniform(messages[k:], rng)])


def test_multiset_difference_names_each_kind():
    given = np.array([0, 1, 1, 2, 3])
    assert multiset_difference(given, given[::-1]) == (0, 0, 0)
    assert multiset_difference(given, given[:-1]) == (1, 0, 0)
    assert multiset_difference(given, np.append(given, 1)) == (0, 1, 0)
    assert multiset_difference(given, np.array([0, 1, 1, 2, 2])) == (0, 0, 1)
    vectors = np.array([[0, 1], [1, 0], [1, 1]])
    assert multiset_difference(vectors, vectors[[2, 0, 1]]) == (0, 0, 0)
    assert multiset_difference(vectors, vectors[[0, 0, 1]]) == (0, 0, 1)


def test_order_statistics():
    rng = np.random.default_rng(0)
    arrival = rng.integers(0, 4, 50)
    assert relative_order(arrival, np.roll(arrival, 17)) == 50
    assert relative_order(arrival, arrival[::-1]) == 50
    assert relative_order(arrival, arrival[rng.permutation(50)]) < 40
    assert content_order(np.sort(arrival)) > 0.9
    assert content_order(np.full(5, 2)) == 0.0


def test_a_shuffler_must_return_messages():
    bad = MessageShuffler(lambda m, rng: None, "s.py:f")
    with pytest.raises(UserCodeError, match="shuffler"):
        bad.release(np.arange(4), {}, np.random.default_rng(0))
    shape = MessageShuffler(lambda m, rng: m.reshape(2, 2), "s.py:g")
    with pytest.raises(UserCodeError, match="shape"):
        shape.release(np.arange(4), {}, np.random.default_rng(0))


def _pipeline(shuffler, seed=0, trials=300):
    claim = Claim.registered("krr", epsilon0=2.0, domain_size=4)
    return audit_implementation(krr, claim, trials=trials, level="pipeline", n=12,
                                delta=(1e-6,), seed=seed, shuffler=shuffler)


def _violated(rows):
    return {r["bound"].removeprefix("implementation-") for r in failing(rows, 0.95)}


@pytest.mark.parametrize("shuffler, expected", [
    (sort_by_value, "shuffler-content-order"),
    (rotate, "shuffler-relative-order"),
    (sort_by_arrival, "shuffler-relative-order"),
    (half_shuffled, "shuffler-relative-order"),
    (drop_one, "shuffler-drops"),
    (duplicate_one, "shuffler-duplicates"),
    (alter_one, "shuffler-alterations"),
])
def test_planted_shuffler_faults_are_caught_with_default_flags(shuffler, expected):
    rows = _pipeline(shuffler)
    assert expected in _violated(rows)
    row = next(r for r in rows if r["bound"] == f"implementation-{expected}")
    assert row["strength"] in ("certain", "strong")
    assert row["reason"].count("\n") == 0


def test_a_uniform_shuffler_passes():
    rows = _pipeline(uniform)
    assert not _violated(rows)
    names = {r["bound"] for r in rows if r["row_type"] == "verdict"}
    assert {"implementation-shuffler-drops", "implementation-shuffler-relative-order",
            "implementation-shuffler-content-order"} <= names


@pytest.mark.slow
def test_a_uniform_shuffler_passes_over_50_seeds():
    false = sum(bool(_violated(_pipeline(uniform, seed=s, trials=200))) for s in range(50))
    assert false <= 6


def test_block_statistics_are_the_batch_statistics_row_by_row():
    rng = np.random.default_rng(0)
    for s in (5, 20, 64, 65, 130):  # direct comparison up to 64, FFT beyond
        a = rng.integers(0, 4, (30, s))
        r = np.array([np.roll(x, 3) if i % 3 == 0 else x[rng.permutation(s)]
                      for i, x in enumerate(a)])
        assert relative_order_rows(a, r, 4).tolist() == [relative_order(x, y)
                                                         for x, y in zip(a, r, strict=True)]
        assert np.allclose(content_order_rows(r), [content_order(y) for y in r])
    given = rng.integers(0, 6, (50, 10))
    altered = given.copy()
    altered[0, 0] = 7
    for released in (altered, np.concatenate([given, given[:, :1]], 1), given[:, :-1],
                     given[:, ::-1] * 10**6):  # the last: ids by sorting
        ids_a, ids_b, k = block_ids(given, released)
        rows = [tuple(int(v) for v in t) for t in zip(*block_difference(ids_a, ids_b, k),
                                                      strict=True)]
        assert rows == [multiset_difference(g, q) for g, q in zip(given, released, strict=True)]


def _batched(function):
    def block(messages, rng, arrivals):
        assert messages.ndim == 2 and arrivals["time"].shape == messages.shape
        return np.stack([function(m, rng, {k: v[i] for k, v in arrivals.items()})
                         for i, m in enumerate(messages)])
    block.batched = True
    return block


@pytest.mark.parametrize("shuffler, expected", [
    (_batched(lambda m, rng, a: rotate(m, rng, a)), "shuffler-relative-order"),
    (_batched(lambda m, rng, a: sort_by_value(m, rng)), "shuffler-content-order"),
    (_batched(lambda m, rng, a: alter_one(m, rng)), "shuffler-alterations"),
])
def test_a_batched_shuffler_is_called_per_block_and_checked(shuffler, expected):
    assert expected in _violated(_pipeline(shuffler))


def test_a_batched_uniform_shuffler_passes():
    assert not _violated(_pipeline(_batched(lambda m, rng, a: uniform(m, rng))))


def test_beyond_the_call_cap_a_sample_of_rounds_is_checked(monkeypatch):
    """A shuffler called once per batch, with more batches than the cap: the attack rows run
    the audit's uniform shuffler, the user's is checked on a sample, and the reason says so."""
    monkeypatch.setattr(pipeline_level, "MAX_SHUFFLER_CALLS", 200)
    rows = _pipeline(rotate, trials=600)
    assert "shuffler-relative-order" in _violated(rows)
    row = next(r for r in rows if r["bound"] == "implementation-shuffler-relative-order")
    assert "sample of 100 rounds per world" in row["reason"]
    assert "uniform shuffler on all" in row["reason"]
