"""The bad-input corpus: every command, every kind of mistake a new user makes.

Each case is a command line (and, for ``run``, a scenario file). Each must end with exit code
2, exactly one line on stderr that names the offending flag or key and its value, no
traceback, nothing on stdout that looks like a result, and no table (nor part file) left
behind. The corpus runs in-process through click's CliRunner; tests/test_cli_process.py checks
a sample of it in real processes.
"""

from __future__ import annotations

import io
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from conftest import scenario_text, zipf

from shufflesim.simulator.cli import main

BASE = scenario_text(name="corpus", seed=7, repetitions=2, n=200, data=zipf(5)).lstrip("\n")


@dataclass(frozen=True)
class Case:
    id: str
    args: tuple[str, ...]
    must_name: tuple[str, ...]
    scenario: str | None = None
    files: dict[str, str | bytes] = field(default_factory=dict)


def scenario(replace: dict[str, str] | None = None, append: str = "",
             drop: tuple[str, ...] = ()) -> str:
    """BASE with whole lines replaced (by their start), lines dropped, and text appended."""
    lines = []
    for line in BASE.splitlines():
        if any(line.startswith(d) for d in drop):
            continue
        for start, new in (replace or {}).items():
            if line.startswith(start):
                line = new
                break
        lines.append(line)
    return "\n".join(lines) + "\n" + append


def run_case(id: str, text: str, *must_name: str, extra: tuple[str, ...] = (),
             files: dict[str, str] | None = None) -> Case:
    return Case(id, ("run", "{scenario}", "--out", "{out}", "--quiet", *extra), must_name,
                scenario=text, files=files or {})


BOUND = ("bound", "--randomizer", "krr", "--domain-size", "4", "--epsilon0", "1", "--n", "100",
         "--delta", "1e-6", "--method", "blanket_hoeffding")
CALIBRATE = ("calibrate", "--randomizer", "krr", "--domain-size", "4", "--target-epsilon",
             "0.5", "--delta", "1e-6", "--n", "1000", "--method", "blanket_hoeffding")
AUDIT = ("audit", "--randomizer", "krr", "--domain-size", "4", "--epsilon0", "1", "--n", "50",
         "--delta", "1e-3", "--trials", "200", "--no-verdicts")


AUDIT_SECTION = "[audit]\ndelta = 1e-3\n"


def with_flag(base: tuple[str, ...], flag: str, value: str | None) -> tuple[str, ...]:
    """``base`` with ``flag`` given ``value`` (replaced if present; None removes the flag)."""
    args = list(base)
    if flag in args:
        i = args.index(flag)
        del args[i:i + 2]
    if value is not None:
        args += [flag, value]
    return tuple(args)


def _parquet(columns: dict[str, list]) -> bytes:
    sink = io.BytesIO()
    pq.write_table(pa.table(columns), sink)
    return sink.getvalue()


#: The implementation, shuffler and decoder files of the user-code cases (issue 26).
CLIENT = """\
import sys
import time
import numpy as np
def ok(values, rng):
    return np.asarray(values)
def strings(values, rng):
    return np.array(["a"] * np.size(values))
def none(values, rng):
    return None
def objects(values, rng):
    return np.array([object()] * np.size(values), dtype=object)
def raises(values, rng):
    raise ZeroDivisionError("boom")
def exits(values, rng):
    sys.exit(3)
def interrupts(values, rng):
    raise KeyboardInterrupt
def hangs(values, rng):
    while True:
        time.sleep(0.01)
def prints_then_raises(values, rng):
    print("debugging output")
    raise ValueError("late")
def shuffler_raises(messages, rng):
    raise RuntimeError("no shuffling today")
def shuffler_drops(messages, rng):
    return messages[:1]
"""
IMPL = ("audit", "--randomizer", "krr", "--domain-size", "4", "--epsilon0", "1", "--trials",
        "200", "--level", "randomizer", "--implementation")
PIPE = ("audit", "--randomizer", "krr", "--domain-size", "4", "--epsilon0", "1", "--trials",
        "50", "--n", "20", "--delta", "1e-3", "--level", "pipeline", "--no-verdicts",
        "--implementation", "{tmp}/client.py:ok", "--shuffler")


def impl_case(id: str, function: str, *words: str, extra: tuple[str, ...] = ()) -> Case:
    return Case(id, (*IMPL, f"{{tmp}}/client.py:{function}", *extra),
                ("--implementation", "client.py", function, *words),
                files={"client.py": CLIENT})


ISSUE_26: list[Case] = [
    # -- data files: a string where numbers belong, a directory where a file belongs ----------
    run_case("data-file-string-in-numeric-column",
             scenario({"data =": 'data = { distribution = "file", path = "d.csv", '
                                 'column = "x" }'}),
             "population.data.column", "'x'", "'abc'", files={"d.csv": "x\n0.5\nabc\n"}),
    run_case("points-file-string-column",
             scenario({"data =": 'data = { distribution = "points_file", path = "p.csv", '
                                 'column = "x" }'}),
             "population.data.column", "'x'", "'north'", files={"p.csv": "x\n1.0\nnorth\n"}),
    run_case("budget-delta-column-string",
             scenario({"budget =": 'budget = { distribution = "file", path = "b.csv", '
                                   'column = "e", delta_column = "d" }'}),
             "population.budget.delta_column", "'d'", "'tiny'",
             files={"b.csv": "e,d\n1.0,1e-6\n2.0,tiny\n"}),
    run_case("data-file-is-a-directory",
             scenario({"data =": 'data = { distribution = "file", path = ".", '
                                 'column = "x" }'}),
             "population.data.path", "directory"),
    # -- user code: whatever it raises, returns or prints is one line naming file and function -
    impl_case("implementation-returns-strings", "strings", "'a'"),
    impl_case("implementation-returns-none", "none", "None"),
    impl_case("implementation-returns-object-array", "objects", "object"),
    impl_case("implementation-raises", "raises", "ZeroDivisionError", "boom"),
    impl_case("implementation-calls-sys-exit", "exits", "sys.exit(3)"),
    impl_case("implementation-raises-keyboard-interrupt", "interrupts", "KeyboardInterrupt"),
    impl_case("implementation-hangs", "hangs", "0.5 s", "--call-timeout",
              extra=("--call-timeout", "0.5")),
    impl_case("implementation-prints-then-raises", "prints_then_raises", "ValueError"),
    Case("implementation-exits-at-import", (*IMPL, "{tmp}/leaves.py:f"),
         ("--implementation", "leaves.py", "sys.exit(0)"),
         files={"leaves.py": "import sys\nprint('bye')\nsys.exit(0)\n"}),
    Case("implementation-is-a-directory", (*IMPL, "{tmp}/pkg.py:f"),
         ("--implementation", "pkg.py", "directory"), files={"pkg.py/x": "x"}),
    Case("call-timeout-negative", (*IMPL, "{tmp}/client.py:ok", "--call-timeout", "-1"),
         ("--call-timeout",), files={"client.py": CLIENT}),
    Case("shuffler-raises", (*PIPE, "{tmp}/client.py:shuffler_raises"),
         ("--shuffler", "shuffler_raises", "RuntimeError"), files={"client.py": CLIENT}),
    # -- misleading names ------------------------------------------------------------------------
    Case("claim-epsilon0-named-right",
         ("audit", "--implementation", "{tmp}/client.py:ok", "--claim-epsilon0", "-1",
          "--domain-size", "4", "--trials", "100", "--level", "randomizer"),
         ("--claim-epsilon0", "-1"), files={"client.py": CLIENT}),
    Case("claim-delta0-named-right",
         ("audit", "--implementation", "{tmp}/client.py:ok", "--claim-epsilon0", "1",
          "--claim-delta0", "2", "--domain-size", "4", "--trials", "100", "--level",
          "randomizer"), ("--claim-delta0", "2"), files={"client.py": CLIENT}),
    # -- the cluster -------------------------------------------------------------------------
    run_case("scheduler-not-an-address", BASE, "--scheduler", "not a url",
             extra=("--scheduler", "not a url")),
    # -- cost before work ----------------------------------------------------------------------
    run_case("repetitions-absurd", scenario({"repetitions": "repetitions = 1000000000000000"}),
             "repetitions", "1000000000000000", "--max-seconds", "lower repetitions"),
    run_case("pipeline-rounds-absurd", scenario(append="[pipeline]\nrounds = 1000000000000\n"),
             "pipeline.rounds", "1000000000000"),
    run_case("max-seconds-exceeded", BASE, "--max-seconds", "estimated",
             extra=("--max-seconds", "1e-12")),
    run_case("max-memory-exceeded", BASE, "--max-memory", "batch.memory_mb",
             extra=("--max-memory", "1k")),
    run_case("max-memory-not-a-size", BASE, "--max-memory", "lots",
             extra=("--max-memory", "lots")),
    run_case("limits-negative", scenario(append="[limits]\nmax_seconds = -1\n"),
             "limits.max_seconds", "-1"),
    run_case("limits-exceeded", scenario(append="[limits]\nmax_seconds = 1e-12\n"),
             "limits.max_seconds", "estimated"),
    Case("audit-trials-absurd", with_flag(AUDIT, "--trials", "1000000000000000"),
         ("--trials", "1000000000000000")),
    Case("audit-n-absurd", with_flag(AUDIT, "--n", "100000000000000000000000000000"),
         ("--n", "100000000000000000000000000000")),
    Case("bound-rounds-absurd", with_flag(BOUND, "--rounds", "1000000000000"),
         ("--rounds", "1000000000000", "basic or advanced composition")),
    Case("calibrate-rounds-absurd", with_flag(CALIBRATE, "--rounds", "1000000000000"),
         ("--rounds", "1000000000000")),
    Case("compose-repeat-absurd",
         ("compose", "--delta", "1e-6", "--round",
          "randomizer=krr,epsilon0=1,domain_size=4,n=1000,repeat=1000000000000"),
         ("--round", "repeat=1000000000000")),
    Case("design-rounds-absurd",
         ("design", "--task", "frequency", "--domain-size", "4", "--n", "1000", "--rounds",
          "1000000000000", "--target-epsilon", "1", "--delta", "1e-6"),
         ("--rounds", "1000000000000")),
    Case("bound-rounds-beyond-max-seconds",
         (*with_flag(BOUND, "--rounds", "1000000"), "--max-seconds", "1e-9"),
         ("--rounds", "1000000", "--max-seconds")),
    run_case("learning-epochs-absurd", scenario(append="[learning]\nepochs = 1000000000000\n"),
             "learning.epochs", "1000000000000"),
    # -- conflicts resolved silently before ------------------------------------------------------
    Case("bound-domain-size-twice", (*BOUND, "--param", "domain_size=10"),
         ("--param", "domain_size=10", "--domain-size 4")),
    Case("bound-epsilon0-as-param", (*BOUND, "--param", "epsilon0=3"),
         ("--param", "epsilon0=3", "--epsilon0")),
    run_case("learning-calibration-unknown",
             scenario(append='[learning]\nepochs = 1\ncalibration = "fancy"\n'),
             "learning.calibration", "fancy"),
    # -- plot on what is not a run ---------------------------------------------------------------
    Case("plot-foreign-utility-table", ("plot", "{tmp}/res"), ("utility.parquet", "estimator"),
         files={"res/utility.parquet": _parquet({"a": [1, 2]})}),
    Case("plot-unrelated-parquet-files", ("plot", "{tmp}/res"), ("x.parquet", "{tmp}/res"),
         files={"res/x.parquet": _parquet({"a": [1, 2]}),
                "res/y.parquet": _parquet({"b": [3.0]})}),
]


CASES: list[Case] = [
    # -- the top level and usage errors (click) -----------------------------------------------
    Case("unknown-command", ("rnu",), ("rnu",)),
    Case("unknown-option-run", ("run", "x.toml", "--wokers", "2"), ("--wokers",)),
    Case("run-missing-argument", ("run",), ("SCENARIO",)),
    Case("bound-missing-randomizer", ("bound", "--epsilon0", "1"), ("--randomizer",)),
    Case("bound-bad-float", with_flag(BOUND, "--epsilon0", "one"), ("--epsilon0", "one")),
    Case("bound-bad-int", with_flag(BOUND, "--n", "1e3x"), ("--n", "1e3x")),
    Case("cli-audit-bad-level", with_flag(AUDIT, "--level", "shufle"), ("--level", "shufle")),
    Case("run-bad-workers", ("run", "x.toml", "--workers", "0"), ("--workers", "0")),
    Case("run-bad-executor", ("run", "x.toml", "--executor", "slurm"), ("--executor", "slurm")),
    Case("run-negative-seed", ("run", "x.toml", "--seed", "-1"), ("--seed", "-1")),
    # -- run: files ------------------------------------------------------------------------------
    Case("run-missing-file", ("run", "{tmp}/nope.toml"), ("nope.toml",)),
    run_case("empty-file", "", "empty"),
    run_case("comments-only", "# nothing here\n", "empty"),
    run_case("toml-syntax", "name = \n", "toml"),
    run_case("not-toml", "this is not toml at all\n", "toml"),
    # -- run: top-level keys -----------------------------------------------------------------
    run_case("misspelt-top-key", scenario(append="repetitons = 3\n"), "repetitons"),
    run_case("missing-name", scenario(drop=("name",)), "name"),
    run_case("bad-name", scenario({"name": 'name = "a/b"'}), "name", "a/b"),
    run_case("name-not-string", scenario({"name": "name = 3"}), "name", "3"),
    run_case("negative-seed", scenario({"seed": "seed = -4"}), "seed", "-4"),
    run_case("seed-float", scenario({"seed": "seed = 1.5"}), "seed", "1.5"),
    run_case("zero-repetitions", scenario({"repetitions": "repetitions = 0"}),
             "repetitions", "0"),
    run_case("repetitions-string", scenario({"repetitions": 'repetitions = "2"'}),
             "repetitions", "2"),
    run_case("unknown-section", scenario(append="[populaton]\nn = 3\n"), "populaton"),
    run_case("missing-population", scenario(drop=("[population]", "n =", "data =", "budget =")),
             "population"),
    run_case("missing-randomizer", scenario(drop=("[randomizer]", 'name = "krr"')),
             "randomizer"),
    run_case("missing-estimator", scenario(drop=("[estimator]", 'name = "frequency"')),
             "estimator"),
    # -- run: population -----------------------------------------------------------------------
    run_case("n-one", scenario({"n =": "n = 1"}), "population.n", "1"),
    run_case("n-zero", scenario({"n =": "n = 0"}), "population.n", "0"),
    run_case("n-negative", scenario({"n =": "n = -5"}), "population.n", "-5"),
    run_case("n-float", scenario({"n =": "n = 100.5"}), "population.n", "100.5"),
    run_case("n-string", scenario({"n =": 'n = "100"'}), "population.n", "100"),
    run_case("n-bool", scenario({"n =": "n = true"}), "population.n", "True"),
    run_case("misspelt-population-key", scenario(append="[population.extra]\nx = 1\n"),
             "population.extra"),
    run_case("unknown-data-distribution",
             scenario({"data =": 'data = { distribution = "zpif", domain_size = 5 }'}),
             "population.data.distribution", "zpif"),
    run_case("misspelt-data-key",
             scenario({"data =": 'data = { distribution = "zipf", domain_size = 5, '
                                 'exponet = 0.7 }'}),
             "population.data.exponet"),
    run_case("data-domain-zero",
             scenario({"data =": 'data = { distribution = "uniform", domain_size = 0 }'}),
             "population.data.domain_size", "0"),
    run_case("data-negative-exponent",
             scenario({"data =": 'data = { distribution = "zipf", domain_size = 5, '
                                 'exponent = -1 }'}),
             "population.data.exponent", "-1"),
    run_case("data-missing-distribution", scenario({"data =": "data = { domain_size = 5 }"}),
             "population.data.distribution"),
    run_case("data-file-missing",
             scenario({"data =": 'data = { distribution = "file", path = "nope.csv", '
                                 'column = "x" }'}),
             "nope.csv"),
    run_case("data-file-missing-column",
             scenario({"data =": 'data = { distribution = "file", path = "d.csv", '
                                 'column = "y" }'}),
             "y", files={"d.csv": "x\n0\n1\n2\n"}),
    run_case("data-file-missing-value",
             scenario({"data =": 'data = { distribution = "file", path = "d.csv", '
                                 'column = "x", domain_size = 3 }'}),
             "x", files={"d.csv": "x,y\n0,1\n,2\n2,3\n"}),
    run_case("clipped-normal-bad-std",
             scenario({"data =": 'data = { distribution = "clipped_normal", mean = 0.5, '
                                 'std = 0, low = 0, high = 1 }',
                       'name = "krr"': 'name = "laplace"'}),
             "std", "0"),
    run_case("continuous-high-below-low",
             scenario({"data =": 'data = { distribution = "continuous_uniform", low = 1, '
                                 'high = 0 }'}),
             "high", "0"),
    run_case("categorical-negative-weight",
             scenario({"data =": 'data = { distribution = "categorical", weights = [1, -1] }'}),
             "weights", "-1"),
    run_case("eps0-zero",
             scenario({"budget =": 'budget = { distribution = "constant", epsilon0 = 0 }'}),
             "epsilon0", "0"),
    run_case("eps0-negative",
             scenario({"budget =": 'budget = { distribution = "constant", epsilon0 = -1 }'}),
             "epsilon0", "-1"),
    run_case("eps0-inf",
             scenario({"budget =": 'budget = { distribution = "constant", epsilon0 = inf }'}),
             "epsilon0", "inf"),
    run_case("eps0-nan",
             scenario({"budget =": 'budget = { distribution = "constant", epsilon0 = nan }'}),
             "epsilon0", "nan"),
    run_case("eps0-string",
             scenario({"budget =": 'budget = { distribution = "constant", epsilon0 = "1" }'}),
             "epsilon0", "1"),
    run_case("unknown-budget-distribution",
             scenario({"budget =": 'budget = { distribution = "unifrom", low = 0.1, '
                                   'high = 1 }'}),
             "population.budget.distribution", "unifrom"),
    run_case("budget-uniform-high-below-low",
             scenario({"budget =": 'budget = { distribution = "uniform", low = 2, high = 1 }'}),
             "high", "1"),
    run_case("budget-groups-not-summing",
             scenario({"budget =": 'budget = { distribution = "groups", fractions = [0.5, 0.4],'
                                   ' epsilons = [0.5, 1.0] }'}),
             "fractions"),
    run_case("budget-groups-length-mismatch",
             scenario({"budget =": 'budget = { distribution = "groups", fractions = [0.5, 0.5],'
                                   ' epsilons = [0.5] }'}),
             "epsilons"),
    run_case("budget-unknown-preset",
             scenario({"budget =": 'budget = { distribution = "preset", preset = "gspa-x" }'}),
             "preset", "gspa-x"),
    run_case("budget-local-delta-one",
             scenario({"budget =": 'budget = { distribution = "uniform", low = 0.1, high = 1, '
                                   'local_delta = 1 }'}),
             "local_delta", "1"),
    # -- run: randomizer and estimator --------------------------------------------------------
    run_case("unknown-randomizer", scenario({'name = "krr"': 'name = "kkr"'}),
             "randomizer.name", "kkr"),
    run_case("unknown-randomizer-param", scenario({'name = "krr"': 'name = "krr"\nk = 3'}),
             "randomizer.k"),
    run_case("eps0-in-randomizer", scenario({'name = "krr"': 'name = "krr"\nepsilon0 = 1'}),
             "randomizer.epsilon0"),
    run_case("randomizer-domain-too-small",
             scenario({'name = "krr"': 'name = "krr"\ndomain_size = 3'}),
             "domain_size", "3"),
    run_case("randomizer-domain-one", scenario({'name = "krr"': 'name = "krr"\ndomain_size = 1'}),
             "domain_size", "1"),
    run_case("olh-bad-hash-range",
             scenario({'name = "krr"': 'name = "olh"\nhash_range = 1'}), "hash_range", "1"),
    run_case("subset-too-large",
             scenario({'name = "krr"': 'name = "subset"\nsubset_size = 5'}),
             "subset_size", "5"),
    run_case("numeric-randomizer-categorical-data",
             scenario({'name = "krr"': 'name = "duchi"', 'name = "frequency"': 'name = "mean"'}),
             "randomizer"),
    run_case("unknown-estimator", scenario({'name = "frequency"': 'name = "frequncy"'}),
             "estimator.name", "frequncy"),
    run_case("estimator-does-not-fit", scenario({'name = "frequency"': 'name = "mean"'}),
             "estimator", "mean"),
    run_case("estimator-extra-key", scenario({'name = "frequency"': 'name = "frequency"\nx = 1'}),
             "estimator.x"),
    run_case("personalized-with-frequency",
             scenario({"budget =": 'budget = { distribution = "uniform", low = 0.1, high = 1 }'}),
             "frequency"),
    # -- run: batch -----------------------------------------------------------------------------
    run_case("batch-bad-path", scenario(append='[batch]\npath = "aggregated"\n'),
             "batch.path", "aggregated"),
    run_case("batch-bad-shuffle", scenario(append='[batch]\nshuffle = "no"\n'),
             "batch.shuffle", "no"),
    run_case("batch-tiny-memory", scenario(append="[batch]\nmemory_mb = 1\n"),
             "batch.memory_mb", "1"),
    run_case("batch-zero-chunk", scenario(append="[batch]\nchunk_repetitions = 0\n"),
             "batch.chunk_repetitions", "0"),
    run_case("batch-huge-n-with-skip",
             scenario({"n =": "n = 1000000000000"}, append='[batch]\nshuffle = "skip"\n'),
             "batch.path", "aggregate"),
    run_case("batch-huge-n-default", scenario({"n =": "n = 1000000000000"}),
             "batch.path", "aggregate"),
    run_case("batch-misspelt-key", scenario(append="[batch]\nmemory = 100\n"), "batch.memory"),
    # -- run: sweep -------------------------------------------------------------------------------
    run_case("sweep-unknown-key", scenario(append='[sweep]\n"population.nn" = [1, 2]\n'),
             "population.nn"),
    run_case("sweep-empty-list", scenario(append='[sweep]\n"population.n" = []\n'),
             "population.n"),
    run_case("sweep-not-list", scenario(append='[sweep]\n"population.n" = 100\n'),
             "population.n", "100"),
    run_case("sweep-bad-value", scenario(append='[sweep]\n"population.n" = [100, 1]\n'),
             "population.n", "1"),
    run_case("sweep-bad-eps0",
             scenario(append='[sweep]\n"population.budget.epsilon0" = [1.0, -2.0]\n'),
             "epsilon0", "-2"),
    run_case("sweep-name", scenario(append='[sweep]\nname = ["a", "b"]\n'), "name"),
    run_case("sweep-seed", scenario(append="[sweep]\nseed = [1, 2]\n"), "seed"),
    # -- run: bounds, audit, pipeline sections --------------------------------------------------
    run_case("bounds-missing-delta", scenario(append="[bounds]\nmethods = []\n"),
             "bounds.delta"),
    run_case("bounds-delta-zero", scenario(append="[bounds]\ndelta = 0\n"), "bounds.delta", "0"),
    run_case("bounds-delta-one", scenario(append="[bounds]\ndelta = 1\n"), "bounds.delta", "1"),
    run_case("bounds-delta-negative", scenario(append="[bounds]\ndelta = -1e-6\n"),
             "bounds.delta", "-1e-06"),
    run_case("bounds-rounds-zero", scenario(append="[bounds]\ndelta = 1e-6\nrounds = 0\n"),
             "bounds.rounds", "0"),
    run_case("bounds-rounds-list-with-zero",
             scenario(append="[bounds]\ndelta = 1e-6\nrounds = [1, 10, 0]\n"),
             "bounds.rounds[2]", "0"),
    run_case("bounds-rounds-empty", scenario(append="[bounds]\ndelta = 1e-6\nrounds = []\n"),
             "bounds.rounds"),
    run_case("bounds-rounds-float", scenario(append="[bounds]\ndelta = 1e-6\nrounds = 2.5\n"),
             "bounds.rounds", "2.5"),
    run_case("bounds-rounds-swept-zero",
             scenario(append='[bounds]\ndelta = 1e-6\n[sweep]\n"bounds.rounds" = [10, 0]\n'),
             "bounds.rounds", "0"),
    run_case("bounds-unknown-method",
             scenario(append='[bounds]\ndelta = 1e-6\nmethods = ["optimal_blanket"]\n'),
             "optimal_blanket"),
    run_case("bounds-misspelt-key", scenario(append="[bounds]\ndelta = 1e-6\nmethod = []\n"),
             "bounds.method"),
    run_case("audit-missing-trials", scenario(append=AUDIT_SECTION + 'level = "shuffle"\n'),
             "audit.trials"),
    run_case("audit-zero-trials", scenario(append=AUDIT_SECTION + "trials = 0\n"),
             "audit.trials", "0"),
    run_case("audit-bad-level",
             scenario(append=AUDIT_SECTION + 'trials = 100\nlevel = "shufle"\n'),
             "audit.level", "shufle"),
    run_case("audit-bad-confidence",
             scenario(append=AUDIT_SECTION + "trials = 100\nconfidence = 1.5\n"),
             "confidence", "1.5"),
    run_case("audit-bad-delta", scenario(append="[audit]\ntrials = 100\ndelta = [2.0]\n"),
             "delta", "2"),
    run_case("audit-x0-out-of-domain",
             scenario(append=AUDIT_SECTION + "trials = 100\nx0 = 9\nx1 = 0\nx2 = 1\n"),
             "x0", "9"),
    run_case("audit-unknown-attack",
             scenario(append=AUDIT_SECTION + 'trials = 100\nattacks = ["lrr"]\n'), "lrr"),
    run_case("pipeline-bad-arrival", scenario(append='[pipeline]\narrival = "burst"\n'),
             "pipeline.arrival", "burst"),
    run_case("pipeline-bad-dropout", scenario(append="[pipeline]\ndropout = 1.0\n"),
             "pipeline.dropout", "1"),
    run_case("pipeline-zero-batch", scenario(append="[pipeline]\nbatch_size = 0\n"),
             "pipeline.batch_size", "0"),
    run_case("pipeline-negative-timeout", scenario(append="[pipeline]\ntimeout = -1\n"),
             "pipeline.timeout", "-1"),
    run_case("pipeline-min-above-batch",
             scenario(append="[pipeline]\nbatch_size = 10\nmin_batch = 20\n"),
             "pipeline.min_batch", "20"),
    run_case("pipeline-bound-without-delta",
             scenario(append='[pipeline]\nbound = "fmt21_numerical"\n'), "pipeline.delta"),
    run_case("pipeline-unknown-bound",
             scenario(append='[pipeline]\nbound = "fmt21"\ndelta = 1e-6\n'), "fmt21"),
    run_case("pipeline-misspelt-key", scenario(append="[pipeline]\nbatchsize = 10\n"),
             "pipeline.batchsize"),
    run_case("pipeline-zero-rounds", scenario(append="[pipeline]\nrounds = 0\n"),
             "pipeline.rounds", "0"),
    # -- bound ---------------------------------------------------------------------------------
    Case("bound-krr-without-domain", with_flag(BOUND, "--domain-size", None),
         ("--domain-size",)),
    Case("bound-unknown-randomizer", with_flag(BOUND, "--randomizer", "kkr"),
         ("--randomizer", "kkr")),
    Case("bound-eps0-zero", with_flag(BOUND, "--epsilon0", "0"), ("--epsilon0", "0")),
    Case("bound-eps0-negative", with_flag(BOUND, "--epsilon0", "-1"), ("--epsilon0", "-1")),
    Case("bound-eps0-inf", with_flag(BOUND, "--epsilon0", "inf"), ("--epsilon0", "inf")),
    Case("bound-eps0-nan", with_flag(BOUND, "--epsilon0", "nan"), ("--epsilon0", "nan")),
    Case("bound-n-one", with_flag(BOUND, "--n", "1"), ("--n", "1")),
    Case("bound-n-zero", with_flag(BOUND, "--n", "0"), ("--n", "0")),
    Case("bound-delta-zero", with_flag(BOUND, "--delta", "0"), ("--delta", "0")),
    Case("bound-delta-one", with_flag(BOUND, "--delta", "1"), ("--delta", "1")),
    Case("bound-delta-negative", with_flag(BOUND, "--delta", "-0.1"), ("--delta", "-0.1")),
    Case("bound-domain-one", with_flag(BOUND, "--domain-size", "1"), ("--domain-size", "1")),
    Case("bound-unknown-method", with_flag(BOUND, "--method", "optimal"),
         ("--method", "optimal")),
    Case("bound-bad-param-syntax", (*BOUND, "--param", "hash_range"),
         ("--param", "hash_range")),
    Case("bound-unknown-param", (*BOUND, "--param", "hash_rnge=4"), ("hash_rnge",)),
    Case("bound-domain-for-brr", (*with_flag(BOUND, "--randomizer", "brr"),),
         ("--domain-size", "brr")),
    Case("bound-rounds-zero", (*BOUND, "--rounds", "0"), ("--rounds", "0")),
    Case("bound-rounds-unknown-method", with_flag(BOUND, "--method", "basik") + ("--rounds", "3"),
         ("--method", "basik")),
    # -- calibrate -----------------------------------------------------------------------------
    Case("calibrate-krr-without-domain", with_flag(CALIBRATE, "--domain-size", None),
         ("--domain-size",)),
    Case("calibrate-both-n-and-eps0", (*CALIBRATE, "--epsilon0", "1"),
         ("--n", "--epsilon0")),
    Case("calibrate-neither", with_flag(CALIBRATE, "--n", None), ("--n", "--epsilon0")),
    Case("calibrate-target-zero", with_flag(CALIBRATE, "--target-epsilon", "0"),
         ("--target-epsilon", "0")),
    Case("calibrate-target-negative", with_flag(CALIBRATE, "--target-epsilon", "-1"),
         ("--target-epsilon", "-1")),
    Case("calibrate-delta-one", with_flag(CALIBRATE, "--delta", "1"), ("--delta", "1")),
    Case("calibrate-n-one", with_flag(CALIBRATE, "--n", "1"), ("--n", "1")),
    Case("calibrate-lower-bound", with_flag(CALIBRATE, "--method", "exact-lower"),
         ("--method", "exact-lower")),
    Case("calibrate-unknown-method", with_flag(CALIBRATE, "--method", "nope"),
         ("--method", "nope")),
    Case("calibrate-rounds-with-epsilon0",
         (*with_flag(with_flag(CALIBRATE, "--n", None), "--epsilon0", "1"), "--rounds", "3"),
         ("--rounds", "--n")),
    Case("calibrate-rounds-lower-method",
         (*with_flag(CALIBRATE, "--method", "exact-lower"), "--rounds", "3"),
         ("--method", "exact-lower")),
    # -- audit ---------------------------------------------------------------------------------
    Case("audit-krr-without-domain", with_flag(AUDIT, "--domain-size", None),
         ("--domain-size",)),
    Case("cli-audit-x0-out-of-domain", (*AUDIT, "--x0", "9"), ("--x0", "9")),
    Case("audit-x1-out-of-domain", (*AUDIT, "--x1", "-1"), ("--x1", "-1")),
    Case("audit-x0-equals-x1", (*AUDIT, "--x0", "1", "--x1", "1"), ("--x1", "x0")),
    Case("audit-x0-not-integer", (*AUDIT, "--x0", "0.5"), ("--x0", "0.5")),
    Case("audit-trials-zero", with_flag(AUDIT, "--trials", "0"), ("--trials", "0")),
    Case("audit-confidence-one", (*AUDIT, "--confidence", "1"), ("--confidence", "1")),
    Case("audit-delta-zero", with_flag(AUDIT, "--delta", "0"), ("--delta", "0")),
    Case("audit-n-one", with_flag(AUDIT, "--n", "1"), ("--n", "1")),
    Case("audit-shuffle-without-n", with_flag(AUDIT, "--n", None), ("--n",)),
    Case("audit-randomizer-level-with-n", (*with_flag(AUDIT, "--delta", None), "--level",
                                           "randomizer"), ("--n", "randomizer")),
    Case("audit-randomizer-level-with-delta",
         (*with_flag(AUDIT, "--n", None), "--level", "randomizer"), ("--delta", "randomizer")),
    Case("cli-audit-unknown-attack", (*AUDIT, "--attack", "lrr"), ("--attack", "lrr")),
    Case("audit-bad-others", (*AUDIT, "--others", "0.5,x"), ("--others", "0.5,x")),
    Case("audit-unknown-bound", with_flag(AUDIT, "--no-verdicts", None) + ("--bound", "nope"),
         ("--bound", "nope")),
    Case("audit-eps0-zero", with_flag(AUDIT, "--epsilon0", "0"), ("--epsilon0", "0")),
    # -- plot ----------------------------------------------------------------------------------
    Case("plot-missing-dir", ("plot", "{tmp}/no-results"), ("no-results",)),
    Case("plot-empty-dir", ("plot", "{tmp}"), ("{tmp}",)),
    # -- list ----------------------------------------------------------------------------------
    Case("list-unknown-option", ("list", "--jsn"), ("--jsn",)),
    *ISSUE_26,
]


def _fill(text: str, tmp: Path, scenario_path: Path) -> str:
    return (text.replace("{tmp}", str(tmp)).replace("{out}", str(tmp / "out"))
            .replace("{scenario}", str(scenario_path)))


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input_is_one_line_exit_2_and_leaves_nothing(case, tmp_path):
    scenario_path = tmp_path / "scenario.toml"
    if case.scenario is not None:
        scenario_path.write_text(case.scenario)
    for name, text in case.files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        if isinstance(text, bytes):
            (tmp_path / name).write_bytes(text)
        else:
            (tmp_path / name).write_text(text)
    args = [_fill(a, tmp_path, scenario_path) for a in case.args]
    result = CliRunner().invoke(main, args)
    stderr = result.stderr
    assert result.exit_code == 2, (result.exit_code, stderr, result.output, result.exception)
    assert "Traceback" not in stderr and "Traceback" not in result.stdout
    lines = stderr.splitlines()
    assert len(lines) == 1, stderr
    assert lines[0].startswith("error: "), stderr
    for name in case.must_name:
        assert _fill(name, tmp_path, scenario_path) in lines[0], (name, lines[0])
    assert result.stdout == "", result.stdout
    out = tmp_path / "out"
    if out.exists():
        leftovers = [p for p in out.rglob("*") if p.is_file()]
        assert leftovers == [], leftovers


def test_the_corpus_is_large_and_covers_every_command():
    assert len(CASES) >= 100
    assert len({c.id for c in CASES}) == len(CASES)
    commands = {c.args[0] for c in CASES}
    assert {"run", "bound", "calibrate", "audit", "plot", "list"} <= commands
