"""Executors (simulator/executors.py): the same scenario gives the same tables, row for row, in
this process, on 2 local worker processes and on a Dask local cluster; errors cross processes
as one line; the CLI options."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import textwrap
import time

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from conftest import SWEEP_EPS, scenario_text

from shufflesim.simulator.batch import threads as batch_threads
from shufflesim.simulator.cli import main
from shufflesim.simulator.errors import ScenarioError, UserError
from shufflesim.simulator.execution.executors import (
    DaskExecutor,
    InlineExecutor,
    ProcessExecutor,
    default_workers,
    make_executor,
)
from shufflesim.simulator.execution.progress import ProgressReport, format_duration, format_rate
from shufflesim.simulator.execution.runner import run_scenario
from shufflesim.simulator.execution.simulation import make_setup
from shufflesim.simulator.scenario.loader import parse_scenario
from shufflesim.simulator.scenario.producers import PRODUCERS, ProducerSpec

BATCH = scenario_text(name="same", seed=3, repetitions=9, n=150, sections="""
    [batch]
    chunk_repetitions = 2
    [audit]
    level = "randomizer"
    trials = 20000
    """ + SWEEP_EPS)

PIPELINE = scenario_text(name="same_pipeline", seed=4, repetitions=4, n=200,
                         data='{ distribution = "uniform", domain_size = 3 }', sections="""
    [batch]
    chunk_repetitions = 1
    [pipeline]
    batch_size = 50
    timeout = 0.05
    arrival = "poisson"
    """)


def comparable(tables: dict[str, pa.Table]) -> dict[str, pa.Table]:
    """Tables without wall-time columns (audit ``seconds``), which no run reproduces."""
    return {name: table.drop([c for c in ("seconds",) if c in table.column_names])
            for name, table in tables.items()}


def run_with(executor, text):
    return comparable(run_scenario(parse_scenario(text), executor=executor))


def assert_same(a: dict[str, pa.Table], b: dict[str, pa.Table]) -> None:
    assert list(a) == list(b)
    for name in a:
        assert a[name].schema.equals(b[name].schema)
        assert a[name].equals(b[name]), name


@pytest.fixture(scope="module")
def pool():
    """Two worker processes shared by this module's tests (starting them costs seconds)."""
    with ProcessExecutor(2, inline_seconds=0, driver_computes=False) as executor:
        yield executor


def square(shared, item):
    return shared * item * item


def slow_square(shared, item):
    time.sleep(0.2)
    return square(shared, item)


def fail_on_three(shared, item):
    if item == 3:
        raise ValueError("item three")
    return item


def test_one_worker_two_processes_and_dask_give_identical_tables(pool):
    """The acceptance check: utility (batch and pipeline paths), batches and audit tables are
    equal row for row with 1 worker, 2 local processes and a Dask local cluster (2 workers;
    threads here, processes in the slow variant below)."""
    expected = {text: run_with(InlineExecutor(), text) for text in (BATCH, PIPELINE)}
    assert set(expected[BATCH]) == {"utility", "audit"}
    assert set(expected[PIPELINE]) == {"utility", "batches"}
    for text in (BATCH, PIPELINE):
        assert_same(run_with(pool, text), expected[text])
        assert pool.inline_items == 0  # every unit ran in a worker process
    with DaskExecutor(2, processes=False) as dask:
        for text in (BATCH, PIPELINE):
            assert_same(run_with(dask, text), expected[text])


@pytest.mark.slow
def test_dask_local_cluster_of_processes_gives_identical_tables():
    expected = run_with(InlineExecutor(), BATCH)
    with DaskExecutor(2) as dask:
        assert_same(run_with(dask, BATCH), expected)


def test_process_executor_yields_every_item_once(pool):
    results = dict(pool.map_unordered(square, 3, list(range(7))))
    assert results == {i: 3 * i * i for i in range(7)}
    assert dict(pool.map_unordered(square, 2, [5])) == {0: 50}  # a new shared state


class CountedState:
    """A shared state that counts how often this process pickles it."""

    pickled = 0

    def __init__(self, factor: int) -> None:
        self.factor = factor

    def __getstate__(self):
        type(self).pickled += 1
        return self.__dict__


def scaled(shared, item):
    return shared.factor * item


def test_the_shared_state_is_pickled_once_per_worker_not_per_item(pool):
    """The state is pickled once per state (it reaches each worker once, through the pool's
    state queue), not per item."""
    state = CountedState(5)
    assert dict(pool.map_unordered(scaled, state, list(range(20)))) == {
        i: 5 * i for i in range(20)}
    assert 1 <= CountedState.pickled <= pool.workers
    assert dict(pool.map_unordered(scaled, state, [3])) == {0: 15}  # the same pool
    assert CountedState.pickled <= pool.workers


def test_short_work_stays_in_this_process():
    """Items that finish within inline_seconds, or whose rest would not repay starting the
    workers, run here (no pool is started)."""
    ticks = iter(range(1000))
    pool = ProcessExecutor(2, inline_seconds=5.0, start_seconds=3.0,
                           clock=lambda: float(next(ticks)))
    # Each item "takes" 1 s of the fake clock: 5 items inline, then the rest (2 items, 2 s
    # estimated) is below 3 s x 2 / (2 - 1) = 6 s, so it runs here too.
    assert dict(pool.map_unordered(square, 1, list(range(7)))) == {i: i * i for i in range(7)}
    assert pool.inline_items == 7 and pool._pool is None


def test_errors_in_workers_propagate_and_the_pool_stays_usable(pool):
    with pytest.raises(ValueError, match="item three"):
        dict(pool.map_unordered(fail_on_three, None, list(range(6))))
    assert dict(pool.map_unordered(square, 1, [1, 2])) == {0: 1, 1: 4}


def invalid_value_producer(scenario, progress=None):
    """A producer that finds a bad scenario value only while it runs."""
    raise ScenarioError("audit.trials", -1, "must be an integer >= 1")


def test_a_user_error_in_a_worker_is_one_line_at_the_cli(tmp_path, monkeypatch, pool):
    """A ScenarioError raised inside a unit running in a worker process (it does not survive
    pickling as such) arrives as a one-line UserError; at the command line: exit code 2, one
    line, and no directory left behind."""
    monkeypatch.setitem(PRODUCERS._items, "invalid",
                        ProducerSpec("invalid", invalid_value_producer, True))
    with pytest.raises(UserError) as info:
        run_scenario(parse_scenario(BATCH), executor=pool)
    assert str(info.value) == "audit.trials = -1: must be an integer >= 1"
    path = tmp_path / "same.toml"
    path.write_text(BATCH)
    # no --quiet: to a pipe, progress waits LOG_DELAY (30 s) and the test does not depend on
    # the run being quicker: a progress line, if any, is allowed before the one error line
    result = CliRunner().invoke(main, ["run", str(path), "--out", str(tmp_path / "res"),
                                       "--workers", "1"])
    assert result.exit_code == 2
    lines = [line for line in result.output.strip().splitlines()
             if not line.startswith("running ")]
    assert lines == ["error: audit.trials = -1: must be an integer >= 1"]
    assert not (tmp_path / "res").exists()


def test_make_executor_and_its_errors(monkeypatch):
    assert isinstance(make_executor("local", 3), ProcessExecutor)
    assert make_executor("local", 3).workers == 3
    with pytest.raises(UserError, match="needs --executor dask"):
        make_executor("local", 2, scheduler="tcp://127.0.0.1:1")
    with pytest.raises(UserError, match="must be one of"):
        make_executor("threads", 2)
    with pytest.raises(UserError, match="workers = 0"):
        ProcessExecutor(0)
    monkeypatch.setitem(sys.modules, "distributed", None)  # as if dask were not installed
    with pytest.raises(UserError, match=r"pip install 'shufflesim\[dask\]'"):
        make_executor("dask", 2)


def test_cli_options(tmp_path):
    path = tmp_path / "same.toml"
    path.write_text(textwrap.dedent(BATCH))
    runner = CliRunner()
    bad = runner.invoke(main, ["run", str(path), "--executor", "local", "--scheduler",
                               "tcp://127.0.0.1:1", "--out", str(tmp_path / "x")])
    assert bad.exit_code == 2
    assert bad.output.strip().splitlines() == [
        "error: --scheduler = 'tcp://127.0.0.1:1': needs --executor dask"]
    zero = runner.invoke(main, ["run", str(path), "--workers", "0"])
    assert zero.exit_code == 2 and "--workers" in zero.output
    done = runner.invoke(main, ["run", str(path), "--out", str(tmp_path / "out"),
                                "--workers", "1", "-q"])
    assert done.exit_code == 0 and done.output == ""
    written = pq.read_table(tmp_path / "out" / "same" / "utility.parquet")
    assert written.replace_schema_metadata(None).equals(
        run_with(InlineExecutor(), BATCH)["utility"])


def test_dask_scheduler_address_uses_an_existing_cluster():
    """--scheduler ADDRESS: connect to a running scheduler (here a threaded local cluster)."""
    import distributed

    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster:
        with DaskExecutor(scheduler=cluster.scheduler_address) as dask:
            assert "tcp://" in dask.describe() or "inproc://" in dask.describe()
            assert_same(run_with(dask, BATCH), run_with(InlineExecutor(), BATCH))


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_progress_is_silent_for_short_work_and_reports_rate_and_time_left():
    clock, stream = Clock(), io.StringIO()
    report = ProgressReport("running x", stream, tty=False, delay=1.0, log_interval=10.0,
                            clock=clock)
    report(0, 100)
    clock.now = 0.5
    report(10, 100)
    assert stream.getvalue() == ""  # within the first second: nothing
    clock.now = 2.0
    report(40, 100)
    clock.now = 3.0
    report(50, 100)  # a line at most every 10 s to a file
    clock.now = 4.0
    report(100, 100)  # and always the last one
    assert stream.getvalue().splitlines() == [
        "running x: 40/100 units (40%), 20 units/s, 3 s left",
        "running x: 100/100 units (100%), 25 units/s, 4 s",
    ]


def test_progress_redraws_one_line_on_a_terminal_and_counts_only_new_units():
    clock, stream = Clock(), io.StringIO()
    report = ProgressReport("run", stream, tty=True, delay=0.0, interval=0.2, clock=clock)
    report(30, 60)  # a resumed run: 30 units were already done
    clock.now = 10.0
    report(40, 60)
    clock.now = 10.1
    report(41, 60)  # within the redraw interval: skipped
    report.close()
    text = stream.getvalue()
    assert text.count("\r\x1b[K") == 2 and text.endswith("\n")
    assert "run: 40/60 units (67%), 1 units/s, 20 s left" in text
    quiet = ProgressReport("q", stream := io.StringIO(), enabled=False, delay=0.0)
    quiet(1, 2)
    quiet(2, 2)
    assert stream.getvalue() == ""


def test_duration_and_rate_formats():
    assert format_duration(0.2) == "1 s" and format_duration(61) == "1 min 1 s"
    assert format_duration(7260) == "2 h 1 min" and format_duration(float("inf")) == "?"
    assert format_rate(12.3) == "12 units/s" and format_rate(0.5) == "0.5 units/s"
    assert format_rate(0.01) == "0.6 units/min"


def test_dask_connects_on_first_use():
    """The client starts at the first map (after the run's setups are built and measured); an
    unreachable scheduler is then a one-line user error."""
    dask = DaskExecutor(scheduler="tcp://127.0.0.1:9", timeout=1)
    assert dask._client is None
    with pytest.raises(UserError, match="cannot connect to scheduler tcp://127.0.0.1:9"):
        list(dask.map_unordered(square, 1, [1]))
    dask.close()


def warmed(executor: ProcessExecutor) -> ProcessExecutor:
    """The executor with its workers started and ready (their start-up probes done): a
    worker gets items only once ready (execution/feed.py), which takes seconds on a loaded
    machine, so that tests of who computes what do not depend on timing."""
    executor.warm()
    for probe in executor._ready:
        probe.result(timeout=600)
    return executor


def worker_threads(shared, item):
    time.sleep(0.05)
    return os.environ.get("OPENBLAS_NUM_THREADS"), batch_threads.MAX_THREADS, os.getpid()


def test_this_process_computes_beside_the_pool_and_takes_back_what_it_has_not_started():
    """Issue 32: with N workers the pool has N - 1 processes and this process computes too
    (one fewer start-up, no idle core); every item once, the same results; the workers'
    numerical libraries get cores // N threads each."""
    expected = {i: 3 * i * i for i in range(30)}
    with warmed(ProcessExecutor(2, inline_seconds=0)) as hybrid:
        assert hybrid.pool_size == 1
        assert dict(hybrid.map_unordered(slow_square, 3, list(range(30)))) == expected
        assert 0 < hybrid.inline_items < 30  # both computed
        found = dict(hybrid.map_unordered(worker_threads, None, list(range(6))))
    in_workers = {value for value in found.values() if value[2] != os.getpid()}
    threads = max(1, default_workers() // 2)
    assert all(value[1] == threads for value in in_workers)
    assert_same(run_with(ProcessExecutor(2, inline_seconds=0), BATCH),
                run_with(InlineExecutor(), BATCH))


def test_an_interrupted_map_stops_the_workers(pool):
    """(Last in the module: it stops the shared pool.)"""
    results = pool.map_unordered(slow_square, 1, list(range(50)))
    next(results)
    processes = list(pool._pool._processes.values())  # the pool's workers
    results.close()  # the consumer stops early (as after KeyboardInterrupt)
    assert pool._pool is None
    assert processes and all(not p.is_alive() for p in processes)


def test_closing_ends_idle_and_starting_workers_at_once():
    """Issue 32: after the last unit, or when a run never used its warm workers (a bad
    scenario), closing ends them at once: the driver does not wait for a worker to finish
    its imports."""
    executor = ProcessExecutor(2, inline_seconds=0, driver_computes=False)
    assert dict(executor.map_unordered(square, 2, [1, 2, 3])) == {0: 2, 1: 8, 2: 18}
    processes = list(executor._pool._processes.values())
    executor.close()
    assert executor._pool is None and processes
    assert all(not p.is_alive() for p in processes)
    starting = ProcessExecutor(2)
    starting.warm(modules=("shufflesim.simulator.execution.warm_imports",))
    processes = list(starting._pool._processes.values())
    starting.close()
    assert processes and all(not p.is_alive() for p in processes)



def blas_threads(shared, item):
    from threadpoolctl import threadpool_info
    time.sleep(0.05)
    return sorted({lib["num_threads"] for lib in threadpool_info()
                   if lib["user_api"] == "blas"}), os.getpid()


def test_every_process_of_a_run_computes_with_one_blas_thread():
    """Issue 32: the BLAS thread count changes the rounding of sums (audit_krr's exact lower
    bound moved by one ulp between 2 BLAS threads and 1), so the driver during a run and every
    worker use one; outside a run this process keeps its own count."""
    pytest.importorskip("threadpoolctl")
    from threadpoolctl import threadpool_info

    from shufflesim.simulator.execution.blas import one_blas_thread

    before = [lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"]
    with one_blas_thread() as applied, warmed(ProcessExecutor(2, inline_seconds=0)) as hybrid:
        assert applied and os.environ["OPENBLAS_NUM_THREADS"] == "1"
        found = dict(hybrid.map_unordered(blas_threads, None, list(range(8))))
    assert {tuple(counts) for counts, _ in found.values()} <= {(1,), ()}
    assert any(pid != os.getpid() for _, pid in found.values())  # a worker answered
    assert [lib["num_threads"] for lib in threadpool_info()
            if lib["user_api"] == "blas"] == before


def started(shared, item):
    time.sleep(0.02 * shared)
    return time.monotonic(), os.getpid()


def test_items_are_served_from_the_front_to_both_the_pool_and_this_process():
    """One queue from the front: the items start roughly in the order given (with the
    runner's longest-first order the shortest come last), both sides take part, and costs
    that repay the start make the pool start at once (no inline phase)."""
    with warmed(ProcessExecutor(2, inline_seconds=60.0)) as hybrid:
        hybrid.expect([5.0] * 20)
        found = dict(hybrid.map_unordered(started, 1, list(range(20))))
        assert hybrid._pool is not None and 0 < hybrid.inline_items < 20
    order = sorted(found, key=lambda index: found[index][0])
    # the first item may wait for the worker to start: the rest follow the given order
    # closely (each side takes the first item not yet started)
    late = [index for position, index in enumerate(order) if abs(position - index) > 3]
    assert len(late) <= 2, order
    assert len({pid for _, pid in found.values()}) == 2


def test_costs_that_do_not_repay_the_start_keep_the_inline_phase():
    ticks = iter(range(1000))
    pool = ProcessExecutor(2, inline_seconds=5.0, start_seconds=3.0,
                           clock=lambda: float(next(ticks)))
    pool.expect([2.0, 0.5, 0.5])  # beyond the largest: 1 s < 3 s
    assert dict(pool.map_unordered(square, 1, [0, 1, 2])) == {0: 0, 1: 1, 2: 4}
    assert pool.inline_items == 3 and pool._pool is None


def test_the_runner_orders_units_longest_first_with_several_workers():
    """unit_cost: producer units whose point has their section first, then simulation units by
    repetitions x n, then producers without their section; the tables do not change."""
    from shufflesim.simulator.execution.units import RunState, plan_run, unit_cost

    scenario = parse_scenario(BATCH)
    state = RunState(scenario, tuple(make_setup(p) for p in scenario.points),
                     tuple(PRODUCERS.values()))
    costs = {unit.key: unit_cost(state, unit) for unit in plan_run(state)}
    audit = [c for key, c in costs.items() if key.startswith("prod-audit")]
    simulation = [c for key, c in costs.items() if key.startswith("sim-")]
    others = [c for key, c in costs.items() if key.startswith("prod-")
              and not key.startswith("prod-audit")]
    assert min(audit) > max(simulation) > 0 and set(others) == {0.0}

    class Recording(InlineExecutor):
        workers = 2

        def expect(self, costs):
            self.costs = list(costs)

    recording = Recording()
    assert_same(run_with(recording, BATCH), run_with(InlineExecutor(), BATCH))
    assert recording.costs == sorted(recording.costs, reverse=True)


def test_a_command_computes_with_one_blas_thread_unless_the_user_says_otherwise():
    """Issue 32: the console script sets one BLAS thread before numpy loads (a ``bound``
    rounds as a run does, and the engine stops spin-waiting on a second thread); a count
    the user's environment sets is kept."""
    pytest.importorskip("threadpoolctl")
    from shufflesim.simulator.execution.blas import VARIABLES

    probe = textwrap.dedent("""
        import os, sys
        from shufflesim.simulator.cli import app
        def report():
            import numpy  # noqa: F401  (loads its BLAS now, after entry's defaults)
            from threadpoolctl import threadpool_info
            counts = sorted({lib["num_threads"] for lib in threadpool_info()
                             if lib["user_api"] == "blas"})
            print(os.environ.get("OPENBLAS_NUM_THREADS"), os.environ.get("MKL_NUM_THREADS"),
                  counts)
            sys.exit(0)
        app.main = report
        app.entry()
    """)
    env = {k: v for k, v in os.environ.items() if k not in VARIABLES}
    env["MKL_NUM_THREADS"] = "3"
    done = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    openblas, mkl, counts = done.stdout.split(" ", 2)
    assert openblas == "1" and mkl == "3"
    assert counts.strip() in ("[1]", "[]")


def imported(shared, item):
    return shared in sys.modules, os.getpid()


def test_warm_workers_import_while_this_process_works_and_get_items_only_once_started():
    """Issue 32: warm() starts the workers before the run's state exists, importing the
    given modules; a map's state reaches them later. A worker still starting holds no item:
    a short map ends in this process without waiting for it."""
    with ProcessExecutor(2, inline_seconds=0) as hybrid:
        assert dict(hybrid.map_unordered(square, 3, list(range(5)))) == {
            i: 3 * i * i for i in range(5)}
        assert hybrid.inline_items == 5  # the worker was still starting
    module = "shufflesim.simulator.execution.trace_report"
    with ProcessExecutor(2, inline_seconds=0) as hybrid:
        hybrid.warm(modules=(module,))
        warmed(hybrid)
        found = dict(hybrid.map_unordered(imported, module, list(range(6))))
        assert dict(hybrid.map_unordered(square, 2, [1, 2])) == {0: 2, 1: 8}  # a new state
    in_worker = [value for value, pid in found.values() if pid != os.getpid()]
    assert in_worker and all(in_worker)


def size(shared, item):
    return len(shared), os.getpid()


def test_a_state_larger_than_a_pipe_reaches_every_worker():
    """The state queue must not block the driver before a worker reads (a 4 MB state, far
    beyond a pipe's 64 kB buffer); the check runs in a thread so that a regression fails
    within a minute instead of hanging the suite."""
    import threading

    big, found = b"x" * (4 << 20), {}

    def mapped():
        with warmed(ProcessExecutor(2, inline_seconds=0, driver_computes=False)) as pool:
            found.update(pool.map_unordered(size, big, list(range(4))))

    thread = threading.Thread(target=mapped, daemon=True)
    thread.start()
    thread.join(timeout=600)
    assert not thread.is_alive(), "the map hung"
    assert {length for length, _ in found.values()} == {len(big)} and len(found) == 4
