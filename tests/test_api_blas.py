"""The Python API computes with one BLAS thread, as the console script does (issue 32: the
accounting's and the engine's small products called from Python were 2x slower under load with
OpenBLAS's default threads), and gives the caller's threads back when it returns: ``import
shufflesim`` and its calls leave the environment alone, so the caller's own numpy (and torch,
which reads OMP_NUM_THREADS) keeps the threads it was given."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("threadpoolctl")

#: In a fresh process with OPENBLAS_NUM_THREADS=2: the variables after ``import shufflesim``,
#: numpy's BLAS threads before a call, inside the engine during the call, and after it.
_CODE = """
import json, os
import shufflesim
variables = {k: os.environ.get(k) for k in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")}
import numpy
from threadpoolctl import threadpool_info
from shufflesim.simulator.calls import bounds as call

def threads():
    return sorted({i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"})

seen = []
real = call.bounds
def spy(*args, **kwargs):
    seen.append(threads())
    return real(*args, **kwargs)
call.bounds = spy
before = threads()
shufflesim.bounds("krr", epsilon0=1.0, domain_size=2, n=100, delta=1e-6,
                  methods=["optimal-blanket"])
print(json.dumps([variables, before, seen, threads()]))
"""


def _run(**env):
    clean = {k: v for k, v in os.environ.items() if not k.endswith("_NUM_THREADS")
             and k != "VECLIB_MAXIMUM_THREADS"}
    out = subprocess.run([sys.executable, "-c", _CODE], env={**clean, **env}, check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def test_a_call_computes_with_one_thread_and_gives_the_callers_back():
    variables, before, during, after = _run(OPENBLAS_NUM_THREADS="2")
    assert variables == {"OPENBLAS_NUM_THREADS": "2", "OMP_NUM_THREADS": None}
    assert during == [[1]]
    assert after == before and before  # the caller's threads, whatever they were


def test_import_leaves_the_environment_alone():
    variables, *_ = _run()
    assert variables == {"OPENBLAS_NUM_THREADS": None, "OMP_NUM_THREADS": None}


def test_every_computing_call_is_wrapped():
    import shufflesim

    for name in ("bounds", "calibrate", "compose", "rdp", "design", "audit"):
        assert hasattr(getattr(shufflesim, name), "__wrapped__"), name
