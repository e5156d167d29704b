"""Feeding a process pool one item per process (simulator/execution/executors.py, issue 32).

A :class:`concurrent.futures.ProcessPoolExecutor` moves every submitted item into its
processes' call queue as room appears (one running and one waiting per process), and an item
there can no longer be taken back. With every item of a run submitted at once, the last long
units of audit_krr waited in the worker's queue while the driver, which computes beside the
pool, had nothing left to do. :class:`Feed` keeps the queue in this process instead: the pool
holds one item per process, the first when the process has started (a worker still importing
holds none), and the next as soon as the process returns one.
"""

from __future__ import annotations

import collections
import queue
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from typing import Any

from shufflesim.simulator.execution.worker_process import _call_with_shared

Task = Callable[[Any, Any], Any]


class Feed:
    """One queue of item indices served from the front to this process (:meth:`take`) and to
    a process pool, which holds at most ``slots`` of them at a time (one per process): a
    thread submits a process's first item when the process has started and the next each
    time the pool returns one. Finished items arrive in :attr:`finished` as
    ``(index, future)``."""

    def __init__(self, indices: Sequence[int], slots: int) -> None:
        self._pending = collections.deque(indices)
        self._lock = threading.Lock()
        self._free = threading.Semaphore(0)  # pool processes that have returned an item
        self._slots = slots
        self._stopped = False
        self._thread: threading.Thread | None = None
        self.finished: queue.SimpleQueue = queue.SimpleQueue()

    def take(self) -> int | None:
        """The next item (removed from the queue), or None when none is left."""
        with self._lock:
            return None if self._stopped or not self._pending else self._pending.popleft()

    def start(self, pool: ProcessPoolExecutor, function: Task, items: Sequence[Any],
              token: int, ready: Sequence[Future]) -> None:
        """Start the thread that submits the items, one per process: a process's first item
        when its start-up probe (``ready``, worker_process._ready) has finished, so that no
        item waits for a worker still starting while this process could run it, and the
        next each time the pool returns one. ``token`` names the state the items need
        (worker_process._call_with_shared)."""
        def submit(index: int) -> None:
            future = pool.submit(_call_with_shared, function, items[index], token)
            future.add_done_callback(lambda done: self._done(index, done))

        def refill() -> None:
            while True:
                self._free.acquire()
                index = self.take()
                if index is None:
                    return
                try:
                    submit(index)
                except BaseException as error:  # the pool broke or was shut down
                    failed: Future = Future()
                    failed.set_exception(error)
                    self.finished.put((index, failed))
                    return

        for probe in list(ready)[:self._slots]:
            probe.add_done_callback(lambda _probe: self._free.release())
        for _ in range(self._slots - len(ready)):  # probes already consumed: slots are free
            self._free.release()
        self._thread = threading.Thread(target=refill, name="shufflesim-pool-feed",
                                        daemon=True)
        self._thread.start()

    def _done(self, index: int, future: Future) -> None:
        # in the pool's thread: hand over the result, free the process's slot
        if not future.cancelled():
            self.finished.put((index, future))
        self._free.release()

    def stop(self) -> None:
        """Drop the items not yet handed out and end the thread."""
        with self._lock:
            self._stopped = True
            self._pending.clear()
        self._free.release()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=5.0)
