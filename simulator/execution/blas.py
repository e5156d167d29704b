"""One BLAS thread in every process of a run (issue 32: runs scale with cores).

The number of threads of a multi-threaded BLAS (OpenBLAS, numpy's and scipy's) changes the
rounding of its reductions: a dot product cut into one partial sum per thread is summed in
another order. Measured on audit_krr (2 cores): the engine's exact lower bound moved by one
ulp and its stated error by 8e-10 relative between 2 BLAS threads and 1. So that the tables do
not depend on the number of worker processes (nor on the machine's core count), every process
of a run computes with the same BLAS thread count, :data:`RUN_BLAS_THREADS` = 1: the driver
for the whole run (:func:`one_blas_thread`) and each worker from its start
(:func:`limit_in_worker`). The run's parallelism is its processes (and the batch path's own
threads, which are cut by shape: simulator/batch/threads.py).

One thread is also the faster choice for this code: the engine's BLAS calls are matrix-vector
products and dot products of thousands to a few million entries, where OpenBLAS's threads
mostly wait for each other. audit_krr's heaviest audit unit (point 16) took 10.1 s of CPU with
2 BLAS threads and 3.5 s with 1 (load ~10); the whole run 83.9 s and 73.0 s.

How: threadpoolctl (when installed) limits the BLAS libraries already loaded, and the
``OPENBLAS_NUM_THREADS``-style variables cover those loaded later in the process (scipy's own
OpenBLAS, on first import) and are inherited by worker processes started meanwhile. Without
threadpoolctl nothing is changed anywhere (the driver's loaded BLAS could not be limited, and
workers limited alone would round differently from it).
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Iterator

#: BLAS threads of every process of a run.
RUN_BLAS_THREADS = 1
#: Environment variables read by BLAS libraries when they load.
VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS",
             "BLIS_NUM_THREADS", "VECLIB_MAXIMUM_THREADS")


def _threadpool_limits():
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # optional: without it, no process of a run is limited
        return None
    return threadpool_limits


def available() -> bool:
    """Whether runs limit their BLAS threads (threadpoolctl is installed)."""
    return _threadpool_limits() is not None


@contextlib.contextmanager
def one_blas_thread(threads: int = RUN_BLAS_THREADS) -> Iterator[bool]:
    """Inside: ``threads`` BLAS threads in this process and in the processes it starts;
    restored on exit (variables and the libraries limited). Yields whether it applies."""
    limits = _threadpool_limits()
    if limits is None:
        yield False
        return
    saved = {name: os.environ.get(name) for name in VARIABLES}
    os.environ.update({name: str(threads) for name in VARIABLES})
    try:
        with limits(limits=threads, user_api="blas"):
            yield True
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def default_for_commands(threads: int = RUN_BLAS_THREADS) -> None:
    """A command's default: ``threads`` BLAS threads in the libraries loaded from now on (the
    variables), unless the user's environment already sets them (the console script calls it
    before numpy loads, so a ``bound`` rounds as a run does)."""
    for name in VARIABLES:
        os.environ.setdefault(name, str(threads))


def in_one_blas_thread(function):
    """``function`` computing with :data:`RUN_BLAS_THREADS` BLAS threads in the libraries loaded
    when it is called, restored when it returns (the Python API's calls: the same rounding as a
    command's, and no second thread spin-waiting on the engine's and the accounting's small
    products: a round's PLD from Python was 2x slower under load with OpenBLAS's default
    threads, issue 32). The process's environment is left as it is, so the threads of the
    caller's own work, before and after the call, are the caller's."""

    @functools.wraps(function)
    def call(*args, **kwargs):
        limits = _threadpool_limits()
        if limits is None:
            return function(*args, **kwargs)
        with limits(limits=RUN_BLAS_THREADS, user_api="blas"):
            return function(*args, **kwargs)

    return call


_limited: set[int] = set()  # processes limited for good (by id: a forked child is not)


def limit_in_worker(threads: int = RUN_BLAS_THREADS) -> None:
    """In a worker process, for good: ``threads`` BLAS threads in the libraries loaded now and
    later (called by the pool's initializer after the run's state, and with it numpy, is
    loaded, and by each Dask task; once per process)."""
    limits = _threadpool_limits()
    if limits is None or os.getpid() in _limited:
        return
    os.environ.update({name: str(threads) for name in VARIABLES})
    limits(limits=threads, user_api="blas")
    _limited.add(os.getpid())
