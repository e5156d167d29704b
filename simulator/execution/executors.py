"""Executors: where the units of a run (simulator.execution.units) are computed.

Every executor applies ``function(shared, item)`` to a list of items and yields ``(index,
result)`` pairs as the items finish, in any order; ``shared`` (the run's state) is sent to each
worker once. Because every unit carries its own random stream, the order of completion never
changes a result, so the assembled tables do not depend on the executor or the worker count.

* :class:`InlineExecutor`: in this process, one item after the other.
* :class:`ProcessExecutor` (the default, ``--workers N``): a
  :class:`concurrent.futures.ProcessPoolExecutor` of at most N processes started with the
  ``spawn`` method (no fork of a process that may hold threads or locks; workers import the
  package afresh, so they must be able to import everything ``shared`` and ``function`` refer
  to). Starting a worker costs seconds (it imports numpy, scipy, pyarrow and the package), so
  the items that finish within ``inline_seconds`` run in this process first; if the rest, at
  the rate measured so far (the mean, or the last item's when slower), would take less than
  ``start_seconds`` (the cost of starting the
  workers; times w / (w - 1) for w workers when this process does not compute beside them)
  it runs here too, otherwise it goes to the pool. Short runs then never pay for the pool.
  ``inline_seconds = 0`` always uses the pool, and so does a map whose items' estimated
  costs (:meth:`Executor.expect`) repay the start beyond the largest item. With the pool,
  this process computes too (``driver_computes``, the default): the pool has N - 1
  processes, each holding one item at a time (the next is submitted as it returns one),
  and between collecting results this process takes the next item itself (one queue served
  from the front by both, so with the runner's longest-first order the shortest items come
  last, and no item waits in a busy process's queue while another is idle); N processes
  compute, one fewer process is started, and this process computes while the workers start.
  Each worker gets (cores // N) threads, at least one, for the batch path's own threads
  (simulator/batch/threads.py; results do not depend on them), and one BLAS thread, like the
  driver of a run (simulator/execution/blas.py: the BLAS thread count changes the rounding of
  sums).
  Workers never outlive the process that started them: on Linux the kernel kills them when it
  dies (``PR_SET_PDEATHSIG``), and everywhere a watchdog thread in each worker ends it within
  ``worker_process.WATCHDOG_SECONDS`` once its parent is gone (a SIGKILLed run leaves no idle
  workers behind, and with them gone the multiprocessing resource tracker exits too). Workers ignore
  SIGINT: a Ctrl-C reaches the whole process group, and the calling process, which handles it,
  stops the workers itself (:meth:`ProcessExecutor.close` with ``terminate``: it sets the
  pool's stop event, on which the same watchdog waits, and the pool, seeing a worker end,
  terminates the others). SIGTERM keeps its default action (the pool terminates the other
  workers with it when one dies).
* :class:`DaskExecutor` (``--executor dask``, optional ``dask`` extra): a Dask distributed
  client, on a local cluster of N single-threaded worker processes or, with
  ``--scheduler ADDRESS``, on an existing cluster (whose workers must have shufflesim
  installed and see the same files). ``dask.distributed`` is imported only here, on use.
"""

from __future__ import annotations

import importlib
import logging
import multiprocessing
import os
import pickle
import queue
import re
import socket
import sys
import threading
import time
import uuid
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import Any

from shufflesim.simulator.errors import UserError
from shufflesim.simulator.execution.blas import limit_in_worker
from shufflesim.simulator.execution.feed import Feed
from shufflesim.simulator.execution.trace import span
from shufflesim.simulator.execution.worker_process import (
    BATCH_THREADS,
    _initialize_pool_worker,
    _ready,
    _sigint_ignored_while_spawning,
)

Task = Callable[[Any, Any], Any]

#: Default time (seconds) a process executor spends running items in the calling process before
#: it decides whether to start worker processes.
INLINE_SECONDS = 1.0
#: Assumed time (seconds) to start the worker processes and import the package in them.
START_SECONDS = 3.0
LOCAL = "local"
DASK = "dask"
EXECUTORS = (LOCAL, DASK)


def default_workers() -> int:
    """The number of cores this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


class Executor(ABC):
    """Runs ``function(shared, item)`` for every item (module docstring). Use as a context
    manager, or call :meth:`close`."""

    workers: int = 1

    @abstractmethod
    def map_unordered(self, function: Task, shared: Any, items: Sequence[Any]
                      ) -> Iterator[tuple[int, Any]]:
        """Yield ``(index into items, result)`` as items finish. An exception raised by an item
        propagates (the remaining items are cancelled)."""

    def expect(self, costs: Sequence[float]) -> None:  # noqa: B027 (optional hook)
        """Estimated seconds of each item of the next :meth:`map_unordered` (rough, relative
        weights: simulator.execution.units.unit_cost); an executor may use them to decide
        how to start. Items are expected in the order to run them (longest first)."""

    def warm(self, modules: Sequence[str] = ()) -> None:  # noqa: B027 (optional hook)
        """Start workers now, importing ``modules``, before the work is known (optional:
        ProcessExecutor starts its processes; others do nothing)."""

    def close(self) -> None:  # noqa: B027 (optional hook: most executors hold nothing)
        """Release workers (idempotent)."""

    def __enter__(self) -> Executor:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def describe(self) -> str:
        return f"{type(self).__name__}(workers={self.workers})"


class InlineExecutor(Executor):
    """Every item in the calling process, in order."""

    def map_unordered(self, function, shared, items):
        for index, item in enumerate(items):
            yield index, function(shared, item)


# ---------------------------------------------------------------------------------------------
# Local processes
# ---------------------------------------------------------------------------------------------
#: The state of a pool that has received none (a map's state may be None).
_NO_STATE = object()
#: Longest wait (seconds) of the calling process for a unit, so that it handles signals.
SIGNAL_POLL_SECONDS = 0.2


def threads_per_process(workers: int) -> int:
    """Threads each of ``workers`` computing processes may use: the cores shared out, >= 1."""
    return max(1, default_workers() // max(1, workers))


class ProcessExecutor(Executor):
    """Local worker processes (spawn); see the module docstring.

    The pool is started on first need, or earlier by :meth:`warm` (its workers then import
    while the caller loads the scenario), and kept until :meth:`close`, so several maps pay
    for the workers once. A map's state is pickled once and reaches each worker once,
    through a queue (worker_process._call_with_shared); tasks carry only the function, the
    item and the state's number. An item that raises cancels the items not yet started; an
    interruption (or closing the generator early) stops the workers.
    """

    def __init__(self, workers: int | None = None, inline_seconds: float = INLINE_SECONDS,
                 start_seconds: float = START_SECONDS,
                 clock: Callable[[], float] = time.monotonic,
                 driver_computes: bool = True) -> None:
        workers = default_workers() if workers is None else workers
        if not isinstance(workers, int) or isinstance(workers, bool) or workers < 1:
            raise UserError(f"workers = {workers!r}: must be an integer >= 1")
        if not inline_seconds >= 0:
            raise UserError(f"inline_seconds = {inline_seconds!r}: must be >= 0")
        self.workers = workers
        self.inline_seconds = inline_seconds
        self.start_seconds = start_seconds
        self.driver_computes = driver_computes
        self._clock = clock
        self._pool: ProcessPoolExecutor | None = None
        self._shared: Any = _NO_STATE  # the state last sent to the pool's workers
        self._token = 0  # its number
        self._states: Any = None  # the pool's state queue
        self._ready: list = []  # the pool's start-up probes (worker_process._ready)
        self._stop: Any = None  # the pool's stop event (close with terminate)
        #: Items that ran in the calling process in the last map (for tests and reports).
        self.inline_items = 0
        self._eager = False  # start the pool at once in the next map (expect)
        self._driver_threads: int | None = None  # this process's batch threads before the pool

    def expect(self, costs: Sequence[float]) -> None:
        """Estimated seconds of the items of the next map (see :meth:`Executor.expect`): when
        the work beyond its largest item repays the pool's start (``start_seconds``), the
        pool starts at once instead of after ``inline_seconds``, so that no core waits
        through a long first item."""
        costs = [float(cost) for cost in costs]
        self._eager = len(costs) > 1 and sum(costs) - max(costs) >= self.start_seconds

    def map_unordered(self, function, shared, items):
        self.inline_items = 0
        eager, self._eager = self._eager, False
        if self.workers == 1:
            for index, result in InlineExecutor().map_unordered(function, shared, items):
                self.inline_items = index + 1
                yield index, result
            return
        start = now = self._clock()
        next_index, last = 0, 0.0
        fresh = self._pool is None or self._shared is not shared  # a running pool costs nothing
        if fresh and not eager:
            while next_index < len(items) and now - start < self.inline_seconds:
                yield next_index, function(shared, items[next_index])
                next_index += 1
                self.inline_items = next_index
                before, now = now, self._clock()
                last = now - before
        if next_index and next_index < len(items):
            # at the mean rate, or the last item's when slower: a run's units differ (its
            # audit units, after the quick simulation units, take seconds each)
            rate = max((now - start) / next_index, last)
            serial = rate * (len(items) - next_index)
            # the pool saves (rest - start) / 2 or more when this process computes meanwhile,
            # rest - start x w / (w - 1) when it waits for the workers
            saving = 1 if self.driver_computes else self.workers / (self.workers - 1)
            if serial <= self.start_seconds * saving:
                for index in range(next_index, len(items)):
                    yield index, function(shared, items[index])
                    self.inline_items = index + 1
                return
        rest = list(range(next_index, len(items)))
        if rest:
            yield from self._pooled(function, shared, items, rest)

    def warm(self, modules: Sequence[str] = ()) -> None:
        """Start the worker processes now, before any state exists, importing ``modules``
        (e.g. those of the run's units), so that they start while the caller loads the
        scenario (issue 32: a worker's start costs about as much as the driver's load). A
        no-op with one worker. If the run then stays in this process, :meth:`close` ends
        them at once."""
        if self.workers > 1 and self._pool is None:
            with span("pool-warm"), _sigint_ignored_while_spawning():
                self._spawn(tuple(modules))

    def _spawn(self, modules: tuple[str, ...] = ()) -> None:
        """Create the pool and submit one start-up probe per process (the submits start the
        processes; the probes' completion says they are ready: feed.Feed)."""
        main_thread = threading.current_thread() is threading.main_thread()
        context = multiprocessing.get_context("spawn")
        # a Queue, not a SimpleQueue: put() must not block on a state larger than a pipe's
        # buffer before any worker reads it (a feeder thread writes; copies meant for
        # workers that end unread are dropped at exit)
        self._stop, self._states = context.Event(), context.Queue()
        self._states.cancel_join_thread()
        self._pool = ProcessPoolExecutor(
            max_workers=self.pool_size, mp_context=context,
            initializer=_initialize_pool_worker,
            initargs=(os.getpid(), main_thread, self._stop, self._states,
                      threads_per_process(self.workers), modules))
        self._ready = [self._pool.submit(_ready) for _ in range(self.pool_size)]
        if self.driver_computes and self._driver_threads is None:  # its share of cores
            self._driver_threads = importlib.import_module(BATCH_THREADS).limit_threads(
                threads_per_process(self.workers))

    def _start_pool(self, shared: Any) -> ProcessPoolExecutor:
        """The pool (started if need be), its workers able to read ``shared``: a new state
        is pickled once and put on the state queue once per worker."""
        if self._pool is None:
            self._spawn()
        if self._shared is not shared:
            state = pickle.dumps(shared, protocol=pickle.HIGHEST_PROTOCOL)
            self._token += 1
            for _ in range(self.pool_size):
                self._states.put((self._token, state))
            self._shared = shared
        return self._pool

    @property
    def pool_size(self) -> int:
        """Worker processes of the pool: one fewer than ``workers`` when this process
        computes too."""
        return max(1, self.workers - 1) if self.driver_computes else self.workers

    def _pooled(self, function, shared, items, indices):
        """The items of ``indices`` on the pool and, with ``driver_computes``, here too, from
        one queue served from the front in the order given. The pool holds at most one item
        per process: a thread (execution/feed.py) hands a process its next item as soon as
        it has returned one, and between collecting results this process takes the next item
        itself. No item waits in a process's queue while another process is idle (the pool
        moves every item it is given into its processes' queue, beyond recall: with all
        items submitted at once, the last long units waited there while this process sat
        idle, issue 32), and with the runner's longest-first order both sides end on the
        short items."""
        feed = Feed(indices, self.pool_size)
        try:
            # in this (main) thread, with SIGINT ignored: the first submits start the workers
            with span("pool-start"), _sigint_ignored_while_spawning():
                pool = self._start_pool(shared)
                feed.start(pool, function, items, self._token, self._ready)
        except Exception:  # e.g. the state does not pickle: the pool is of no use
            feed.stop()
            self.close(terminate=True)
            raise
        remaining = len(indices)
        try:
            while remaining:
                while True:  # every result the pool has ready
                    try:
                        index, future = feed.finished.get_nowait()
                    except queue.Empty:
                        break
                    remaining -= 1
                    yield index, future.result()
                index = feed.take() if self.driver_computes and remaining else None
                if index is not None:
                    remaining -= 1
                    yield index, function(shared, items[index])
                    self.inline_items += 1
                elif remaining:
                    # a bounded wait: a signal the kernel delivers to another thread (the
                    # pool's threads) only sets Python's flag, and the main thread runs its
                    # handler when it wakes, so SIGTERM ends the run within
                    # SIGNAL_POLL_SECONDS, not at the next finished unit (issue 26)
                    try:
                        index, future = feed.finished.get(timeout=SIGNAL_POLL_SECONDS)
                    except queue.Empty:
                        continue
                    remaining -= 1
                    yield index, future.result()
        except Exception:
            feed.stop()  # items not started are dropped; running ones end on their own
            raise
        except BaseException:  # interrupted, or the consumer stopped early
            feed.stop()
            self.close(terminate=True)
            raise
        feed.stop()

    def close(self, terminate: bool = False) -> None:
        """Stop the pool's workers at once and wait for them (milliseconds): they are idle
        after a map, or still starting (warm), or, with ``terminate`` (after an
        interruption), running items that are abandoned. The stop event ends every worker's
        watchdog with ``os._exit``, and each process is sent SIGTERM (a worker still in its
        spawn bootstrap has no watchdog yet)."""
        pool, stop = self._pool, self._stop
        self._pool = self._stop = self._states = None
        self._shared, self._ready = _NO_STATE, []
        if self._driver_threads is not None:  # this process's batch threads as they were
            importlib.import_module(BATCH_THREADS).limit_threads(self._driver_threads)
            self._driver_threads = None
        if pool is None:
            return
        # idle workers, or ones still starting (warm), have nothing to finish: end them now
        # (a worker still in its spawn bootstrap would otherwise print a traceback when this
        # process's semaphores are gone; SIGTERM ends it silently)
        stop.set()
        for process in list((getattr(pool, "_processes", None) or {}).values()):
            if process.is_alive():
                process.terminate()
        with span("pool-shutdown"):
            pool.shutdown(wait=True, cancel_futures=True)

    def describe(self) -> str:
        return f"local processes (workers={self.workers})"


# ---------------------------------------------------------------------------------------------
# Dask distributed
# ---------------------------------------------------------------------------------------------
def _dask_task(function: Task, shared: Any, item: Any, driver: int | None = None) -> Any:
    if os.getpid() != driver:  # a worker process (not a thread of the driver, in tests)
        limit_in_worker()  # one BLAS thread, as in the run's driver (blas.py; once)
    return function(shared, item)


def _import_distributed():
    try:
        import distributed
    except ImportError:
        raise UserError(
            "--executor dask needs the optional dask extra: pip install 'shufflesim[dask]'"
        ) from None
    return distributed


class DaskExecutor(Executor):
    """A Dask distributed client (module docstring). ``processes=False`` runs the local
    cluster's workers as threads of this process (for tests)."""

    def __init__(self, workers: int | None = None, scheduler: str | None = None,
                 processes: bool = True, timeout: float = 30.0) -> None:
        self._distributed = _import_distributed()
        self.workers = default_workers() if workers is None else workers
        if not isinstance(self.workers, int) or self.workers < 1:
            raise UserError(f"workers = {workers!r}: must be an integer >= 1")
        self.scheduler = scheduler
        self.processes = processes
        self.timeout = timeout
        self._cluster = None
        self._client = None

    def _connect(self):
        """The client, started on first use: a run builds (and measures the memory plan of)
        its setups before any unit is distributed, and the client's event-loop thread, which
        allocates memory all the time, must not run during those measurements."""
        if self._client is not None:
            return self._client
        distributed = self._distributed
        try:
            if self.scheduler is None:
                self._cluster = distributed.LocalCluster(
                    n_workers=self.workers, threads_per_worker=1, processes=self.processes,
                    dashboard_address=None, silence_logs=logging.ERROR,
                )
                self._client = distributed.Client(self._cluster, set_as_default=False)
            else:
                self._client = distributed.Client(self.scheduler, timeout=self.timeout,
                                                  set_as_default=False)
        except (OSError, TimeoutError, ValueError) as error:
            # the half-made client's __del__ would print a traceback at exit: we exit with
            # one line instead
            sys.unraisablehook = lambda _unraisable: None
            self.close()
            where = f"scheduler {self.scheduler}" if self.scheduler else "a local Dask cluster"
            raise UserError(f"cannot connect to {where}: {error}") from None
        return self._client

    def map_unordered(self, function, shared, items):
        client = self._connect()
        [shared_future] = client.scatter([shared], broadcast=True, hash=False)
        token = uuid.uuid4().hex
        futures = [
            client.submit(_dask_task, function, shared_future, item, os.getpid(), pure=False,
                          key=f"shufflesim-{token}-{index}")
            for index, item in enumerate(items)
        ]
        position = {future.key: index for index, future in enumerate(futures)}
        try:
            for future in self._distributed.as_completed(futures, loop=client.loop):
                yield position[future.key], future.result()
        finally:
            client.cancel(futures + [shared_future])

    def close(self) -> None:
        client = getattr(self, "_client", None)
        if client is not None:
            client.close()
            self._client = None
        if self._cluster is not None:
            self._cluster.close()
            self._cluster = None

    def describe(self) -> str:
        where = self.scheduler or f"local cluster, {self.workers} worker processes"
        return f"dask ({where})"


#: A Dask scheduler address: [protocol://]host[:port].
_ADDRESS = re.compile(r"^(?:(?P<protocol>tcp|tls|inproc|ucx|ws|wss)://)?"
                      r"(?P<host>\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]+)(?::(?P<port>\d{1,5}))?/?$")
#: Seconds to wait for a TCP connection to --scheduler before giving up.
PROBE_SECONDS = 5.0


def check_scheduler(scheduler: str) -> None:
    """Refuse, before Dask is imported, a ``--scheduler`` that is not an address, or a TCP
    address nothing answers on within :data:`PROBE_SECONDS` (one line each)."""
    match = _ADDRESS.match(scheduler.strip()) if isinstance(scheduler, str) else None
    if match is None:
        raise UserError(f"--scheduler = {scheduler!r}: not a scheduler address (expected "
                        "tcp://HOST:PORT or HOST:PORT, e.g. tcp://127.0.0.1:8786)")
    if match["protocol"] not in (None, "tcp", "tls"):
        return
    host, port = match["host"].strip("[]"), int(match["port"] or 8786)
    if not 0 < port < 65536:
        raise UserError(f"--scheduler = {scheduler!r}: port {port} is not in 1..65535")
    try:
        socket.create_connection((host, port), timeout=PROBE_SECONDS).close()
    except OSError as error:
        reason = error.strerror or type(error).__name__
        raise UserError(f"--scheduler = {scheduler!r}: cannot connect to {host}:{port} "
                        f"({reason}); is the scheduler running?") from None


def make_executor(kind: str = LOCAL, workers: int | None = None, scheduler: str | None = None,
                  inline_seconds: float = INLINE_SECONDS) -> Executor:
    """The executor of ``--executor``, ``--workers`` and ``--scheduler``."""
    if scheduler is not None and kind != DASK:
        raise UserError(f"--scheduler = {scheduler!r}: needs --executor dask")
    if scheduler is not None:
        check_scheduler(scheduler)
    if kind == LOCAL:
        return ProcessExecutor(workers, inline_seconds=inline_seconds)
    if kind == DASK:
        return DaskExecutor(workers, scheduler=scheduler)
    raise UserError(f"--executor = {kind!r}: must be one of {list(EXECUTORS)}")
