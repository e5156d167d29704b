"""``import shufflesim`` sets one BLAS thread, as the console script does (issue 32: the
accounting's and the engine's small products called from Python were 2x slower under load
with OpenBLAS's default threads), unless the environment already says how many."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("threadpoolctl")

_CODE = ("import json, os, shufflesim, numpy; from threadpoolctl import threadpool_info; "
         "print(json.dumps([os.environ.get('OPENBLAS_NUM_THREADS'), "
         "[i['num_threads'] for i in threadpool_info() if i['user_api'] == 'blas']]))")


def _threads(**env):
    clean = {k: v for k, v in os.environ.items() if not k.endswith("_NUM_THREADS")
             and k != "VECLIB_MAXIMUM_THREADS"}
    out = subprocess.run([sys.executable, "-c", _CODE], env={**clean, **env}, check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out)


def test_import_shufflesim_gives_one_blas_thread():
    variable, threads = _threads()
    assert variable == "1"
    assert threads and all(t == 1 for t in threads)


def test_the_users_setting_is_kept():
    variable, _ = _threads(OPENBLAS_NUM_THREADS="2")
    assert variable == "2"
