"""The worker side of the local process executor (simulator/execution/executors.py): a
worker ends with its parent (the kernel's parent-death signal on Linux, and a watchdog thread
everywhere), ignores SIGINT, sets the batch path's threads, keeps the run's shared state,
unpickled once per state, for every item it runs, and computes with the run's one BLAS thread
(simulator/execution/blas.py)."""

from __future__ import annotations

import contextlib
import ctypes
import importlib
import os
import pickle
import signal
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from shufflesim.simulator.execution.blas import limit_in_worker
from shufflesim.simulator.execution.trace import record_start

Task = Callable[[Any, Any], Any]
#: The batch path's thread pool (its MAX_THREADS is set in each worker).
BATCH_THREADS = "shufflesim.simulator.batch.threads"

#: The run's shared state in a worker process (set once by the pool's initializer).
_WORKER_SHARED: dict[str, Any] = {}
#: How often (seconds) a worker's watchdog checks that its parent is alive.
WATCHDOG_SECONDS = 0.5
_PR_SET_PDEATHSIG = 1  # linux/prctl.h


def _exit_with_parent_linux() -> bool:
    """Ask the kernel to SIGKILL this process when the thread that started it ends (Linux)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _watch_parent(parent: int, stop: Any = None) -> None:
    """End this process when its parent is gone or, at once, when ``stop`` (a multiprocessing
    Event of the pool) is set."""
    while True:
        if stop is not None:
            if stop.wait(WATCHDOG_SECONDS):
                os._exit(1)  # the pool is stopped: its running items are abandoned
        else:
            time.sleep(WATCHDOG_SECONDS)
        if os.getppid() != parent:
            os._exit(1)  # the parent died: nobody will read a result (no cleanup to do)


def _initialize_worker(parent: int, death_signal: bool, stop: Any = None) -> None:
    """Ignore SIGINT (the calling process handles it and stops the workers) and end with the
    parent, or when ``stop`` is set (module docstring). ``death_signal``: the pool is started
    by the main thread, so PR_SET_PDEATHSIG (tied to the starting thread) is safe."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if death_signal:
        _exit_with_parent_linux()
    if os.getppid() != parent:  # the parent died before the death signal was armed
        os._exit(1)
    threading.Thread(target=_watch_parent, args=(parent, stop),
                     name="shufflesim-parent-watchdog", daemon=True).start()


def _initialize_pool_worker(parent: int, death_signal: bool, stop: Any, states: Any,
                            threads: int | None = None, modules: tuple[str, ...] = ()) -> None:
    """The pool's initializer: :func:`_initialize_worker`, then ``threads`` threads for the
    batch path, then the ``modules`` the run will need (imported while the driver loads the
    scenario, when the pool starts before it: ProcessExecutor.warm), then one BLAS thread, as
    in the driver of a run (blas.py: the BLAS thread count changes the rounding of sums, and a
    unit's rows must not depend on the process it ran in). The run's state arrives later,
    pickled, through ``states`` (:func:`_call_with_shared`), so the heavy imports it needs
    happen after the worker is tied to its parent: a run killed while its workers start
    leaves none behind."""
    _initialize_worker(parent, death_signal, stop)
    if threads is not None:  # the batch path's own threads (results do not depend on them)
        importlib.import_module(BATCH_THREADS).MAX_THREADS = threads
    _WORKER_SHARED["states"] = states
    for module in modules:
        importlib.import_module(module)
    limit_in_worker()  # after the imports: they loaded numpy's BLAS (later ones: the variables)
    record_start("worker-start")  # when tracing (trace.py): creation to ready


def _ready() -> None:
    """A no-op task: its completion says that a worker has started (executors.Feed)."""


@contextlib.contextmanager
def _sigint_ignored_while_spawning():
    """Workers start with SIGINT ignored (a disposition a child inherits through exec), so a
    Ctrl-C during their start-up, before their initializer runs, does not print tracebacks.
    Only in the main thread (signal handlers can only be set there)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        # (A Ctrl-C during these few milliseconds is lost; the next one is handled.)


def _call_with_shared(function: Task, item: Any, token: int) -> Any:
    """Worker side: run one item with the run's state ``token``, read once per worker from
    the pool's state queue (the driver puts one pickled copy per worker; copies of earlier
    states are skipped)."""
    if _WORKER_SHARED.get("token") != token:
        _WORKER_SHARED.pop("state", None)
        while True:
            number, data = _WORKER_SHARED["states"].get()
            if number == token:
                break
        _WORKER_SHARED["state"], _WORKER_SHARED["token"] = pickle.loads(data), token
        limit_in_worker()  # a no-op once limited (blas.py)
    return function(_WORKER_SHARED["state"], item)
