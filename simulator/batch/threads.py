"""In-process threads for the batch path's large numpy steps.

numpy releases the GIL inside ufuncs and inside a ``Generator``'s sampling methods, so
independent pieces of one large step (randomizing slices of users, permuting blocks of
reports) run concurrently on the machine's cores. Every piece gets its own generator from
``child_generators``, and pieces are cut by the data's shape alone, so results never depend on
the number of threads.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from functools import cache
from typing import Any

import numpy as np

#: Most threads of the shared pool.
MAX_THREADS = 4


def child_generators(rng: np.random.Generator, count: int) -> list[np.random.Generator]:
    """``count`` independent generators (of ``rng``'s bit-generator type) seeded from ``rng``."""
    seeds = np.random.SeedSequence(rng.integers(0, 2**63, size=4)).spawn(count)
    return [np.random.Generator(type(rng.bit_generator)(s)) for s in seeds]


def run_all(task: Callable[..., Any], *arguments: Iterable[Any]) -> list[Any]:
    """``[task(*a) for a in zip(*arguments)]``, run on the shared thread pool."""
    return list(_pool().map(task, *arguments))


def limit_threads(count: int) -> int:
    """Set :data:`MAX_THREADS` to ``count`` (>= 1) for the steps to come, replacing a pool
    already started with another size (a run's driver computing beside worker processes
    takes its share of the cores: simulator/execution/executors.py); results do not depend
    on it. Returns the previous value."""
    global MAX_THREADS
    previous, MAX_THREADS = MAX_THREADS, max(1, int(count))
    if MAX_THREADS != previous and _pool.cache_info().currsize:
        _pool().shutdown(wait=False)  # its threads end when idle
        _pool.cache_clear()
    return previous


@cache
def _pool() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=max(1, min(MAX_THREADS, os.cpu_count() or 1)),
                              thread_name_prefix="shufflesim")


if hasattr(os, "register_at_fork"):  # a forked child must not reuse the parent's pool threads
    os.register_at_fork(after_in_child=_pool.cache_clear)
