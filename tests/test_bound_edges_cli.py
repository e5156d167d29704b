"""``shufflesim bound`` over extreme eps0 (issue 14): no traceback, exit 0 or 2, for every
eps0 in [1e-300, 1000]. Bounds that cannot handle an eps0 report "not computed: <reason>" (or
the command stops with a one-line ParameterError, exit 2)."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from shufflesim.simulator.cli import main

RANDOMIZERS = [
    ["--randomizer", "brr"],
    ["--randomizer", "krr", "--domain-size", "3"],
    ["--randomizer", "krr", "--domain-size", "65536"],
    ["--randomizer", "oue", "--domain-size", "1024"],
    ["--randomizer", "rappor", "--domain-size", "16"],
    ["--randomizer", "hr", "--domain-size", "7"],
    ["--randomizer", "subset", "--domain-size", "6", "--param", "subset_size=2"],
    ["--randomizer", "duchi"],
    ["--randomizer", "piecewise"],
]
EPS0 = ["1e-300", "1e-6", "20", "50", "710", "1000"]


def _check(result):
    assert result.exit_code in (0, 2), (result.exit_code, result.output)
    if result.exception is not None:
        assert isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in result.output


@pytest.mark.parametrize("args", RANDOMIZERS, ids=lambda a: "-".join(a[1::2]))
@pytest.mark.parametrize("eps0", EPS0)
def test_bound_command_never_ends_in_a_traceback(args, eps0):
    result = CliRunner().invoke(main, ["bound", *args, "--epsilon0", eps0, "--n", "10",
                                       "--delta", "1e-6"])
    _check(result)


@pytest.mark.slow
@pytest.mark.parametrize("args", [["--randomizer", "laplace"],
                                  ["--randomizer", "laplace_binary"],
                                  ["--randomizer", "blh", "--domain-size", "8"],
                                  ["--randomizer", "olh", "--domain-size", "8", "--param",
                                   "hash_range=3"],
                                  ["--randomizer", "summation", "--param", "precision=4"]],
                         ids=lambda a: "-".join(a[1::2]))
@pytest.mark.parametrize("eps0", EPS0 + ["1e-12", "0.001", "100", "151", "500", "700"])
def test_bound_command_never_ends_in_a_traceback_more(args, eps0):
    result = CliRunner().invoke(main, ["bound", *args, "--epsilon0", eps0, "--n", "10",
                                       "--delta", "1e-6"])
    _check(result)
