"""A user's shuffler sees the messages (simulator/audit/message_shuffler.py, issue 29): the
permutation check (drops, duplicates, alterations) and the order tests (relative order,
position-content), with planted faults caught at the pipeline level with default flags."""

from __future__ import annotations

import numpy as np
import pytest

from shufflesim.simulator.audit.grading import failing
from shufflesim.simulator.audit.implementation import Claim
from shufflesim.simulator.audit.message_shuffler import (
    MessageShuffler,
    content_order,
    multiset_difference,
    relative_order,
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
