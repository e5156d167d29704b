"""Progress reports of long commands: lines off a terminal, a heartbeat during long steps, and a
time-left estimate that a slow start does not inflate."""

from __future__ import annotations

import io
import time

import pytest
from click.testing import CliRunner

from shufflesim.simulator.cli import main
from shufflesim.simulator.execution import progress
from shufflesim.simulator.execution.progress import ProgressReport


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_time_left_follows_the_recent_rate_not_a_slow_start():
    """100 units: the first 10 take 100 s (workers starting), then 1 unit per second. At 90
    done the remaining 10 units take 10 s; the whole-run rate (90 / 180 s) would say 20 s, and
    after a longer start-up arbitrarily more."""
    clock, stream = Clock(), io.StringIO()
    report = ProgressReport("run", stream, tty=False, delay=0.0, log_interval=0.0, clock=clock)
    report(0, 100)
    clock.now = 100.0
    report(10, 100)
    for done in range(11, 91):
        clock.now += 1.0
        report(done, 100)
    last = stream.getvalue().splitlines()[-1]
    assert last.startswith("run: 90/100 units (90%)")
    assert last.endswith(", 1 units/s, 10 s left"), last


def test_heartbeat_repeats_the_line_during_one_long_step():
    stream = io.StringIO()
    report = ProgressReport("bounds", stream, tty=False, delay=0.0, log_interval=0.05,
                            unit="bounds")
    with report, report.heartbeat():
        report.doing("exact-lower")
        report(0, 2)
        time.sleep(1.3)  # the heartbeat wakes at least once a second
        report.doing(None)
        report(2, 2)
    lines = stream.getvalue().splitlines()
    during = [line for line in lines if "exact-lower (" in line]
    assert len(during) >= 2, lines
    assert all("\r" not in line for line in lines)  # whole lines, never a redraw, off a tty
    assert lines[-1].startswith("bounds: 2/2 bounds (100%)")


def test_quiet_heartbeat_writes_nothing():
    stream = io.StringIO()
    report = ProgressReport("x", stream, enabled=False, delay=0.0, log_interval=0.01)
    with report, report.heartbeat():
        report(0, 1)
        time.sleep(0.05)
        report(1, 1)
    assert stream.getvalue() == ""


def test_bound_prints_progress_lines_when_stderr_is_not_a_terminal(monkeypatch):
    """CliRunner's stderr is not a terminal: progress comes as whole lines once the work has
    taken longer than the report's delay (30 s by default; shortened here), unless --quiet."""
    monkeypatch.setattr(progress, "LOG_DELAY", 0.0)
    monkeypatch.setattr(progress, "LOG_INTERVAL", 0.05)
    args = ["bound", "--randomizer", "krr", "--domain-size", "10", "--epsilon0", "1", "--n",
            "1000", "--delta", "1e-6", "--method", "blanket_hoeffding", "--method",
            "variation-ratio"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    assert "bounds: 2/2 bounds (100%)" in result.stderr
    assert "\r" not in result.stderr
    quiet = CliRunner().invoke(main, [*args, "--quiet"])
    assert quiet.exit_code == 0 and quiet.stderr == ""


def test_lazily_bound_modules_import_once_and_forward_attributes():
    """A module bound by simulator.cli.lazy is imported on first use, once, by the ordinary
    import system: a package's submodule imported directly first does not run twice."""
    import subprocess
    import sys

    code = ("import sys; from shufflesim.simulator.cli.lazy import lazy_module; "
            "r = lazy_module('shufflesim.protocols.randomizers'); "
            "assert 'shufflesim.protocols.randomizers' not in sys.modules; "
            "from shufflesim.protocols.randomizers.base import Randomizer; "
            "k = r.make_randomizer('krr', epsilon0=1.0, domain_size=3); "
            "assert isinstance(k, Randomizer); "
            "s = lazy_module('shufflesim.simulator.batch.shuffling'); "
            "import shufflesim.simulator.batch.shuffling as real; "
            "assert s.shuffle_reports is real.shuffle_reports; print('ok')")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.stdout.strip() == "ok", done.stderr


def test_a_terminal_line_is_withdrawn_when_the_work_fails():
    """On a terminal the progress line stays open until the report closes: a failure erases
    it (the command's one line is then its error), success ends it with a newline."""
    clock, stream = Clock(), io.StringIO()
    with pytest.raises(RuntimeError):
        with ProgressReport("run", stream, tty=True, delay=0.0, clock=clock) as report:
            report(1, 4)
            raise RuntimeError("boom")
    assert "run: 1/4" in stream.getvalue()
    assert stream.getvalue().endswith("\r\x1b[K") and "\n" not in stream.getvalue()
    stream = io.StringIO()
    with ProgressReport("run", stream, tty=True, delay=0.0, clock=clock) as report:
        report(4, 4)
    assert stream.getvalue().endswith("\n") and "run: 4/4" in stream.getvalue()


def test_to_a_pipe_the_first_line_waits_the_log_delay():
    clock, stream = Clock(), io.StringIO()
    report = ProgressReport("run", stream, tty=False, clock=clock)
    clock.now += progress.LOG_DELAY / 2
    report(1, 4)
    assert stream.getvalue() == ""
    clock.now += progress.LOG_DELAY
    report(2, 4)
    assert stream.getvalue().startswith("run: 2/4")


def test_warnings_are_dropped_when_the_command_fails(tmp_path):
    """A command that fails prints its one error line, not the warnings it explains."""
    client = tmp_path / "client.py"
    client.write_text("def f(value, rng):\n    raise ValueError('bad')\n")
    result = CliRunner().invoke(main, [
        "audit", "--implementation", f"{client}:f", "--randomizer", "krr", "--domain-size", "4",
        "--epsilon0", "1", "--trials", "100", "--level", "randomizer", "--quiet"])
    assert result.exit_code == 2
    assert len(result.output.strip().splitlines()) == 1, result.output
    assert "raised ValueError: bad" in result.output and "vectorized" not in result.output
