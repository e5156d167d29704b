"""engine/table_cache.bounded_cache (issue 32): exact_band's tables bounded in bytes as well as
in entries, the newest always kept, a dropped table rebuilt with the same values."""

import numpy as np

from shufflesim.protocols.bounds.engine import exact_band
from shufflesim.protocols.bounds.engine.table_cache import _nbytes, bounded_cache


def test_entries_and_bytes_are_bounded_and_the_newest_is_kept():
    built = []

    @bounded_cache(3, 2 * 8000)
    def table(size):
        built.append(size)
        return np.zeros(size), size          # size float64 entries: 8 size bytes

    table(1000)
    table(1000)
    assert table.cache_info().hits == 1 and table.cache_info().nbytes == 8000
    table(500)
    assert table.cache_info().currsize == 2           # 12000 bytes <= 16000
    table(900)                                          # 19200 bytes: the oldest (1000) goes
    assert table.cache_info().currsize == 2 and table.cache_info().nbytes == 11200
    table(5000)                                         # alone over the budget: kept alone
    assert table.cache_info().currsize == 1 and table.cache_info().nbytes == 40000
    table(5000)
    assert built == [1000, 500, 900, 5000]
    for size in (1, 2, 3, 4):
        table(size)
    assert table.cache_info().currsize == 3            # the entry bound
    table.cache_clear()
    assert table.cache_info() == (0, 0, 3, 0, 0)


def test_band_tables_rebuilt_after_eviction_are_identical():
    args = (20_000, 0.2, 0.5)
    exact_band._b_tables.cache_clear()
    first = exact_band._b_tables(*args)
    exact_band._b_tables.cache_clear()
    again = exact_band._b_tables(*args)
    assert first is not again
    for a, b in zip(first, again, strict=True):
        assert np.array_equal(a, b)
    # the pmf, SB and SSB are views of one array (band_recurrence.suffix_chains): counted once
    owner = again[1].base
    while owner.base is not None:
        owner = owner.base
    assert again[2].base is not None and np.shares_memory(again[2], owner)
    nbytes = exact_band._b_tables.cache_info().nbytes
    assert nbytes == _nbytes(again) and owner.nbytes <= nbytes < owner.nbytes + 2**20


def test_views_count_the_array_they_look_into_once():
    whole = np.zeros((100, 30))
    assert _nbytes((whole[:, :10], whole[:, 10:20], whole[5:])) == whole.nbytes
    other = np.ones(7)
    assert _nbytes((whole[:, :3], other)) == whole.nbytes + other.nbytes
    assert _nbytes(whole) == whole.nbytes
