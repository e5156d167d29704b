"""Issue 32: the eps search's starting guess without scipy.optimize (engine/roots.py): the
root finder meets brentq's tolerances on falling functions, gives up quietly on non-finite
values, and a k-RR optimal-blanket / exact-lower bound no longer imports scipy.optimize."""

from __future__ import annotations

import math
import subprocess
import sys

import pytest

from shufflesim.protocols.bounds.engine.roots import falling_root


@pytest.mark.parametrize("root,hi", [(0.3, 1.0), (1e-7, 2.0), (7.999, 8.0), (12.5, 30.0)])
def test_falling_root_meets_the_tolerances(root, hi):
    for fn in (lambda x: root - x, lambda x: math.log(root / x) if x > 0 else 50.0,
               lambda x: math.exp(-3 * x) - math.exp(-3 * root)):
        found = falling_root(fn, 0.0, hi)
        assert found is not None
        assert abs(found - root) <= 1e-12 + 1e-10 * root * 4


def test_falling_root_gives_up_on_non_finite_values():
    assert falling_root(lambda x: 1.0 if x < 0.5 else math.nan, 0.0, 1.0) is None


def test_exact_bounds_of_krr_do_not_import_scipy_optimize():
    code = ("import sys\n"
            "from shufflesim.protocols.randomizers import make_randomizer\n"
            "from shufflesim.protocols.bounds import catalogue\n"
            "r = make_randomizer('krr', epsilon0=4.0, domain_size=10)\n"
            "for m in ('optimal-blanket', 'exact-lower'):\n"
            "    assert catalogue.evaluate(m, r, 3000, 1e-6).result is not None\n"
            "print('scipy.optimize' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "False"
