"""A run's trace (simulator/execution/trace.py) and its report (trace_report.py): every unit of
a 2-process run recorded once, with the process that ran it, and the report's idle times,
serial parts and critical path computed from the events."""

from __future__ import annotations

import json

import pytest
from conftest import scenario_text

from shufflesim.simulator.execution import trace_report
from shufflesim.simulator.execution.executors import ProcessExecutor
from shufflesim.simulator.execution.runner import run_scenario
from shufflesim.simulator.execution.simulation import make_setup
from shufflesim.simulator.execution.trace import ENV, Traced, record, span
from shufflesim.simulator.execution.units import RunState, plan_run
from shufflesim.simulator.scenario.loader import parse_scenario
from shufflesim.simulator.scenario.producers import run_producers

TEXT = scenario_text(name="traced", seed=5, repetitions=6, n=120, sections="""
    [batch]
    chunk_repetitions = 1
    """)


def test_nothing_is_recorded_without_the_variable(tmp_path, monkeypatch):
    monkeypatch.delenv(ENV, raising=False)
    with span("load"):
        pass
    record("x", 0.0, 1.0, 0.0, 1.0)
    assert not list(tmp_path.iterdir())


def test_every_unit_of_a_two_process_run_is_recorded_once(tmp_path, monkeypatch):
    path = tmp_path / "run.trace"
    monkeypatch.setenv(ENV, str(path))
    scenario = parse_scenario(TEXT)
    with ProcessExecutor(2, inline_seconds=0) as executor:
        executor.warm()
        for probe in executor._ready:  # the worker started (it then records its start-up)
            probe.result(timeout=600)
        run_scenario(scenario, executor=executor)
    events = [json.loads(line) for line in path.read_text().splitlines()]
    units = [e["key"] for e in events if e["event"] == "unit"]
    state = RunState(scenario, tuple(make_setup(p) for p in scenario.points),
                     run_producers(scenario))  # the producers of its sections
    assert sorted(units) == sorted(unit.key for unit in plan_run(state))
    starts = [e for e in events if e["event"] == "worker-start"]
    assert len(starts) == 1 and starts[0]["t0"] <= starts[0]["t1"]
    assert {e["pid"] for e in events if e["event"] == "unit"} <= {starts[0]["pid"]} | {
        e["pid"] for e in events if e["event"] == "setups"}
    for event in events:
        assert event["t0"] <= event["t1"] and event["cpu0"] <= event["cpu1"]
    report = trace_report.summary(trace_report.read(path.read_text().splitlines()))
    assert f"{len(units)} units in 2 processes" in report and "critical path" in report


def _line(pid, event, t0, t1, cpu0=0.0, cpu1=0.0, **fields):
    return json.dumps({"pid": pid, "event": event, "t0": t0, "t1": t1, "cpu0": cpu0,
                       "cpu1": cpu1, **fields})


def test_the_report_of_a_known_time_line():
    """Driver 1 loads 0-2 s and runs units a (2-6 s) and c (6-7 s); worker 2 starts 2-3 s and
    runs b (3-10 s); the driver exits at 11 s. Driver idle 10 - 2 - 5 = 3 s, worker 0 s."""
    lines = [
        _line(1, "driver-start", 0.0, 0.5, 0.0, 0.4),
        _line(1, "load", 0.5, 2.0, 0.4, 1.9),
        _line(1, "unit", 2.0, 6.0, 2.0, 6.0, key="a"),
        _line(2, "worker-start", 2.0, 3.0, 0.0, 1.0),
        _line(2, "unit", 3.0, 10.0, 1.0, 8.0, key="b"),
        _line(1, "unit", 6.0, 7.0, 6.0, 7.0, key="c"),
        _line(1, "pool-start", 2.0, 2.0, 1.9, 1.9),
        _line(2, "exit", 10.5, 10.5, 8.0, 8.0),
        _line(1, "exit", 11.0, 11.0, 7.5, 7.5),
    ]
    trace = trace_report.read(lines)
    # a core per process: the worker starts at the driver's 1.9 s of CPU, takes 8 s
    assert trace_report.cpu_path(trace) == pytest.approx(9.9)
    # replay: a to the driver (free at 2.0 s of CPU), b to the worker (free at 1.9 + 1.0)
    assert trace_report.replay(trace) == pytest.approx(2.9 + 7.0)
    report = trace_report.summary(trace)
    assert "3 units in 2 processes" in report
    assert "idle 3.00 s before the last unit's end" in report  # the driver
    assert "idle 0.00 s before the last unit's end" in report  # the worker
    assert "creation to first unit 2.00 s; last unit's end to the driver's exit 1.00 s" in report
    assert "12.00 s CPU in all" in report and "2 processes 7.00 s" in report
    assert "last unit b ran 3.00-10.00 s (7.00 s CPU)" in report


def test_traced_function_records_the_item_key(tmp_path, monkeypatch):
    path = tmp_path / "t.trace"
    monkeypatch.setenv(ENV, str(path))

    class Item:
        key = "sim-p000001"

    assert Traced(lambda shared, item: shared + 1)(1, Item()) == 2
    [event] = [json.loads(line) for line in path.read_text().splitlines()]
    assert event["event"] == "unit" and event["key"] == "sim-p000001"


def test_the_command_refuses_a_missing_trace(tmp_path, capsys):
    assert trace_report.main([str(tmp_path / "none.trace")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: TRACE = ") and err.count("\n") == 1
