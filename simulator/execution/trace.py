"""A run's time line, recorded on request (issue 32: where do the cores of a parallel run go?).

When the environment variable :data:`ENV` (``SHUFFLESIM_TRACE``) names a file, every process
of a run -- the driver and each worker, which inherit the variable -- appends one JSON line per
event to it: the driver's phases (set-ups and memory probe, plan, pool start, assembly,
writing), each worker's start-up (from the process's creation to the end of its initializer),
and every unit (its key, the process that ran it, wall-clock start and end, and the process's
CPU seconds, user + system, at both ends). Lines are short single writes to a file opened for
appending, so the processes' lines never interleave. ``shufflesim.simulator.execution.
trace_report`` turns the file into a Gantt-like summary (idle time per process, the critical
path, the serial parts).

Unset (the default), nothing is recorded and nothing is imported or opened: :func:`span`
and :class:`Traced` cost one environment lookup.

A line: ``{"pid", "event", "t0", "t1", "cpu0", "cpu1"}`` plus the event's fields (``key`` for
a unit), times in seconds since the epoch (``time.time``), CPU from ``time.process_time``
(all threads of the process).
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import time
from collections.abc import Callable, Iterator
from typing import Any

#: The environment variable naming the trace file.
ENV = "SHUFFLESIM_TRACE"
_exit_hooked: set[int] = set()  # processes whose exit is recorded


def target() -> str | None:
    """The trace file, or None when not tracing."""
    return os.environ.get(ENV) or None


def record(event: str, t0: float, t1: float, cpu0: float, cpu1: float, **fields: Any) -> None:
    """Append one event line (no-op when not tracing)."""
    path = target()
    if path is None:
        return
    pid = os.getpid()
    if pid not in _exit_hooked:  # the process's end, with its CPU, once per process
        _exit_hooked.add(pid)
        atexit.register(_record_exit, pid)
    line = json.dumps({"pid": pid, "event": event, "t0": t0, "t1": t1, "cpu0": cpu0,
                       "cpu1": cpu1, **fields}, separators=(",", ":")) + "\n"
    with open(path, "a", encoding="utf-8") as stream:
        stream.write(line)


def _record_exit(pid: int) -> None:
    if os.getpid() == pid:  # not in a forked child that inherited the hook
        now, cpu = time.time(), time.process_time()
        record("exit", now, now, cpu, cpu)


def process_started() -> float | None:
    """When this process was created (seconds since the epoch, 10 ms resolution; Linux only,
    else None): the start of a worker's or the driver's start-up."""
    try:
        with open("/proc/self/stat", encoding="ascii") as stream:
            ticks = int(stream.read().rsplit(")", 1)[1].split()[19])
        with open("/proc/stat", encoding="ascii") as stream:
            boot = next(int(line.split()[1]) for line in stream if line.startswith("btime"))
    except (OSError, ValueError, IndexError, StopIteration):
        return None
    return boot + ticks / os.sysconf("SC_CLK_TCK")


def record_start(event: str) -> None:
    """Record this process's start-up, from its creation until now (no-op when not tracing
    or when the creation time is unknown)."""
    if target() is None:
        return
    started = process_started()
    if started is not None:
        record(event, started, time.time(), 0.0, time.process_time())


@contextlib.contextmanager
def span(event: str, **fields: Any) -> Iterator[None]:
    """Record the enclosed block as one event (when tracing)."""
    if target() is None:
        yield
        return
    t0, cpu0 = time.time(), time.process_time()
    try:
        yield
    finally:
        record(event, t0, time.time(), cpu0, time.process_time(), **fields)


class Traced:
    """``function(shared, item)`` recorded as a ``unit`` event keyed by ``item.key`` (when
    tracing); picklable when ``function`` is (executors send it to their workers)."""

    def __init__(self, function: Callable[[Any, Any], Any]) -> None:
        self.function = function

    def __call__(self, shared: Any, item: Any) -> Any:
        with span("unit", key=getattr(item, "key", repr(item))):
            return self.function(shared, item)
