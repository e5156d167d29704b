"""A Gantt-like summary of a run's trace (simulator/execution/trace.py): where the cores went.

``python -m shufflesim.simulator.execution.trace_report TRACE [TRACE ...]`` prints, per trace:

* one text row per process over the run's wall time (``s`` start-up, ``#`` a unit, ``-`` idle
  between units, letters for the driver's phases: L load, P plan, S set-ups and memory probe,
  O opening the parts, q and Q the pool's early and late start, A assembly, W writing, X the
  pool's shutdown);
* per process: start-up wall and CPU, units run, their wall and CPU, and its idle time while
  units remained to run elsewhere (from its first unit to the run's last unit end);
* the serial parts: from the driver's creation to the first unit, and from the last unit's
  end to the driver's exit;
* the critical path of the unit phase: the last unit to end, when it started, and the
  longest unit; and the lower bound on the unit phase, max(unit CPU / processes, longest).

Only the standard library: the report reads JSON lines.
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

#: The letter of each driver phase in the Gantt rows.
LETTERS = {"load": "L", "plan": "P", "setups": "S", "parts-open": "O", "pool-start": "Q",
           "pool-warm": "q",
           "assemble": "A", "write": "W", "pool-shutdown": "X", "unit-store": "w"}
WIDTH = 96


@dataclass
class Process:
    pid: int
    role: str = "worker"
    start: tuple[float, float, float] | None = None  # (t0, t1, cpu)
    units: list[dict] = field(default_factory=list)
    phases: list[dict] = field(default_factory=list)
    exit: float | None = None
    exit_cpu: float | None = None


@dataclass
class Trace:
    processes: dict[int, Process]
    origin: float
    end: float

    @property
    def units(self) -> list[dict]:
        return sorted((u for p in self.processes.values() for u in p.units),
                      key=lambda u: u["t0"])


def read(lines: Iterable[str]) -> Trace:
    """The events of a trace file's lines, by process."""
    processes: dict[int, Process] = {}
    events = [json.loads(line) for line in lines if line.strip()]
    if not events:
        raise ValueError("the trace is empty (was SHUFFLESIM_TRACE set for the run?)")
    for event in events:
        process = processes.setdefault(event["pid"], Process(event["pid"]))
        kind = event["event"]
        if kind in ("driver-start", "worker-start"):
            process.role = "driver" if kind == "driver-start" else "worker"
            if process.start is None:
                process.start = (event["t0"], event["t1"], event["cpu1"])
        elif kind == "unit":
            process.units.append(event)
        elif kind == "exit":
            process.exit, process.exit_cpu = event["t1"], event["cpu1"]
        else:
            process.role = "driver"
            process.phases.append(event)
    origin = min(e["t0"] for e in events)
    end = max(e["t1"] for e in events)
    return Trace(processes, origin, end)


def _row(process: Process, origin: float, span: float) -> str:
    cells = [" "] * WIDTH

    def paint(t0: float, t1: float, char: str) -> None:
        first = int((t0 - origin) / span * WIDTH)
        last = max(first + 1, int(round((t1 - origin) / span * WIDTH)))
        for i in range(max(0, first), min(WIDTH, last)):
            cells[i] = char

    if process.units:
        paint(process.units[0]["t0"], max(u["t1"] for u in process.units), "-")
    if process.start is not None:
        paint(process.start[0], process.start[1], "s")
    for phase in process.phases:
        paint(phase["t0"], phase["t1"], LETTERS.get(phase["event"], "?"))
    for unit in process.units:
        paint(unit["t0"], unit["t1"], "#")
    return "".join(cells)


def summary(trace: Trace) -> str:
    """The report of one trace (module docstring)."""
    origin, span = trace.origin, max(trace.end - trace.origin, 1e-9)
    units = trace.units
    out = [f"run: {span:.2f} s wall from the first process's creation to the last event; "
           f"{len(units)} units in {len(trace.processes)} processes (1 char = "
           f"{span / WIDTH:.2f} s)"]
    ordered = sorted(trace.processes.values(), key=lambda p: (p.role != "driver", p.pid))
    for process in ordered:
        out.append(f"  {process.role[:6]:6s} {process.pid:>7d} |{_row(process, origin, span)}|")
    if not units:
        return "\n".join(out)
    first_unit, last_end = units[0]["t0"], max(u["t1"] for u in units)
    cpu_total = sum(u["cpu1"] - u["cpu0"] for u in units)
    longest = max(units, key=lambda u: u["t1"] - u["t0"])
    last = max(units, key=lambda u: u["t1"])
    for process in ordered:
        busy = sum(u["t1"] - u["t0"] for u in process.units)
        cpu = sum(u["cpu1"] - u["cpu0"] for u in process.units)
        begin = min((u["t0"] for u in process.units), default=last_end)
        idle = max(0.0, last_end - begin - busy)
        start = ("" if process.start is None else
                 f"start-up {process.start[1] - process.start[0]:.2f} s wall "
                 f"{process.start[2]:.2f} s CPU (ready at {process.start[1] - origin:.2f} s); ")
        final = _final_cpu(process)
        total = "" if final is None else f"; process CPU {final:.2f} s"
        out.append(f"  {process.role} {process.pid}: {start}{len(process.units)} units, "
                   f"{busy:.2f} s wall, {cpu:.2f} s CPU; first unit at {begin - origin:.2f} s, "
                   f"idle {idle:.2f} s before the last unit's end{total}")
    driver = next((p for p in ordered if p.role == "driver"), None)
    phases = defaultdict(lambda: [0.0, 0.0])
    for phase in driver.phases if driver else ():
        phases[phase["event"]][0] += phase["t1"] - phase["t0"]
        phases[phase["event"]][1] += phase["cpu1"] - phase["cpu0"]
    out.append("  driver phases (wall / CPU s): " + ", ".join(
        f"{name} {wall:.2f}/{cpu:.2f}" for name, (wall, cpu) in phases.items()))
    exit_time = driver.exit if driver and driver.exit else trace.end
    out.append(f"  serial: creation to first unit {first_unit - origin:.2f} s; last unit's end "
               f"to the driver's exit {exit_time - last_end:.2f} s; unit phase "
               f"{last_end - first_unit:.2f} s")
    workers = sum(1 for p in ordered if p.units)
    bound = max(cpu_total / max(workers, 1), longest["cpu1"] - longest["cpu0"])
    out.append(f"  units: {cpu_total:.2f} s CPU in all; lower bound of the unit phase on "
               f"{workers} processes {bound:.2f} s (max of CPU / processes and the longest "
               f"unit's CPU)")
    lo, ll = last["t0"] - origin, longest["t0"] - origin
    out.append(f"  critical path: last unit {last['key']} ran {lo:.2f}-"
               f"{last['t1'] - origin:.2f} s ({last['cpu1'] - last['cpu0']:.2f} s CPU); longest "
               f"unit {longest['key']} {longest['t1'] - longest['t0']:.2f} s wall, "
               f"{longest['cpu1'] - longest['cpu0']:.2f} s CPU, from {ll:.2f} s")
    return "\n".join(out)


def cpu_path(trace: Trace) -> float | None:
    """The run's length if every process had a core to itself, from CPU seconds alone (an
    estimate that a loaded machine does not change: the wall clock does): the longer of the
    driver's CPU and, for each worker, the driver's CPU when the pool started plus the
    worker's CPU plus the driver's CPU after the last unit. None without the driver's exit.
    The assignment of units to processes is the traced one; on an idle machine it may
    differ."""
    driver = next((p for p in trace.processes.values() if p.role == "driver"), None)
    if driver is None or driver.exit_cpu is None:
        return None
    pool = _pool_start(driver)
    units = trace.units
    last_end = max((u["t1"] for u in units), default=None)
    after = [e for e in driver.phases if last_end is not None and e["t0"] >= last_end]
    tail = driver.exit_cpu - min((e["cpu0"] for e in after), default=driver.exit_cpu)
    path = driver.exit_cpu
    for process in trace.processes.values():
        cpu = _final_cpu(process)
        if process is driver or cpu is None or pool is None:
            continue
        path = max(path, pool["cpu0"] + cpu + tail)
    return path


def _pool_start(driver: Process) -> dict | None:
    """The driver's event that started the workers: its early start (warm) or the pool's."""
    starts = [e for e in driver.phases if e["event"] in ("pool-warm", "pool-start")]
    return min(starts, key=lambda e: e["t0"], default=None)


def _final_cpu(process: Process) -> float | None:
    """A process's CPU at its exit, or at the end of its last unit (workers are ended
    without an exit record when the pool closes)."""
    if process.exit_cpu is not None:
        return process.exit_cpu
    return max((u["cpu1"] for u in process.units), default=None)


def replay(trace: Trace) -> float | None:
    """The run's length on an idle machine with one core per process, replayed from CPU
    seconds: the units in the traced order of their starts, each to the process free first
    (one queue served from the front, as executors.ProcessExecutor does), taking its traced
    CPU; the driver free at its CPU before the first unit, each worker at the driver's CPU
    when the pool started plus the worker's start-up CPU; plus the driver's CPU after the
    last unit. A model (no latencies, no contention beyond the traced CPU), not a
    measurement. None without the driver's exit."""
    driver = next((p for p in trace.processes.values() if p.role == "driver"), None)
    units = trace.units
    if driver is None or driver.exit_cpu is None or not units:
        return None
    mine = sorted(driver.units, key=lambda u: u["t0"])
    free = [mine[0]["cpu0"] if mine else 0.0]
    pool = _pool_start(driver)
    for process in trace.processes.values():
        if process is not driver and process.start is not None and pool is not None:
            free.append(pool["cpu0"] + process.start[2])
    for unit in units:
        first = min(range(len(free)), key=free.__getitem__)
        free[first] += unit["cpu1"] - unit["cpu0"]
    last_end = max(u["t1"] for u in units)
    after = [e["cpu0"] for e in driver.phases if e["t0"] >= last_end]
    return max(free) + driver.exit_cpu - min(after, default=driver.exit_cpu)


def unit_cpu(trace: Trace) -> dict[str, float]:
    """CPU seconds of every unit, by key (to compare the same units across worker counts)."""
    return {u["key"]: u["cpu1"] - u["cpu0"] for u in trace.units}


def main(argv: list[str] | None = None) -> int:
    paths = sys.argv[1:] if argv is None else argv
    if not paths:
        print("error: TRACE = none given: python -m "
              "shufflesim.simulator.execution.trace_report TRACE [TRACE ...]", file=sys.stderr)
        return 2
    for path in paths:
        try:
            with open(path, encoding="utf-8") as stream:
                trace = read(stream)
        except (OSError, ValueError, KeyError) as error:
            print(f"error: TRACE = {path!r}: {error}", file=sys.stderr)
            return 2
        path_cpu = cpu_path(trace)
        extra = "" if path_cpu is None else (
            f"\n  CPU path (the run's length with a core per process, traced assignment): "
            f"{path_cpu:.2f} s; replayed from CPU with the executor's queue: "
            f"{replay(trace):.2f} s")
        print(f"{path}\n{summary(trace)}{extra}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
