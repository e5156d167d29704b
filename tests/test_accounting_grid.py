"""Soundness grid of the composed bounds (slow): no composed proven upper bound below the
composed exact lower bound.

Grid (issue 16): randomizers brr, krr (k = 3, 10), subset (d = 10, default k); n in
{1e3, 1e4, 1e5}; eps0 in {0.5, 1, 4}; T in {1, 10, 100, 1000}; delta = 1e-6. Every upper method
that applies (optimal-blanket refuses subset, see pairs.SUPPORTED) is compared with exact-lower.
Rows go to the CSV file named by $ACCOUNTING_GRID_CSV (default: a pytest temporary file).

Run with:  python -m pytest tests/test_accounting_grid.py -m slow
"""

from __future__ import annotations

import csv
import itertools
import os

import pytest

from shufflesim.protocols.accounting.compose import Round, compose_rounds
from shufflesim.protocols.errors import ParameterError
from shufflesim.protocols.randomizers import make_randomizer

DELTA = 1e-6
RANDOMIZERS = [("brr", {}), ("krr", {"domain_size": 3}), ("krr", {"domain_size": 10}),
               ("subset", {"domain_size": 10})]
NS = (1000, 10_000, 100_000)
EPS0 = (0.5, 1.0, 4.0)
TS = (1, 10, 100, 1000)
UPPER = ("optimal-blanket", "fmt21-clone", "basic", "advanced", "rdp-blanket", "rdp-clone")


def grid_rows():
    for (name, kw), n, eps0 in itertools.product(RANDOMIZERS, NS, EPS0):
        r = make_randomizer(name, epsilon0=eps0, **kw)
        label = name + (f"-{kw['domain_size']}" if kw else "")
        for t in TS:
            rounds = [Round(r, n, t)]
            lower = compose_rounds(rounds, DELTA, "exact-lower")
            for method in UPPER:
                try:
                    up = compose_rounds(rounds, DELTA, method)
                except ParameterError as error:
                    yield [label, n, eps0, t, method, "", lower.epsilon, f"refused: {error}"]
                    continue
                ok = up.epsilon >= lower.epsilon
                yield [label, n, eps0, t, method, up.epsilon, lower.epsilon,
                       "ok" if ok else "BELOW-LOWER"]


@pytest.mark.slow
def test_composed_upper_bounds_never_below_composed_exact_lower(tmp_path):
    path = os.environ.get("ACCOUNTING_GRID_CSV") or str(tmp_path / "grid.csv")
    failures = []
    with open(path, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["randomizer", "n", "eps0", "T", "method", "upper", "exact_lower",
                         "verdict"])
        for row in grid_rows():
            writer.writerow(row)
            handle.flush()
            if row[-1] == "BELOW-LOWER":
                failures.append(row)
    assert not failures, failures
