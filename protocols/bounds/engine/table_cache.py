"""A cache of numpy tables bounded in entries and in bytes (issue 32), for the eps-independent
tables of protocols.bounds.engine.exact_band (000 Thm 12-14's conditioning sums by bands).

functools.lru_cache(maxsize=4) bounded only the number of tables: one process that evaluates
several n (a sweep, a calibration) kept four B and four X tables of up to ~50 MB each; eight
optimal-blanket calls at 10-RR, n = 3e4-6e4 peaked at 334-338 MB. Here the oldest entries are
dropped once the cached arrays exceed ``max_bytes``; the newest entry is always kept, so one
search never rebuilds its own table. Values are unchanged: a dropped table is rebuilt by the same
function from the same arguments.
"""

from __future__ import annotations

import functools
import threading
from collections import OrderedDict, namedtuple

import numpy as np

__all__ = ["TABLE_BYTES", "bounded_cache"]

#: bytes of exact_band's B (and of its X) tables kept between calls
TABLE_BYTES = 64 * 2**20

CacheInfo = namedtuple("CacheInfo", "hits misses maxsize currsize nbytes")


def _nbytes(value) -> int:
    """Bytes of the numpy arrays in ``value`` (an array or a tuple holding some); views count
    the whole array they look into, once (exact_band's B tables are three views of one)."""
    items = value if isinstance(value, tuple) else (value,)
    seen: dict[int, int] = {}
    for item in items:
        if isinstance(item, np.ndarray):
            owner = item
            while isinstance(owner.base, np.ndarray):
                owner = owner.base
            seen[id(owner)] = owner.nbytes
    return sum(seen.values())


def bounded_cache(entries: int, max_bytes: int):
    """Decorator: memoize on the positional arguments, keeping at most ``entries`` results whose
    arrays take at most ``max_bytes`` together (the most recent one is kept whatever its size).
    The wrapper has ``cache_clear()``, ``cache_info()`` and ``__wrapped__`` as lru_cache's."""
    if entries < 1 or max_bytes < 0:
        raise ValueError("entries must be >= 1 and max_bytes >= 0")

    def decorate(fn):
        store: OrderedDict = OrderedDict()
        sizes: dict = {}
        lock = threading.Lock()
        stats = [0, 0]                      # hits, misses

        @functools.wraps(fn)
        def wrapper(*args):
            with lock:
                if args in store:
                    store.move_to_end(args)
                    stats[0] += 1
                    return store[args]
                stats[1] += 1
            value = fn(*args)
            with lock:
                store[args] = value
                store.move_to_end(args)
                sizes[args] = _nbytes(value)
                while len(store) > 1 and (len(store) > entries
                                          or sum(sizes.values()) > max_bytes):
                    old, _ = store.popitem(last=False)
                    sizes.pop(old, None)
            return value

        def cache_clear():
            with lock:
                store.clear()
                sizes.clear()
                stats[0] = stats[1] = 0

        def cache_info():
            with lock:
                return CacheInfo(stats[0], stats[1], entries, len(store), sum(sizes.values()))

        wrapper.cache_clear = cache_clear
        wrapper.cache_info = cache_info
        return wrapper

    return decorate
