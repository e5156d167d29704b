"""The shuffler's output order: a uniform permutation of each batch that leaks neither the
arrival order nor the send order.

Statistical tests at a fixed seed, each at significance alpha = 1e-3 (chi-square goodness of fit
of output positions; Spearman correlation within a 6-sigma band under independence). Each comes
with a negative control (a shuffler that does not permute, or only rotates) that the same test
must reject, so the tests are known to have power.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from shufflesim.protocols.randomizers import make_randomizer
from shufflesim.simulator.pipeline import DelayConfig, PipelineConfig, run_pipeline

ALPHA = 1e-3
BATCH = 10


def _identity(rng, size):
    return np.arange(size)


def _rotation(rng, size):
    return np.roll(np.arange(size), rng.integers(size))


def _run(config, permutation=None, n=20000, seed=17):
    randomizer = make_randomizer("krr", epsilon0=1.0, domain_size=4)
    values = np.random.default_rng(0).integers(0, 4, size=n)
    kwargs = {} if permutation is None else {"permutation": permutation}
    return run_pipeline(randomizer, values, config, np.random.default_rng(seed),
                        keep_outputs=True, **kwargs)


def _full_batches(result, size):
    """(arrival-order clients, output-order clients) of the batches of exactly `size`, each as a
    (batches, size) array; a batch is a contiguous slice of the round's arrival stream."""
    stream = result.streams[0]
    rows_in, rows_out = [], []
    start = 0
    for batch in result.outputs:
        if batch.size == size:
            rows_in.append(stream.client[start:start + size])
            rows_out.append(batch.clients)
        start += batch.size
    return np.array(rows_in), np.array(rows_out)


def _positions(arrival, output, rank):
    """Output position of the message with the given arrival rank, per batch."""
    return np.argmax(output == arrival[:, rank:rank + 1], axis=1)


def _marked_positions(permutation=None):
    config = PipelineConfig(arrival="uniform", batch_size=BATCH)
    arrival, output = _full_batches(_run(config, permutation), BATCH)
    return _positions(arrival, output, 0), _positions(arrival, output, 1)


def _uniform_p(cells, n_cells):
    counts = np.bincount(cells, minlength=n_cells)
    return stats.chisquare(counts).pvalue


def test_marked_message_position_is_uniform():
    first, second = _marked_positions()
    assert first.size == 2000
    assert _uniform_p(first, BATCH) > ALPHA
    # joint position of two marked messages: uniform over the 90 ordered pairs
    assert (first != second).all()
    pair = first * BATCH + second
    cells = np.bincount(pair, minlength=BATCH * BATCH)
    off_diagonal = np.delete(cells, np.arange(BATCH) * (BATCH + 1))
    assert stats.chisquare(off_diagonal).pvalue > ALPHA


@pytest.mark.parametrize("fault", [_identity, _rotation])
def test_marked_message_test_rejects_a_faulty_shuffler(fault):
    first, second = _marked_positions(fault)
    pair = first * BATCH + second
    off_diagonal = np.delete(np.bincount(pair, minlength=BATCH * BATCH),
                             np.arange(BATCH) * (BATCH + 1))
    # the identity fails already on the marginal; a random rotation has a uniform marginal
    # but a degenerate joint distribution
    assert stats.chisquare(off_diagonal).pvalue < 1e-6


def _send_order_leak(permutation=None):
    """Output position of the earliest-sent message per batch, and the Spearman correlation of
    output position with send rank inside the batches (pooled)."""
    size = 8
    config = PipelineConfig(arrival="uniform", window=1.0, batch_size=size,
                            delay=DelayConfig("exponential", mean=2e-4))
    result = _run(config, permutation, n=16000)
    stream = result.streams[0]
    sent_time = np.empty(stream.client.max() + 1)
    sent_time[stream.client] = stream.sent
    arrival, output = _full_batches(result, size)
    send_rank = np.argsort(np.argsort(sent_time[output], axis=1), axis=1)
    earliest = np.argmin(send_rank, axis=1)
    position = np.broadcast_to(np.arange(size), output.shape)
    rho = stats.spearmanr(position.ravel(), send_rank.ravel()).statistic
    # the delays really reorder: arrival order inside a batch differs from send order
    reordered = np.mean((np.diff(sent_time[arrival], axis=1) < 0).any(axis=1))
    return earliest, rho, output.size, reordered


def test_delays_never_leak_order_into_the_output():
    earliest, rho, pairs, reordered = _send_order_leak()
    assert reordered > 0.5
    assert _uniform_p(earliest, 8) > ALPHA
    assert abs(rho) < 6 / math.sqrt(pairs)  # null sd of Spearman's rho ~ 1 / sqrt(N - 1)


def test_order_leak_test_rejects_a_non_permuting_shuffler():
    earliest, rho, pairs, _ = _send_order_leak(_identity)
    assert _uniform_p(earliest, 8) < 1e-6
    assert rho > 6 / math.sqrt(pairs)
