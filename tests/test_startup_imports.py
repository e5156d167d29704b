"""Issue 32: a command imports what it uses. Checked by the modules a fresh interpreter holds
(sys.modules), never by timing:

- ``import shufflesim.simulator.cli`` (what the console script runs first) loads no numpy, no
  scipy, no process pool, no audit stack and no command's module: commands are imported on
  dispatch (simulator/cli/app.py);
- ``bound`` and ``calibrate`` of k-RR over rounds end without scipy.optimize (about 0.1 s of
  CPU: linprog's HiGHS, scipy.sparse, scipy.spatial), the executors and process pools of
  ``run``, the audit levels, and any randomizer module but k-RR's (the randomizer registry
  imports only the module a name needs, protocols/registry.py);
- ``bound`` of k-RR over rounds, every applicable bound, imports no module of a bound it does
  not compute (the catalogue lists those from protocols/bounds/declared.py), nor the scenario
  and user-code machinery, nor scipy.fft and the engine parts it never runs (the FFT method's
  transforms, the kink table, the candidate screen);
- cheu's ``multi-message-exact-lower`` imports the engine's eps(delta) search only, not the
  hockey-stick engine of the single-message bounds, nor the two-count kernel of the
  multi-message upper bounds.
"""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from shufflesim.protocols import plugins

#: What no command's start-up may import (modules and their submodules).
HEAVY = ("numpy", "scipy", "multiprocessing", "concurrent.futures.process",
         "shufflesim.simulator.audit", "shufflesim.simulator.execution.executors",
         "shufflesim.protocols.bounds", "shufflesim.protocols.randomizers")

#: What a k-RR ``bound`` / ``calibrate`` over rounds must not import.
NOT_FOR_KRR = ("scipy.optimize", "scipy.stats", "scipy.integrate", "scipy.sparse",
               "scipy.spatial", "multiprocessing", "concurrent.futures.process",
               "shufflesim.simulator.audit", "shufflesim.simulator.execution.executors",
               "shufflesim.simulator.execution.worker_process", "shufflesim.simulator.calls.run",
               "shufflesim.simulator.calls.audit", "shufflesim.simulator.cli.commands.run",
               "shufflesim.simulator.cli.commands.audit")

#: Runs argv through the console script's entry() and prints sys.modules as JSON at exit.
COMMAND = '''
import atexit, json, sys
atexit.register(lambda: print(json.dumps(sorted(sys.modules)), file=sys.__stderr__))
from shufflesim.simulator.cli import entry
sys.argv[0] = "shufflesim"
entry()
'''


def _under(modules, prefixes) -> list[str]:
    return sorted(m for m in modules if any(m == p or m.startswith(p + ".") for p in prefixes))


def _commands(modules) -> list[str]:
    return sorted(m for m in modules if m.startswith("shufflesim.simulator.cli.commands."))


def _printed_words(code: str) -> list[str]:
    """What a fresh interpreter running ``code`` prints on stdout, split into words (it must
    exit with 0)."""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def _modules_after(code: str, *args: str) -> list[str]:
    done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr.splitlines()[:1]
    return json.loads(done.stderr.strip().splitlines()[-1])


def test_importing_the_command_line_loads_no_heavy_module():
    code = ("import json, sys; import shufflesim.simulator.cli; "
            "print(json.dumps(sorted(sys.modules)), file=sys.stderr)")
    modules = _modules_after(code)
    assert "click" in modules  # the check sees what is imported
    assert not _under(modules, HEAVY)
    assert not _commands(modules)


KRR = ["--randomizer", "krr", "--domain-size", "10", "--delta", "1e-6", "-q", "--n", "1000",
       "--rounds", "3", "--method", "optimal-blanket"]


@pytest.mark.parametrize("command", [["bound", "--epsilon0", "1", "--method", "exact-lower"],
                                     ["calibrate", "--target-epsilon", "1"]])
def test_a_krr_command_over_rounds_loads_only_what_it_uses(command):
    modules = _modules_after(COMMAND, *command, *KRR)
    assert "scipy.special" in modules and "shufflesim.protocols.randomizers.krr" in modules
    heavy = _under(modules, NOT_FOR_KRR)
    assert not heavy, (f"{command[0]} of k-RR over rounds imported {heavy[:5]}: import it on "
                       "first use (protocols/lazy.py), or, if the computation now calls it, "
                       "take it out of NOT_FOR_KRR and say what it costs")
    others = {ref.partition(":")[0] for name, ref in plugins.RANDOMIZERS.items()
              if name != "krr"}
    # a bound module may import the randomizer it is about
    # (blanket_laplace: laplace, gaussian_sum: gaussian), but the registry imports no other
    used_by_bounds = {"shufflesim.protocols.randomizers.laplace",
                      "shufflesim.protocols.randomizers.gaussian"}
    assert not (others - used_by_bounds) & set(modules)
    assert _commands(modules) == [f"shufflesim.simulator.cli.commands.{command[0]}"]


#: What ``bound`` of k-RR over rounds, every applicable bound, must not import: the modules of
#: bounds that do not apply to k-RR or do not compose (listed from protocols/bounds/declared.py),
#: 001's variation-ratio machinery (exact-lower's single-round search), the exact binary-RR
#: curve and its composed PLDs (binary randomizers only; declared in
#: accounting/brr_exact_methods.py), the atoms of one-round compositions (joint, parallel,
#: subsampled), RAPPOR (k-RR shares only its anchors), the Laplace randomizers (their pair grid
#: is re-exported by the decompositions), and the scenario and user-code machinery (the cost
#: check needs neither).
NOT_FOR_KRR_ROUNDS = ("shufflesim.protocols.bounds.multi_message",
                      "shufflesim.protocols.bounds.personalized",
                      "shufflesim.protocols.bounds.numerical.krr_exact",
                      "shufflesim.protocols.bounds.numerical.krr3_blocks",
                      "shufflesim.protocols.bounds.numerical.krr_relabel",
                      "shufflesim.protocols.bounds.numerical.metric",
                      "shufflesim.protocols.bounds.closed_form",
                      "shufflesim.protocols.bounds.numerical.variation_ratio",
                      "shufflesim.protocols.bounds.numerical.two_count",
                      "shufflesim.protocols.bounds.numerical.brr_exact",
                      "shufflesim.protocols.accounting.brr_exact_pld",
                      "shufflesim.protocols.bounds.numerical.composition",
                      "shufflesim.protocols.randomizers.rappor",
                      "shufflesim.protocols.randomizers.laplace",
                      "shufflesim.simulator.scenario", "shufflesim.simulator.usercode")


def test_a_krr_bound_over_rounds_imports_no_bound_it_does_not_compute():
    modules = _modules_after(COMMAND, "bound", "--epsilon0", "1", *KRR[:-2])
    assert "shufflesim.protocols.accounting.compose" in modules  # it composed
    extra = _under(modules, NOT_FOR_KRR_ROUNDS)
    assert not extra, (f"bound of k-RR over rounds imported {extra[:5]}: a bound that does not "
                       "compose is listed from its declared facts (protocols/bounds/declared.py)")


def test_an_audit_without_a_pipeline_imports_no_simpy_nor_pandas():
    """simulator/pipeline/__init__.py loads its names on first use: the audit's batches
    import the pipeline's clients and config, not its SimPy run and pandas analyzer."""
    modules = _modules_after(COMMAND, "audit", "--randomizer", "krr", "--domain-size", "2",
                             "--epsilon0", "2", "--n", "20", "--delta", "1e-3", "--trials",
                             "200", "--no-verdicts", "-q", "--json")
    assert "shufflesim.simulator.audit.pipeline_batch" in modules  # the check sees the audit
    assert not _under(modules, ("simpy", "pandas", "shufflesim.simulator.pipeline.run",
                                "shufflesim.simulator.pipeline.analyzer"))


#: What a k-RR ``bound`` over rounds never calls (issue 32, session 14): scipy.fft (about
#: 0.02 s of CPU; loaded by the engine's first FFT convolution), the one-table kink sum
#: (engine/kink_table.py) and the screen of several candidates (engine/screen.py); each is
#: imported on first use. Session 16: nor the engine's eps(delta) search (eps_search, its
#: start and upper steps: the row asks delta(eps) questions only; EpsilonEstimate is in
#: eps_estimate.py), the FFT method (its predicted gap is in fft_gap.py, the composition's
#: integer_power in spectrum_power.py), the level merge, the guess's root finder, T's narrower
#: window (t_window.py; its threshold is in plans.py), the exact pool tables (whether they
#: apply is in pool_window.py), one round's eps(delta) bounds
#: and their search over candidates (the composition asks delta(eps): blanket_delta.py,
#: pair_question.py), continuous densities' atoms (density_atoms.py) and the run's memory plans
#: (the cost check reads batch/machine.py).
NOT_RUN_FOR_KRR_ROUNDS = ("scipy.fft", "shufflesim.protocols.bounds.engine.kink_table",
                          "shufflesim.protocols.bounds.engine.screen",
                          "shufflesim.protocols.bounds.engine.eps_search",
                          "shufflesim.protocols.bounds.engine.eps_upper",
                          "shufflesim.protocols.bounds.engine.eps_start",
                          "shufflesim.protocols.bounds.engine.fft",
                          "shufflesim.protocols.bounds.engine.levels",
                          "shufflesim.protocols.bounds.engine.roots",
                          "shufflesim.protocols.bounds.engine.pool_law",
                          "shufflesim.protocols.bounds.engine.t_window",
                          "shufflesim.protocols.bounds.numerical.optimal",
                          "shufflesim.protocols.bounds.numerical.candidates",
                          "shufflesim.protocols.bounds.numerical.density_atoms",
                          "shufflesim.simulator.batch.memory")


#: ... and at n = 1e5: rdp-blanket's pair by (D, bin of m) (accounting/m_bins.py, for small n;
#: it runs at n = 1000), the pair's own enumerations (accounting/enumeration.py: every
#: method of this row takes the block paths, built from accounting/aggregate_parts.py), and
#: the exact band sums' tables and evaluation (session 17: the group's tables would be larger
#: than band_shape.MAX_CELLS, and k-RR has no zero category; whether they apply is asked of
#: engine/band_shape.py and mixture_shape.py), with their binomial windows (the widths that
#: size them are in bernstein_width.py), table caches and the helper thread's
#: concurrent.futures, and the enumeration (its size is asked of enumeration_size.py).
NOT_RUN_AT_1E5 = ("shufflesim.protocols.accounting.m_bins",
                  "shufflesim.protocols.accounting.enumeration",
                  "shufflesim.protocols.bounds.engine.exact_band",
                  "shufflesim.protocols.bounds.engine.zero_mixture",
                  "shufflesim.protocols.bounds.engine.band_sums",
                  "shufflesim.protocols.bounds.engine.band_recurrence",
                  "shufflesim.protocols.bounds.engine.band_levels",
                  "shufflesim.protocols.bounds.engine.band_sharing",
                  "shufflesim.protocols.bounds.engine.binomial_window",
                  "shufflesim.protocols.bounds.engine.log_table",
                  "shufflesim.protocols.bounds.engine.table_cache",
                  "shufflesim.protocols.bounds.engine.enumerate",
                  "concurrent.futures")


@pytest.mark.parametrize("size", [["--n", "1000", "--rounds", "3"],
                                  ["--n", "100000", "--rounds", "100"]])
def test_a_krr_bound_over_rounds_imports_no_engine_part_it_does_not_run(size):
    modules = _modules_after(COMMAND, "bound", "--randomizer", "krr", "--domain-size", "10",
                             "--delta", "1e-6", "-q", "--epsilon0", "1", *size)
    assert "shufflesim.protocols.bounds.engine.core" in modules  # the engine is there
    assert "shufflesim.protocols.bounds.engine.fft_gap" in modules  # it chose a method
    assert "shufflesim.protocols.bounds.engine.band_shape" in modules  # and asked the band sum
    assert "shufflesim.protocols.accounting.rdp" in modules  # and Renyi accounting
    not_run = NOT_RUN_FOR_KRR_ROUNDS + (NOT_RUN_AT_1E5 if size[1] == "100000" else ())
    extra = _under(modules, not_run)
    assert not extra, (f"bound of k-RR over rounds imported {extra}: load it on first use "
                       "(protocols/lazy.py), or, if the bound now runs it, say what it costs")


def test_a_band_sum_without_a_pool_variable_starts_no_helper_thread():
    """Binary RR's blanket (000 Thm 13) has a pool of one category: exact_band builds its
    tables on the calling thread, and concurrent.futures (about 3 ms: logging, string) is
    imported only where a helper thread starts (session 17)."""
    modules = _modules_after(COMMAND, "bound", "--randomizer", "brr", "--epsilon0", "1",
                             "--n", "10000", "--delta", "1e-6", "-q")
    assert "shufflesim.protocols.bounds.engine.exact_band" in modules  # the band sum ran
    assert not _under(modules, ("concurrent.futures",))


#: What cheu's exact lower bound never calls: the single-message engine (core and its methods;
#: the search eps_search.epsilon_of_delta is all it uses), scipy.fft, 001's two-count kernel
#: (the blanket-only upper model and the variation-ratio bound), and composition over rounds.
NOT_FOR_CHEU_LOWER = ("scipy.fft", "shufflesim.protocols.bounds.engine.core",
                      "shufflesim.protocols.bounds.engine.fft",
                      "shufflesim.protocols.bounds.engine.conditioning",
                      "shufflesim.protocols.bounds.engine.exact_band",
                      "shufflesim.protocols.bounds.engine.levels",
                      "shufflesim.protocols.bounds.numerical.two_count",
                      "shufflesim.protocols.accounting", "shufflesim.simulator.calls.rounds")


def test_cheu_exact_lower_imports_only_the_search_of_the_engine():
    modules = _modules_after(COMMAND, "bound", "--randomizer", "cheu", "--domain-size", "4",
                             "--param", "flip_probability=0.2", "--epsilon0", "1", "--n", "200",
                             "--delta", "1e-6", "--method", "multi-message-exact-lower", "-q")
    assert "shufflesim.protocols.bounds.multi_message.thinned_curve" in modules  # it ran
    assert "shufflesim.protocols.bounds.engine.eps_search" in modules
    extra = _under(modules, NOT_FOR_CHEU_LOWER)
    assert not extra, (f"cheu's multi-message-exact-lower imported {extra[:5]}: load it on "
                       "first use (protocols/lazy.py)")


@pytest.mark.parametrize("command", [
    ["bound", "--randomizer", "krr", "--domain-size", "3", "--epsilon0", "1", "--n", "100",
     "--delta", "1e-6", "--method", "optimal-blanket", "-q"],
    ["audit", "--randomizer", "krr", "--domain-size", "2", "--epsilon0", "2", "--n", "20",
     "--delta", "1e-3", "--trials", "200", "--no-verdicts", "-q"]])
def test_a_one_answer_command_imports_with_the_collector_paused(command):
    """protocols/import_gc.py: the imports of ``bound`` (a command that computes one answer and
    exits) pause the cyclic garbage collector and freeze what they made out of its later
    scans; it runs again between imports. ``audit`` keeps it as it is (nothing frozen)."""
    code = ("import atexit, gc, json, sys\n"
            "atexit.register(lambda: print(json.dumps([gc.isenabled(), gc.get_freeze_count()]),"
            " file=sys.__stderr__))\n"
            "from shufflesim.simulator.cli import entry\n"
            "sys.argv[0] = 'shufflesim'\n"
            "entry()\n")
    done = subprocess.run([sys.executable, "-c", code, *command], capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr.splitlines()[:1]
    enabled, frozen = json.loads(done.stderr.strip().splitlines()[-1])
    assert enabled
    if command[0] == "bound":
        assert frozen > 10000  # numpy's, scipy's and the bound's objects
    else:
        assert frozen == 0


def test_lazy_functions_import_their_module_on_the_first_call(tmp_path):
    """protocols/lazy.py ``lazy_functions``: nothing imported before a call; the call imports
    the module and returns the real function's result; a module already imported gives its
    real functions; a stand-in pickles as the real function (a process pool may carry it)."""
    (tmp_path / "lazy_target.py").write_text("def twice(x):\n    return 2 * x\n")
    code = ("import sys\n"
            f"sys.path.insert(0, {str(tmp_path)!r})\n"
            "from shufflesim.protocols.lazy import lazy_functions\n"
            "(twice,) = lazy_functions('lazy_target', 'twice')\n"
            "before = 'lazy_target' in sys.modules\n"
            "value = twice(21)\n"
            "import lazy_target\n"
            "(again,) = lazy_functions('lazy_target', 'twice')\n"
            "import pickle\n"
            "print(before, value, 'lazy_target' in sys.modules, again is lazy_target.twice,"
            " twice is lazy_target.twice, twice.__name__,"
            " pickle.loads(pickle.dumps(twice)) is lazy_target.twice)\n")
    assert _printed_words(code) == ["False", "42", "True", "True", "False", "twice", "True"]


#: Modules that run only when a deferred numpy submodule runs (their imports, not themselves):
#: numpy.f2py, numpy.testing, numpy.random, numpy.polynomial, numpy.ctypeslib.
_DEFERRED_RUN = ("numpy.f2py.crackfortran", "numpy.testing._private.utils", "unittest",
                 "numpy.random.mtrand", "numpy.random._generator", "secrets",
                 "numpy.polynomial.polynomial", "numpy.ctypeslib._ctypeslib")

#: Runs argv through the console script's entry() and prints, at exit, sys.modules and how
#: many helper threads exact_band started (its executors by process, engine/exact_band.py).
COMMAND_THREADS = COMMAND.replace(
    "json.dumps(sorted(sys.modules))",
    "json.dumps([sorted(sys.modules), len(getattr(sys.modules.get("
    "'shufflesim.protocols.bounds.engine.exact_band'), '_helpers', ()))])")

_ONE_ANSWER = {
    "bound over rounds": ["bound", *KRR, "--epsilon0", "1"],
    # one round at n = 37276: exact_band builds its tables on its helper thread
    "bound, band tables": ["bound", "--randomizer", "krr", "--domain-size", "10", "--epsilon0",
                           "1", "--n", "37276", "--delta", "1e-4", "--method",
                           "optimal-blanket", "-q"],
    "calibrate": ["calibrate", *KRR, "--target-epsilon", "1"],
    "compose": ["compose", "--round", "randomizer=krr,domain_size=10,epsilon0=1,n=1000,repeat=3",
                "--delta", "1e-6", "-q"],
    "rdp": ["rdp", "--randomizer", "krr", "--domain-size", "10", "--epsilon0", "1", "--n",
            "1000", "--rounds", "3", "-q"],
}


@pytest.mark.parametrize("name", list(_ONE_ANSWER))
def test_a_one_answer_command_leaves_the_deferred_numpy_modules_unrun(name):
    """simulator/cli/deferred_imports.py: a one-answer command imports scipy.special, whose
    array-API layer binds every numpy submodule; the deferred ones are bound but never run
    (their own imports are absent). So no thread read one first, and none could race another
    to load it (Python 3.11's LazyLoader takes no lock): the band-table case shows exact_band's
    helper thread started beside them."""
    done = subprocess.run([sys.executable, "-c", COMMAND_THREADS, *_ONE_ANSWER[name]],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr.splitlines()[:1]
    modules, helpers = json.loads(done.stderr.strip().splitlines()[-1])
    assert "scipy.special" in modules  # the check sees the import that binds them
    assert not [m for m in _DEFERRED_RUN if m in modules]
    if name == "bound, band tables":
        assert helpers == 1


def test_a_long_command_keeps_its_numpy_imports():
    """``audit``, a long command, defers nothing: numpy.f2py runs there as scipy imports it."""
    audit = _modules_after(COMMAND, "audit", "--randomizer", "krr", "--domain-size", "2",
                           "--epsilon0", "2", "--n", "20", "--delta", "1e-3", "--trials", "200",
                           "--no-verdicts", "-q")
    assert "scipy.special" in audit
    assert "numpy.f2py.crackfortran" in audit   # not deferred there: the check can see it


def test_deferred_numpy_modules_run_on_their_first_use():
    """A deferred module is the real one once read: numpy.testing's assertions work (and
    raise), numpy.f2py's functions are there, numpy.random draws what it draws undeferred; a
    module imported before :func:`defer` is untouched; a program that imports shufflesim as a
    library defers nothing."""
    code = ("import sys, importlib.util\n"
            "import numpy.ma\n"
            "import shufflesim\n"
            "from shufflesim.simulator.cli import deferred_imports\n"
            "library = deferred_imports._FINDER in sys.meta_path\n"
            "deferred_imports.defer(); deferred_imports.defer()\n"
            "twice = sys.meta_path.count(deferred_imports._FINDER)\n"
            "import numpy.testing, numpy.f2py, numpy.random\n"
            "bound_only = 'numpy.testing._private.utils' not in sys.modules\n"
            "numpy.testing.assert_allclose([1.0], [1.0])\n"
            "try:\n"
            "    numpy.testing.assert_allclose([1.0], [2.0])\n"
            "    raised = False\n"
            "except AssertionError:\n"
            "    raised = True\n"
            "print(library, twice, bound_only, raised, callable(numpy.f2py.run_main),\n"
            "      type(sys.modules['numpy.ma']).__name__,\n"
            "      'numpy.testing._private.utils' in sys.modules,\n"
            "      numpy.random.default_rng(7).integers(10**9))\n")
    expected = str(np.random.default_rng(7).integers(10**9))   # drawn without deferral
    assert _printed_words(code) == ["False", "1", "True", "True", "True", "module", "True",
                                    expected]
