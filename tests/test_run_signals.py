"""Ending a real ``shufflesim run`` from outside (simulator/commands/run.py, executors.py):
SIGKILL leaves no worker or resource tracker behind; SIGTERM and Ctrl-C end with one line and
exit code 143 / 130, and the same command then resumes to the tables of an uninterrupted run."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from conftest import scenario_text, zipf

from shufflesim.simulator.cli.commands.run import INTERRUPTED
from shufflesim.simulator.execution.resume import DONE, PARTS

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(),
                                reason="reads process trees from /proc (Linux)")

def long_text(reps: int) -> str:
    """About 60 ms per unit."""
    return scenario_text(name="long", seed=3, repetitions=reps, n=2000000, data=zipf(10),
                         sections="[batch]\nchunk_repetitions = 1\n")

CLI_MAIN = "from shufflesim.simulator.cli import main; main()"


def command(path, out):
    return [sys.executable, "-c", CLI_MAIN, "run", str(path),
            "--out", str(out), "--workers", "2", "-q"]


def children(pid: int) -> set[int]:
    """Every descendant of ``pid`` (from /proc)."""
    parents: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        parents.setdefault(ppid, []).append(int(entry.name))
    found, todo = set(), [pid]
    while todo:
        for child in parents.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def start_and_wait_for_workers(tmp_path, reps, worker_units=0):
    """Start a run; return once its workers exist and have finished ``worker_units`` units."""
    path = tmp_path / "long.toml"
    path.write_text(long_text(reps))
    out = tmp_path / "out"
    process = subprocess.Popen(command(path, out), stderr=subprocess.PIPE,
                               stdout=subprocess.DEVNULL, start_new_session=True)
    done = out / "long" / PARTS / DONE
    deadline = time.monotonic() + 120
    seen: set[int] = set()
    before = None  # units finished when the workers appeared

    def finished():
        return len(list(done.glob("*.json"))) if done.is_dir() else 0

    while time.monotonic() < deadline and process.poll() is None:
        seen |= children(process.pid)
        # the resource tracker and the pool's worker (with --workers 2 the run's own process
        # computes beside one worker process: executors.py)
        if len(seen) >= 2 and before is None:
            before = finished()
        if before is not None and finished() >= before + worker_units:
            break
        time.sleep(0.02)
    if process.poll() is not None:
        stderr = process.stderr.read().decode(errors="replace")
        process.stderr.close()
        pytest.fail(f"the run ended (exit {process.returncode}) before the test could "
                    f"interrupt it; its stderr: {stderr.strip()[-2000:]!r}")
    time.sleep(0.3)
    seen |= children(process.pid)
    assert len(seen) >= 2
    return process, path, out, seen


@pytest.fixture(scope="module")
def expected(tmp_path_factory):
    """The utility table of an uninterrupted run (in this process)."""
    from shufflesim.simulator.execution.runner import run_scenario
    from shufflesim.simulator.scenario.loader import parse_scenario

    return run_scenario(parse_scenario(long_text(REPS)))["utility"]


#: Enough units that the run always starts its workers: it keeps work in its own process when
#: the rest would take less than about 6 s (executors.py), which 120 units of ~50 ms on an idle
#: machine do not.
REPS = 240


def test_sigkill_leaves_no_process_of_the_run(tmp_path):
    """Before: the resource tracker and both workers lived on, idle, for minutes. Now nothing
    of the run is alive 3 s after the SIGKILL (issue 26; the kernel's parent-death signal ends
    the workers at once, the tracker exits when they are gone)."""
    process, _, _, seen = start_and_wait_for_workers(tmp_path, reps=REPS)
    try:
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline and any(alive(pid) for pid in seen):
            time.sleep(0.1)
        assert not [pid for pid in seen if alive(pid)]
    finally:
        for pid in seen:
            if alive(pid):
                os.kill(pid, signal.SIGKILL)
        process.stderr.close()


@pytest.mark.parametrize(("number", "group", "code"), [
    # ~35 s each on a slow CI machine: the Ctrl-C case runs by default, SIGTERM with -m slow
    pytest.param(signal.SIGTERM, False, 143, marks=pytest.mark.slow),
    (signal.SIGINT, True, 130),  # Ctrl-C: the whole process group gets it
    pytest.param(signal.SIGINT, False, 130, marks=pytest.mark.slow),
    pytest.param(signal.SIGTERM, True, 143, marks=pytest.mark.slow),
])
def test_sigterm_and_ctrl_c_end_with_one_line_and_resume(tmp_path, expected, number, group,
                                                         code):
    process, path, out, seen = start_and_wait_for_workers(tmp_path, reps=REPS, worker_units=40)
    try:
        if group:
            os.killpg(process.pid, number)
        else:
            process.send_signal(number)
        _, stderr = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    text = stderr.decode()
    assert process.returncode == code, text
    assert text.splitlines() == [INTERRUPTED], text
    assert "leaked" not in text and "Traceback" not in text
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and any(alive(pid) for pid in seen):
        time.sleep(0.05)
    assert not [pid for pid in seen if alive(pid)]  # workers and tracker are gone
    run_dir = out / "long"
    finished = len(list((run_dir / PARTS / DONE).glob("*.json")))
    assert 40 <= finished < REPS
    assert not list(run_dir.glob("*.parquet"))
    # The same command resumes and ends with the tables of an uninterrupted run.
    resumed = subprocess.run(command(path, out), capture_output=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr.decode()
    assert pq.read_table(run_dir / "utility.parquet").equals(expected)
    assert not (run_dir / PARTS).exists()


def test_a_worker_ends_when_its_parent_dies_without_the_death_signal(tmp_path):
    """The portable fallback: the watchdog thread alone (no PR_SET_PDEATHSIG)."""
    script = (
        "import os, subprocess, sys\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import os, time; "
        "from shufflesim.simulator.execution.executors import _initialize_worker; "
        "_initialize_worker(os.getppid(), False); time.sleep(60)'])\n"
        "print(child.pid, flush=True)\n"
        "import time; time.sleep(1.0)\n"
        "os._exit(0)\n"
    )
    parent = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=60)
    pid = int(parent.stdout.split()[0])
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and alive(pid):
        time.sleep(0.05)
    assert not alive(pid)
