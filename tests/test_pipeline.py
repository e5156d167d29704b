"""The SimPy pipeline: batch schedule, thresholding, dropouts, delays, rounds, colluders,
multi-message clients, per-batch epsilon and reproducibility.

The batch schedule is checked message by message against an independent reference: a plain
Python event loop over the arrival times (fine for the small n used here).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from shufflesim.protocols.randomizers import make_randomizer
from shufflesim.protocols.randomizers.krr import KRR
from shufflesim.simulator.errors import UserError
from shufflesim.simulator.pipeline import DelayConfig, PipelineConfig, run_pipeline


def reference_schedule(times, start, end, batch_size, timeout):
    """(open, release, size, reason) of every batch, by a per-message loop.

    A timer that expires strictly before the next arrival fires first; a message arriving at the
    expiry instant joins the batch; reaching batch_size releases at that message's arrival.
    """
    batches = []
    buffer = 0
    open_time = None
    last_release = start

    def release(at, reason):
        nonlocal buffer, last_release
        batches.append((open_time, at, buffer, reason))
        buffer, last_release = 0, at

    for t in times:
        t = float(t)
        if buffer and timeout is not None and open_time + timeout < t:
            release(open_time + timeout, "timeout")
        if not buffer:
            open_time = max(t, last_release)
        buffer += 1
        if batch_size is not None and buffer == batch_size:
            release(t, "size")
    if buffer:
        if timeout is not None and open_time + timeout <= end:
            release(open_time + timeout, "timeout")
        else:
            release(end, "end")
    return batches


def _krr(k=4, eps=1.0):
    return make_randomizer("krr", epsilon0=eps, domain_size=k)


def _values(n, k=4, seed=0):
    return np.random.default_rng(seed).integers(0, k, size=n)


SCHEDULE_CASES = [
    dict(arrival="uniform", batch_size=7, timeout=0.05, min_batch=3),
    dict(arrival="uniform", batch_size=None, timeout=0.02),
    dict(arrival="poisson", batch_size=5, timeout=None, min_batch=5),
    dict(arrival="all_at_once", batch_size=16, timeout=0.3, window=0.2),
    dict(arrival="all_at_once", batch_size=16, timeout=0.5,
         delay=DelayConfig("uniform", low=0.0, high=1.0)),
    dict(arrival="uniform", batch_size=9, timeout=0.03, dropout=0.3,
         delay=DelayConfig("exponential", mean=0.02), rounds=3, colluding_fraction=0.3),
    dict(arrival="poisson", batch_size=None, timeout=None, rounds=2),
    # the timer expires exactly at the round end: released as a timeout
    dict(arrival="all_at_once", batch_size=64, timeout=0.2, window=0.2, rounds=2),
    # large clock values: SimPy's float clock drifts from the exact timestamps by rounding
    dict(arrival="uniform", window=1e6, batch_size=4, timeout=3000.0, rounds=3,
         delay=DelayConfig("uniform", low=0.0, high=1e3)),
]


@pytest.mark.parametrize("group_size", [1, 3, 1000])
@pytest.mark.parametrize("case", SCHEDULE_CASES)
def test_schedule_matches_message_level_reference(case, group_size):
    config = PipelineConfig(group_size=group_size, **case)
    result = run_pipeline(_krr(), _values(150), config, np.random.default_rng(11),
                          keep_outputs=True)
    table = result.batches
    assert len(result.streams) == config.rounds
    for r, stream in enumerate(result.streams):
        expected = reference_schedule(stream.times, stream.start, stream.end,
                                      config.batch_size, config.timeout)
        rows = table[table["round"] == r]
        got = list(zip(rows.open_time, rows.release_time, rows["size"], rows.reason,
                       strict=True))
        assert got == expected  # exact: the same float operations on the same timestamps
        assert list(rows.batch) == list(range(len(rows)))
        # honest size of each batch = honest messages in its slice of the arrival stream
        bounds = np.concatenate(([0], np.cumsum(rows["size"])))
        honest = [int(stream.honest[a:b].sum()) for a, b in zip(bounds, bounds[1:], strict=False)]
        assert list(rows.honest_size) == honest
        assert list(rows.dropped) == [s < config.min_batch for s in rows["size"]]


def test_schedule_does_not_depend_on_group_size():
    kwargs = dict(arrival="uniform", batch_size=10, timeout=0.01, min_batch=2,
                  delay=DelayConfig("exponential", mean=0.01), rounds=2)
    results = [
        run_pipeline(_krr(), _values(500), PipelineConfig(group_size=g, **kwargs),
                     np.random.default_rng(5))
        for g in (1, 64, 1 << 16)
    ]
    for other in results[1:]:
        assert other.batches.equals(results[0].batches)
        np.testing.assert_array_equal(other.aggregate, results[0].aggregate)


def test_timeout_flushes_small_batches_under_low_traffic():
    # 200 clients over a window of 100: rate 2; timeout 0.5 -> about 2 messages per batch,
    # far below batch_size: every batch but the last is released by its timer.
    config = PipelineConfig(arrival="uniform", window=100.0, batch_size=1000, timeout=0.5)
    result = run_pipeline(_krr(), _values(200), config, np.random.default_rng(3),
                          keep_outputs=True)
    table = result.batches
    assert set(table.reason[:-1]) == {"timeout"}
    assert table.reason.iloc[-1] in {"timeout", "end"}
    timed = table[table.reason == "timeout"]
    np.testing.assert_allclose(timed.release_time - timed.open_time, 0.5, rtol=0, atol=1e-12)
    assert table["size"].sum() == 200 and not table.dropped.any()
    assert table["size"].max() < 1000
    # every message of a batch arrived within [open, release]
    stream = result.streams[0]
    arrival = dict(zip(stream.client.tolist(), stream.times.tolist(), strict=True))
    for batch in result.outputs:
        times = np.array([arrival[c] for c in batch.clients.tolist()])
        assert times.min() >= batch.open_time and times.max() <= batch.release_time
    # batches are released one after the other and never overlap
    assert (table.open_time.to_numpy()[1:] >= table.release_time.to_numpy()[:-1]).all()


def test_thresholding_drops_and_counts():
    config = PipelineConfig(arrival="uniform", window=50.0, timeout=0.4, batch_size=50,
                            min_batch=4)
    result = run_pipeline(_krr(), _values(400), config, np.random.default_rng(8),
                          batch_epsilon=lambda h: 1.0 / h)
    table = result.batches
    dropped = table[table.dropped]
    kept = table[~table.dropped]
    assert len(dropped) > 0 and len(kept) > 0
    assert (dropped["size"] < 4).all() and (kept["size"] >= 4).all()
    assert dropped.epsilon.isna().all() and kept.epsilon.notna().all()
    summary = result.rounds[0]
    assert summary.thresholded == dropped["size"].sum()
    assert summary.released == kept["size"].sum()
    assert summary.released + summary.thresholded == summary.messages == 400
    # the analyzer's aggregate holds exactly the released messages
    assert result.aggregate.sum() == summary.released


def test_dropouts_shrink_batches():
    n, p, window, timeout = 20000, 0.3, 100.0, 0.05
    base = dict(arrival="uniform", window=window, timeout=timeout)
    full = run_pipeline(_krr(), _values(n), PipelineConfig(**base), np.random.default_rng(1))
    thin = run_pipeline(_krr(), _values(n), PipelineConfig(dropout=p, **base),
                        np.random.default_rng(1))
    sent = thin.rounds[0].messages
    assert thin.rounds[0].dropouts == n - sent
    # Binomial(n, 1 - p) at 6 sigma
    assert abs(sent - n * (1 - p)) < 6 * math.sqrt(n * p * (1 - p))
    assert thin.batches["size"].sum() == sent
    # A timer-released batch holds its opening message plus the arrivals in the next `timeout`:
    # mean size about 1 + (N - 1) timeout / window (N messages sent, i.i.d. uniform times).
    for result, n_sent in ((full, n), (thin, sent)):
        sizes = result.batches["size"].to_numpy()[:-1]
        lam = (n_sent - 1) * timeout / window
        assert abs(sizes.mean() - (1 + lam)) < 6 * math.sqrt(lam / sizes.size) + 0.01
    assert thin.batches["size"].mean() < 0.8 * full.batches["size"].mean()


def test_delays_reorder_arrivals():
    config = PipelineConfig(arrival="uniform", window=1.0, batch_size=8,
                            delay=DelayConfig("exponential", mean=0.01))
    result = run_pipeline(_krr(), _values(4000), config, np.random.default_rng(4),
                          keep_outputs=True)
    stream = result.streams[0]
    assert (np.diff(stream.times) >= 0).all()
    # generation order is not arrival order: many adjacent pairs are inverted
    inversions = np.mean(np.diff(stream.sent) < 0)
    assert inversions > 0.2
    assert (stream.times >= stream.sent).all()


def test_multi_round_and_colluders():
    n, rounds = 40, 3
    config = PipelineConfig(arrival="uniform", batch_size=7, rounds=rounds,
                            colluding_fraction=0.25)
    result = run_pipeline(_krr(), _values(n), config, np.random.default_rng(2),
                          keep_outputs=True)
    assert result.colluding.sum() == 10
    table = result.batches
    for r in range(rounds):
        rows = table[table["round"] == r]
        assert rows["size"].sum() == n and rows.honest_size.sum() == n - 10
        assert (rows.honest_size <= rows["size"]).all()
        assert list(rows["size"]) == [7] * 5 + [5]
    starts = [s.start for s in result.rounds]
    ends = [s.end for s in result.rounds]
    assert starts[0] == 0.0 and starts[1:] == ends[:-1]
    assert (np.diff(table.release_time.to_numpy()) >= 0).all()
    # the same clients collude in every round: a batch's honest size counts its non-colluders
    for batch in result.outputs:
        assert batch.honest_size == (~result.colluding[batch.clients]).sum()
    assert len(result.aggregates) == rounds
    np.testing.assert_array_equal(result.aggregate, sum(result.aggregates))


def test_colluding_count_is_rounded_up():
    assert PipelineConfig(colluding_fraction=0.1).colluding_count(10) == 1
    assert PipelineConfig(colluding_fraction=0.11).colluding_count(10) == 2
    assert PipelineConfig(colluding_fraction=0.0).colluding_count(10) == 0


def test_batch_epsilon_is_cached_and_recorded():
    calls = []

    def eps(h):
        calls.append(h)
        return None if h < 3 else 2.0 / h

    config = PipelineConfig(arrival="uniform", window=20.0, timeout=0.3, batch_size=6)
    result = run_pipeline(_krr(), _values(300), config, np.random.default_rng(6),
                          batch_epsilon=eps)
    table = result.batches
    assert sorted(calls) == sorted(set(table.honest_size))  # one call per distinct size
    for h, e in zip(table.honest_size, table.epsilon, strict=True):
        if h < 3:
            assert pd.isna(e)
        else:
            assert e == pytest.approx(2.0 / h)
    assert table.epsilon.isna().sum() == (table.honest_size < 3).sum()
    # without a callable the column is null
    plain = run_pipeline(_krr(), _values(300), config, np.random.default_rng(6))
    assert plain.batches.epsilon.isna().all()
    assert str(plain.batches.epsilon.dtype) == "Float64"


class _RepeatedKRR(KRR):
    """A test multi-message randomizer: each client sends m independent k-RR reports."""

    name = "_test_repeated_krr"  # not registered
    messages_per_client = 3

    def randomize(self, values, rng, epsilon=None):
        values = np.asarray(values)
        stacked = np.repeat(values[..., None], self.messages_per_client, axis=-1)
        return super().randomize(stacked, rng)

    def aggregate_messages(self, messages):
        return np.bincount(np.asarray(messages), minlength=self.domain_size)


def test_multi_message_clients_send_separately_shuffled_messages():
    randomizer = _RepeatedKRR(epsilon0=50.0, domain_size=4)  # reports equal the values
    values = _values(31)
    config = PipelineConfig(arrival="uniform", batch_size=10,
                            delay=DelayConfig("exponential", mean=0.05))
    result = run_pipeline(randomizer, values, config, np.random.default_rng(9),
                          keep_outputs=True)
    assert result.rounds[0].messages == 93
    assert list(result.batches["size"]) == [10] * 9 + [3]
    np.testing.assert_array_equal(result.aggregate, 3 * np.bincount(values, minlength=4))
    clients = np.concatenate([b.clients for b in result.outputs])
    np.testing.assert_array_equal(np.bincount(clients), np.full(31, 3))
    # some client's messages travel in different batches
    batch_of = np.concatenate([np.full(b.size, b.index) for b in result.outputs])
    spread = [len(set(batch_of[clients == c])) for c in range(31)]
    assert max(spread) > 1
    for batch in result.outputs:  # each message is its sender's value (eps0 = 50)
        np.testing.assert_array_equal(batch.reports, values[batch.clients])


def test_personalized_budgets_reach_the_randomizer():
    n = 400
    values = _values(n)
    epsilons = np.where(np.arange(n) % 2 == 0, 60.0, 0.01)  # even clients report the truth
    result = run_pipeline(_krr(), values, PipelineConfig(batch_size=50),
                          np.random.default_rng(3), epsilons=epsilons, keep_outputs=True)
    for batch in result.outputs:
        even = batch.clients % 2 == 0
        np.testing.assert_array_equal(batch.reports[even], values[batch.clients[even]])
    odd_truth = np.mean(np.concatenate([
        b.reports[b.clients % 2 == 1] == values[b.clients[b.clients % 2 == 1]]
        for b in result.outputs
    ]))
    assert odd_truth < 0.4  # about 1/4 for eps = 0.01, k = 4


def test_reproducible_from_the_generator():
    config = PipelineConfig(arrival="poisson", batch_size=13, timeout=0.01, dropout=0.1,
                            delay=DelayConfig("uniform", low=0.0, high=0.02), rounds=2,
                            colluding_fraction=0.1)
    a = run_pipeline(_krr(), _values(300), config, np.random.default_rng(21))
    b = run_pipeline(_krr(), _values(300), config, np.random.default_rng(21))
    c = run_pipeline(_krr(), _values(300), config, np.random.default_rng(22))
    assert a.batches.equals(b.batches)
    np.testing.assert_array_equal(a.aggregate, b.aggregate)
    assert not a.batches.equals(c.batches)


def test_estimates_per_round_and_overall():
    class Counts:  # stand-in estimator: relative frequency of the reports
        def estimate(self, aggregate, n):
            return aggregate / n

    config = PipelineConfig(batch_size=25, rounds=2, min_batch=25)
    result = run_pipeline(_krr(eps=40.0), _values(110), config, np.random.default_rng(1),
                          estimator=Counts())
    # 110 = 4 * 25 + 10: the last batch of each round is dropped (10 < min_batch)
    assert [s.released for s in result.rounds] == [100, 100]
    for est, agg in zip(result.estimates, result.aggregates, strict=True):
        np.testing.assert_allclose(est, agg / 100)
    np.testing.assert_allclose(result.estimate, result.aggregate / 200)


def test_round_without_released_messages_has_no_estimate():
    class Counts:
        def estimate(self, aggregate, n):
            return aggregate / n

    config = PipelineConfig(batch_size=10, min_batch=10)
    result = run_pipeline(_krr(), _values(5), config, np.random.default_rng(1),
                          estimator=Counts())
    assert result.estimates == [None] and result.estimate is None
    assert result.batches.dropped.all() and result.rounds[0].thresholded == 5


def test_input_shape_errors():
    with pytest.raises(UserError, match="values"):
        run_pipeline(_krr(), np.zeros((2, 3), dtype=int), PipelineConfig(),
                     np.random.default_rng(0))
    with pytest.raises(UserError, match="epsilons"):
        run_pipeline(_krr(), _values(5), PipelineConfig(), np.random.default_rng(0),
                     epsilons=np.ones(4))
